"""Shared benchmark plumbing: machine facts, a printed table, and a JSON record per benchmark run."""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

from gnt.cli.command import Call, Command
from gnt.io import write_json
from gnt.records import environment_record

RESULTS_DIR = Path(__file__).resolve().parent / "results"
TESTS_DIR = Path(__file__).resolve().parent.parent / "tests"


def tests_helper(name: str) -> ModuleType:
    """A helper module of the test suite (``tests/<name>.py``, e.g. the local OpenAI-compatible server), loaded by
    its path: benchmarks reuse what the tests check without putting the tests folder on ``sys.path``."""
    return module_at(TESTS_DIR / f"{name}.py", name)


def module_at(path: Path, name: str) -> ModuleType:
    """The module a file defines, loaded by its path (a test helper, or ``scripts/demo.py`` for its profiles)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module  # dataclasses resolve their module by name while the file runs
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def run_variant(script: str, variant: str, *options: str) -> dict[str, Any]:
    """Run one variant of a benchmark script in its own process (``--one=VARIANT`` and ``options``), so that its
    peak memory is its own, and return the JSON object the last line of its output holds."""
    done = subprocess.run([sys.executable, script, f"--one={variant}", *options], cwd=TESTS_DIR.parent,
                          capture_output=True, text=True)
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"{Path(script).name}: variant {variant} failed (exit status {done.returncode}): {why}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def machine() -> dict[str, Any]:
    """Facts that make a number comparable: CPU count, platform, GPU name when there is one."""
    facts: dict[str, Any] = {"cpus": os.cpu_count(), "platform": platform.platform(), "processor": platform.processor()}
    try:
        import torch

        if torch.cuda.is_available():
            facts["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return facts


def print_table(title: str, rows: list[tuple[str, Any, str]]) -> None:
    """Print ``(metric, value, goal)`` rows as an aligned table."""
    print(f"\n{title}")
    width = max(len(name) for name, _, _ in rows)
    for name, value, goal in rows:
        shown = f"{value:.4g}" if isinstance(value, float) else str(value)
        print(f"  {name:<{width}}  {shown:>12}  {goal}")


def save_record(name: str, figures: dict[str, Any], goals: dict[str, str] | None = None) -> Path:
    """Write ``bench/results/<name>.json`` (latest) with the figures, goals, machine and environment."""
    record = {
        "benchmark": name,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "environment": environment_record(),
        "figures": figures,
        "goals": goals or {},
    }
    path = RESULTS_DIR / f"{name}.json"
    write_json(path, record)
    return path


def conclude(
    name: str,
    title: str,
    rows: list[tuple[str, Any, str]],
    figures: dict[str, Any],
    goals: dict[str, str],
    missed: Iterable[str] = (),
) -> dict[str, Any]:
    """End a benchmark the one way they all end: the table, a line per missed goal (``missed`` says which and
    why), and the saved record's path; returns ``figures`` (the record's own, for a caller that wants them)."""
    print_table(title, rows)
    for reason in missed:
        print(f"  goal MISSED: {reason} — see bench/README.md")
    print(f"record: {save_record(name, figures, goals)}")
    return figures


def bench_command(module: str, script_file: str, line: str, options: type, run: Callable[[Call], int],
                  summary: str | None, **extra: Any) -> Command:
    """The command of one benchmark script: ``bench-<file name>``, its options dataclass, no recipe file, the
    module docstring as its help. Every benchmark is declared this one way, so their command lines agree; called
    last in a script that runs as a program (``module`` is ``__main__``), it runs the command and exits with its
    status."""
    script = Path(script_file)
    command = Command(name=f"bench-{script.stem.replace('_', '-')}", script=f"bench/{script.name}", line=line,
                      settings=lambda: (options,), run=run, summary=summary or "", recipe=None, **extra)
    if module == "__main__":
        sys.exit(command.main())
    return command


class Timer:
    """``with Timer() as t: ...; t.seconds``."""

    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *_exc) -> None:
        self.seconds = time.perf_counter() - self.start
