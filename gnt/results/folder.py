"""Which model folders a results folder holds, and which of them a step works on.

A results folder holds one folder per evaluated model (``base``, ``<run>/checkpoint-<step>``, ...), beside folders
that are not models: the shared caches, the report, the templated suite's and the WMT24 suite's summaries. A model
folder is one the evaluation wrote: its ``record.json`` names it, so a copy such as ``base.bak/`` (whose record
names ``base``) is not a second base model. Inside a model folder, ``attribution/`` and ``templated/`` belong to
that model. This is the one place that tells them apart: the report, the judge, xCOMET, attribution and the
pipeline all take their model folders from here.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
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
from gnt.io import read_json_or_none
from gnt.results.model_folder import ModelFolder

log = logging.getLogger("gnt.results")

NOT_MODELS = frozenset({CACHE_DIR, "report", TEMPLATED_SUITE_DIR, "wmt24"})
"""Top-level folders of a results folder that are not models (caches, the report, the suites' summaries)."""
MODEL_PARTS = frozenset({ATTRIBUTION_DIR, TEMPLATED_DIR})
"""Sub-folders of a model folder written by later steps: part of that model, never a model of their own."""
MARKERS = (RECORD, METRICS, GENERATIONS)
"""Files the sweep writes into a model folder: a folder holding one but no record naming it is not a model."""
LAST = "last"
"""In a step's ``models``: the last model of the sweep (the final checkpoint of the last run)."""


class ResultsError(ValueError):
    """A results folder that is missing, empty or lacks what a step needs; the message says what to run first."""

    exit_code = 2


def _candidates(root: Path, holding: Sequence[str]) -> set[str]:
    found = set()
    for marker in holding:
        for file in root.rglob(marker):
            rel = file.parent.relative_to(root)
            if rel.parts and rel.parts[0] not in NOT_MODELS and not MODEL_PARTS & set(rel.parts):
                found.add(rel.as_posix())
    return found


def recorded_name(folder: Path) -> str | None:
    """The model name a folder's record.json gives it (None without a readable record naming one)."""
    record = read_json_or_none(folder / RECORD)
    model = record.get("model") if isinstance(record, dict) else None
    name = model.get("name") if isinstance(model, dict) else None
    return name if isinstance(name, str) else None


def model_names(path: str | Path) -> list[str]:
    """Every model folder under ``path``, as model names (``sft/checkpoint-8``), sorted: the folders whose
    record.json names them."""
    root = Path(path)
    return sorted(name for name in _candidates(root, (RECORD,)) if recorded_name(root / name) == name)


def stray_folders(path: str | Path) -> dict[str, str]:
    """Folders holding results files that are not model folders, each with why (for the report's warnings)."""
    root = Path(path)
    stray: dict[str, str] = {}
    for name in sorted(_candidates(root, MARKERS) - set(model_names(root))):
        named = recorded_name(root / name)
        stray[name] = (f"its {RECORD} is that of {named!r} (a copy?)" if named else
                       f"it holds no readable {RECORD} naming it (a sweep stopped half-way? rerun eval/evaluate.py "
                       "with the same recipe and out_dir to finish it)")
    return stray


@dataclass(frozen=True)
class ResultsFolder:
    """A results folder and its model folders in sweep order (base first): what every step works on."""

    path: Path
    models: tuple[str, ...]

    @classmethod
    def on_disk(cls, path: str | Path) -> ResultsFolder:
        """The model folders found under ``path`` that hold generations; an error when there is none."""
        root = Path(path)
        if not root.is_dir():
            raise ResultsError(f"results folder not found: {root} (the out_dir of eval/evaluate.py)")
        names = [name for name in model_names(root) if (root / name / GENERATIONS).is_file()]
        if not names:
            raise ResultsError(f"{root}: no model folder with {GENERATIONS}: run eval/evaluate.py first")
        return cls(root, tuple(names))

    def model_dir(self, name: str) -> Path:
        return self.path / name

    def model(self, name: str) -> ModelFolder:
        return ModelFolder(self.path, name)

    def incomplete(self, names: Iterable[str], part: str) -> str | None:
        """Why the selected model folders' ``part`` is not complete (the first folder's reason), else None. A
        damaged part is logged as a warning: the step that owns it runs again."""
        for name in self.select(names):
            found = self.model(name).check(part)
            if not found.ok:
                if found.state != "absent":
                    log.warning("%s: %s: the %s step runs again", name, found.problem, part)
                return found.problem
        return None

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
