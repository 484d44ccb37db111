"""The learned judge trained over a float32 base against a bfloat16 one: validation accuracy and training time.

    python bench/judge_dtype.py                       # seeds 42, 1, 2; ~14 + ~11 min per seed on 2 CPU cores
    python bench/judge_dtype.py seeds=42 out_dir=outputs/bench-judge-dtype
    python bench/judge_dtype.py variants=fp32            # the recipe as it is, over the seeds (no choice made)

Why: the demo's judge (recipes/judge-gemma270m.yaml) is the longest step of ``make demo`` on 2 cores. Loading the
frozen base in bfloat16 (``dtype: bfloat16``, LoRA weights and optimizer still float32) and dropping LoRA dropout
(its Bernoulli masks cost about a tenth of a bf16 step) makes a step cheaper; this says what it costs the judge.

Two variants of the recipe, each trained with ``train/sft.py`` for every seed on the demo's build, then validated
with ``eval/judge.py validate`` on the build's dev references (where settings are chosen) and on its held-out test
references (reported, never chosen on):

- ``fp32``: the recipe as it is;
- ``bf16_nodropout``: ``dtype=bfloat16 lora_dropout=0.0``.

A finished run or validation already in ``out_dir`` is reused (each run folder keeps its own run record, with the
commit it was trained at), so the script can be rerun to collect. The variant with the higher mean dev accuracy is
the one the rule picks. Training seconds are the Trainer's own ``train_runtime`` and compare only between runs that
had the machine alone; bench/train_lean.py measures the per-step ratio in one invocation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge_runs import binary_figures, mean_sd, run_script
from record import bench_command, conclude, module_at

from gnt.cli.command import Call
from gnt.filenames import RUN_RECORD
from gnt.io import read_json

ROOT = Path(__file__).resolve().parent.parent
RECIPE = "recipes/judge-gemma270m.yaml"
VARIANTS = {"fp32": (), "bf16_nodropout": ("dtype=bfloat16", "lora_dropout=0.0")}
SPLITS = {"dev": "judge_dev_references.jsonl", "test": "judge_references.jsonl"}
BUILD = module_at(ROOT / "scripts" / "demo.py", "gnt_demo").MODELS["gemma"].build
"""The demo's build flags (scripts/demo.py, profile gemma): its translation rows and the judge rows of it, es, de, el."""


@dataclass
class JudgeDtypeOptions:
    """Seeds and where the runs go."""

    seeds: list[int] = field(default_factory=lambda: [42, 1, 2], metadata={"help": "training seeds of each variant"})
    variants: list[str] = field(default_factory=lambda: list(VARIANTS), metadata={
        "choices": tuple(VARIANTS), "help": "the variants trained and validated (one alone: no choice is made)"})
    out_dir: str = field(default="outputs/bench-judge-dtype", metadata={
        "help": "runs, validations and the build (reused when already there)"})






def _one(variant: str, seed: int, out: Path, data: Path) -> dict[str, Any]:
    run = out / f"judge-{variant}-{seed}"
    record_path = run / RUN_RECORD
    if not (record_path.is_file() and read_json(record_path).get("status") == "complete"):
        run_script("train/sft.py", RECIPE, f"data_dir={data}", f"output_dir={run}", f"seed={seed}", *VARIANTS[variant])
    record = read_json(record_path)
    figures: dict[str, Any] = {"run": str(run), "git": record["environment"]["git"], "overrides": record["overrides"],
                               "train_seconds": round(record["train_metrics"]["train_runtime"], 1)}
    for split, references in SPLITS.items():
        path = run / f"val-{split}.json"
        if not path.is_file():
            run_script("eval/judge.py", "validate", RECIPE, f"judge_adapter={run}", f"data={data / 'eval' / references}",
                    f"validation={path}")
        figures[split] = binary_figures(path)
    return figures




def _run(call: Call) -> None:
    args = call.build(JudgeDtypeOptions)
    out = Path(args.out_dir)
    data = out / "data"
    if not (data / "manifest.json").is_file():
        run_script("data/build.py", f"out_dir={data}", *BUILD)
    runs = {variant: {str(seed): _one(variant, seed, out, data) for seed in args.seeds} for variant in args.variants}
    summary = {}
    for variant, by_seed in runs.items():
        seeds = list(by_seed.values())
        summary[variant] = {
            "dev_accuracy": mean_sd([r["dev"]["accuracy"] for r in seeds]),
            "test_accuracy": mean_sd([r["test"]["accuracy"] for r in seeds]),
            "test_recall_gendered": mean_sd([r["test"]["recall"]["GENDERED"] for r in seeds]),
            "test_recall_neutral": mean_sd([r["test"]["recall"]["NEUTRAL"] for r in seeds]),
            "train_seconds": mean_sd([r["train_seconds"] for r in seeds]),
        }
    chosen = max(summary, key=lambda v: summary[v]["dev_accuracy"]["mean"]) if len(summary) > 1 else None
    rows = [(f"{variant}: dev / test acc. (mean over {len(args.seeds)} seeds), train s",
             f"{s['dev_accuracy']['mean']:.1f} / {s['test_accuracy']['mean']:.1f} / {s['train_seconds']['mean']:.0f}",
             "") for variant, s in summary.items()]
    figures = {"recipe": RECIPE, "variants": {v: list(VARIANTS[v]) for v in args.variants}, "seeds": args.seeds,
               "runs": runs, "summary": summary, "chosen_on_dev": chosen,
               "choice_rule": "higher mean binary accuracy on the dev references"}
    goals = {"held-out references": "binary accuracy >= 95%, each class's recall >= 90% (issue goal, not a choice)"}
    missed = [f"{variant}: mean held-out accuracy {s['test_accuracy']['mean']}% < 95%"
              for variant, s in summary.items() if s["test_accuracy"]["mean"] < 95]
    conclude("judge_dtype", "learned judge: float32 vs bfloat16 base", rows, figures, goals, missed)


COMMAND = bench_command(
    __name__, __file__, "benchmark: the learned judge over a float32 or a bfloat16 base, 3 seeds, dev and held-out",
    JudgeDtypeOptions, _run, __doc__
)
