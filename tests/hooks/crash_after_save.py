"""A trainer callback for the resume tests, loaded through the recipe key ``callbacks`` (never shipped in gnt).

``GNT_TEST_CRASH_AFTER_SAVE=N`` raises :class:`SimulatedCrash` right after the N-th checkpoint save;
``N:kill`` SIGKILLs the process instead (what a preemption or the OOM killer does). Unset, it does nothing.
"""

from __future__ import annotations

import os
import signal

from transformers import TrainerCallback

CRASH_ENV = "GNT_TEST_CRASH_AFTER_SAVE"


class SimulatedCrash(RuntimeError):
    """The crash this callback raises."""


class CrashAfterSaveCallback(TrainerCallback):
    """Crash after the N-th save when ``GNT_TEST_CRASH_AFTER_SAVE`` says so."""

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
                    print(f"{CRASH_ENV}: killing this process after checkpoint-{state.global_step}", flush=True)
                    os.kill(os.getpid(), signal.SIGKILL)
                raise SimulatedCrash(f"{CRASH_ENV}: simulated crash after checkpoint-{state.global_step}")
        return control
