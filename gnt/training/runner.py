"""The flow both stages share: recipe → checks → data → W&B + run record → trainer → train → save → record.

Stage specifics (which base model, which trainer) come from a :class:`StagePlugin` supplied by
:mod:`gnt.training.sft` and :mod:`gnt.training.dpo`. :func:`prepare_run` stops after building the trainer (tests
inspect it: reference log-probs, datasets), :func:`train_run` trains and finalises.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gnt.io import disk_full_error, is_disk_full
from gnt.model_card import write_run_cards
from gnt.output_folder import claim_output_folder
from gnt.recipe import RecipeError, ResolvedRecipe
from gnt.training.base_model import check_quantization_available
from gnt.training.callbacks import TrainingDiverged, standard_callbacks
from gnt.training.config import TrainingError, TrainSetup, build_setup
from gnt.training.data import TrainingData, check_data_dir, load_training_data
from gnt.training.resume import AUTO, recipe_changes, resume_checkpoint
from gnt.training.run_lock import RunLock, hold_run_folder
from gnt.training.run_record import RUN_RECORD, build_run_record, now, read_run_record, write_run_record
from gnt.training.template_checks import VocabularyGuard
from gnt.training.wandb_setup import (
    disabled_record,
    finish_run,
    plan_wandb,
    reports_to_wandb,
    run_config,
    start_run,
)
from gnt.training.world import launch_info, say


@dataclass
class StagePlugin:
    """What differs between SFT and DPO."""

    stage: str
    resolve: Callable[[TrainSetup], tuple[str, Any, str]]
    """setup → (base model path/id, SFT adapter or None, folder to load the tokenizer from)."""
    check_rows: Callable[[Any, TrainingData, TrainSetup], None]
    """Template checks on the loaded rows (EOS at the end of targets)."""
    build_trainer: Callable[[PreparedRun, list], Any]
    """A ready TRL trainer for the prepared run and callbacks."""


@dataclass
class PreparedRun:
    """A run ready to train: configs, data, tokenizer, trainer, record."""

    setup: TrainSetup
    base_model: str
    sft_adapter: Any
    tokenizer: Any
    data: TrainingData
    resume_from: Path | None
    is_main: bool
    record: dict = field(default_factory=dict)
    trainer: Any = None
    guard: VocabularyGuard | None = None
    lock: RunLock | None = None
    """Rank 0's hold on the output folder (:mod:`gnt.training.run_lock`), released by :func:`end_run`."""
    previous_record: dict | None = None
    """``gnt_run.json`` as it was before this run wrote its own (put back if the run fails before training)."""
    record_written: bool = False

    @property
    def output_dir(self) -> Path:
        return self.setup.output_dir


def _system_role(project_value: str, tokenizer: Any) -> bool:
    if project_value == "keep":
        return True
    if project_value == "merge":
        return False
    from gnt.prompts.chat import supports_system_role

    return supports_system_role(tokenizer)


def _device(training_args: Any) -> str:
    device = training_args.device
    return f"cuda:{device.index or 0}" if device.type == "cuda" else str(device)


def hold_folder(setup: TrainSetup) -> RunLock | None:
    """Rank 0 takes the run's output folder (a second run into it refuses, naming this one); other ranks None.

    A missing data build is the commonest first error, so it is checked first (reading only): a run refused for
    it creates no output folder. The folder itself must be new, empty or a run of this stage
    (:mod:`gnt.output_folder`): a user's folder or the other stage's run is refused before anything is written.
    """
    check_data_dir(setup.project.data_dir, setup.stage, setup.project.data_rows)
    if setup.training_args.process_index != 0:  # sets up the process group on every rank
        return None
    lock = hold_run_folder(setup.output_dir, setup.stage)
    try:
        claim_output_folder(setup.output_dir, setup.stage, "output_dir")  # checked by build_setup; again, held
    except BaseException:
        lock.release()
        raise
    return lock


