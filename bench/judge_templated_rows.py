"""The learned judge on kinds of templated rows: balanced by label, label-blind, with adjective swaps or neutral rewrites.

    python bench/judge_templated_rows.py                          # seeds 42, 1, 2; ~20 min per run on 2 CPU cores
    python bench/judge_templated_rows.py variants=balanced seeds=42 out_dir=outputs/bench-judge-rows

Why: the judge's templated training rows used to be a stable sample regardless of label. A determined templated
input gives two gendered rows (its correct form and the other gender swapped in) and an ambiguous one a row of each,
so the sample held about two gendered rows per neutral one. The judge trained on it called exact copies of templated
neutral references GENDERED, and most Set-N rows of the translator's dev split are templated.

Builds of the demo's data (scripts/demo.py, profile gemma), the same but for the judge's templated rows:

- ``balanced``: ``judge_templated_balance=true``, as many NEUTRAL as gendered templated rows;
- ``by_hash``: ``judge_templated_balance=false``, a stable sample regardless of label (the default);
- ``adjective_swaps``: ``by_hash`` plus ``judge_templated_adjective_swaps=true``: an ambiguous input's neutral
  target with a gendered adjective swapped in is WRONGLY GENDERED too (the default judge called "Nel mio lavoro di
  ingegneria, sono curiosa" neutral in the alignment bench). Added after the ``balanced`` record;
  Over three seeds it lost on dev (ade982f record): the judge then called "una persona agresiva" (a neutral
  strategy whose adjective agrees with "persona") gendered. The swaps on the balanced sample were committed as a
  fourth variant (24dd5b0) and dropped before they trained: balance draws fewer gendered rows, not other neutral
  ones, so it does not touch that confusion.
- ``genderless_rewrites``: ``by_hash`` plus ``judge_templated_genderless_rewrites=true``: a determined input's
  neutral rewrite is NEUTRAL where the adjective was its target's only gender cue. Why: every templated dev
  reference the ``by_hash`` judge (seed 42, at 99d3fdc) got wrong but one was a neutral sentence around an epicene
  adjective it had not seen ("«Soy prudente», dijo.", "sono dominante"), called GENDERED; these rows add neutral text
  around the training adjectives, epicene ones and "una persona …", in the contexts of the determined templates.

For each, ``recipes/judge-gemma270m.yaml`` is trained with every seed and validated with ``eval/judge.py validate``
on four reference sets: the dev and held-out (test) mGeNTE references of it, es, de and el, and the dev and held-out
templated Set-N references of it and es (a templated Set-G input's Ref-N keeps its gendered cue, so validation leaves
those out). The variant with the higher mean dev accuracy, mGeNTE and templated dev references pooled, is the one the
rule picks; the held-out figures are reported, never chosen on.

A finished run or validation already in ``out_dir`` is reused (each run folder keeps its run record, with the commit
it was trained at), so separate invocations (one variant each) can share the machine's cores and a last one with
every variant collects the record.
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
VARIANTS = {"balanced": ("judge_templated_balance=true",), "by_hash": ("judge_templated_balance=false",),
            "adjective_swaps": ("judge_templated_balance=false", "judge_templated_adjective_swaps=true"),
            "genderless_rewrites": ("judge_templated_balance=false", "judge_templated_genderless_rewrites=true")}
REFERENCES = {"dev": "judge_dev_references.jsonl", "dev_templated": "templated_dev.jsonl",
              "test": "judge_references.jsonl", "test_templated": "templated_test.jsonl"}
BUILD = module_at(ROOT / "scripts" / "demo.py", "gnt_demo").MODELS["gemma"].build
"""The demo's build flags (scripts/demo.py, profile gemma): its translation rows and the judge rows of it, es, de, el."""


@dataclass
class JudgeRowsOptions:
    """Seeds, variants and where the runs go."""

    seeds: list[int] = field(default_factory=lambda: [42, 1, 2], metadata={"help": "training seeds of each variant"})
    variants: list[str] = field(default_factory=lambda: list(VARIANTS), metadata={
        "choices": tuple(VARIANTS), "help": "the variants trained and validated (one alone: no choice is made)"})
    out_dir: str = field(default="outputs/bench-judge-rows", metadata={
        "help": "builds, runs and validations (reused when already there)"})


