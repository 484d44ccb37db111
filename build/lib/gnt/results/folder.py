"""Which model folders a results folder holds, and which of them a step works on.

A results folder holds one folder per evaluated model (``base``, ``<run>/checkpoint-<step>``, ...), found by the
files the sweep writes into it (``record.json``, ``metrics.json``, ``generations.jsonl``), beside folders that are
not models: the shared caches, the report, the templated suite's and the WMT24 suite's summaries. Inside a model
folder, ``attribution/`` and ``templated/`` belong to that model. This is the one place that tells them apart:
the report, the judge, xCOMET, attribution and the pipeline all take their model folders from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gnt.filenames import (
    ATTRIBUTION_DIR,
    CACHE_DIR,
    GENERATIONS,
    METRICS,
    RECORD,
    TEMPLATED_DIR,
    TEMPLATED_SUITE_DIR,
)

NOT_MODELS = frozenset({CACHE_DIR, "report", TEMPLATED_SUITE_DIR, "wmt24"})
"""Top-level folders of a results folder that are not models (caches, the report, the suites' summaries)."""
MODEL_PARTS = frozenset({ATTRIBUTION_DIR, TEMPLATED_DIR})
"""Sub-folders of a model folder written by later steps: part of that model, never a model of their own."""
MARKERS = (RECORD, METRICS, GENERATIONS)
"""A folder holding any of these is a model folder."""
LAST = "last"
"""In a step's ``models``: the last model of the sweep (the final checkpoint of the last run)."""


class ResultsError(ValueError):
    """A results folder that is missing, empty or lacks what a step needs; the message says what to run first."""

    exit_code = 2


def model_names(path: str | Path, holding: Sequence[str] = MARKERS) -> list[str]:
    """Every model folder under ``path`` holding one of ``holding``, as model names (``sft/checkpoint-8``), sorted."""
    root = Path(path)
    found = set()
    for marker in holding:
        for file in root.rglob(marker):
            rel = file.parent.relative_to(root)
            if rel.parts and rel.parts[0] not in NOT_MODELS and not MODEL_PARTS & set(rel.parts):
                found.add(rel.as_posix())
    return sorted(found)


def count_lines(path: Path) -> int | None:
    """The non-empty lines of a JSON-lines file; None when it is missing."""
    if not path.is_file():
        return None
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def covers_generations(model_dir: Path, record: str, counted: int | None) -> bool:
    """Whether a step's ``record`` in a model folder is newer than its ``generations.jsonl`` and counted as many
    rows as that file holds (``counted``): the judge's and xCOMET's test of being complete."""
    generations, written = model_dir / GENERATIONS, model_dir / record
    if not (generations.is_file() and written.is_file()) or written.stat().st_mtime < generations.stat().st_mtime:
        return False
    return counted == count_lines(generations)


@dataclass(frozen=True)
class ResultsFolder:
    """A results folder and its model folders in sweep order (base first): what every step works on."""

    path: Path
    models: tuple[str, ...]

    @classmethod
    def on_disk(cls, path: str | Path, holding: Sequence[str] = (GENERATIONS,)) -> ResultsFolder:
        """The model folders found under ``path`` (those holding ``holding``); an error when there is none."""
        root = Path(path)
        if not root.is_dir():
            raise ResultsError(f"results folder not found: {root} (the out_dir of eval/evaluate.py)")
        names = model_names(root, holding)
        if not names:
            raise ResultsError(f"{root}: no model folder with {' or '.join(holding)}: run eval/evaluate.py first")
        return cls(root, tuple(names))

    def model_dir(self, name: str) -> Path:
        return self.path / name

    def covered(self, names: Iterable[str], record: str, counted: Callable[[Path], int | None]) -> bool:
        """Whether every selected model folder's ``record`` covers its generations (:func:`covers_generations`),
        ``counted(model_dir)`` being how many rows the step counted there."""
        return all(covers_generations(self.model_dir(name), record, counted(self.model_dir(name)))
                   for name in self.select(names))

    def select(self, names: Iterable[str] = ()) -> list[str]:
        """``models`` settings as folder names: comma lists, ``last`` (the sweep's last model); empty: every
        model. A name that is not a model folder of this results folder fails, listing those that are."""
        chosen: list[str] = []
        for item in names:
            for name in str(item).split(","):
                name = self.models[-1] if name.strip() == LAST and self.models else name.strip()
                if name and name not in chosen:
                    chosen.append(name)
        unknown = [name for name in chosen if name not in self.models]
        if unknown:
            raise ResultsError(f"{self.path}: no model folder {', '.join(unknown)} (models: {', '.join(self.models)})")
        return chosen or list(self.models)
