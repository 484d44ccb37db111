"""Resuming: re-running the same command continues from the last *complete* checkpoint.

A checkpoint is complete when its ``gnt_run.json`` exists: the record is copied in last (after the adapter,
optimizer, scheduler and trainer state), so a run killed while saving leaves an incomplete folder that is skipped
rather than loaded half-written. The same marker tells an evaluator that a checkpoint is ready to read.

A checkpoint can also be damaged after it was complete (a full disk that cut a later rewrite, a copy that
stopped halfway): :func:`gnt.io.folder_damage` reads what can be read cheaply, without torch. A damaged checkpoint
is passed over, said once, and the run resumes from the one before it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gnt.io import folder_damage
from gnt.training.config import TrainingError
from gnt.training.run_record import RUN_RECORD
from gnt.training.world import say

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


def last_complete_checkpoint(output_dir: str | Path, *, quiet: bool = False) -> Path | None:
    """The newest checkpoint that is complete and reads whole; newer damaged ones are said (unless ``quiet``)."""
    for checkpoint in reversed([c for c in checkpoints(output_dir) if is_complete(c)]):
        damage = folder_damage(checkpoint)
        if damage is None:
            return checkpoint
        if not quiet:
            say(f"warning: {checkpoint} is damaged ({damage}): passed over; resuming from the checkpoint before it "
                "(delete the damaged folder to silence this)")
    return None


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
    damage = folder_damage(path)
    if damage:
        raise TrainingError(f"resume_from_checkpoint: {text} is damaged ({damage}): give an earlier checkpoint, or "
                            "auto to take the last one that reads whole")
    return path


def recipe_changes(previous: dict, current: dict, ignore: tuple[str, ...] = ("resume_from_checkpoint",)) -> list[str]:
    """Keys whose value differs between the recorded recipe and this one (resuming with a changed recipe)."""
    keys = sorted((set(previous) | set(current)) - set(ignore))
    return [k for k in keys if previous.get(k) != current.get(k)]
