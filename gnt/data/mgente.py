"""Load mGeNTE from the hub, a TSV file or a directory of ``en-xx.tsv`` files, and validate every row.

All three sources give the same typed :class:`~gnt.data.entry.Entry` objects. Validation collects every problem in
one pass and reports each as ``file:line:column: message`` (the header is line 1), so a user fixes a file once.
The loader tolerates the optional annotation columns (``REF-G_ann``, ``G-WORDS``, ``COMMON``, ``Europarl_ID``)
being absent or empty; it never guesses a missing reference or gender.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path

from gnt.data.entry import LANGUAGES, Entry, Language
from gnt.data.errors import DataError, DataErrors

MGENTE_COLUMNS = ("ID", "Europarl_ID", "SET", "SRC", "REF-G", "REF-N", "COMMON", "GENDER", "REF-G_ann", "G-WORDS")
REQUIRED_COLUMNS = ("ID", "SET", "SRC", "REF-G", "REF-N")
HUB_ID = "FBK-MT/mGeNTE"
HUB_SPLIT = "test"
_FILE_LANG = re.compile(r"en-(it|es|de|el)\b")
_ANN_TAG = re.compile(r"<([FM])>(.*?)</\1>")
_TRUE = {"true", "yes", "y", "1", "common"}


def hub_config(lang: Language) -> str:
    """The hub config name of one language pair, e.g. ``mGeNTE en-it``."""
    return f"mGeNTE en-{lang}"


def language_of(path: Path) -> Language:
    """Language pair from a file name such as ``en-it.tsv``; raises a clear error otherwise."""
    match = _FILE_LANG.search(path.name)
    if not match:
        raise DataError(f"cannot tell the target language from the file name; expected en-xx with xx in {LANGUAGES}", path)
    return match.group(1)  # type: ignore[return-value]


def parse_gendered_words(g_words: str, ref_g_ann: str) -> tuple[str, ...]:
    """Annotated gendered words of Ref-G: from ``G-WORDS`` (``;``/``,``/``|`` separated) or else the ``<F>..</F>`` tags."""
    text = (g_words or "").strip().strip("[]")
    if text:
        return tuple(w.strip().strip("'\"") for w in re.split(r"[;,|]", text) if w.strip().strip("'\""))
    return tuple(m.group(2).strip() for m in _ANN_TAG.finditer(ref_g_ann or ""))


def word_genders(words: tuple[str, ...], ref_g_ann: str) -> str:
    """The gender of each gendered word from the ``<F>``/``<M>`` tags of ``REF-G_ann``, ``;``-joined in the order of
    ``words`` (empty where a word is untagged; empty text without tags): what a judge's phrase list needs."""
    tags = {m.group(2).strip(): m.group(1) for m in _ANN_TAG.finditer(ref_g_ann or "")}
    return ";".join(tags.get(word, "") for word in words) if tags else ""


def _is_true(value: str) -> bool:
    return value.strip().casefold() in _TRUE


