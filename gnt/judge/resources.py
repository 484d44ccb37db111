"""Judge resources in the published fbk-NEUTR-evAL layout, read as they are and checked line by line.

The LLM-as-a-judge release of Piergentili et al. ships one folder, ``resources/``, holding

* ``prompts/{lang}/{name}``: the system text of one format (no file extension);
* ``shots/{lang}/{name}.tsv``: the few-shot examples of that format, a TSV with the columns ``src``, ``tgt`` and
  ``out`` (the expected JSON reply, written on one line);
* ``schemas/{name}.json``: the JSON schema of a reply,

where ``name`` is ``mono-l``, ``mono-p_l``, ``cross-l`` or ``cross-p_l`` (our MONO-L, MONO-P+L, CROSS-L,
CROSS-P+L). Unlike our own exemplars (one full annotation projected onto every format) each format has its own
shots there, so the four files of a language can disagree with each other, and the published ones do. Reading
them checks, reporting each problem as ``file:line: message``:

* errors (the shot cannot be shown to a judge): a missing column or a row with the wrong number of fields, an
  ``out`` that is not valid JSON, a label outside the format's label set (e.g. a CROSS label in a MONO file), a
  reply that breaks the format's schema;
* warnings (the shot loads but teaches something wrong): an annotated phrase that does not occur in its target
  text, a label that does not follow from the phrases, the same source labelled neutral in one format and
  gendered in another (or correctly gendered in one CROSS format and wrongly in the other), a schema file whose
  labels differ from ours, and a language that lacks some formats (reported; judging that format for that
  language is then an error naming the missing files).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gnt.data.entry import LANGUAGES, normalise_source
from gnt.data.errors import DataError, DataErrors
from gnt.judge.prompts import Exemplar, JudgePrompt, first_exemplars
from gnt.judge.schema import (
    FORMATS,
    NEUTRAL,
    JudgeFormat,
    consistency_problems,
    judge_format,
    normalise_label,
    schema_errors,
)

#: File names of the published layout → our format names.
FILE_FORMATS: dict[str, str] = {"mono-l": "MONO-L", "mono-p_l": "MONO-P+L", "cross-l": "CROSS-L", "cross-p_l": "CROSS-P+L"}
FORMAT_FILES: dict[str, str] = {v: k for k, v in FILE_FORMATS.items()}
SHOT_COLUMNS = ("src", "tgt", "out")


def is_resources_dir(path: str | Path) -> bool:
    """True for a folder in the published layout (``prompts/`` and ``shots/`` side by side)."""
    path = Path(path)
    return (path / "prompts").is_dir() and (path / "shots").is_dir()


@dataclass(frozen=True)
class Shot:
    """One parsed shot: where it came from, the texts and the reply in its own format."""

    path: str
    line: int
    lang: str
    fmt: JudgeFormat
    source: str
    target: str
    reply: dict[str, Any]

    @property
    def label(self) -> str:
        return normalise_label(self.reply.get("label", ""))

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def exemplar(self) -> Exemplar:
        """The shot as an :class:`Exemplar`; its reply is already in its format, so projecting it changes nothing."""
        return Exemplar(self.source, self.target, tuple(dict(p) for p in self.reply.get("phrases", [])), self.label, line=self.line)


@dataclass
class ResourceCheck:
    """Everything found in a resources folder: the usable shots per (language, format), errors and warnings."""

    root: str
    shots: dict[tuple[str, str], list[Shot]] = field(default_factory=dict)
    prompts: dict[tuple[str, str], str] = field(default_factory=dict)
    errors: list[DataError] = field(default_factory=list)
    warnings: list[DataError] = field(default_factory=list)


def shots_path(root: str | Path, lang: str, fmt: str | JudgeFormat) -> Path:
    return Path(root) / "shots" / lang / f"{FORMAT_FILES[judge_format(fmt).name]}.tsv"


def prompt_path(root: str | Path, lang: str, fmt: str | JudgeFormat) -> Path:
    return Path(root) / "prompts" / lang / FORMAT_FILES[judge_format(fmt).name]


def _phrase_in_target(phrase: str, target: str) -> bool:
    """Case-insensitive, whitespace-insensitive substring test (what a reader of the shot would check)."""
    fold = lambda s: " ".join(s.casefold().split())  # noqa: E731
    return fold(phrase) in fold(target)


def read_shot_file(path: Path, lang: str, fmt: JudgeFormat) -> tuple[list[Shot], list[DataError], list[DataError]]:
    """Parse one ``shots/{lang}/{name}.tsv``; returns ``(shots, errors, warnings)`` and never raises for content."""
    errors: list[DataError] = []
    warnings: list[DataError] = []
    shots: list[Shot] = []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return [], [DataError(f"not UTF-8: {exc.reason} at byte {exc.start}", path)], []
    rows = list(csv.reader(text.splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE))
    header = [h.strip() for h in rows[0]] if rows else []
    missing = [c for c in SHOT_COLUMNS if c not in header]
    if missing:
        return [], [DataError(f"missing column(s) {', '.join(missing)}; expected the columns {' '.join(SHOT_COLUMNS)}", path, 1)], []
    index = {c: header.index(c) for c in SHOT_COLUMNS}
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            errors.append(DataError(f"{len(row)} fields, the header has {len(header)} (a tab inside a text?)", path, number))
            continue
        source, target, out = (row[index[c]].strip() for c in SHOT_COLUMNS)
        if not source or not target:
            errors.append(DataError("empty src or tgt", path, number, "src" if not source else "tgt"))
            continue
        try:
            reply = json.loads(out)
        except json.JSONDecodeError as exc:
            errors.append(DataError(f"out is not valid JSON: {exc.msg} (character {exc.colno})", path, number, "out"))
            continue
        if not isinstance(reply, dict):
            errors.append(DataError(f"out must be a JSON object, found {type(reply).__name__}", path, number, "out"))
            continue
        label = normalise_label(reply.get("label", ""))
        if label not in fmt.labels:
            hint = " (a CROSS label: MONO formats only say GENDERED or NEUTRAL)" if not fmt.cross and label in FORMATS["CROSS-L"].labels else ""
            errors.append(
                DataError(f"label {reply.get('label')!r} is outside the {fmt.name} label set {list(fmt.labels)}{hint}", path, number, "out")
            )
            continue
        reply = {**reply, "label": label}
        problems = [p for p in schema_errors(reply, fmt) if not p.startswith("$.label")]
        if problems:
            errors.extend(DataError(f"reply breaks the {fmt.name} schema: {p}", path, number, "out") for p in problems)
            continue
        for phrase in dict.fromkeys(p["phrase"] for p in reply.get("phrases", [])):
            if not _phrase_in_target(phrase, target):
                warnings.append(DataError(f"annotated phrase {phrase!r} does not occur in the target text", path, number, "out"))
        if fmt.phrases and fmt.cross:
            warnings.extend(
                DataError(f"label does not follow from the phrases: {p}", path, number, "out") for p in consistency_problems(reply)
            )
        elif fmt.phrases and label == NEUTRAL and any(p["gender"] in ("M", "F") for p in reply["phrases"]):
            warnings.append(DataError("label does not follow from the phrases: NEUTRAL but some phrase is gendered (M/F)", path, number, "out"))
        shots.append(Shot(str(path), number, lang, fmt, source, target, reply))
    return shots, errors, warnings


def _cross_format_warnings(shots: list[Shot]) -> list[DataError]:
    """The same source (same language) labelled incompatibly in two formats, and targets that differ."""
    warnings: list[DataError] = []
    first: dict[str, Shot] = {}
    first_cross: dict[str, Shot] = {}
    for shot in shots:
        key = normalise_source(shot.source)
        earlier = first.setdefault(key, shot)
        if earlier is not shot:
            if (earlier.label == NEUTRAL) != (shot.label == NEUTRAL):
                warnings.append(
                    DataError(
                        f"same source labelled {shot.label} here ({shot.fmt.name}) but {earlier.label} in {earlier.fmt.name} "
                        f"({earlier.where}): one of them is wrong",
                        shot.path, shot.line, "out",
                    )
                )
            if " ".join(earlier.target.split()) != " ".join(shot.target.split()):
                warnings.append(
                    DataError(f"same source with another target than in {earlier.fmt.name} ({earlier.where})", shot.path, shot.line, "tgt")
                )
        if shot.fmt.cross:
            other = first_cross.setdefault(key, shot)
            if other is not shot and other.label != shot.label and NEUTRAL not in (other.label, shot.label):
                warnings.append(
                    DataError(
                        f"same source labelled {shot.label} here ({shot.fmt.name}) but {other.label} in {other.fmt.name} ({other.where})",
                        shot.path, shot.line, "out",
                    )
                )
    return warnings


def _schema_warnings(root: Path) -> list[DataError]:
    warnings = []
    for name, fmt_name in FILE_FORMATS.items():
        path = root / "schemas" / f"{name}.json"
        if not path.is_file():
            continue
        try:
            enum = json.loads(path.read_text(encoding="utf-8"))["properties"]["label"]["enum"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            warnings.append(DataError(f"schema unreadable ({exc.__class__.__name__}); the built-in {fmt_name} schema is used", path))
            continue
        if set(enum) != set(FORMATS[fmt_name].labels):
            warnings.append(DataError(f"label enum {enum} differs from {fmt_name}'s {list(FORMATS[fmt_name].labels)}", path))
    return warnings


def check_resources(
    root: str | Path, langs: Iterable[str] = LANGUAGES, formats: Iterable[str | JudgeFormat] = tuple(FORMATS)
) -> ResourceCheck:
    """Read every prompt and shot file of ``langs`` × ``formats`` under ``root`` and collect all their defects."""
    root = Path(root)
    result = ResourceCheck(str(root))
    if not is_resources_dir(root):
        result.errors.append(DataError("not a judge resources folder: expected prompts/ and shots/ inside", root))
        return result
    formats = [judge_format(f) for f in formats]
    for lang in langs:
        lang_shots: list[Shot] = []
        lacking = []
        for fmt in formats:
            ppath, spath = prompt_path(root, lang, fmt), shots_path(root, lang, fmt)
            if not ppath.is_file() and not spath.is_file():
                lacking.append(fmt.name)
                continue
            if not ppath.is_file():
                result.errors.append(DataError(f"shots exist for {fmt.name} / {lang} but its prompt is missing", ppath))
            else:
                text = ppath.read_text(encoding="utf-8").strip()
                if text:
                    result.prompts[(lang, fmt.name)] = text
                else:
                    result.errors.append(DataError("empty judge system prompt", ppath))
            if not spath.is_file():
                result.warnings.append(DataError(f"no shots for {fmt.name} / {lang}: that format runs zero-shot", spath))
                continue
            shots, errors, warnings = read_shot_file(spath, lang, fmt)
            result.errors.extend(errors)
            result.warnings.extend(warnings)
            result.shots[(lang, fmt.name)] = shots
            lang_shots.extend(shots)
        if lacking and len(lacking) == len(formats):
            result.warnings.append(DataError(f"language {lang} has no prompt or shots at all", root / "prompts" / lang))
        elif lacking:
            files = ", ".join(FORMAT_FILES[n] for n in lacking)
            result.warnings.append(
                DataError(f"language {lang} lacks {', '.join(lacking)} (no prompts/{lang}/{{{files}}}): those formats cannot judge {lang}",
                          root / "prompts" / lang)
            )
        result.warnings.extend(_cross_format_warnings(lang_shots))
    result.warnings.extend(_schema_warnings(root))
    return result


def load_resource_prompt(
    root: str | Path, lang: str, fmt: str | JudgeFormat, n_exemplars: int | None = None, skip_bad_shots: bool = False
) -> JudgePrompt:
    """The judge prompt of one (language, format) from a resources folder.

    Any error of those files is raised, unless ``skip_bad_shots``: then the defective shots are left out (each
    kept as a warning saying so) and the prompt runs with the shots that remain. A missing or empty prompt file is
    always an error.
    """
    fmt = judge_format(fmt)
    check = check_resources(root, [lang], [fmt])
    if (lang, fmt.name) not in check.prompts and not check.errors:
        raise DataError(f"no {fmt.name} judge prompt for {lang} in this resources folder", prompt_path(root, lang, fmt))
    shot_errors = [e for e in check.errors if e.path == str(shots_path(root, lang, fmt)) and e.line]
    if check.errors and (not skip_bad_shots or len(shot_errors) != len(check.errors)):
        raise DataErrors(check.errors)
    check.warnings.extend(DataError(f"shot left out (skip_bad_shots): {e.message}", e.path, e.line, e.column) for e in shot_errors)
    shots = first_exemplars(check.shots.get((lang, fmt.name), []), n_exemplars)
    return JudgePrompt(
        fmt=fmt,
        lang=lang,
        system=check.prompts[(lang, fmt.name)],
        exemplars=tuple(s.exemplar() for s in shots),
        system_path=str(prompt_path(root, lang, fmt)),
        exemplars_path=str(shots_path(root, lang, fmt)),
        warnings=tuple(check.warnings),
    )


def resource_source_keys(root: str | Path, langs: Iterable[str] = LANGUAGES) -> set[str]:
    """Source keys of every shot that parses: rows an evaluation must leave out (a judge saw them as examples)."""
    from gnt.data.entry import source_key

    check = check_resources(root, langs)
    return {source_key(s.source) for shots in check.shots.values() for s in shots}
