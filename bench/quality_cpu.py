"""What the demo's training does on a CPU: prompted base → SFT → aligned stage, on the decision and on neutral
translation, with CIs.

Why: the framework's promise is that SFT and alignment on its data make a translator *decide* (GENDERED where the
source states a gender, NEUTRAL where it does not) and translate neutrally where the source is ambiguous, while it
still translates. This runs the demo chain (the same commands as ``make demo``: ``scripts/demo.py``) and reads back what
the evaluator, the judge and the report computed, into one record:

- per model (the base prompted with 2 demonstrations, SFT, the aligned stage), over the held-out mGeNTE rows of en-it and en-es: label balanced
  accuracy and macro-F1 (headline: a constant label scores 50% / below 50%), label accuracy per set, the label
  shares and collapse flag, chrF++ and the adequate share, GNT accuracy on Set-N over all and over adequate outputs,
  extraction errors, preference accuracy; each with its 95% CI;
- the report's paired tests against the base (difference, Holm-adjusted p-value, ▲ better / ▼ worse);
- the goals of the demo (below), met or not, for the final checkpoint: the stage the demo's stage choice on dev
  ended at (``stage_choice.json``), with that choice and the judge's validation;
- per step: wall time and peak resident memory (the demo's ``demo_record.json``), the resolved training settings,
  machine, versions and commit.

Budgets: ``demo`` is ``make demo`` itself; ``long`` saves a checkpoint every 50 SFT steps and scores each one, to show
where the curve goes (≤ 90 min on 2 cores). Settings were chosen on the dev split, never on these test rows.

    python bench/quality_cpu.py                              # the demo budget, from scratch
    python bench/quality_cpu.py --budget long                # the longer curve
    python bench/quality_cpu.py --reuse --out-dir outputs/demo-gemma   # the record of an existing demo folder
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from record import bench_command, print_table, save_record

from gnt.cli.command import Call
from gnt.io import read_json

ROOT = Path(__file__).resolve().parent.parent
#: Per-step recipe overrides of each budget, on top of the demo's Gemma recipes (STEP.KEY=VALUE).
BUDGETS = {
    "demo": (),
    # the demo's 150 SFT steps with a checkpoint every 50, every checkpoint scored (the record at fbe5207 trained
    # 150 steps where the demo trained 60)
    "long": ("evaluate=every", "sft.max_steps=150", "sft.save_steps=50"),
}
#: Headline keys of the report's tables (gnt/report/tables.py) recorded with their paired tests.
TESTED = ("label_bal", "label_g", "label_n", "chrf", "adequate", "gnt_n", "gnt_n_adequate", "errors", "pref")
DEMO_SECONDS = 20 * 60
DEMO_PEAK_MB = 6 * 1024
WHOLE_DEMO = {"data", "sft", "dpo", "evaluation"}
"""The steps a demo record must hold for its time and memory to be the demo's (the Gemma chain adds the judge's)."""


def _stat(block: Any) -> dict | None:
    if not isinstance(block, dict) or block.get("value") is None:
        return None
    return {"value": block["value"], "ci": block.get("ci"), "n": block.get("n")}


def model_figures(folder: Path) -> dict[str, Any]:
    """The record's figures of one model folder (metrics.json over all evaluated rows)."""
    from gnt.results.model_folder import ModelFolder

    composed, _ = ModelFolder(folder.parent, folder.name).metrics()  # the grid's, judge's and xCOMET's metrics
    metrics: dict[str, Any] = dict(composed or {})
    overall = metrics["overall"]
    gnt = overall.get("gnt_accuracy") or {}
    adequate_gnt = overall.get("gnt_accuracy_adequate") or {}
    preference = metrics.get("preference_accuracy") or {}
    return {
        "label_balanced_accuracy": _stat(overall["label_balanced_accuracy"]),
        "label_macro_f1": _stat(overall["label_macro_f1"]),
        "label_accuracy_set_g": _stat(overall["label_accuracy"]["Set-G"]),
        "label_accuracy_set_n": _stat(overall["label_accuracy"]["Set-N"]),
        "label_shares": overall["label_distribution"]["shares"],
        "label_collapsed": overall["label_distribution"]["collapsed"],
        "constant_label_baseline": overall["label_baselines"],
        "chrf": _stat(overall["adequacy"]["chrf"]),
        "adequate": _stat(overall["adequacy"]["adequate"]),
        "gnt_accuracy_set_n": _stat(gnt.get("Set-N")),
        "gnt_accuracy_set_n_adequate": _stat(adequate_gnt.get("Set-N")),
        "gnt_accuracy_set_g_adequate": _stat(adequate_gnt.get("Set-G")),
        "extraction_error_rate": _stat(overall["extraction_errors"]["rate"]),
        "extraction_errors_by_code": overall["extraction_errors"]["by_code"],
        "preference_accuracy": _stat(preference.get("all")),
        "per_language": {
            lang: {"label_balanced_accuracy": _stat(block["label_balanced_accuracy"]),
                   "chrf": _stat(block["adequacy"]["chrf"]),
                   "gnt_accuracy_set_n_adequate": _stat((block.get("gnt_accuracy_adequate") or {}).get("Set-N"))}
            for lang, block in metrics["languages"].items()
        },
    }


