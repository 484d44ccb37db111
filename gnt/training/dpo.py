"""DPO over an SFT adapter: the adapter keeps training, and a frozen copy of it is the reference policy.

The SFT adapter is loaded as the trainable ``default`` adapter of a PeftModel over the same base model. Given such a
model and no ``ref_model``, TRL 1.16's DPOTrainer adds a second adapter ``ref`` holding a copy of the SFT weights and
switches to it for the reference forward passes. So the reference is exactly the SFT policy (not the bare base
model, which is what a fresh adapter would get), and memory holds one base model plus two small adapters.
Checkpoints hold ``default`` at their root (the DPO adapter, over the same base as SFT) and the copy in ``ref/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gnt.recipe import ResolvedRecipe
from gnt.training.base_model import load_sft_policy, resolve_model, resolve_sft_adapter, same_model
from gnt.training.config import TrainingError, as_recipe
from gnt.training.data import TrainingData, to_dataset
from gnt.training.decision_pairs import score_decision_token_only
from gnt.training.lean_forward import make_lean
from gnt.training.runner import PreparedRun, StagePlugin, prepare_run, run_stage
from gnt.training.template_checks import check_target_eos

REFERENCE_ADAPTER = "ref"


def _resolve(setup: Any) -> tuple[str, Any, str]:
    adapter = resolve_sft_adapter(setup.project.sft_adapter, ("sft", "dpo"))  # on-policy rounds continue the last
    base = adapter.base_model
    spec = setup.model_args.model_name_or_path
    if spec:
        resolved = resolve_model(spec)
        if not same_model(resolved, base):
            raise TrainingError(
                f"model_name_or_path {spec} ({resolved}) is not the base model of the SFT adapter ({base}): DPO "
                "must train over the same base model. Remove model_name_or_path from the DPO recipe."
            )
    else:
        setup.model_args.model_name_or_path = base
    tokenizer_source = str(adapter.path) if (adapter.path / "tokenizer_config.json").is_file() else base
    return base, adapter, tokenizer_source


def _check_rows(tokenizer: Any, data: TrainingData, setup: Any) -> None:
    row = data.train[0]
    check_target_eos(tokenizer, {"prompt": row["prompt"], "completion": row["chosen"]}, None)


def _build_trainer(run: PreparedRun, callbacks: list) -> Any:
    from trl import DPOTrainer

    args, model_args = run.setup.training_args, run.setup.model_args
    policy = load_sft_policy(run.sft_adapter, run.base_model, model_args, args)
    args.model_init_kwargs = None
    trainer = DPOTrainer(
        model=policy,
        ref_model=None,
        args=args,
        train_dataset=to_dataset(run.data.train),
        eval_dataset=to_dataset(run.data.dev),
        processing_class=run.tokenizer,
        callbacks=callbacks,
    )
    run.record["lean_forward"] = make_lean(trainer, run.setup.project.share_prompt_prefix,
                                         run.setup.project.balance_label_batches, units=run.setup.project.batch_units)
    if run.setup.project.decision_token_only:
        run.record["lean_forward"].update(score_decision_token_only(trainer))
    if REFERENCE_ADAPTER not in trainer.model.peft_config or trainer.ref_model is not None:
        raise TrainingError(
            "TRL did not set up the SFT adapter as a frozen 'ref' adapter (installed TRL behaves differently from "
            "1.16): refusing to train against a different reference policy"
        )
    return trainer


DPO = StagePlugin("dpo", _resolve, _check_rows, _build_trainer)


def prepare_dpo(recipe: str | ResolvedRecipe | None, overrides: Sequence[tuple[str, Any]] = ()) -> PreparedRun:
    """Resolve, check and build everything for a DPO run without training (tests inspect the reference)."""
    return prepare_run(DPO, as_recipe("dpo", recipe, overrides))


def run_dpo(recipe: str | ResolvedRecipe | None, overrides: Sequence[tuple[str, Any]] = ()) -> Path:
    """Train a DPO adapter from the recipe's ``sft_adapter``; return the output directory (resumes like SFT)."""
    return run_stage(DPO, as_recipe("dpo", recipe, overrides))
