"""Trainer callbacks: a guard against a diverged run, the run record in every checkpoint, per-rank progress lines,
and the recipe's own extra ones.

``on_save`` runs on every rank after the checkpoint is written; only the world's process zero writes files.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence
from pathlib import Path

from transformers import TrainerCallback

from gnt.recipe import RecipeError
from gnt.training.run_record import checkpoint_record, write_run_record
from gnt.training.world import say


class TrainingDiverged(RuntimeError):
    """The loss or the trained weights stopped being finite numbers: the run stops, and nothing after the last
    finite step is saved or called finished (exit status 1: the run started and failed)."""

    exit_code = 1


class FiniteGuardCallback(TrainerCallback):
    """Stops training as soon as a logged loss or a trained weight is NaN or infinite.

    A NaN once in the weights stays there: every later step, checkpoint and the final adapter would be NaN, and
    the run would still end "complete" (with a loss of 0.0 in some logs). The weights are checked at the end of
    every optimizer step, which comes before that step's checkpoint is saved, so a NaN checkpoint is never written
    (nor marked complete by :class:`RunRecordCallback`); only the trainable (adapter) weights are checked, which
    costs little next to the step itself.
    """

    def on_log(self, args, state, control, logs=None, **kwargs):
        for key in ("loss", "train_loss"):
            value = (logs or {}).get(key)
            if isinstance(value, (int, float)) and not math.isfinite(value):
                raise TrainingDiverged(_diverged(args, state, f"the training loss is {value}"))
        return control

    def on_step_end(self, args, state, control, model=None, **kwargs):
        bad = nonfinite_weights(model)
        if bad:
            raise TrainingDiverged(_diverged(args, state, f"the trained weights hold NaN or infinite values "
                                                          f"({', '.join(bad[:2])}{' ...' if len(bad) > 2 else ''})"))
        return control


def nonfinite_weights(model) -> list[str]:
    """Names of the trainable parameters of ``model`` holding a NaN or an infinity (empty: all finite)."""
    if model is None:
        return []
    import torch

    trained = [(name, p) for name, p in model.named_parameters() if p.requires_grad and p.numel()]
    if not trained:
        return []
    with torch.no_grad():
        finite = [torch.isfinite(p).all() for _, p in trained]
        if bool(torch.stack([f.to(finite[0].device) for f in finite]).all()):  # one device sync per step
            return []
        return [name for (name, _), ok in zip(trained, finite, strict=True) if not bool(ok)]


def _diverged(args, state, what: str) -> str:
    from gnt.training.resume import last_complete_checkpoint

    last = last_complete_checkpoint(args.output_dir, quiet=True)
    good = (f"the last good checkpoint is {last}" if last is not None
            else "no checkpoint was saved before it")
    return (f"training diverged at step {state.global_step}: {what}. The adapter is not saved as finished and "
            f"{good}. Lower learning_rate (it is {args.learning_rate:g}) or check the recipe's other numbers, then "
            "train again (resume_from_checkpoint=false starts from scratch)")


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
    callbacks: list[TrainerCallback] = [FiniteGuardCallback(), RunRecordCallback(record)]
    if eval_queue_dir:
        from gnt.checkpoint_queue.callback import QueueCheckpointCallback

        callbacks.append(QueueCheckpointCallback(eval_queue_dir))
    return [*callbacks, RankProgressCallback(), *(load_callback(path) for path in extra)]
