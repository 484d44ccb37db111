"""Reading an evaluation result for attribution: the run record, the generations, the judgments, the sources.

Layout written by the evaluator (``gnt.evaluation``): ``<out>/<model>/record.json`` (model id, adapter path,
grid settings), ``generations.jsonl`` (one record per generated row) and, once judged, ``judgments.jsonl``
(keyed by the generation key, with ``neutral`` and ``label``). Fields are read by the names the evaluator writes
(:mod:`gnt.results_schema`); a record lacking a required one is a clear error naming the fields it has.

A row's English source is needed to re-render its prompt: it is taken from the generation record when present,
else from the evaluation data (Entry JSON lines such as ``eval/mgente_test.jsonl`` or an mGeNTE TSV/directory)
looked up by (row id, language).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gnt.filenames import GENERATIONS, JUDGMENTS, RECORD
from gnt.io import read_json, read_jsonl
from gnt.prompts.grid import DEFAULT_SHOT_SEED
from gnt.results_schema import EvalRecord, GenerationRecord


class ResultError(ValueError):
    """The evaluation result cannot be used as given; the message says which file and field."""

    exit_code = 2


@dataclass(frozen=True)
class EvalRow:
    """One evaluated row, with what attribution needs: its prompt inputs, raw output and outcomes."""

    id: str
    lang: str
    set: str
    cell: str
    raw: str | None
    source: str | None = None
    gender: str | None = None
    label: str | None = None
    translation: str | None = None
    error: str | None = None
    ref_g: str | None = None
    ref_n: tuple[str, ...] = ()
    key: str | None = None
    source_key: str | None = None
    judged_neutral: bool | None = None
    prompt_hash: str | None = None

    @property
    def expected_label(self) -> str:
        return "GENDERED" if self.set == "Set-G" else "NEUTRAL"

    def outcomes(self) -> dict[str, str | None]:
        """The outcome of each kind: ``label`` (correct/wrong label), ``judged`` (neutral/gendered translation),
        ``gnt`` (correct/wrong gender-neutral translation: Set-N neutral, Set-G gendered); ``None`` when unknown."""
        label = None if self.label is None else ("correct_label" if self.label == self.expected_label else "wrong_label")
        judged = None if self.judged_neutral is None else ("neutral" if self.judged_neutral else "gendered")
        gnt = None
        if self.judged_neutral is not None:
            gnt = "correct" if self.judged_neutral == (self.set == "Set-N") else "wrong"
        return {"label": label, "judged": judged, "gnt": gnt}


def _refs(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


def judged_neutral(judgment: dict) -> bool | None:
    """The judge's binary ``neutral`` (``None`` for a judge error); only a record without that field falls back to
    its label (NEUTRAL vs any gendered label)."""
    if "neutral" in judgment:
        value = judgment["neutral"]
        return value if isinstance(value, bool) else None
    label = judgment.get("label")
    if isinstance(label, str) and label:
        return label.upper() == "NEUTRAL"
    return None


def read_judgments(path: str | Path) -> dict[str, bool | None]:
    """Generation key → judged neutral (``None`` for a judge error)."""
    out: dict[str, bool | None] = {}
    for record in read_jsonl(path, skip_bad=True):
        if record.get("key") is not None:
            out[str(record["key"])] = judged_neutral(record)
    return out


def source_lookup(data: str | Path) -> dict[tuple[str, str], Any]:
    """(row id, lang) → Entry from Entry JSON lines or anything :func:`gnt.data.mgente.load_mgente` reads."""
    from gnt.data.entry import Entry

    path = Path(data)
    if path.is_file() and path.suffix == ".jsonl":
        entries = [Entry.from_record(r) for r in read_jsonl(path)]
    else:
        from gnt.data.mgente import load_mgente

        entries = load_mgente(path)
    return {(e.id, e.lang): e for e in entries}


def row_from_record(
    record: GenerationRecord, judgments: dict[str, bool | None], entries: dict[tuple[str, str], Any] | None
) -> EvalRow:
    """One :class:`EvalRow` from a generation record, completed from the data when the record lacks a field."""
    missing = [name for name in ("id", "lang", "cell") if record.get(name) is None]
    if missing:
        raise ResultError(f"generation record lacks {'/'.join(missing)} (fields present: {sorted(record)})")
    row_id, lang = str(record["id"]), record["lang"]
    entry = entries.get((row_id, lang)) if entries else None
    key = record.get("key")
    return EvalRow(
        id=row_id,
        lang=lang,
        set=record.get("set") or (entry.set if entry else ""),
        cell=record["cell"],
        raw=record.get("raw"),
        source=record.get("source") or (entry.source if entry else None),
        gender=record.get("gender") or (entry.gender if entry else None),
        label=record.get("label"),
        translation=record.get("translation"),
        error=record.get("error"),
        ref_g=record.get("ref_g") or (entry.ref_g if entry else None),
        ref_n=_refs(record.get("ref_n")) or (tuple(entry.ref_n) if entry else ()),
        key=str(key) if key is not None else None,
        source_key=record.get("source_key"),
        judged_neutral=judgments.get(str(key)) if key is not None else None,
        prompt_hash=record.get("prompt_hash"),
    )


def _described(record: EvalRecord) -> dict:
    model = record.get("model")
    return model if isinstance(model, dict) else {}


def recorded_model(record: EvalRecord) -> str | None:
    """The base model of an evaluator record (``model.base_model``)."""
    return _described(record).get("base_model") or None


def recorded_adapter(record: EvalRecord) -> str | None:
    """The LoRA adapter folder of an evaluator record (``model.adapter.path``), if the model had one."""
    adapter = _described(record).get("adapter")
    return adapter.get("path") if isinstance(adapter, dict) else None


def recorded_data(record: EvalRecord) -> str | None:
    """Where the evaluated rows came from (``rows.source``: an mGeNTE folder/TSV or ``eval/mgente_test.jsonl``)."""
    value = (record.get("rows") or {}).get("source")
    return value if isinstance(value, str) else None


def recorded_grid(record: EvalRecord) -> tuple[int, str | None]:
    """(shot-order seed, prompts directory) of an evaluator record (``grid.seed``, ``grid.prompts_dir``)."""
    grid = record.get("grid") or {}
    seed = grid.get("seed")
    return int(seed if seed is not None else DEFAULT_SHOT_SEED), grid.get("prompts_dir")


@dataclass
class EvalResult:
    """An evaluation result folder read for attribution."""

    directory: Path
    record: EvalRecord
    rows: list[EvalRow]

    def cells(self) -> list[str]:
        return sorted({r.cell for r in self.rows})

    def model_path(self) -> str | None:
        return recorded_model(self.record)

    def adapter_path(self) -> str | None:
        return recorded_adapter(self.record)

    def grid_settings(self) -> tuple[int, str | None]:
        """(shot seed, prompts directory) used for the prompts, as recorded."""
        return recorded_grid(self.record)

    def system_role(self) -> bool | None:
        """Whether the evaluator rendered a system turn (recorded; ``None``: detect from the tokenizer)."""
        value = self.record.get("system_role")
        return value if isinstance(value, bool) else None

    def data_path(self) -> str | None:
        return recorded_data(self.record)


def read_result(directory: str | Path, data: str | Path | None = None, cells: Iterable[str] | None = None) -> EvalResult:
    """Read ``record.json``, ``generations.jsonl`` and (if present) ``judgments.jsonl`` of one model's result."""
    directory = Path(directory)
    gen_path = directory / GENERATIONS
    if not gen_path.is_file():
        raise ResultError(f"{gen_path} not found: point at <out>/<model>/ of an evaluation result")
    record = read_json(directory / RECORD) if (directory / RECORD).is_file() else {}
    judgments = read_judgments(directory / JUDGMENTS) if (directory / JUDGMENTS).is_file() else {}
    wanted = set(cells) if cells else None
    raw = [r for r in read_jsonl(gen_path, skip_bad=True) if wanted is None or r.get("cell") in wanted]
    entries = None
    if any(r.get("source") is None for r in raw):
        data = data or recorded_data(record)
        if data is None:
            raise ResultError(
                f"{gen_path} holds no source texts and {directory / RECORD} names no data file: pass --data "
                "(the evaluation rows, e.g. outputs/data/eval/mgente_test.jsonl or an mGeNTE directory)"
            )
        entries = source_lookup(data)
    rows = [row_from_record(r, judgments, entries) for r in raw]
    missing = [r.id for r in rows if not r.source]
    if missing:
        raise ResultError(f"no English source for {len(missing)} row(s) (e.g. {missing[:3]}): check --data")
    return EvalResult(directory, record, rows)