def finished_run(setup: TrainSetup) -> str | None:
    """Why the run in ``output_dir`` is already done as this recipe asks (a rerun is then a no-op), or None.

    A complete run (``gnt_run.json`` says so and the final adapter is there) is done unless the recipe asks for
    more: a higher ``max_steps`` (or more epochs) extends it from its last checkpoint; ``resume_from_checkpoint``
    set to false or to a checkpoint trains again, as asked.
    """
    record = read_run_record(setup.output_dir)
    if not record or record.get("status") != "complete":
        return None
    if not (setup.output_dir / "adapter_config.json").is_file():
        return None
    resume = setup.resume
    if isinstance(resume, bool):
        resume = None if resume else "false"
    if resume is not None and str(resume).strip().lower() not in AUTO:
        return None
    args, recorded = setup.training_args, record.get("trainer_config") or {}
    step = record.get("global_step")
    if args.max_steps > 0:
        if not isinstance(step, int) or step < args.max_steps:
            return None
        asked = f"max_steps={args.max_steps}"
    else:
        if (recorded.get("max_steps") or -1) > 0 or float(recorded.get("num_train_epochs") or 0) < args.num_train_epochs:
            return None
        asked = f"num_train_epochs={args.num_train_epochs}"
    message = (f"the {setup.stage.upper()} run in {setup.output_dir} is finished (step {step}; this recipe asks "
               f"{asked}): nothing to train. Raise max_steps to train it further (from its last checkpoint), or "
               "give resume_from_checkpoint=false to train it again from the start")
    changed = recipe_changes(record.get("recipe") or {}, setup.recipe.values,
                             ignore=("resume_from_checkpoint", "max_steps", "num_train_epochs"))
    if changed:
        message += f". Note: this recipe differs from the finished run's in: {', '.join(changed)}"
    return message


def run_stage(plugin: StagePlugin, recipe: ResolvedRecipe) -> Path:
    """Train a stage into its output folder (held for the run): resume an unfinished run, extend a finished one
    when the recipe asks for more steps, and do nothing (said) when the run is already finished."""
    setup = build_setup(plugin.stage, recipe)
    lock = hold_folder(setup)
    try:
        done = finished_run(setup)
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    if done is not None:
        if lock is not None:
            lock.release()
        say(done)
        return setup.output_dir
    run = prepare_run(plugin, recipe, setup=setup, lock=lock)
    try:
        return train_run(run)
    finally:
        end_run(run)


def prepare_run(plugin: StagePlugin, recipe: ResolvedRecipe, *, setup: TrainSetup | None = None,
                lock: RunLock | None = None) -> PreparedRun:
    """Everything up to a built trainer. Raises RecipeError/TrainingError/DataError(s) on user errors, leaving the
    output folder as it was (no ``gnt_run.json`` of a run that never trained)."""
    setup = setup or build_setup(plugin.stage, recipe)
    if lock is None:
        lock = hold_folder(setup)
    try:
        return _prepare(plugin, setup, lock)
    except BaseException:
        if lock is not None:
            lock.release()
        raise


