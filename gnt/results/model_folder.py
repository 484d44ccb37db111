"""One model folder of a results folder: the only code that writes it, and the one reader that composes it.

A model folder holds one *part* per step that wrote there (:mod:`gnt.results.part`): the grid sweep's
generations, metrics and record, the judge's judgments and summary, xCOMET's rows and summary. Each step writes
its own part through :meth:`ModelFolder.write` and never opens another step's files to merge into them. A reader
gets the composed view (:meth:`ModelFolder.metrics`): the grid's metrics with the judge's and xCOMET's metrics
dropped into the blocks of the same name. Which step ran first therefore cannot change what a reader sees, and a
part that is damaged, or was computed from other generations than the folder now holds, is left out with the
reason instead of being mixed in.

The templated suite and attribution write parts in sub-folders of a model folder (``templated/``,
``attribution/<cell>/<method>/``) with the same writer (:func:`gnt.results.part.write_part`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gnt.filenames import (
    GENERATIONS,
    JUDGE_SUMMARY,
    JUDGMENTS,
    LEXICAL_JUDGMENTS,
    METRICS,
    PREFERENCE,
    RECORD,
    XCOMET_ROWS,
    XCOMET_SUMMARY,
)
from gnt.results.part import PartCheck, Payload, check_part, format_state, write_part
from gnt.results_schema import (
    EVAL_RECORD_FORMAT,
    JUDGE_SUMMARY_FORMAT,
    METRIC_SECTIONS,
    METRICS_FORMAT,
    XCOMET_SUMMARY_FORMAT,
    EvalRecord,
    GenerationRecord,
    GridMetrics,
    JudgeSummary,
    Judgment,
    Metrics,
    PreferenceRecord,
    XcometRow,
    XcometSummary,
)

GRID, JUDGE, XCOMET = "grid", "judge", "xcomet"


@dataclass(frozen=True)
class Part:
    """One step's part of a model folder: its record (written last), its format tag, the files it may hold, the
    files of the grid's part it is computed from, and the command that writes it again."""

    record: str
    format: str
    files: tuple[str, ...]
    reads: tuple[str, ...]
    rewrite: str
    lifts: tuple[str, ...] = ()
    """Keys of its record a reader puts at the top of the composed metrics (the judge's ``judge`` block)."""


PARTS: dict[str, Part] = {
    GRID: Part(RECORD, EVAL_RECORD_FORMAT, (GENERATIONS, METRICS, PREFERENCE), (),
               "rerun eval/evaluate.py with the same recipe and out_dir (cached generations are reused)"),
    JUDGE: Part(JUDGE_SUMMARY, JUDGE_SUMMARY_FORMAT, (JUDGMENTS, LEXICAL_JUDGMENTS), (GENERATIONS,),
                "rerun eval/judge.py on the results folder (cached judgments are reused)", lifts=("judge",)),
    XCOMET: Part(XCOMET_SUMMARY, XCOMET_SUMMARY_FORMAT, (XCOMET_ROWS,), (GENERATIONS,),
                 "rerun eval/comet.py on the results folder (cached scores are reused)"),
}
"""The parts of a model folder, in the order a reader composes their metrics."""

SCHEMAS: dict[str, Any] = {
    GENERATIONS: GenerationRecord, METRICS: GridMetrics, PREFERENCE: PreferenceRecord, RECORD: EvalRecord,
    JUDGMENTS: Judgment, LEXICAL_JUDGMENTS: Judgment, JUDGE_SUMMARY: JudgeSummary,
    XCOMET_ROWS: XcometRow, XCOMET_SUMMARY: XcometSummary,
}
"""The declared shape of each file of a model folder (of each line, for JSON lines): :mod:`gnt.results_schema`."""


