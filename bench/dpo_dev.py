"""Which DPO settings keep or improve what SFT taught? Each variant trains from one SFT adapter and is scored on dev.

    python bench/dpo_dev.py --sft outputs/demo-gemma/runs/sft --data outputs/demo-gemma/data
    python bench/dpo_dev.py --sft RUN --data DATA --only A,C --out outputs/bench-dpo
    python bench/dpo_dev.py --sft RUN --data DATA --score-only     # score the variants' dev folders again

Every variant is ``train/dpo.py recipes/gemma270m-dpo.yaml`` with the overrides of :data:`VARIANTS` (one of them
with a learning rate of ~0: the control that must reproduce the SFT adapter's outputs, so that a difference is
DPO's and not a loading artefact), then ``eval/evaluate.py recipes/eval-gemma270m.yaml split=dev
templated_rows=true`` on its last checkpoint, the SFT adapter included as the reference row. The record gives the
label balanced accuracy (with its 95% CI), Set-G and Set-N label accuracy, extraction errors and chrF++ on the
held-out **dev** mGeNTE rows, on the templated dev rows, and on both: the DPO recipe is chosen from these, never
from test rows. A variant that trains or scores again only when its folder is incomplete (each step resumes).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

from record import conclude

from gnt.bootstrap import BootstrapSettings
from gnt.evaluation.metrics import compute_metrics
from gnt.filenames import GENERATIONS
from gnt.io import read_jsonl

ROOT = Path(__file__).resolve().parent.parent
DPO_RECIPE = "recipes/gemma270m-dpo.yaml"
EVAL_RECIPE = "recipes/eval-gemma270m.yaml"
EVAL = ("split=dev", "templated_rows=true", "steps=grid", "include_base=false", "preference=false")
RPO = "loss_type=[sigmoid,sft]"
"""TRL's DPO loss plus the chosen answers' NLL (RPO): the policy is held to the answers it is pulled towards."""
VARIANTS: dict[str, tuple[str, ...]] = {
    "control_lr0": ("learning_rate=1e-12",),
    "label_decision": (),
    "label_decision_rpo": (RPO,),
    "label_decision_rpo_lr2e-5": (RPO, "learning_rate=2e-5"),
    "label_decision+templated_rpo": (RPO, "pair_kinds=[label_decision,templated_ambiguous]"),
    "label_decision+templated_rpo_seed1": (RPO, "pair_kinds=[label_decision,templated_ambiguous]", "seed=1"),
    "label_decision+templated": ("pair_kinds=[label_decision,templated_ambiguous]",),
    "label_decision_decision_token_only": ("decision_token_only=true",),
}
"""Overrides of the DPO recipe per variant (the recipe's own settings: label_decision pairs, lr 5e-5, 10 steps)."""
ORIGINS = ("mgente", "templated", "all")


def _run(command: list[str]) -> None:
    print("$ " + " ".join(command), flush=True)
    subprocess.run(command, cwd=ROOT, check=True)


def _last_checkpoint(run: Path) -> Path:
    checkpoints = sorted(run.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    if not checkpoints:
        raise SystemExit(f"{run}: no checkpoint")
    return checkpoints[-1]


def origin_of(row: dict) -> str:
    """A dev row's origin: templated rows' ids start with ``tpl-``."""
    return "templated" if str(row["id"]).startswith("tpl-") else "mgente"


def dev_figures(folder: Path) -> dict[str, Any]:
    """Label figures per origin of one model's dev generations, through the evaluator's own metrics."""
    paths = [p for p in folder.glob(f"*/*/{GENERATIONS}") if "cache" not in p.parts]  # STAGE/checkpoint-N/
    if len(paths) != 1:
        raise SystemExit(f"{folder}: expected one model's {GENERATIONS}, found {len(paths)}")
    rows = list(read_jsonl(paths[0]))
    out: dict[str, Any] = {}
    for origin in ORIGINS:
        chosen = [r for r in rows if origin == "all" or origin_of(r) == origin]
        overall = compute_metrics(chosen, None, bootstrap=BootstrapSettings(1000, 0))["overall"]

        def stat(block: Any) -> Any:
            return None if not block or block.get("value") is None else {
                "value": round(block["value"], 4), "ci": [round(v, 4) for v in block["ci"]]}

        out[origin] = {
            "n": len(chosen),
            "label_balanced_accuracy": stat(overall["label_balanced_accuracy"]),
            "label_accuracy_set_g": stat(overall["label_accuracy"]["Set-G"]),
            "label_accuracy_set_n": stat(overall["label_accuracy"]["Set-N"]),
            "extraction_errors": stat(overall["extraction_errors"]["rate"]),
            "chrf": stat(overall["adequacy"]["chrf"]),
        }
    return out


def main(argv: list[str]) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sft", type=Path, required=True, help="the SFT run (its last checkpoint is the start)")
    parser.add_argument("--data", type=Path, required=True, help="the data build the SFT run trained on")
    parser.add_argument("--out", type=Path, default=ROOT / "outputs" / "bench-dpo-dev")
    parser.add_argument("--only", default=None, help="comma-separated variant names")
    parser.add_argument("--score-only", action="store_true", help="score existing dev folders, train nothing")
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else list(VARIANTS)
    py = sys.executable
    sft_last = _last_checkpoint(args.sft)
    jobs: dict[str, tuple[Path, list[str]]] = {"sft": (sft_last, [])}
    for name in names:
        run = args.out / f"dpo-{name}"
        if not args.score_only:
            _run([py, "train/dpo.py", DPO_RECIPE, f"data_dir={args.data}", f"sft_adapter={args.sft}",
                  f"output_dir={run}", "report_to=none", *VARIANTS[name]])
        jobs[name] = (_last_checkpoint(run), list(VARIANTS[name]))
    figures: dict[str, Any] = {"sft_run": str(args.sft), "data": str(args.data), "dpo_recipe": DPO_RECIPE,
                               "eval_recipe": EVAL_RECIPE, "eval": list(EVAL), "variants": {},
                               "mode": "scored existing folders" if args.score_only else "trained and scored"}
    for name, (adapter, overrides) in jobs.items():
        folder = args.out / f"dev-{name}"
        if not args.score_only:
            _run([py, "eval/evaluate.py", EVAL_RECIPE, *EVAL, f"adapters={adapter}", f"out_dir={folder}"])
        figures["variants"][name] = {"adapter": str(adapter), "overrides": overrides, **dev_figures(folder)}
    rows = []
    for name, figure in figures["variants"].items():
        cells = [f"{100 * figure[o]['label_balanced_accuracy']['value']:.1f}" for o in ORIGINS]
        set_n = figure["mgente"]["label_accuracy_set_n"]["value"]
        rows.append((name, " / ".join(cells) + f" (mGeNTE Set-N {100 * set_n:.0f})", "bal. acc. mGeNTE / templated / all"))
    goals = {"choice": "the variant with the highest dev label balanced accuracy over all dev rows that loses no "
                       "significant mGeNTE dev balanced accuracy against the SFT adapter; none: DPO stays off"}
    return conclude("dpo_dev", "DPO variants from one SFT adapter, scored on dev", rows, figures, goals)


if __name__ == "__main__":
    main(sys.argv[1:])
