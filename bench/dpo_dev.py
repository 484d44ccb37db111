"""Which DPO settings keep or improve what SFT taught? Each variant trains from one SFT adapter and is scored on dev.

    python bench/dpo_dev.py --sft outputs/demo-gemma/runs/sft --data outputs/demo-gemma/data
    python bench/dpo_dev.py --sft RUN --data DATA --only A,C --out-dir outputs/bench-dpo
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

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from record import bench_command, conclude

from gnt.bootstrap import BootstrapSettings
from gnt.cli.command import Call
from gnt.evaluation.metrics import compute_metrics
from gnt.filenames import GENERATIONS
from gnt.io import read_jsonl
from gnt.recipe import RecipeError

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
    "label_decision_seed1": ("seed=1",),
    "label_decision_ga4": ("gradient_accumulation_steps=4",),
    "label_decision_ga4_seed1": ("gradient_accumulation_steps=4", "seed=1"),
    "label_decision_ga4_steps8": ("gradient_accumulation_steps=4", "max_steps=8", "save_steps=8"),
    "label_decision_ga4_steps8_seed1": ("gradient_accumulation_steps=4", "max_steps=8", "save_steps=8", "seed=1"),
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


@dataclass
class DpoDevOptions:
    """The SFT run to start from, its data, where the variants go, and which of them."""

    sft: str | None = field(default=None, metadata={
        "help": "the SFT run (its last checkpoint is the start); required"})
    data: str | None = field(default=None, metadata={
        "help": "the data build the SFT run trained on; required"})
    out_dir: str = field(default=str(ROOT / "outputs" / "bench-dpo-dev"), metadata={
        "help": "where each variant's run (dpo-NAME) and dev scores (dev-NAME) go"})
    only: list[str] = field(default_factory=list, metadata={
        "choices": tuple(VARIANTS), "help": "the variants to run (default: all)"})
    score_only: bool = field(default=False, metadata={"help": "score existing dev folders, train nothing"})


def _run_variants(call: Call) -> None:
    options = call.build(DpoDevOptions)
    if options.sft is None or options.data is None:
        raise RecipeError("give sft=RUN and data=DATA (the SFT run and its data build)\n"
                          + call.command.usage())
    sft, data, out = Path(options.sft), Path(options.data), Path(options.out_dir)
    names = list(options.only) or list(VARIANTS)
    py = sys.executable
    sft_last = _last_checkpoint(sft)
    jobs: dict[str, tuple[Path, list[str]]] = {"sft": (sft_last, [])}
    for name in names:
        run = out / f"dpo-{name}"
        if not options.score_only:
            _run([py, "train/dpo.py", DPO_RECIPE, f"data_dir={data}", f"sft_adapter={sft}",
                  f"output_dir={run}", "report_to=none", *VARIANTS[name]])
        jobs[name] = (_last_checkpoint(run), list(VARIANTS[name]))
    mode = "scored existing folders" if options.score_only else "trained and scored"
    figures: dict[str, Any] = {"sft_run": str(sft), "data": str(data), "dpo_recipe": DPO_RECIPE,
                               "eval_recipe": EVAL_RECIPE, "eval": list(EVAL), "variants": {}, "mode": mode}
    for name, (adapter, overrides) in jobs.items():
        folder = out / f"dev-{name}"
        if not options.score_only:
            _run([py, "eval/evaluate.py", EVAL_RECIPE, *EVAL, f"adapters={adapter}", f"out_dir={folder}"])
        figures["variants"][name] = {"adapter": str(adapter), "overrides": overrides, **dev_figures(folder)}
    rows = []
    for name, figure in figures["variants"].items():
        cells = [f"{100 * figure[o]['label_balanced_accuracy']['value']:.1f}" for o in ORIGINS]
        set_n = figure["mgente"]["label_accuracy_set_n"]["value"]
        rows.append((name, " / ".join(cells) + f" (mGeNTE Set-N {100 * set_n:.0f})", "bal. acc. mGeNTE / templated / all"))
    goals = {"choice": "the variant with the highest dev label balanced accuracy over all dev rows that loses no "
                       "significant mGeNTE dev balanced accuracy against the SFT adapter; none: DPO stays off"}
    conclude("dpo_dev", "DPO variants from one SFT adapter, scored on dev", rows, figures, goals)


COMMAND = bench_command(
    __name__, __file__, "benchmark: DPO variants from one SFT adapter, scored on dev",
    DpoDevOptions, _run_variants, __doc__
)
