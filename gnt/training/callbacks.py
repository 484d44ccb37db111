"""Trainer callbacks: the run record in every checkpoint, per-rank progress lines, and a crash hook for tests.

``on_save`` runs on every rank after the checkpoint is written; only the world's process zero writes files.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

from transformers import TrainerCallback

from gnt.training.run_record import checkpoint_record, write_run_record
from gnt.training.world import say

CRASH_ENV = "GNT_TEST_CRASH_AFTER_SAVE"
"""Test hook: right after the N-th checkpoint save, raise :class:`SimulatedCrash` (``N``) or SIGKILL this process
(``N:kill``, what a preemption or the OOM killer does). Unset in normal runs."""


class SimulatedCrash(RuntimeError):
    """Raised by :class:`CrashAfterSaveCallback`; never in normal runs."""


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


class CrashAfterSaveCallback(TrainerCallback):
    """Crash after the N-th save when ``GNT_TEST_CRASH_AFTER_SAVE`` says so (resume tests); inert otherwise."""

    def __init__(self) -> None:
        count, _, mode = os.environ.get(CRASH_ENV, "").partition(":")
        self.after = int(count) if count.isdigit() else 0
        self.kill = mode == "kill"
        self.saves = 0

    def on_save(self, args, state, control, **kwargs):
        if self.after:
            self.saves += 1
            if self.saves >= self.after:
                if self.kill:
                    say(f"{CRASH_ENV}: killing this process after checkpoint-{state.global_step}", all_ranks=True)
                    os.kill(os.getpid(), signal.SIGKILL)
                raise SimulatedCrash(f"{CRASH_ENV}: simulated crash after checkpoint-{state.global_step}")
        return control


def standard_callbacks(record: Callable[[], dict], eval_queue_dir: str | None = None) -> list[TrainerCallback]:
    """The callbacks every gnt-align run uses, in order: the record is in a checkpoint before the evaluation queue
    copies it, and both happen before a simulated crash."""
    callbacks: list[TrainerCallback] = [RunRecordCallback(record)]
    if eval_queue_dir:
        from gnt.checkpoint_queue.callback import QueueCheckpointCallback

        callbacks.append(QueueCheckpointCallback(eval_queue_dir))
    return [*callbacks, RankProgressCallback(), CrashAfterSaveCallback()]