def _build(out: Path, variant: str) -> Path:
    data = out / f"data-{variant}"
    if not (data / "manifest.json").is_file():
        run_script("data/build.py", f"out_dir={data}", *BUILD, *VARIANTS[variant])
    return data


def _one(variant: str, seed: int, out: Path, data: Path) -> dict[str, Any]:
    run = out / f"judge-{variant}-{seed}"
    record_path = run / RUN_RECORD
    if not (record_path.is_file() and read_json(record_path).get("status") == "complete"):
        run_script("train/sft.py", RECIPE, f"data_dir={data}", f"output_dir={run}", f"seed={seed}")
    record = read_json(record_path)
    figures: dict[str, Any] = {"run": str(run), "git": record["environment"]["git"],
                               "train_seconds": round(record["train_metrics"]["train_runtime"], 1)}
    for name, references in REFERENCES.items():
        path = run / f"val-{name}.json"
        if not path.is_file():
            run_script("eval/judge.py", "validate", RECIPE, f"judge_adapter={run}", f"data={data / 'eval' / references}",
                    f"validation={path}")
        figures[name] = binary_figures(path)
    pooled = [figures["dev"], figures["dev_templated"]]
    figures["dev_pooled_accuracy"] = round(100 * sum(v["right"] for v in pooled) / sum(v["n"] for v in pooled), 1)
    return figures


def _summary(seeds: list[dict[str, Any]]) -> dict[str, Any]:
    summary = {"dev_pooled_accuracy": mean_sd([r["dev_pooled_accuracy"] for r in seeds])}
    for name in REFERENCES:
        summary[f"{name}_accuracy"] = mean_sd([r[name]["accuracy"] for r in seeds])
        for label in ("GENDERED", "NEUTRAL"):
            summary[f"{name}_recall_{label.lower()}"] = mean_sd([r[name]["recall"][label] for r in seeds])
    summary["train_seconds"] = mean_sd([r["train_seconds"] for r in seeds])
    return summary


def _run(call: Call) -> None:
    args = call.build(JudgeRowsOptions)
    out = Path(args.out_dir)
    runs, builds = {}, {}
    for variant in args.variants:
        data = _build(out, variant)
        manifest = read_json(data / "manifest.json")
        builds[variant] = {"flags": [*BUILD, *VARIANTS[variant]], "judge_rows": manifest["judge"]["counts"]}
        runs[variant] = {str(seed): _one(variant, seed, out, data) for seed in args.seeds}
    summary = {variant: _summary(list(by_seed.values())) for variant, by_seed in runs.items()}
    chosen = max(summary, key=lambda v: summary[v]["dev_pooled_accuracy"]["mean"]) if len(summary) > 1 else None
    rows = [(f"{variant}: dev pooled / test mGeNTE / test templated acc. (mean of {len(args.seeds)} seeds)",
             f"{s['dev_pooled_accuracy']['mean']:.1f} / {s['test_accuracy']['mean']:.1f} / "
             f"{s['test_templated_accuracy']['mean']:.1f}", "") for variant, s in summary.items()]
    figures = {"recipe": RECIPE, "variants": {v: list(VARIANTS[v]) for v in args.variants}, "seeds": args.seeds,
               "references": REFERENCES, "builds": builds, "runs": runs, "summary": summary,
               "chosen_on_dev": chosen,
               "choice_rule": "higher mean binary accuracy on the dev references, mGeNTE and templated pooled"}
    goals = {"held-out references": "binary accuracy >= 95%, each class's recall >= 90% (issue goal, not a choice)"}
    missed = []
    for variant, s in summary.items():
        if s["test_accuracy"]["mean"] < 95:
            missed.append(f"{variant}: mean held-out accuracy {s['test_accuracy']['mean']}% < 95%")
        for label in ("gendered", "neutral"):
            if s[f"test_recall_{label}"]["mean"] < 90:
                missed.append(f"{variant}: mean held-out {label} recall {s[f'test_recall_{label}']['mean']}% < 90%")
    conclude("judge_templated_rows", "learned judge: templated rows balanced by label or not", rows, figures, goals,
             missed)


COMMAND = bench_command(
    __name__, __file__, "benchmark: the learned judge on label-balanced templated rows or a label-blind sample, 3 seeds",
    JudgeRowsOptions, _run, __doc__
)
