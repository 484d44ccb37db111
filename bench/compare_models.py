"""Which real CPU model should the demo train? The same SFT budget on each candidate, scored on the dev split.

    python bench/compare_models.py                      # gemma and smollm, the demo's SFT budget
    python bench/compare_models.py --models gemma,smollm --out-dir outputs/bench-models
    python bench/compare_models.py --trained=gemma=outputs/demo-gemma/runs/sft   # reuse a demo's SFT run

A ``trained`` run is reused only when its run record shows it completed with this budget (each budget key
equal; otherwise the script refuses it, naming the key that differs); the other candidates then train on its
data build.

Each candidate (a demo profile of ``scripts/demo.py``: its data build, SFT recipe and model) gets the same data
(built once) and the same SFT budget (steps, batch, learning rate and schedule, LoRA rank, sequence cap: the
``--sft`` overrides on top of its recipe), then the base and the trained adapter are scored by the project's own
evaluator on the **dev** split (held-out mGeNTE and templated dev rows of en-it and en-es, the cell the demo
trains on) with the lexical judge. The record gives, per model, what says whether it translates — chrF++ against
the references and the share of adequate outputs (chrF++ ≥ 30), extraction errors — beside the label metrics, and
a sample of outputs to read. The demo's default is the candidate whose trained adapter translates best (highest
chrF++ on dev); the others stay available as ``make demo MODEL=...``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from record import bench_command, conclude, module_at

from gnt.cli.command import Call
from gnt.io import read_json, read_jsonl

ROOT = Path(__file__).resolve().parent.parent
MODELS = module_at(ROOT / "scripts" / "demo.py", "gnt_demo").MODELS
"""The demo's profiles: the one source of each candidate's data build flags and recipes."""

#: The budget every candidate gets, on top of its own recipe (the demo's SFT budget).
SFT_BUDGET = ("max_steps=60", "save_steps=60", "per_device_train_batch_size=8", "learning_rate=1e-3",
              "lr_scheduler_type=cosine", "lora_r=16", "lora_alpha=32", "max_length=384", "report_to=none",
              "share_prompt_prefix=true", "balance_label_batches=true", "decision_token_weight=5.0")
EVAL = ("split=dev", "langs=it,es", "configs=None", "shots=0", "templated_rows=true", "preference=false",
        "steps=grid,judge", "judge.judge=lexical", "max_new_tokens=96")


def _timed(command: list[str]) -> float:
    """Run one of the project's commands from the repository root; its wall seconds. (Named apart from ``_run``,
    the benchmark's own entry point: one module-level name each, so neither replaces the other.)"""
    print("$ " + " ".join(command), flush=True)
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True)
    return round(time.perf_counter() - started, 1)


def _figures(folder: Path) -> dict[str, Any]:
    from gnt.results.model_folder import ModelFolder

    metrics, reasons = ModelFolder(folder.parent, folder.name).metrics()  # the grid's, judge's and xCOMET's
    if metrics is None:  # a grid that is not whole or recorded no metrics: nothing to compare, say why
        raise SystemExit(f"{folder}: no metrics to compare ({'; '.join(reasons) or 'every generation failed'})")
    overall = metrics["overall"]

    def stat(block: Any) -> Any:
        return None if not block or block.get("value") is None else {"value": block["value"], "ci": block["ci"]}

    return {
        "chrf": stat(overall["adequacy"]["chrf"]),
        "adequate": stat(overall["adequacy"]["adequate"]),
        "extraction_errors": stat(overall["extraction_errors"]["rate"]),
        "label_balanced_accuracy": stat(overall["label_balanced_accuracy"]),
        "label_accuracy_set_g": stat(overall["label_accuracy"]["Set-G"]),
        "label_accuracy_set_n": stat(overall["label_accuracy"]["Set-N"]),
        "label_shares": overall["label_distribution"]["shares"],
        "gnt_accuracy_adequate_set_n": stat((overall.get("gnt_accuracy_adequate") or {}).get("Set-N")),
        "samples": [
            {"source": r["source"], "output": r["raw"], "chrf": r["chrf"]}
            for r in read_jsonl(folder / "generations.jsonl")
            if r["id"].split("-")[0].upper() in ("IT", "ES")
        ][:6],
    }