def rows_to_entries(
    rows: Iterable[tuple[int, Mapping[str, str]]],
    lang: Language,
    where: str,
    origin: str = "mgente",
) -> list[Entry]:
    """Validate ``(line_number, row)`` pairs and turn them into entries; raise :class:`DataErrors` listing all problems."""
    errors: list[DataError] = []
    entries: list[Entry] = []
    seen_ids: dict[str, int] = {}
    for line, row in rows:

        def field(name: str, row: Mapping[str, str] = row) -> str:
            value = row.get(name)
            return "" if value is None else str(value).strip()

        row_errors = []
        for name in ("ID", "SRC", "REF-G", "REF-N"):
            if not field(name):
                row_errors.append(DataError(f"empty {name}", where, line, name))
        for name, value in row.items():
            problem = control_character(str(value)) if value is not None else None
            if problem:
                row_errors.append(DataError(problem, where, line, name))
        set_name = field("SET")
        if set_name not in ("Set-G", "Set-N"):
            row_errors.append(DataError(f"unknown SET value {set_name!r}; expected 'Set-G' or 'Set-N'", where, line, "SET"))
        gender = field("GENDER").upper() or None
        if set_name == "Set-G" and gender not in ("F", "M"):
            row_errors.append(
                DataError(f"GENDER must be F or M on a Set-G row, got {field('GENDER')!r}", where, line, "GENDER")
            )
        if set_name == "Set-N":
            gender = None
        row_id = field("ID")
        if row_id and row_id in seen_ids:
            row_errors.append(DataError(f"duplicate ID {row_id!r} (first on line {seen_ids[row_id]})", where, line, "ID"))
        elif row_id:
            seen_ids[row_id] = line
        if row_errors:
            errors.extend(row_errors)
            continue
        words = parse_gendered_words(field("G-WORDS"), field("REF-G_ann"))
        genders = word_genders(words, field("REF-G_ann"))
        entries.append(
            Entry(
                id=row_id,
                lang=lang,
                set=set_name,  # type: ignore[arg-type]
                source=field("SRC"),
                ref_g=field("REF-G"),
                ref_n=(field("REF-N"),),
                gender=gender,  # type: ignore[arg-type]
                europarl_id=field("Europarl_ID"),
                gendered_words=words,
                in_common=_is_true(field("COMMON")),
                origin=origin,
                meta={"gendered_word_genders": genders} if genders else {},
            )
        )
    if errors:
        raise DataErrors(errors)
    return entries


def control_character(text: str) -> str | None:
    """What is wrong with a text holding a control character (NUL, escape, DEL, ...), or None. Such a character is
    no part of a sentence: it would reach the training rows and prompts as it is, and no model should learn it."""
    for position, char in enumerate(text, start=1):
        if unicodedata.category(char) == "Cc" and char not in "\t\n\r":
            name = unicodedata.name(char, None) or {"\0": "NUL", "\x1b": "ESCAPE", "\x7f": "DELETE"}.get(char, "")
            return (f"control character U+{ord(char):04X}{f' ({name})' if name else ''} at character {position}: "
                    "remove it from the file")
    return None


def _decode_lines(path: Path) -> list[str]:
    """Decode a file line by line so an undecodable byte is reported with its line and column."""
    raw = path.read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    lone_cr = re.search(rb"\r(?!\n)", raw)
    if lone_cr:  # CR-only (classic Mac) endings would read as one long header line and zero rows
        before = raw[: lone_cr.start()]
        raise DataError(
            "carriage return without line feed: the file has CR-only line endings (or a stray CR in a field); "
            "save it with LF or CRLF line endings", path, before.count(b"\n") + 1,
            lone_cr.start() - (before.rfind(b"\n") + 1) + 1,
        )
    lines = []
    for number, chunk in enumerate(raw.split(b"\n"), start=1):
        try:
            lines.append(chunk.decode("utf-8").rstrip("\r"))
        except UnicodeDecodeError as exc:
            raise DataError(
                f"undecodable text (not UTF-8): byte 0x{chunk[exc.start]:02x}", path, number, exc.start + 1
            ) from exc
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def read_table(path: Path, required: tuple[str, ...]) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """Read a headed TSV into ``(header, [(line, row)])``, checking the delimiter, columns and field counts."""
    header, rows, errors = _read_table(path, required)
    if errors:
        raise DataErrors(errors)
    return header, rows