def paired_tests(report_data: dict) -> dict[str, dict]:
    """The report's paired tests against the base over all languages: {model: {column: delta, p, marker}}."""
    tests: dict[str, dict] = {}
    for row in report_data.get("headline", []):
        if row.get("lang") is not None:
            continue
        entry = {}
        for key in TESTED:
            cell = row.get(key) or {}
            if cell.get("delta") is None:
                continue
            better = cell["delta"] < 0 if key == "errors" else cell["delta"] > 0
            significant = cell.get("p_adjusted") is not None and cell["p_adjusted"] < 0.05
            entry[key] = {"delta": round(cell["delta"], 6), "p_adjusted": cell.get("p_adjusted"),
                          "marker": ("▲" if better else "▼") if significant else ""}
        tests[row["model"]] = entry
    return tests


def demo_goals(base: dict, final: dict, test: dict, demo: dict | None) -> dict[str, bool | None]:
    """Whether the final checkpoint meets each goal of the demo (None: not measurable from this record)."""
    def value(figures: dict, key: str) -> float | None:
        return (figures.get(key) or {}).get("value")

    balanced = final.get("label_balanced_accuracy") or {}
    goals: dict[str, bool | None] = {
        "label balanced accuracy >= 75% with its CI above 50%": (
            balanced.get("value") is not None and balanced["value"] >= 0.75 and balanced["ci"][0] > 0.50),
        "Set-G and Set-N label accuracy each >= 60%": all(
            (value(final, k) or 0) >= 0.6 for k in ("label_accuracy_set_g", "label_accuracy_set_n")),
        "extraction errors <= 20%": (value(final, "extraction_error_rate") or 0) <= 0.20,
        "chrF++ no lower than the base's minus 2": (value(final, "chrf") or 0) >= (value(base, "chrf") or 0) - 2,
        "GNT accuracy on Set-N over adequate outputs above the base, significant":
            (test.get("gnt_n_adequate") or {}).get("marker") == "▲",
    }
    if demo is not None:  # a demo record of some steps only (a resumed or partial run) times nothing whole
        whole = set(demo.get("steps") or {}) >= WHOLE_DEMO
        goals["demo <= 20 minutes after install"] = demo["seconds_total"] <= DEMO_SECONDS if whole else None
        goals["peak resident memory <= 6 GB in every step"] = demo["peak_rss_mb"] <= DEMO_PEAK_MB if whole else None
    return goals