@dataclass(frozen=True)
class ModelFolder:
    """The folder of model ``name`` inside the results folder ``root`` (``base``, ``sft/checkpoint-8``)."""

    root: Path
    name: str

    @property
    def path(self) -> Path:
        return Path(self.root) / self.name

    # ------------------------------------------------------------------------------------------- writing
    def write(self, part: str, files: Mapping[str, Payload], record: Mapping[str, Any], *,
              keep: Iterable[str] = (), remove: Iterable[str] = ()) -> None:
        """Write one step's part: its files, then its record naming their sizes and hashes (and, for a part
        computed from the grid's files, the hashes those had). Only this step's own files are touched."""
        spec = PARTS[part]
        foreign = [name for name in [*files, *keep, *remove] if name not in spec.files]
        if foreign:
            raise ValueError(f"the {part} part of a model folder holds {', '.join(spec.files)}, not {', '.join(foreign)}")
        inputs = None
        if spec.reads:
            recorded = self.check(GRID)
            if not recorded.ok:
                raise DamagedResults(f"{self.name}: {recorded.problem}; {PARTS[GRID].rewrite}")
            inputs = {name: recorded.record["files"][name]["sha256"] for name in spec.reads}
        write_part(self.path, files, {"format": spec.format, **record}, record_name=spec.record, keep=keep,
                   remove=remove, inputs=inputs)

    # ------------------------------------------------------------------------------------------- checking
    def check(self, part: str) -> PartCheck:
        """Whether ``part`` is whole (:func:`gnt.results.part.check_part`) and, for a part computed from the
        grid's files, computed from the files the folder holds now (else ``damaged``, as stale)."""
        spec = PARTS[part]
        found = check_part(self.path, spec.record, spec.format)
        if not found.ok or not spec.reads:
            return found
        grid = self.check(GRID)
        if not grid.ok:
            return PartCheck("damaged", found.record, f"{grid.problem} (the {part} part is computed from it)")
        inputs = found.record.get("inputs") or {}
        for name in spec.reads:
            if inputs.get(name) != ((grid.record["files"].get(name) or {}).get("sha256")):
                return PartCheck("damaged", found.record, f"{self.path / spec.record} was computed from another "
                                                         f"{name} than the folder holds now")
        return found

    def problem(self, part: str) -> str | None:
        """Why ``part`` cannot be used, with the command that writes it again; None when it can (or is absent)."""
        found = self.check(part)
        if found.ok or found.state == "absent":
            return None
        return f"{found.problem}: {PARTS[part].rewrite}"

    def record(self) -> EvalRecord:
        """The grid's record.json, whole and of the current format; :class:`DamagedResults` otherwise."""
        found = self.check(GRID)
        if not found.ok:
            raise DamagedResults(f"{self.name}: {found.problem}; {PARTS[GRID].rewrite}")
        return found.record  # type: ignore[return-value]

    # ------------------------------------------------------------------------------------------- reading
    def generations(self) -> list[dict[str, Any]]:
        """The generation records (the grid's part must be whole: a step never works on half a file)."""
        self.record()
        return list(self.iter_lines(GENERATIONS))

    def grid_metrics(self) -> GridMetrics:
        """metrics.json as the grid wrote it (its part whole, its format current); :class:`DamagedResults` else."""
        self.record()
        stored = json.loads((self.path / METRICS).read_text(encoding="utf-8"))
        if format_state(stored.get("format") if isinstance(stored, dict) else None, METRICS_FORMAT) != "ok":
            raise DamagedResults(f"{self.path / METRICS} is not of format {METRICS_FORMAT!r}; {PARTS[GRID].rewrite}")
        grid: GridMetrics = stored  # checked: an object of the current format
        return grid

    def iter_lines(self, name: str) -> Iterator[dict[str, Any]]:
        with (self.path / name).open(encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    yield json.loads(line)

    def metrics(self) -> tuple[Metrics | None, list[str]]:
        """The composed metrics (None when the grid's part is not whole or recorded no metrics) and the reasons
        any part was left out of them."""
        grid = self.check(GRID)
        if not grid.ok:
            return None, [f"{self.name}: {grid.problem}; {PARTS[GRID].rewrite}"]
        if not (self.path / METRICS).is_file():
            return None, []  # a failed model: every generation in error, nothing to score
        try:
            composed: Metrics = copy.deepcopy(self.grid_metrics())  # type: ignore[assignment]
        except DamagedResults as exc:
            return None, [f"{self.name}: {exc}"]
        warnings: list[str] = []
        for part in PARTS:
            found = self.check(part) if part != GRID else None
            if found is None or found.state == "absent":
                continue
            if not found.ok:
                warnings.append(f"{self.name}: {part} left out: {found.problem}; {PARTS[part].rewrite}")
                continue
            compose_blocks(composed, found.record)
            for key in PARTS[part].lifts:
                composed[key] = found.record[key]  # type: ignore[literal-required]
        composed["judged"] = "judge" in composed
        return composed, warnings


def compose_blocks(into: Mapping[str, Any], part: Mapping[str, Any]) -> None:
    """Add each block of ``part``'s sections to the block of the same name in ``into`` (in place)."""
    for section in METRIC_SECTIONS:
        blocks = into.get(section) or {}
        for name, block in (part.get(section) or {}).items():
            if name in blocks:
                blocks[name].update(block)
    if isinstance(into.get("overall"), dict) and isinstance(part.get("overall"), dict):
        into["overall"].update(part["overall"])


class DamagedResults(ValueError):
    """A part of a model folder a step needs is missing, damaged or of another format; says what to rerun."""

    exit_code = 2