def _read_table(path: Path, required: tuple[str, ...]
                ) -> tuple[list[str], list[tuple[int, dict[str, str]]], list[DataError]]:
    """The header, the well-formed rows and the malformed rows' errors (a bad header raises at once: no row can be
    read without it), so a caller can check the well-formed rows too and report every problem of a file at once."""
    path = Path(path)
    lines = _decode_lines(path)
    if not lines:
        raise DataError("empty file: expected a header line", path, 1)
    header = lines[0].split("\t")
    if len(header) == 1:
        guess = next((name for sep, name in ((",", "comma"), (";", "semicolon"), ("|", "pipe")) if sep in lines[0]), None)
        hint = f"; it looks {guess}-separated" if guess else ""
        raise DataError(f"wrong delimiter: the header has no tab{hint}; mGeNTE files are tab-separated", path, 1)
    seen: dict[str, int] = {}
    for index, name in enumerate(header, start=1):
        if name in seen:  # a dict of the row would silently keep the last copy's values
            raise DataError(f"duplicate column {name!r} (columns {seen[name]} and {index})", path, 1, name)
        seen[name] = index
    missing = [name for name in required if name not in header]
    if missing:
        raise DataError(
            f"missing column(s) {', '.join(missing)}; header has: {', '.join(header)}", path, 1, missing[0]
        )
    rows: list[tuple[int, dict[str, str]]] = []
    errors: list[DataError] = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != len(header):
            column = header[len(cells)] if len(cells) < len(header) else len(header) + 1  # the first missing one
            errors.append(DataError(f"expected {len(header)} tab-separated fields, found {len(cells)}", path, number, column))
            continue
        rows.append((number, dict(zip(header, cells, strict=True))))
    return header, rows, errors


def read_common_references(path: Path) -> dict[str, tuple[str, ...]]:
    """Read a common-set file (``ID`` + ``REF-N1..3``): the extra neutral references of each row id."""
    return {row_id: refs for row_id, (_, refs) in _common_rows(path).items()}


def _common_rows(path: Path) -> dict[str, tuple[int, tuple[str, ...]]]:
    """Each row id of a common-set file with its line and its neutral references."""
    header, rows = read_table(path, ("ID",))
    ref_columns = [c for c in header if c.upper().startswith("REF-N")]
    if not ref_columns:
        raise DataError("a common-set file needs REF-N1, REF-N2, ... columns", path, 1, "REF-N1")
    return {
        row["ID"].strip(): (line, tuple(row[c].strip() for c in ref_columns if row[c].strip())) for line, row in rows
    }


def _check_common_ids(entries: list[Entry], common: Mapping[str, tuple[int, tuple[str, ...]]], path: Path,
                      data_path: Path) -> None:
    """A common-set row whose ID is no entry of its language file would be dropped unseen: each is an error."""
    ids = {entry.id for entry in entries}
    errors = [DataError(f"ID {row_id!r} is no row of {data_path.name} (a common-set row must name an entry of its "
                        "language file)", path, line, "ID")
              for row_id, (line, _) in common.items() if row_id not in ids]
    if errors:
        raise DataErrors(errors)


def _with_common(entries: list[Entry], common: Mapping[str, tuple[str, ...]]) -> list[Entry]:
    """Attach the common set's neutral references: Ref-N stays first, the others follow without duplicates."""
    merged = []
    for entry in entries:
        extra = common.get(entry.id, ())
        refs = tuple(dict.fromkeys((*entry.ref_n, *extra)))
        if len(refs) > len(entry.ref_n):
            entry = Entry(**{**entry.__dict__, "ref_n": refs, "in_common": True})
        merged.append(entry)
    return merged


def read_tsv(path: str | Path, lang: Language | None = None, common_path: str | Path | None = None) -> list[Entry]:
    """Load one mGeNTE TSV (one language pair), plus its common-set file when given or found beside it."""
    path = Path(path)
    lang = lang or language_of(path)
    _, rows, errors = _read_table(path, REQUIRED_COLUMNS)
    if not rows and not errors:
        raise DataError("no data rows after the header", path, 2)
    try:
        entries = rows_to_entries(rows, lang, str(path))
    except DataErrors as found:
        errors = [*errors, *found.errors]
    if errors:
        raise DataErrors(sorted(errors, key=lambda e: e.line or 0))
    common_file = Path(common_path) if common_path else path.parent / "common" / path.name
    if common_file.is_file():
        common = _common_rows(common_file)
        _check_common_ids(entries, common, common_file, path)
        entries = _with_common(entries, {row_id: refs for row_id, (_, refs) in common.items()})
    return entries


