"""What training does to SmolLM2-135M-Instruct on a CPU: base → SFT → DPO on every headline metric, with 95% CIs.

Why: the framework's promise is that SFT → DPO on its data makes a translator label and translate more gender-
neutrally where the source is ambiguous while keeping stated gender. This runs the demo chain (the same commands
as ``make demo``, ``scripts/demo.py``) with a longer training budget and more held-out rows, then reads back what
the evaluator, the templated suite and the report computed, and writes one record:

- per model (base, each SFT and DPO checkpoint): extraction-error rate, label accuracy on Set-G and Set-N, label
  macro-F1, preference accuracy overall and per pair kind (each with its 95% CI), and the report's paired test
  against the base (difference, Holm-adjusted p-value, ▲ better / ▼ worse);
- templated suite (plain and grid prompt, it and es): N_amb and ΔN with CIs;
- the settings (recipes, overrides, data build flags), timings per step, machine, versions and commit.

Hyperparameters come from the dev split (``split=dev`` sweeps), never from these test rows.

    python bench/quality_cpu.py                 # ~25 min on 2 cores
    python bench/quality_cpu.py --reuse --out outputs/demo-smollm   # the record of an existing run (no training)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from record import print_table, save_record

from gnt.io import read_json

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "outputs" / "bench-quality"
#: The longer budget: per-step recipe overrides on top of the demo's SmolLM2 recipes.
OVERRIDES = (
    "sft:max_steps=24", "sft:save_steps=12",
    "dpo:max_steps=8", "dpo:save_steps=8",
    "eval:rows_per_lang=64", "eval:preference_pairs_per_kind=6",
    "templated:pairs_per_lang=12",
)
HEADLINE = {
    "errors": "extraction_error_rate",
    "label_g": "label_accuracy_set_g",
    "label_n": "label_accuracy_set_n",
    "pref": "preference_accuracy",
}


def _run_chain(out: Path) -> float:
    command = [sys.executable, "scripts/demo.py", "model=smollm", f"out={out}"]
    command += [item.replace(":", ".", 1) for item in OVERRIDES]  # STEP:KEY=VALUE → STEP.KEY=VALUE
    print("$ " + " ".join(command), flush=True)
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True)
    return time.perf_counter() - started


def _stat(block: dict | None) -> dict | None:
    if not isinstance(block, dict) or block.get("value") is None:
        return None
    return {"value": block["value"], "ci": block.get("ci"), "n": block.get("n")}


def _model_figures(folder: Path) -> dict[str, Any]:
    metrics = read_json(folder / "metrics.json")
    overall = metrics["overall"]
    preference = metrics.get("preference_accuracy") or {}
    return {
        "extraction_error_rate": _stat(overall["extraction_errors"]["rate"]),
        "extraction_errors_by_code": overall["extraction_errors"]["by_code"],
        "label_accuracy_set_g": _stat(overall["label_accuracy"]["Set-G"]),
        "label_accuracy_set_n": _stat(overall["label_accuracy"]["Set-N"]),
        "label_macro_f1": _stat(overall["label_macro_f1"]),
        "preference_accuracy": _stat(preference.get("all")),
        "preference_by_kind": {k: _stat(v) for k, v in (preference.get("by_kind") or {}).items()},
    }


def _templated_figures(folder: Path) -> dict[str, Any]:
    path = folder / "templated" / "metrics.json"
    if not path.is_file():
        return {}
    out: dict[str, Any] = {}
    for style, langs in read_json(path)["styles"].items():
        for lang, block in langs.items():
            subset = block["subsets"]["all"]
            out[f"{style}/{lang}"] = {
                "N_amb": _stat(subset["ambiguous"]["N"]), "N_det": _stat(subset["determined"]["N"]),
                "dN": _stat(subset["delta"]["N"]), "dM": _stat(subset["delta"]["M"]),
                "unknown_rate_amb": _stat(subset["unknown_rate"]["ambiguous"]),
            }
    return out


def _training_settings(out: Path) -> dict[str, dict]:
    """The resolved training keys that set the budget, from each run's own record (true also for ``--reuse``)."""
    keys = ("max_steps", "per_device_train_batch_size", "learning_rate", "lora_r", "beta", "save_steps", "max_length")
    settings = {}
    for stage in ("sft", "dpo"):
        record = out / "runs" / stage / "gnt_run.json"
        if record.is_file():
            recipe = read_json(record).get("recipe", {})
            settings[stage] = {k: recipe[k] for k in keys if k in recipe}
            settings[stage]["data_counts"] = read_json(record).get("data_counts")
    return settings


def _tests(report_data: dict) -> dict[str, dict]:
    """The report's paired tests against the base, all languages: {model: {metric: delta, p, marker}}."""
    tests: dict[str, dict] = {}
    for row in report_data.get("headline", []):
        if row.get("lang") is not None:
            continue
        entry = {}
        for key in HEADLINE:
            cell = row.get(key) or {}
            if cell.get("delta") is None:
                continue
            better = cell["delta"] < 0 if key == "errors" else cell["delta"] > 0
            significant = cell.get("p_adjusted") is not None and cell["p_adjusted"] < 0.05
            entry[key] = {"delta": round(cell["delta"], 6), "p_adjusted": cell.get("p_adjusted"),
                          "marker": ("▲" if better else "▼") if significant else ""}
        tests[row["model"]] = entry
    return tests


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--reuse", action="store_true", help="read an existing run instead of running the chain")
    args = parser.parse_args(argv)
    out = Path(args.out)
    seconds = None if args.reuse else _run_chain(out)
    results = out / "eval"
    summary = read_json(results / "summary.json")
    models = {m["name"]: _model_figures(results / m["name"]) for m in summary["models"]}
    templated = {m["name"]: _templated_figures(results / m["name"]) for m in summary["models"]}
    report_data = read_json(results / "report" / "report_data.json")
    tests = _tests(report_data)
    figures = {
        "models": models,
        "paired_tests_vs_base": tests,
        "templated": templated,
        "settings": {
            "chain": "scripts/demo.py model=smollm",
            "overrides": None if args.reuse else list(OVERRIDES),
            "reused_run": str(out) if args.reuse else None,
            "training": _training_settings(out),
            "eval_rows": {k: v for k, v in read_json(results / "base" / "record.json")["rows"].items() if k != "files"},
        },
        "seconds_total": round(seconds, 1) if seconds is not None else None,
    }
    last = summary["models"][-1]["name"]
    goals = {
        "label_n": "final checkpoint ▲ vs base (paired bootstrap, Holm, α=0.05)",
        "errors": "final checkpoint ▲ (fewer extraction errors)",
        "label_g": "no fall of more than 5 points vs base",
        "pref": "final checkpoint ▲",
    }
    rows = []
    for name, figs in models.items():
        for key, field in HEADLINE.items():
            stat = figs.get(field)
            mark = tests.get(name, {}).get(key, {}).get("marker", "")
            rows.append((f"{name} {field}", stat["value"] if stat else None, mark))
    print_table(f"quality on CPU (final: {last})", rows)
    path = save_record("quality_cpu", figures, goals)
    print(f"\nrecord: {path}")
    print(json.dumps(tests, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
