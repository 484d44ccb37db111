"""Judge prompts: the system text of each format × language, the 8 exemplars, and the chat turns built from them.

System texts live as plain files, ``data/judge/prompts/{lang}/{format-slug}.txt`` (e.g. ``it/cross-pl.txt``), and
exemplars as JSON lines, ``data/judge/exemplars/{lang}.jsonl``: one full CROSS-P+L annotation per line,
``{"europarl_id", "source", "target", "phrases": [{"phrase", "gender", "gender_correctness"}], "label"}``. The
same annotation serves every format: :func:`gnt.judge.schema.project` cuts it down (MONO drops correctness and
folds the gendered labels, L drops the phrases), so the four formats see the same examples.

Users can point at other prompt or exemplar folders (e.g. the papers' official files). Those files are known to
carry defects (an exemplar that is not valid JSON, a duplicated exemplar), so loading validates every line and
reports each problem as ``file:line:key: message`` instead of silently feeding a judge a broken example. Defects
that make an exemplar unusable are errors (:class:`~gnt.data.errors.DataErrors` is raised listing all of them);
defects that only depart from the published design (not 8 exemplars, another label order, a label that does not
follow from the phrases) are warnings, kept on the loaded set so a run record can show them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from gnt.data.entry import LANGUAGE_NAMES, LANGUAGES, SourceKeyed, normalise_source
from gnt.data.errors import DataError, DataErrors, json_object_lines
from gnt.io import hash_json
from gnt.judge.schema import (
    CROSS_LABELS,
    JudgeFormat,
    consistency_problems,
    judge_format,
    normalise_label,
    project,
    schema_errors,
)
from gnt.paths import JUDGE_DIR

T = TypeVar("T")

DEFAULT_PROMPTS_DIR = JUDGE_DIR / "prompts"
DEFAULT_EXEMPLARS_DIR = JUDGE_DIR / "exemplars"
EXEMPLAR_REQUIRED_KEYS = ("source", "target", "phrases", "label")
EXEMPLAR_OPTIONAL_KEYS = ("europarl_id", "id")
#: The published exemplar order (Piergentili et al. 2025): two correct, two neutral, two wrong, two neutral.
EXEMPLAR_LABEL_PATTERN: tuple[str, ...] = ("CG", "CG", "N", "N", "WG", "WG", "N", "N")
EXPECTED_EXEMPLARS = len(EXEMPLAR_LABEL_PATTERN)
_SHORT = {"CORRECTLY GENDERED": "CG", "WRONGLY GENDERED": "WG", "NEUTRAL": "N"}


@dataclass(frozen=True)
class Exemplar(SourceKeyed):
    """One validated exemplar: a source, its translation and the full CROSS-P+L annotation."""

    source: str
    target: str
    phrases: tuple[dict[str, str], ...]
    label: str
    europarl_id: str = ""
    line: int = 0

    def annotation(self) -> dict[str, Any]:
        return {"phrases": [dict(p) for p in self.phrases], "label": self.label}


@dataclass(frozen=True)
class ExemplarSet:
    """The exemplars of one language with the file they came from and any non-fatal warnings."""

    lang: str
    path: str
    exemplars: tuple[Exemplar, ...]
    warnings: tuple[DataError, ...] = ()


@dataclass(frozen=True)
class JudgePrompt:
    """Everything a judge request of one format and language is built from."""

    fmt: JudgeFormat
    lang: str
    system: str
    exemplars: tuple[Exemplar, ...]
    system_path: str = ""
    exemplars_path: str = ""
    warnings: tuple[DataError, ...] = field(default=(), compare=False)

    def user_turn(self, source: str, translation: str) -> str:
        """``Source: "..."\\nTarget: "..."`` for CROSS formats, ``Target: "..."`` for MONO (docs/judge.md).

        The source and the translation are untrusted text (a model wrote the translation), so each is delimited as
        a JSON string (:func:`quoted`): a translation holding a line break and a forged ``Target:`` line stays
        inside its quotes, escaped, and can never pass for a second item or for the real translation.
        """
        if self.fmt.cross:
            return f"Source: {quoted(source)}\nTarget: {quoted(translation)}"
        return f"Target: {quoted(translation)}"

    @cached_property
    def _turns(self) -> tuple[tuple[str, str], ...]:
        turns: list[tuple[str, str]] = []
        for ex in self.exemplars:
            turns.append(("user", self.user_turn(ex.source, ex.target)))
            turns.append(("assistant", render_reply(project(ex.annotation(), self.fmt))))
        return tuple(turns)

    def exemplar_turns(self) -> list[dict[str, str]]:
        """The exemplars as user/assistant turns, each answer projected onto this format."""
        return [{"role": role, "content": content} for role, content in self._turns]

    def messages(self, source: str, translation: str) -> list[dict[str, str]]:
        """System turn, the exemplars as user/assistant turns, then the item to judge."""
        return [
            {"role": "system", "content": self.system},
            *self.exemplar_turns(),
            {"role": "user", "content": self.user_turn(source, translation)},
        ]

    @cached_property
    def fingerprint(self) -> str:
        """Content hash of the system text, the exemplar turns and the shape of the item's turn: part of the judge
        cache key, and what a trained judge adapter records it learned (any change is a different prompt)."""
        return hash_json({"format": self.fmt.name, "system": self.system, "turns": self.exemplar_turns(),
                          "item": self.user_turn("{source}", "{translation}")})


def quoted(text: str) -> str:
    """Untrusted text as one JSON string literal: in quotes, with quotes, backslashes, line breaks and control
    characters escaped (non-ASCII kept, so the judge reads the words as they are)."""
    return json.dumps(text, ensure_ascii=False)


def unquoted(field: str) -> str:
    """Inverse of :func:`quoted` (for whoever reads a user turn back: tests, fake judges)."""
    return json.loads(field)


def render_reply(obj: dict[str, Any]) -> str:
    """The JSON text of an assistant reply, compact and with non-ASCII kept (as a model would write it)."""
    return json.dumps(obj, ensure_ascii=False)


# ---------------------------------------------------------------------------------------------- system texts
def system_prompt_path(lang: str, fmt: str | JudgeFormat, prompts_dir: str | Path | None = None) -> Path:
    fmt = judge_format(fmt)
    return Path(prompts_dir or DEFAULT_PROMPTS_DIR) / lang / f"{fmt.slug}.txt"


def load_system_prompt(lang: str, fmt: str | JudgeFormat, prompts_dir: str | Path | None = None) -> str:
    """The system text of one format and language; an absent or empty file is an error naming the path."""
    path = system_prompt_path(lang, fmt, prompts_dir)
    if not path.is_file():
        raise DataError(f"judge system prompt not found for {judge_format(fmt).name} / {lang}", path)
    text = path.read_text(encoding="utf-8").strip()
    if not text:
        raise DataError("empty judge system prompt", path)
    return text


# ---------------------------------------------------------------------------------------------- exemplars
def exemplars_path(lang: str, exemplars_dir: str | Path | None = None) -> Path:
    return Path(exemplars_dir or DEFAULT_EXEMPLARS_DIR) / f"{lang}.jsonl"


def check_exemplar_file(path: str | Path, lang: str = "") -> tuple[list[Exemplar], list[DataError], list[DataError]]:
    """Parse and validate an exemplar file; returns ``(exemplars, errors, warnings)`` and never raises for content.

    Errors: a line that is not valid JSON or not an object, missing or unknown keys, an empty source or target,
    a label outside the CROSS enum, phrases that break the CROSS-P+L schema (1–10 objects with exactly ``phrase``,
    ``gender`` M/F/N and ``gender_correctness`` correct/wrong), a duplicated exemplar (same source, or same
    Europarl id, as an earlier line). Warnings: a label that does not follow from the phrases, a count other than 8,
    a label order other than CG, CG, N, N, WG, WG, N, N.
    """
    path = Path(path)
    where = str(path)
    errors: list[DataError] = []
    warnings: list[DataError] = []
    exemplars: list[Exemplar] = []
    if not path.is_file():
        return [], [DataError(f"exemplar file not found{f' for language {lang!r}' if lang else ''}", where)], []
    seen_sources: dict[str, int] = {}
    seen_ids: dict[str, int] = {}
    for number, obj in json_object_lines(path):
        if isinstance(obj, DataError):
            errors.append(obj)
            continue
        row_errors = _row_errors(obj, where, number)
        if row_errors:
            errors.extend(row_errors)
            continue
        label = normalise_label(obj["label"])
        annotation = {"phrases": obj["phrases"], "label": label}
        for problem in consistency_problems(annotation):
            warnings.append(DataError(f"label does not follow from the phrases: {problem}", where, number, "label"))
        skey = normalise_source(obj["source"])
        ex_id = str(obj.get("europarl_id") or obj.get("id") or "").strip()
        if skey in seen_sources:
            errors.append(
                DataError(f"duplicated exemplar: same source as line {seen_sources[skey]}", where, number, "source")
            )
            continue
        if ex_id and ex_id in seen_ids:
            errors.append(
                DataError(f"duplicated exemplar: Europarl id {ex_id!r} already on line {seen_ids[ex_id]}", where, number, "europarl_id")
            )
            continue
        seen_sources[skey] = number
        if ex_id:
            seen_ids[ex_id] = number
        exemplars.append(
            Exemplar(
                source=obj["source"].strip(),
                target=obj["target"].strip(),
                phrases=tuple(dict(p) for p in obj["phrases"]),
                label=label,
                europarl_id=ex_id,
                line=number,
            )
        )
    if not errors:
        warnings.extend(_design_warnings(exemplars, where))
    return exemplars, errors, warnings


def _row_errors(obj: dict[str, Any], where: str, number: int) -> list[DataError]:
    errors: list[DataError] = []
    missing = [k for k in EXEMPLAR_REQUIRED_KEYS if k not in obj]
    unknown = [k for k in obj if k not in EXEMPLAR_REQUIRED_KEYS + EXEMPLAR_OPTIONAL_KEYS]
    if missing:
        errors.append(DataError(f"missing key(s): {', '.join(missing)}", where, number, missing[0]))
    if unknown:
        allowed = ", ".join(EXEMPLAR_REQUIRED_KEYS + EXEMPLAR_OPTIONAL_KEYS)
        errors.append(DataError(f"unknown key(s): {', '.join(unknown)} (allowed: {allowed})", where, number, unknown[0]))
    for key in ("source", "target"):
        if key in obj and (not isinstance(obj[key], str) or not obj[key].strip()):
            errors.append(DataError(f"{key} must be a non-empty string", where, number, key))
    if "label" in obj:
        label = normalise_label(obj["label"]) if isinstance(obj["label"], str) else obj["label"]
        if label not in CROSS_LABELS:
            errors.append(
                DataError(f"label {obj['label']!r} is outside the enum {list(CROSS_LABELS)}", where, number, "label")
            )
    if "phrases" in obj:
        probe = {"phrases": obj["phrases"], "label": CROSS_LABELS[0]}
        for problem in schema_errors(probe, "CROSS-P+L"):
            errors.append(DataError(f"phrases break the schema: {problem}", where, number, "phrases"))
    return errors


def _design_warnings(exemplars: list[Exemplar], where: str) -> list[DataError]:
    warnings: list[DataError] = []
    if len(exemplars) != EXPECTED_EXEMPLARS:
        warnings.append(DataError(f"{len(exemplars)} exemplars; the published design uses {EXPECTED_EXEMPLARS}", where))
    pattern = tuple(_SHORT.get(e.label, e.label) for e in exemplars)
    if len(exemplars) == EXPECTED_EXEMPLARS and pattern != EXEMPLAR_LABEL_PATTERN:
        warnings.append(
            DataError(
                f"label order {', '.join(pattern)} differs from the published {', '.join(EXEMPLAR_LABEL_PATTERN)}", where
            )
        )
    return warnings


def load_exemplars(lang: str, exemplars_dir: str | Path | None = None, path: str | Path | None = None) -> ExemplarSet:
    """Load one language's exemplars; raise :class:`DataErrors` listing every defect with its file and line."""
    path = Path(path) if path is not None else exemplars_path(lang, exemplars_dir)
    exemplars, errors, warnings = check_exemplar_file(path, lang)
    if errors:
        raise DataErrors(errors)
    if not exemplars:
        raise DataErrors([DataError("no exemplars in the file", str(path))])
    return ExemplarSet(lang, str(path), tuple(exemplars), tuple(warnings))


