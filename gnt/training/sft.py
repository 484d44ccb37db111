"""Supervised fine-tuning of a LoRA (or QLoRA) adapter on the completion only, with TRL's SFTTrainer.

The rows are conversational prompt–completion pairs, so TRL computes the loss on the assistant turn only (the
completion, closed by the template's end-of-turn token, which :func:`check_target_eos` verifies before training).
With ``packing: true`` TRL packs rows best-fit and trains padding-free (``position_ids`` restart per row).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gnt.recipe import ResolvedRecipe
from gnt.training.base_model import model_init_kwargs, quantization_config, resolve_model
from gnt.training.config import as_recipe
from gnt.training.data import TrainingData, to_dataset
from gnt.training.lean_forward import decision_token_ids, make_lean, weigh_decision_token
from gnt.training.runner import PreparedRun, StagePlugin, prepare_run, run_stage
from gnt.training.template_checks import check_target_eos


def _resolve(setup: Any) -> tuple[str, None, str]:
    base = resolve_model(setup.model_args.model_name_or_path)
    return base, None, base


def _check_rows(tokenizer: Any, data: TrainingData, setup: Any) -> None:
    check_target_eos(tokenizer, data.train[0], setup.training_args.eos_token)


def _build_trainer(run: PreparedRun, callbacks: list) -> Any:
    from trl import SFTTrainer, get_peft_config

    args, model_args = run.setup.training_args, run.setup.model_args
    args.model_init_kwargs = model_init_kwargs(model_args, args)
    trainer = SFTTrainer(
        model=run.base_model,
        args=args,
        train_dataset=to_dataset(run.data.train),
        eval_dataset=to_dataset(run.data.dev),
        processing_class=run.tokenizer,
        peft_config=get_peft_config(model_args),
        quantization_config=quantization_config(model_args),
        callbacks=callbacks,
    )
    project = run.setup.project
    run.record["lean_forward"] = make_lean(trainer, project.share_prompt_prefix, project.balance_label_batches,
                                           units=project.batch_units)
    if project.decision_token_weight != 1.0:
        replies = run.data.rows_manifest.get("replies")  # a judge's rows: its label replies
        if replies:
            ids = decision_token_ids(run.tokenizer, answers=[list(replies.values())])
        else:
            langs = sorted({row["cell"].split("/")[0] for row in run.data.train if "cell" in row}) or ["en"]
            ids = decision_token_ids(run.tokenizer, langs)
        weigh_decision_token(trainer.model, ids, project.decision_token_weight)
        run.record["lean_forward"]["decision_token"] = {"weight": project.decision_token_weight,
                                                        "token_ids": sorted(ids)}
    return trainer


SFT = StagePlugin("sft", _resolve, _check_rows, _build_trainer)


def prepare_sft(recipe: str | ResolvedRecipe | None, overrides: Sequence[tuple[str, Any]] = ()) -> PreparedRun:
    """Resolve, check and build everything for an SFT run without training (tests inspect the trainer)."""
    return prepare_run(SFT, as_recipe("sft", recipe, overrides))


def run_sft(recipe: str | ResolvedRecipe | None, overrides: Sequence[tuple[str, Any]] = ()) -> Path:
    """Train an SFT adapter as ``recipe`` (+ ``overrides``) says; return the output directory.

    Re-running with the same output directory resumes from its last complete checkpoint; a finished run is left
    as it is (said), unless the recipe asks for more steps.
    """
    return run_stage(SFT, as_recipe("sft", recipe, overrides))