@dataclass
class QualityCpuOptions:
    """Which budget, in which demo folder, run or read."""

    budget: str = field(default="demo", metadata={
        "choices": tuple(sorted(BUDGETS)),
        "help": "demo: make demo itself; long: a checkpoint every 50 SFT steps, each scored"})
    out_dir: str | None = field(default=None, metadata={
        "help": "demo folder (default outputs/bench-quality-<budget>)"})
    reuse: bool = field(default=False, metadata={"help": "read an existing demo folder instead of running"})


def _run(call: Call) -> int:
    args = call.build(QualityCpuOptions)
    out = Path(args.out_dir or ROOT / "outputs" / f"bench-quality-{args.budget}")
    if not args.reuse:
        command = [sys.executable, "scripts/demo.py", "model=gemma", f"out_dir={out}", *BUDGETS[args.budget]]
        print("$ " + " ".join(command), flush=True)
        subprocess.run(command, cwd=ROOT, check=True)
    results = out / "eval"
    summary = read_json(results / "summary.json")
    names = [m["name"] for m in summary["models"]]
    models = {name: model_figures(results / name) for name in names}
    tests = paired_tests(read_json(results / "report" / "report_data.json"))
    demo_record = out / "demo_record.json"
    demo = read_json(demo_record) if demo_record.is_file() else None
    choice_path = out / "stage_choice.json"
    choice = read_json(choice_path) if choice_path.is_file() else None
    final = names[-1]  # the last stage evaluated, unless the stage choice on dev ended the chain at SFT
    if choice and choice.get("final") == "sft":
        final = [name for name in names if name.startswith("sft/")][-1]
    goals = demo_goals(models[names[0]], models[final], tests.get(final, {}), demo if args.budget == "demo" else None)
    training = {}
    for stage, folder in (("judge", "judge"), ("sft", "sft"), ("dpo", "dpo"), ("onpolicy", "onpolicy/round-1")):
        record = out / "runs" / folder / "gnt_run.json"
        if record.is_file():
            run = read_json(record)
            training[stage] = {"recipe": run.get("recipe"), "lean_forward": run.get("lean_forward"),
                               "data_counts": run.get("data_counts"), "global_step": run.get("global_step"),
                               "train_runtime_s": (run.get("train_metrics") or {}).get("train_runtime")}
    if (out / "runs" / "onpolicy" / "onpolicy.json").is_file():  # the round's samples, pairs and mean rewards
        training["onpolicy_rounds"] = read_json(out / "runs" / "onpolicy" / "onpolicy.json").get("rounds")
    figures = {
        "budget": args.budget, "overrides": list(BUDGETS[args.budget]), "reused": str(out) if args.reuse else None,
        "models": models, "final": final, "stage_choice": choice, "paired_tests_vs_base": tests, "goals_met": goals,
        "judge_validation": read_json(out / "judge" / "validation.json") if (out / "judge" / "validation.json").is_file()
        else None,
        "demo_steps": demo, "training": training,
        "eval_rows": {k: v for k, v in read_json(results / "base" / "record.json")["rows"].items() if k != "files"},
    }
    rows = []
    for name, figs in models.items():
        for key in ("label_balanced_accuracy", "label_accuracy_set_g", "label_accuracy_set_n", "chrf",
                    "gnt_accuracy_set_n_adequate", "extraction_error_rate"):
            stat = figs.get(key)
            rows.append((f"{name} {key}", stat["value"] if stat else None, ""))
    rows += [(f"goal: {goal}", "met" if ok else ("n/a" if ok is None else "NOT met"), "") for goal, ok in goals.items()]
    print_table(f"quality on CPU, {args.budget} budget (final: {final})", rows)
    path = save_record(f"quality_cpu_{args.budget}" if args.budget != "demo" else "quality_cpu", figures,
                       {goal: "final checkpoint" for goal in goals})
    print(f"\nrecord: {path}")
    return 0


COMMAND = bench_command(
    __name__, __file__, "benchmark: what the demo's base → SFT → aligned training does on a CPU, with CIs",
    QualityCpuOptions, _run, __doc__
)