def first_exemplars(exemplars: Sequence[T], n_exemplars: int | None) -> Sequence[T]:
    """The first ``n_exemplars`` of a judge prompt's exemplars (None: all of them, 0: zero-shot)."""
    if n_exemplars is None:
        return exemplars
    if n_exemplars < 0:
        raise ValueError(f"n_exemplars must be >= 0 or None (got {n_exemplars})")
    return exemplars[:n_exemplars]


def load_prompt(
    lang: str,
    fmt: str | JudgeFormat,
    prompts_dir: str | Path | None = None,
    exemplars_dir: str | Path | None = None,
    n_exemplars: int | None = None,
) -> JudgePrompt:
    """The system text and exemplars of one (format, language); ``n_exemplars`` keeps the first n (0 = zero-shot)."""
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; expected one of {LANGUAGES}")
    fmt = judge_format(fmt)
    system = load_system_prompt(lang, fmt, prompts_dir)
    exemplar_set = load_exemplars(lang, exemplars_dir) if n_exemplars != 0 else None
    exemplars = first_exemplars(exemplar_set.exemplars if exemplar_set else (), n_exemplars)
    return JudgePrompt(
        fmt=fmt,
        lang=lang,
        system=system,
        exemplars=exemplars,
        system_path=str(system_prompt_path(lang, fmt, prompts_dir)),
        exemplars_path=exemplar_set.path if exemplar_set else "",
        warnings=exemplar_set.warnings if exemplar_set else (),
    )


