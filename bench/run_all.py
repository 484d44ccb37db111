"""Run the CPU benchmarks in sequence (``make bench``), each in its own process, then print one summary of goals.

Why one process per benchmark: each one sets process-wide state (torch threads, accelerate's distributed state,
a local HTTP server) and a crash in one must not lose the others' records. A missed goal is reported, not an
error; the exit status is non-zero only when a benchmark could not run.

    python bench/run_all.py                       # all CPU benchmarks (a few minutes on two cores)
    python bench/run_all.py --only sweep_scaling,judge_throughput

The GPU grid is not run here: see ``bench/gpu_grid.py`` (``--smoke`` checks its logic on CPU).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from record import RESULTS_DIR

from gnt.cli.command import Call, Command

ROOT = Path(__file__).resolve().parent.parent

BENCHMARKS = ("data_build", "train_overhead", "sweep_scaling", "judge_throughput", "attribution", "waits")


def goals_of(name: str, figures: dict[str, Any]) -> dict[str, bool]:
    """The met/missed verdicts a record carries (data_build predates ``goals_met``: judged here)."""
    if "goals_met" in figures:
        return dict(figures["goals_met"])
    if name == "data_build":
        return {"build_seconds": figures.get("build_seconds", float("inf")) <= 20}
    return {}


def run(name: str) -> tuple[int, float]:
    """Run ``bench/<name>.py`` with its output streamed; return (exit status, seconds)."""
    print(f"\n=== {name} ===", flush=True)
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "PYTHONWARNINGS": "ignore",
           "TRANSFORMERS_VERBOSITY": "error", "TQDM_DISABLE": "1", "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}
    started = time.perf_counter()
    status = subprocess.call([sys.executable, str(ROOT / "bench" / f"{name}.py")], cwd=ROOT, env=env)
    return status, time.perf_counter() - started


@dataclass
class RunAllOptions:
    """Which benchmarks to run."""

    only: list[str] = field(default_factory=list, metadata={
        "choices": BENCHMARKS, "help": "the benchmarks to run, in the order given (default: all)"})


def _run(call: Call) -> int:
    """Run the selected benchmarks, then summarise their records' goals; 1 if one could not run."""
    args = call.build(RunAllOptions)
    names = list(args.only) or list(BENCHMARKS)

    started = time.perf_counter()
    outcomes: dict[str, tuple[int, float]] = {name: run(name) for name in names}
    print(f"\n=== summary ({time.perf_counter() - started:.0f} s) ===")
    failed = []
    for name in names:
        status, seconds = outcomes[name]
        if status != 0:
            failed.append(name)
            print(f"  {name:<18} FAILED (exit status {status}) after {seconds:.0f} s")
            continue
        record = json.loads((RESULTS_DIR / f"{name}.json").read_text(encoding="utf-8"))
        goals = record.get("goals", {})
        verdicts = goals_of(name, record["figures"])
        missed = [g for g, ok in verdicts.items() if not ok]
        line = ", ".join(f"{g} {'met' if ok else 'MISSED'}" for g, ok in verdicts.items()) or "no goals"
        print(f"  {name:<18} {seconds:5.0f} s  {line}")
        for goal in missed:
            print(f"  {'':<18}         missed: {goal} = {_figure(record['figures'], goal)} (goal {goals.get(goal, '?')})")
    print(f"records: {RESULTS_DIR}")
    return 1 if failed else 0


def _figure(figures: dict[str, Any], goal: str) -> Any:
    """The figure a goal is about (same key, or the first key starting with it)."""
    if goal in figures:
        return figures[goal]
    return next((v for k, v in figures.items() if k.startswith(goal)), "?")


COMMAND = Command(
    name="bench", script="bench/run_all.py",
    line="run the CPU benchmarks in sequence and summarise their goals",
    settings=lambda: (RunAllOptions,), run=_run, summary=__doc__ or "", recipe=None,
)


def main(argv: list[str] | None = None) -> int:
    return COMMAND.main(argv)


if __name__ == "__main__":
    sys.exit(main())
