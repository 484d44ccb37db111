"""Resuming: re-running the same command continues from the last *complete* checkpoint.

A checkpoint is complete when its ``gnt_run.json`` exists: the record is copied in last (after the adapter,
optimizer, scheduler and trainer state), so a run killed while saving leaves an incomplete folder that is skipped
rather than loaded half-written. The same marker tells an evaluator that a checkpoint is ready to read.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gnt.training.config import TrainingError
from gnt.training.run_record import RUN_RECORD

_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
FRESH = {"false", "no", "never", "fresh"}
AUTO = {None, "", "auto", "true", "yes", "last"}


def checkpoints(output_dir: str | Path) -> list[Path]:
    """All ``checkpoint-N`` folders, by step."""
    root = Path(output_dir)
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and _CHECKPOINT.match(p.name)]
    return sorted(found, key=lambda p: int(_CHECKPOINT.match(p.name).group(1)))


def is_complete(checkpoint: Path) -> bool:
    return (checkpoint / RUN_RECORD).is_file() and (checkpoint / "trainer_state.json").is_file()


def last_complete_checkpoint(output_dir: str | Path) -> Path | None:
    complete = [c for c in checkpoints(output_dir) if is_complete(c)]
    return complete[-1] if complete else None


def resume_checkpoint(value: Any, output_dir: str | Path) -> Path | None:
    """Interpret the recipe's ``resume_from_checkpoint``.

    Unset/``auto``: the last complete checkpoint in ``output_dir`` if any (so the same command resumes);
    ``false``: start fresh; a path: that checkpoint (which must exist).
    """
    if isinstance(value, bool):
        value = "auto" if value else "false"
    text = None if value is None else str(value).strip()
    if text is not None and text.lower() in FRESH:
        return None
    if text is None or text.lower() in AUTO:
        return last_complete_checkpoint(output_dir)
    path = Path(text)
    if not (path / "trainer_state.json").is_file():
        raise TrainingError(f"resume_from_checkpoint: {text} is not a checkpoint folder (no trainer_state.json)")
    return path


def recipe_changes(previous: dict, current: dict, ignore: tuple[str, ...] = ("resume_from_checkpoint",)) -> list[str]:
    """Keys whose value differs between the recorded recipe and this one (resuming with a changed recipe)."""
    keys = sorted((set(previous) | set(current)) - set(ignore))
    return [k for k in keys if previous.get(k) != current.get(k)]