def check_prompt_files(
    langs: Iterable[str] = LANGUAGES,
    formats: Iterable[str | JudgeFormat] = ("MONO-L", "MONO-P+L", "CROSS-L", "CROSS-P+L"),
    prompts_dir: str | Path | None = None,
    exemplars_dir: str | Path | None = None,
) -> tuple[list[DataError], list[DataError]]:
    """Every error and warning of the prompt and exemplar files of ``langs`` × ``formats`` (for ``check``)."""
    errors: list[DataError] = []
    warnings: list[DataError] = []
    for lang in langs:
        for fmt in formats:
            try:
                load_system_prompt(lang, fmt, prompts_dir)
            except DataError as exc:
                errors.append(exc)
        _, ex_errors, ex_warnings = check_exemplar_file(exemplars_path(lang, exemplars_dir), lang)
        errors.extend(ex_errors)
        warnings.extend(ex_warnings)
    return errors, warnings


def exemplar_source_keys(
    langs: Iterable[str] = LANGUAGES, exemplars_dir: str | Path | None = None
) -> set[str]:
    """Source keys of every exemplar that loads: the rows the evaluation must exclude (docs/judge.md).

    Files that are missing or defective are skipped here (loading them for judging reports the defects).
    """
    keys: set[str] = set()
    for lang in langs:
        exemplars, _, _ = check_exemplar_file(exemplars_path(lang, exemplars_dir), lang)
        keys.update(e.source_key for e in exemplars)
    return keys


def language_name(lang: str) -> str:
    return LANGUAGE_NAMES.get(lang, lang)