def _reusable(run: Path) -> Path:
    """The data folder a trained run used, or refuse it when its recorded recipe differs from the budget."""
    record = read_json(run / "gnt_run.json")
    if record.get("status") != "completed":
        raise SystemExit(f"--trained {run}: its run did not complete")
    recipe = record.get("recipe") or {}
    for assignment in SFT_BUDGET:
        key, value = assignment.split("=", 1)
        if key in ("report_to", "save_steps"):
            continue
        recorded = recipe.get(key)
        if str(recorded).lower() != value.lower() and not _same_number(recorded, value):
            raise SystemExit(f"--trained {run}: {key} is {recorded!r}, the budget says {value}")
    print(f"reusing {run}: its recipe matches the budget")
    return Path(record["data_dir"])


def _same_number(recorded: Any, value: str) -> bool:
    try:
        return float(recorded) == float(value)
    except (TypeError, ValueError):
        return False


@dataclass
class CompareModelsOptions:
    """Which candidates, where to write, and which SFT runs to reuse."""

    models: list[str] = field(default_factory=lambda: ["gemma", "smollm"], metadata={
        "help": "the candidates: demo profiles of scripts/demo.py"})
    out_dir: str = field(default=str(ROOT / "outputs" / "bench-models"), metadata={
        "help": "where the data build, the SFT runs and the evaluations go"})
    trained: list[str] = field(default_factory=list, metadata={
        "help": "MODEL=RUN: reuse an SFT run of this budget instead of training MODEL again "
                "(trained=gemma=RUN, or --trained=gemma=RUN; given twice, both)"})


def _run(call: Call) -> None:
    args = call.build(CompareModelsOptions)
    trained_runs = dict(item.split("=", 1) for item in args.trained)
    out = Path(args.out_dir)
    names = list(args.models)
    python = sys.executable
    data = out / "data"
    reused_data = {_reusable(Path(run)) for run in trained_runs.values()}
    if len(reused_data) > 1:
        raise SystemExit(f"--trained runs used different data builds: {sorted(map(str, reused_data))}")
    if reused_data:  # every candidate trains and is scored on the reused runs' build (its dev rows held out)
        data = reused_data.pop()
    seconds: dict[str, float] = {}
    builds = {MODELS[name].build for name in names}
    if len(builds) != 1:
        raise SystemExit("the candidates' demo profiles build different data; compare them on one build")
    if not (data / "manifest.json").is_file():
        seconds["data"] = _timed([python, "data/build.py", f"out_dir={data}", *MODELS[names[0]].build])
    models: dict[str, Any] = {}
    for name in names:
        run = out / "runs" / name
        if name in trained_runs:
            run = Path(trained_runs[name])
        else:
            seconds[f"{name}_sft"] = _timed([python, "train/sft.py", MODELS[name].sft, f"data_dir={data}",
                                             f"output_dir={run}", *SFT_BUDGET])
        results = out / "eval" / name
        seconds[f"{name}_eval"] = _timed([python, "eval/evaluate.py", MODELS[name].eval, f"runs={run}",
                                          f"out_dir={results}", *EVAL])
        summary = read_json(results / "summary.json")
        trained = summary["models"][-1]["name"]
        models[name] = {"base": _figures(results / "base"), "trained": _figures(results / trained),
                        "trained_name": trained, "recipe": MODELS[name].sft}
    best = max(names, key=lambda n: (models[n]["trained"]["chrf"] or {}).get("value") or 0.0)
    rows = [(f"{name} {stage} chrF++ / adequate", f"{m[stage]['chrf']['value']:.1f} / "
             f"{100 * m[stage]['adequate']['value']:.0f}%", "") for name, m in models.items()
            for stage in ("base", "trained")]
    figures = {"models": models, "best": best, "sft_budget": list(SFT_BUDGET), "eval": list(EVAL),
               "seconds": seconds, "reused_sft_runs": trained_runs}
    goals = {"default demo model": "the candidate with the highest chrF++ on dev after the same SFT budget"}
    conclude("compare_models", f"candidates after the same SFT budget (best: {best})", rows, figures, goals)


COMMAND = bench_command(
    __name__, __file__, "benchmark: the demo's candidate models after the same SFT budget, on dev",
    CompareModelsOptions, _run, __doc__
)
