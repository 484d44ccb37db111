"""What the learned-judge benches share: running a project script, and reading a validation's binary figures."""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from gnt.io import read_json

ROOT = Path(__file__).resolve().parent.parent


def run_script(*args: str) -> None:
    """One project script (``train/sft.py``, ``eval/judge.py`` ...) with this interpreter, from the repository root."""
    subprocess.run([sys.executable, *args], cwd=ROOT, check=True)


def binary_figures(path: Path) -> dict[str, Any]:
    """Binary accuracy (%), per-label recall (%), references judged and judged right, over every language of a
    validation JSON written by ``eval/judge.py validate``."""
    report = read_json(path)
    overall = next(r for r in report["results"] if r["lang"] == "all")
    binary = overall["binary"]
    recall = {label: round(100 * figures["recall"], 1) for label, figures in binary["per_label"].items()}
    return {"accuracy": round(100 * binary["accuracy"], 1), "recall": recall, "n": binary["n"],
            "right": round(binary["accuracy"] * binary["n"])}


def mean_sd(values: list[float]) -> dict[str, float]:
    """Mean, sample standard deviation (0 for one value), min and max of per-seed figures."""
    return {"mean": round(statistics.mean(values), 2),
            "sd": round(statistics.stdev(values), 2) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values)}