def _prepare(plugin: StagePlugin, setup: TrainSetup, lock: RunLock | None) -> PreparedRun:
    args, model_args, project = setup.training_args, setup.model_args, setup.project
    for note in setup.notes:
        say(f"note: {note}")
    is_main = args.process_index == 0

    base_model, sft_adapter, tokenizer_source = plugin.resolve(setup)
    check_quantization_available(model_args, _device(args))
    from transformers import AutoConfig, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(
            tokenizer_source, revision=None if tokenizer_source != base_model else model_args.model_revision,
            trust_remote_code=args.trust_remote_code,
        )
        config = AutoConfig.from_pretrained(base_model, trust_remote_code=args.trust_remote_code)
    except OSError as exc:
        raise TrainingError(
            f"cannot load the base model '{base_model}': {str(exc).rstrip('.')}. Check the hub id or folder, log "
            "in for gated models (huggingface-cli login), or download it first when HF_HUB_OFFLINE is set."
        ) from None
    guard = VocabularyGuard(tokenizer, config)

    data = load_training_data(
        project.data_dir, plugin.stage, tokenizer=tokenizer,
        system_role=_system_role(project.system_role, tokenizer), max_length=getattr(args, "max_length", None),
        max_train_samples=project.max_train_samples, max_eval_samples=project.max_eval_samples, seed=args.seed,
        with_dev=str(getattr(args.eval_strategy, "value", args.eval_strategy)) != "no",
        pair_kinds=getattr(project, "pair_kinds", None), rows_name=project.data_rows,
    )
    for split, count in data.counts.items():
        if count["dropped_too_long"]:
            limit = getattr(args, "max_length", None)  # GRPO has no max_length: nothing is dropped there
            say(f"{split}: dropped {count['dropped_too_long']} rows longer than max_length={limit} "
                f"tokens (truncation would cut their end-of-turn token); training on {count['used']} of "
                f"{count['file_rows']}")
    plugin.check_rows(tokenizer, data, setup)

    resume_from = resume_checkpoint(setup.resume, setup.output_dir)
    run = PreparedRun(setup, base_model, sft_adapter, tokenizer, data, resume_from, is_main, guard=guard, lock=lock)
    try:
        _start_record(run)
        run.trainer = plugin.build_trainer(run, standard_callbacks(
            lambda: run.record, setup.project.eval_queue_dir, setup.project.callbacks or ()))
        guard.check(tokenizer, run.trainer.model)
    except RecipeError:
        _abort(run, restore=True)
        raise
    except ValueError as exc:  # TRL/transformers validate option combinations when the trainer is built
        _abort(run, restore=True)
        raise TrainingError(f"the trainer refused this configuration: {exc}") from exc
    except BaseException:
        _abort(run, restore=True)
        raise
    return run


def _start_record(run: PreparedRun) -> None:
    """Rank 0: start W&B (if reported to) and write ``gnt_run.json``; every rank: log the plan."""
    setup = run.setup
    previous = read_run_record(setup.output_dir)
    run.previous_record = previous
    if run.resume_from is not None:
        say(f"resuming from {run.resume_from} (the last complete checkpoint in {setup.output_dir})")
        if previous:
            changed = recipe_changes(previous.get("recipe", {}), setup.recipe.values)
            if changed:
                say(f"warning: the recipe differs from the recorded one in: {', '.join(changed)}")
    elif previous is not None and previous.get("status") == "complete":
        say(f"note: {setup.output_dir} holds a finished run; starting again without resuming")
    if not run.is_main:
        if reports_to_wandb(setup.training_args.report_to):  # same WANDB_MODE on every rank, in case one imports it
            plan_wandb(project=setup.project.wandb_project, entity=None, group=None, name="", tags=[],
                       output_dir=setup.output_dir, previous_run_id=None)
        return
    resumed = previous if run.resume_from else None
    run.record = build_run_record(
        setup=setup, base_model=run.base_model, data=run.data, sft_adapter=run.sft_adapter,
        wandb_info=disabled_record(), launch=_launch(setup), resumed_from=run.resume_from, previous=resumed,
    )
    if reports_to_wandb(setup.training_args.report_to):
        plan = plan_wandb(
            project=setup.project.wandb_project, entity=setup.project.wandb_entity,
            group=setup.project.wandb_group or _group_name(setup),
            name=setup.run_name, tags=list(setup.project.wandb_tags) + [setup.stage],
            output_dir=setup.output_dir, previous_run_id=((resumed or {}).get("wandb") or {}).get("run_id"),
        )
        run.record["wandb"] = start_run(plan, run_config(run.record, run.data.manifest))
    write_run_record(setup.output_dir, run.record)
    run.record_written = True
    say(f"run record: {setup.output_dir / 'gnt_run.json'}")


