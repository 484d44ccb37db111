"""Trainer callbacks: the run record in every checkpoint, per-rank progress lines, and the recipe's own extra ones.

``on_save`` runs on every rank after the checkpoint is written; only the world's process zero writes files.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path

from transformers import TrainerCallback

from gnt.recipe import RecipeError
from gnt.training.run_record import checkpoint_record, write_run_record
from gnt.training.world import say


class RunRecordCallback(TrainerCallback):
    """Copies the run record (plus ``global_step``) into each checkpoint, last, marking the checkpoint complete."""

    def __init__(self, record: Callable[[], dict]) -> None:
        self.record = record

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if folder.is_dir():
                write_run_record(folder, checkpoint_record(self.record(), state.global_step))
                say(f"checkpoint saved: {folder} (adapter, tokenizer, trainer state, gnt_run.json)")
        return control


class RankProgressCallback(TrainerCallback):
    """One line per rank at start and end, so a multi-process log shows that every rank trained."""

    def on_train_begin(self, args, state, control, **kwargs):
        say(
            f"training on {args.device} (process {args.process_index} of {args.world_size}), "
            f"starting at step {state.global_step} of {state.max_steps}",
            all_ranks=True,
        )
        return control

    def on_train_end(self, args, state, control, **kwargs):
        say(f"finished training at step {state.global_step}", all_ranks=True)
        return control


def load_callback(path: str) -> TrainerCallback:
    """A recipe's extra callback from its import path (``package.module:Class`` or ``package.module.Class``),
    built without arguments; a path that does not name a TrainerCallback is a recipe error naming it."""
    module_name, sep, attribute = path.partition(":")
    if not sep:
        module_name, _, attribute = path.rpartition(".")
    if not module_name or not attribute:
        raise RecipeError(f"callbacks: {path!r} is not an import path (package.module:Class)")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise RecipeError(f"callbacks: cannot import {path!r}: {exc}") from exc
    callback = factory()
    if not isinstance(callback, TrainerCallback):
        raise RecipeError(f"callbacks: {path!r} built a {type(callback).__name__}, not a transformers TrainerCallback")
    return callback


def standard_callbacks(
    record: Callable[[], dict], eval_queue_dir: str | None = None, extra: Sequence[str] = ()
) -> list[TrainerCallback]:
    """The callbacks every gnt-align run uses, in order: the record is in a checkpoint before the evaluation queue
    copies it, and both happen before the recipe's own ``callbacks`` (e.g. a test's simulated crash) run."""
    callbacks: list[TrainerCallback] = [RunRecordCallback(record)]
    if eval_queue_dir:
        from gnt.checkpoint_queue.callback import QueueCheckpointCallback

        callbacks.append(QueueCheckpointCallback(eval_queue_dir))
    return [*callbacks, RankProgressCallback(), *(load_callback(path) for path in extra)]