def read_directory(directory: str | Path, langs: Iterable[Language] = LANGUAGES) -> list[Entry]:
    """Load ``en-xx.tsv`` for each requested language from a directory (missing files are an error)."""
    directory = Path(directory)
    entries: list[Entry] = []
    failures: list[DataError | DataErrors] = []  # every file's problems in one report
    langs = tuple(langs)
    for lang in langs:  # a missing file is a wrong folder or language list: said before reading any file
        if not (directory / f"en-{lang}.tsv").is_file():
            found = ", ".join(sorted(p.name for p in directory.glob("*.tsv"))) or "no .tsv files"
            raise DataError(f"missing en-{lang}.tsv for language {lang!r} (found: {found})", directory)
    for lang in langs:
        path = directory / f"en-{lang}.tsv"
        try:
            entries.extend(read_tsv(path, lang))
        except (DataError, DataErrors) as found:
            failures.append(found)
    if len(failures) == 1:
        raise failures[0]
    if failures:
        raise DataErrors([e for f in failures for e in (f.errors if isinstance(f, DataErrors) else [f])])
    return entries


def load_hub(
    hub_id: str = HUB_ID, langs: Iterable[Language] = LANGUAGES, split: str = HUB_SPLIT, revision: str | None = None
) -> list[Entry]:
    """Load mGeNTE through ``datasets`` (gated: log in with ``huggingface-cli login`` first), validated like a TSV."""
    from datasets import load_dataset

    entries: list[Entry] = []
    for lang in langs:
        config = hub_config(lang)
        try:
            dataset = load_dataset(hub_id, config, split=split, revision=revision)
        except Exception as exc:  # noqa: BLE001 - offline, gated, unknown id: each is a user-facing data problem
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise DataError(
                f"cannot load {config!r} (split {split!r}) from the hub: {detail}. mGeNTE is gated: accept its "
                "licence and run `huggingface-cli login` on a machine with network, or pass a local folder or TSV",
                hub_id,
            ) from None
        if len(dataset) == 0:
            raise DataError(f"{config!r} (split {split!r}) has no rows", hub_id)
        missing = [c for c in REQUIRED_COLUMNS if c not in dataset.column_names]
        if missing:
            raise DataError(f"missing column(s) {', '.join(missing)}", f"{hub_id}[{config}]", 1, missing[0])
        rows = ((index + 2, row) for index, row in enumerate(dataset))
        entries.extend(rows_to_entries(rows, lang, f"{hub_id}[{config}]"))
    return entries


def load_mgente(source: str | Path, langs: Iterable[Language] = LANGUAGES) -> list[Entry]:
    """Load mGeNTE from a directory, a single TSV file or a hub id, in that order of preference.

    A path that does not exist and does not look like ``owner/name`` is an error rather than a hub request, so a
    typo in a local path is never sent to the network.
    """
    langs = tuple(langs)
    if not langs:
        raise DataError("no language selected (valid: " + ", ".join(LANGUAGES) + ")", str(source))
    path = Path(source)
    if path.is_dir():
        return read_directory(path, langs)
    if path.is_file():
        entries = read_tsv(path)
        kept = [e for e in entries if e.lang in langs]
        if not kept:
            raise DataError(f"holds en-{entries[0].lang} rows only, and the languages asked for are "
                            f"{', '.join(langs) or 'none'}", path)
        missing = [lang for lang in langs if lang != entries[0].lang]
        if missing and set(langs) != set(LANGUAGES):  # every language (the default) means: the file's own
            raise DataError(f"holds en-{entries[0].lang} rows only, and langs also asks for {', '.join(missing)}: "
                            f"give a folder of en-xx.tsv files, or langs={entries[0].lang}", path)
        return kept
    if re.fullmatch(r"[\w.-]+/[\w.-]+", str(source)) and not str(source).endswith(".tsv"):
        return load_hub(str(source), langs)
    raise DataError("no such file or directory, and not a hub id of the form owner/name", str(source))