def _launch(setup: TrainSetup) -> dict:
    """The launch as the environment and the initialised distributed state describe it."""
    args = setup.training_args
    state = args.distributed_state
    return {**launch_info(), "world_size": args.world_size, "process_index": args.process_index,
            "distributed_type": str(getattr(state.distributed_type, "value", state.distributed_type)),
            "device": str(args.device)}


def _group_name(setup: TrainSetup) -> str:
    spec = setup.model_args.model_name_or_path or ""
    if spec.startswith("gnt:"):
        return spec[4:]
    return Path(spec.rstrip("/")).name or setup.run_name


def _abort(run: PreparedRun, *, restore: bool = False) -> None:
    """Close the W&B run of a failed run; with ``restore`` (it failed before training) put its folder's record back
    as it was: the previous run's, or none."""
    if run.is_main and run.record.get("wandb", {}).get("mode") not in (None, "disabled"):
        import wandb

        if wandb.run is not None:
            wandb.finish(exit_code=1)
    if restore and run.is_main and run.record_written:
        if run.previous_record is None:
            (run.setup.output_dir / RUN_RECORD).unlink(missing_ok=True)
        else:
            write_run_record(run.setup.output_dir, run.previous_record)
        run.record_written = False


def train_run(run: PreparedRun) -> Path:
    """Train (resuming if planned), save the final adapter at the output root, merge if asked, finish the record."""
    trainer, setup = run.trainer, run.setup
    try:
        result = trainer.train(resume_from_checkpoint=str(run.resume_from) if run.resume_from else None)
        trainer.save_model(str(setup.output_dir))
        if run.is_main:
            trainer.save_state()
        trainer.accelerator.wait_for_everyone()
        run.guard.check(run.tokenizer, trainer.model)
        merged = None
        if setup.project.merge_adapter and run.is_main:
            from gnt.training.merge import merge_adapter

            target = setup.project.merged_dir or str(setup.output_dir / "merged")
            say(f"merging the adapter into the {setup.project.merge_dtype} base model -> {target}")
            merged = str(merge_adapter(run.base_model, setup.output_dir, target, dtype=setup.project.merge_dtype,
                                       trust_remote_code=setup.training_args.trust_remote_code))
        if run.is_main:
            run.record.update(
                status="complete", finished=now(), global_step=trainer.state.global_step,
                final_adapter=str(setup.output_dir.resolve()), merged_dir=merged,
                train_metrics={k: v for k, v in result.metrics.items() if isinstance(v, (int, float))},
            )
            write_run_record(setup.output_dir, run.record)
            write_run_cards(setup.output_dir)  # model cards of the run and its checkpoints (gnt/model_card.py)
            if run.record["wandb"].get("mode") not in (None, "disabled"):
                finish_run({"gnt/final_adapter": run.record["final_adapter"], "gnt/global_step": run.record["global_step"]})
            say(f"{setup.stage.upper()} adapter: {setup.output_dir.resolve()} (step {trainer.state.global_step})")
        trainer.accelerator.wait_for_everyone()
    except BaseException as exc:
        _abort(run)
        if isinstance(exc, TrainingDiverged) and run.is_main and run.record_written:
            run.record.update(status="diverged", error=str(exc), finished=now())  # never "complete"
            write_run_record(setup.output_dir, run.record)
        if is_disk_full(exc) and not (isinstance(exc, OSError) and exc.filename):  # safetensors, torch: no errno
            raise disk_full_error(exc, setup.output_dir, "saving a checkpoint or the adapter") from exc
        raise
    return setup.output_dir


def end_run(run: PreparedRun) -> None:
    """Release the process group and trackers (TRL scripts call ``trainer.end()`` on transformers >= 5.18)."""
    try:
        end = getattr(run.trainer, "end", None)
        if callable(end):
            end()
    finally:
        if run.lock is not None:
            run.lock.release()
