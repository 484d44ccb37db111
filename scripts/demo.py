#!/usr/bin/env python
"""The demo chain, run as the same commands a user types: data → SFT → DPO → grid sweep → judge → templated suite
→ attribution → report (+ eval metrics logged into the training runs' offline W&B runs).

    python scripts/demo.py                   # SmolLM2-135M-Instruct (a real small model, offline), en-it + en-es
    python scripts/demo.py --model tiny      # the tiny offline random Qwen2: every code path in about 3 minutes
    python scripts/demo.py --out outputs/my-demo --steps data,sft
    python scripts/demo.py --set sft:max_steps=48 --set eval:rows_per_lang=null    # a longer budget

Each step prints its command; a failing step stops the chain with its exit status. Rerunning resumes: training
continues from its last checkpoint and the evaluation steps only compute what their caches lack.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS = ("data", "sft", "dpo", "eval", "judge", "templated", "attribution", "report")


@dataclass(frozen=True)
class DemoProfile:
    """What one demo model runs: its data build flags, recipes and attribution cell, sized for 2 CPU cores."""

    build: tuple[str, ...]
    sft: str
    dpo: str
    eval: str
    templated: tuple[str, ...]  # recipe + overrides
    attribution_cell: str


MODELS = {
    # SmolLM2 trains and is scored on the short zero-shot cells without guidelines (en-it, en-es), where a CPU
    # step costs seconds; the tiny random model shows every code path on the 4-shot cells of all languages.
    "smollm": DemoProfile(
        ("--langs", "it,es", "--train-configs", "None,S", "--train-shots", "0", "--templated-pairs", "600"),
        "recipes/smollm.yaml", "recipes/smollm-dpo.yaml", "recipes/eval-smollm.yaml",
        ("recipes/templated-smollm.yaml",), "it/None/0",
    ),
    "tiny": DemoProfile(
        ("--templated-pairs", "400"), "recipes/tiny.yaml", "recipes/tiny-dpo.yaml", "recipes/eval-tiny.yaml",
        ("recipes/templated-tiny.yaml", "pairs_per_lang=6"), "it/G+S/4",
    ),
}
OVERRIDE_STEPS = ("sft", "dpo", "eval", "templated")


def run(command: list[str], title: str) -> float:
    """Run one step as a subprocess in the project root; exit with its status if it fails."""
    print(f"\n=== {title}\n$ {shlex.join(command)}", flush=True)
    started = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        print(f"\ndemo: step '{title}' failed with exit status {result.returncode}", file=sys.stderr)
        sys.exit(result.returncode)
    print(f"--- {title}: {seconds:.0f} s", flush=True)
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(MODELS), default="smollm")
    parser.add_argument("--out", default=None, help="demo root (default outputs/demo-<model>)")
    parser.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated subset of {','.join(STEPS)}")
    parser.add_argument("--set", action="append", default=[], metavar="STEP:KEY=VALUE",
                        help=f"a recipe override for one step ({', '.join(OVERRIDE_STEPS)}), e.g. sft:max_steps=48")
    args = parser.parse_args(argv)
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        parser.error(f"unknown step(s) {unknown}; valid: {', '.join(STEPS)}")
    overrides: dict[str, list[str]] = {step: [] for step in OVERRIDE_STEPS}
    for item in args.set:
        step, _, assignment = item.partition(":")
        if step not in overrides or "=" not in assignment:
            parser.error(f"--set {item!r}: expected STEP:KEY=VALUE with STEP one of {', '.join(OVERRIDE_STEPS)}")
        overrides[step].append(assignment)
    out = Path(args.out or f"outputs/demo-{args.model}")
    data, sft, dpo, results = out / "data", out / "runs" / "sft", out / "runs" / "dpo", out / "eval"
    profile = MODELS[args.model]
    py = sys.executable
    timings: dict[str, float] = {}

    if "data" in steps:
        timings["data"] = run([py, "data/build.py", "--out", str(data), *profile.build], "build data")
    if "sft" in steps:
        timings["sft"] = run(
            [py, "train/sft.py", profile.sft, f"data_dir={data}", f"output_dir={sft}", *overrides["sft"]],
            "SFT (LoRA)",
        )
    if "dpo" in steps:
        timings["dpo"] = run(
            [py, "train/dpo.py", profile.dpo, f"data_dir={data}", f"sft_adapter={sft}", f"output_dir={dpo}",
             *overrides["dpo"]],
            "DPO (reference = the SFT adapter)",
        )
    if "eval" in steps:
        timings["eval"] = run(
            [py, "eval/evaluate.py", profile.eval, "--run", str(sft), "--run", str(dpo), "--out", str(results),
             *overrides["eval"]],
            f"grid sweep: base + every checkpoint ({profile.eval})",
        )
    if "judge" in steps:
        timings["judge"] = run([py, "eval/judge.py", "judge", str(results), "judge=lexical"], "judge (lexical, offline)")
    if "templated" in steps:
        timings["templated"] = run(
            [py, "eval/templated.py", profile.templated[0], "--run", str(sft), "--run", str(dpo),
             "--out", str(results), *profile.templated[1:], *overrides["templated"]],
            "templated sensitivity suite",
        )
    if "attribution" in steps:
        models = json.loads((ROOT / results / "summary.json").read_text())["models"]
        last = models[-1]["name"]  # the sweep lists base, then each run's checkpoints in order: the last DPO one
        timings["attribution"] = run(
            [py, "eval/attribute.py", str(results / last), "--cell", profile.attribution_cell, "--max-rows", "2"],
            f"attribution (grad×input) on a few rows of {last}",
        )
    if "report" in steps:
        timings["report"] = run(
            [py, "eval/report.py", str(results), "--wandb-run", str(sft), "--wandb-run", str(dpo)],
            "report (+ eval metrics into the training runs' W&B runs)",
        )
    timings["total"] = sum(timings.values())
    print("\n=== demo finished")
    for name, seconds in timings.items():
        print(f"  {name:<12} {seconds:6.0f} s")
    print(f"  data:     {(ROOT / data).resolve()}")
    print(f"  adapters: {(ROOT / sft).resolve()}  {(ROOT / dpo).resolve()}")
    print(f"  results:  {(ROOT / results).resolve()}")
    report = ROOT / results / "report" / "report.html"
    if report.exists():
        print(f"  report:   {report.resolve()}  (and report.md beside it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
