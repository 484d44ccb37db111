"""Human gold labels in the layouts the field publishes them, mapped onto the judge's labels, saying how.

Two layouts are read:

* **long** (ours and most releases): one row per judged translation. Columns are found by name, first match
  wins: source ``source``/``src``/``SRC``; translation ``translation``/``tgt``/``hyp``/``target``/``output``/``mt``;
  gold ``gold``/``label``/``gold_label``/``human``/``annotation``; optional ``lang``/``language``, a source-gender
  column ``source_gender``/``src_gender``/``GENDER`` (M, F, or N/ambiguous/empty for a source that states no
  gender) and an ambiguity flag ``ambiguous``/``ambiguous_source`` (true/false).
* **GENDEROUS** (Hackenbuchner et al. 2025): one row per English source, per language a translation column
  ``{XX}_{system}`` followed by the human label ``{XX}_annotation`` (or ``{XX}_{system}_vN`` and ``{XX}_ann_vN``
  for its several-variant files); the source is the ``sentences`` or ``adj5_sentences`` column. Languages
  outside ours (NL) are skipped and counted. The LLM judge labels the release records beside the human ones
  (``{XX}_GPT_annotation``, GPT-4o) are kept on :attr:`GoldRow.recorded`, so that judge can be validated too.

Label sets and the mapping applied (recorded in :attr:`GoldSet.mapping`):

* CROSS labels (``CORRECTLY GENDERED``/``WRONGLY GENDERED``/``NEUTRAL``, or ``CG``/``WG``/``N``): as they are;
* ``GENDERED``/``NEUTRAL``: the MONO view (a CROSS judge cannot be scored on them);
* ``M``/``F``/``N`` (the gender a translation expresses): N → NEUTRAL; M/F → CORRECTLY GENDERED when it is the
  gender the source states, WRONGLY GENDERED when the source is ambiguous (flag, or a source gender of N) or states
  the other gender. GENDEROUS sources are gender-ambiguous by construction, so there M/F → WRONGLY GENDERED.
  Without any source information M/F → GENDERED (MONO view), and the mapping says so.

Annotations that are not a gender label (GENDEROUS ``error [incorrect]``, ``error [mixed]``, ``M + F``, ``N/I``,
``n/a``, empty) are skipped and counted per value; any other unknown label is an error with its file:line:column.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from gnt.data.entry import LANGUAGES
from gnt.data.errors import DataError, DataErrors
from gnt.judge.schema import (
    CORRECTLY_GENDERED,
    CROSS_LABELS,
    GENDERED,
    NEUTRAL,
    WRONGLY_GENDERED,
    normalise_label,
)
from gnt.prompts.texts import source_gender_cues

SOURCE_COLUMNS = ("source", "src", "SRC")
TRANSLATION_COLUMNS = ("translation", "tgt", "hyp", "target", "output", "mt")
GOLD_COLUMNS = ("gold", "label", "gold_label", "human", "annotation")
LANG_COLUMNS = ("lang", "language")
SOURCE_GENDER_COLUMNS = ("source_gender", "src_gender", "GENDER")
AMBIGUOUS_COLUMNS = ("ambiguous", "ambiguous_source")
GENDEROUS_SOURCE_COLUMNS = ("sentences", "adj5_sentences")
_GENDEROUS_GOLD = re.compile(r"^([A-Z]{2})_(annotation|ann_v(\d+))$")
_TRUE = {"1", "true", "yes", "y", "t"}


@dataclass(frozen=True)
class GoldRow:
    line: int
    lang: str
    source: str
    translation: str
    gold: str  # normalised: one of CROSS_LABELS or GENDERED/NEUTRAL
    raw: str = ""  # the label as the file wrote it
    #: labels of a judge recorded in the file beside the human ones (GENDEROUS: GPT-4o's), mapped like the gold;
    #: ``None`` where the recorded value is not a label
    recorded: str | None = None


@dataclass
class GoldSet:
    """The rows read, the mapping applied to their labels, and what was skipped (value → count)."""

    path: str
    layout: str
    rows: list[GoldRow]
    mapping: str
    skipped: Counter = field(default_factory=Counter)


def is_skipped_label(value: str) -> bool:
    """An annotation that is not a gender label (a translation error, several genders, not applicable)."""
    text = " ".join(value.strip().upper().split())
    return text in ("", "N/A", "NA", "M + F", "M+F", "N/I") or text.startswith("ERROR")


def _first(header: list[str], names: tuple[str, ...]) -> str | None:
    return next((n for n in names if n in header), None)


def _mgf_to_label(value: str, source_gender: str | None, ambiguous: bool | None) -> str:
    """Map an M/F/N label given what is known of the source (see the module docstring)."""
    if value == "N":
        return NEUTRAL
    if ambiguous or source_gender in ("N", "AMBIGUOUS"):
        return WRONGLY_GENDERED
    if source_gender in ("M", "F"):
        return CORRECTLY_GENDERED if source_gender == value else WRONGLY_GENDERED
    return GENDERED


def read_gold(path: str | Path, default_lang: str | None = None) -> GoldSet:
    """Read a gold file in either layout; raise :class:`DataErrors` listing every bad row."""
    from gnt.data.mgente import read_table

    path = Path(path)
    header, _ = read_table(path, ())
    if any(_GENDEROUS_GOLD.match(c) for c in header) and _first(header, GENDEROUS_SOURCE_COLUMNS):
        return _read_genderous(path)
    return _read_long(path, header, default_lang)


def _read_long(path: Path, header: list[str], default_lang: str | None) -> GoldSet:
    from gnt.data.mgente import read_table

    src, tgt, gold_col = _first(header, SOURCE_COLUMNS), _first(header, TRANSLATION_COLUMNS), _first(header, GOLD_COLUMNS)
    for name, found, names in (("source", src, SOURCE_COLUMNS), ("translation", tgt, TRANSLATION_COLUMNS), ("gold", gold_col, GOLD_COLUMNS)):
        if found is None:
            raise DataError(f"missing {name} column (one of {', '.join(names)}); header has: {', '.join(header)}", path, 1)
    lang_col = _first(header, LANG_COLUMNS)
    sg_col, amb_col = _first(header, SOURCE_GENDER_COLUMNS), _first(header, AMBIGUOUS_COLUMNS)
    _, rows = read_table(path, (src, tgt, gold_col))
    errors: list[DataError] = []
    out: list[GoldRow] = []
    skipped: Counter = Counter()
    kinds: Counter = Counter()
    for line, row in rows:
        raw = row[gold_col].strip()
        lang = (row.get(lang_col, "") if lang_col else "").strip().lower() or (default_lang or "")
        row_errors = []
        if lang not in LANGUAGES:
            row_errors.append(DataError(f"language {lang!r} unknown or missing (a lang column or lang=); expected one of {LANGUAGES}", path, line, lang_col or "lang"))
        if is_skipped_label(raw):
            skipped[raw or "(empty)"] += 1
            continue
        label = normalise_label(raw)
        upper = raw.strip().upper()
        if upper in ("M", "F", "N"):
            sg = (row.get(sg_col, "") if sg_col else "").strip().upper() or None
            amb = (row.get(amb_col, "") if amb_col else "").strip().lower() in _TRUE if amb_col else None
            if sg is None and amb is False:  # the source states a gender: read it from its English cues
                cues = source_gender_cues(row[src])
                stated = [g for g in ("F", "M") if cues[g]]
                sg = stated[0] if len(stated) == 1 else None
                kinds["source gender from English cues"] += sg is not None
            label = _mgf_to_label(upper, sg, amb)
            kinds["M/F/N with source gender" if (sg_col or amb_col) else "M/F/N without source gender"] += 1
        elif label in (*CROSS_LABELS, GENDERED):
            kinds["GENDERED/NEUTRAL" if label == GENDERED else "CROSS labels"] += 1
        else:
            row_errors.append(
                DataError(f"gold label {raw!r} unknown; expected one of {[*CROSS_LABELS, GENDERED]}, CG/WG/N/G or M/F/N",
                          path, line, gold_col)
            )
        if not row[tgt].strip():
            row_errors.append(DataError("empty translation", path, line, tgt))
        if row_errors:
            errors.extend(row_errors)
            continue
        out.append(GoldRow(line, lang, row[src].strip(), row[tgt].strip(), label, raw))
    if errors:
        raise DataErrors(errors)
    if not out:
        raise DataError("no labelled rows", path)
    mapping = f"long layout (source={src}, translation={tgt}, gold={gold_col}); labels: " + _describe(kinds, sg_col, amb_col)
    return GoldSet(str(path), "long", out, mapping, skipped)


def _describe(kinds: Counter, sg_col: str | None, amb_col: str | None) -> str:
    parts = []
    for kind, n in kinds.most_common():
        if not n:
            continue
        if kind == "M/F/N with source gender":
            via = " and ".join(c for c in (sg_col, amb_col) if c)
            kind = f"M/F/N mapped by {via}: M/F matching the source gender → CORRECTLY GENDERED, otherwise or on an ambiguous source → WRONGLY GENDERED, N → NEUTRAL"
        elif kind == "source gender from English cues":
            kind = "source gender of non-ambiguous sources read from English cues (she, Mrs, he, Mr...)"
        elif kind == "M/F/N without source gender":
            kind = "M/F/N without source gender: M/F → GENDERED, N → NEUTRAL (MONO view only)"
        parts.append(f"{kind} ({n} rows)")
    return "; ".join(parts)


def _read_genderous(path: Path) -> GoldSet:
    from gnt.data.mgente import read_table

    header, rows = read_table(path, ())
    source_col = _first(header, GENDEROUS_SOURCE_COLUMNS)
    pairs: list[tuple[str, str, str]] = []  # (lang, translation column, gold column)
    recorded_columns: dict[str, str | None] = {}  # gold column -> the column of the judge labels recorded beside it
    skipped: Counter = Counter()
    for i, column in enumerate(header):
        match = _GENDEROUS_GOLD.match(column)
        if not match:
            continue
        code, variant = match.group(1), match.group(3)
        if variant:
            candidates = [c for c in header if c.startswith(f"{code}_") and c.endswith(f"_v{variant}") and c != column]
        else:
            candidates = [header[i - 1]] if i > 0 and header[i - 1].startswith(f"{code}_") else []
        if not candidates:
            raise DataError(f"no translation column for {column} (expected {code}_<system> before it)", path, 1, column)
        lang = code.lower()
        if lang not in LANGUAGES:
            skipped[f"language {code} (not one of {', '.join(LANGUAGES)})"] += sum(1 for _, r in rows if r[column].strip())
            continue
        pairs.append((lang, candidates[0], column))
        recorded_columns[column] = f"{code}_GPT_annotation" if f"{code}_GPT_annotation" in header else None
    out: list[GoldRow] = []
    errors: list[DataError] = []
    for line, row in rows:
        source = row[source_col].strip()
        for lang, tcol, gcol in pairs:
            raw = row[gcol].strip()
            if is_skipped_label(raw):
                skipped[raw or "(empty)"] += 1
                continue
            if raw.upper() not in ("M", "F", "N"):
                errors.append(DataError(f"gold label {raw!r} unknown; GENDEROUS labels are M, F or N", path, line, gcol))
                continue
            if not row[tcol].strip():
                errors.append(DataError("empty translation", path, line, tcol))
                continue
            judge_col = recorded_columns.get(gcol)
            judged = row[judge_col].strip().upper() if judge_col else ""
            recorded = _mgf_to_label(judged, None, True) if judged in ("M", "F", "N") else None
            out.append(GoldRow(line, lang, source, row[tcol].strip(), _mgf_to_label(raw.upper(), None, True), raw, recorded))
    if errors:
        raise DataErrors(errors)
    if not out:
        raise DataError("no labelled rows in our languages", path)
    columns = ", ".join(f"{t}/{g}" for _, t, g in pairs)
    mapping = (
        f"GENDEROUS layout (source={source_col}; translation/gold {columns}); sources are gender-ambiguous by design: "
        "M/F → WRONGLY GENDERED, N → NEUTRAL"
    )
    return GoldSet(str(path), "genderous", out, mapping, skipped)
