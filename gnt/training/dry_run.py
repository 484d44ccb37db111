"""``--dry-run``: the fully resolved recipe, the launch as this process sees it, and what the run would do.

Loads no model and no data: file-dependent facts (data directory, SFT adapter, checkpoints to resume) are reported
as found or missing, so every shipped recipe can be dry-run anywhere (the tests do, to keep recipes from rotting).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gnt.recipe import ResolvedRecipe
from gnt.training.base_model import describe_model
from gnt.training.config import TrainingError, TrainSetup, build_setup
from gnt.training.data import MANIFEST
from gnt.training.resume import resume_checkpoint
from gnt.training.wandb_setup import choose_mode, reports_to_wandb
from gnt.training.world import launch_info


def _data_status(data_dir: str, stage: str) -> str:
    path = Path(data_dir)
    if not (path / MANIFEST).is_file():
        return f"MISSING (build it: python data/build.py out_dir={data_dir})"
    rows = path / stage / "train.jsonl"
    return f"found ({rows} present)" if rows.is_file() else f"found, but {rows} is MISSING"


def _adapter_status(spec: str) -> str:
    path = Path(spec)
    if (path / "adapter_config.json").is_file():
        return "found"
    return "MISSING (run the SFT stage first)" if not path.exists() else "no adapter_config.json yet (SFT unfinished)"


def _resume_status(setup: TrainSetup) -> str:
    try:
        checkpoint = resume_checkpoint(setup.resume, setup.output_dir)
    except TrainingError as exc:
        return f"ERROR: {exc}"
    return f"resume from {checkpoint}" if checkpoint else "fresh start"


def _yaml_value(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=1000, allow_unicode=True).strip().removesuffix("...").strip()


def describe(stage: str, recipe: ResolvedRecipe) -> str:
    """The dry-run report (YAML-compatible: comments, then the resolved keys)."""
    recipe_path = recipe.path
    setup = build_setup(stage, recipe, dry_run=True)
    args, project, model_args = setup.training_args, setup.project, setup.model_args
    launch = launch_info()
    world = launch["world_size"]
    effective_batch = args.per_device_train_batch_size * args.gradient_accumulation_steps * world
    lines = [
        f"# gnt-align {stage.upper()} dry-run: {recipe_path or '(no recipe file)'}",
        f"# overrides: {', '.join(recipe.overrides) or 'none'}",
        f"# launch: {launch['launcher']}, {launch['backend']}, world size {world} "
        f"({launch['num_machines']} machine(s)), rank {launch['rank']}, CUDA devices visible: {launch['cuda_devices']}, "
        f"mixed precision: {launch['mixed_precision']}",
        f"# precision: bf16={args.bf16} fp16={args.fp16}; effective batch = {args.per_device_train_batch_size} x "
        f"{args.gradient_accumulation_steps} x {world} = {effective_batch}",
    ]
    if stage == "sft":
        lines.append(f"# base model: {describe_model(model_args.model_name_or_path)}")
    else:
        lines.append(f"# sft_adapter: {project.sft_adapter} [{_adapter_status(project.sft_adapter)}]")
        lines.append("# base model: the SFT adapter's (reference policy = frozen copy of the SFT adapter)")
    if model_args.load_in_4bit:
        lines.append(
            f"# QLoRA: 4-bit {model_args.bnb_4bit_quant_type}, double quant={model_args.use_bnb_nested_quant}, "
            f"compute dtype {model_args.dtype}, storage dtype {model_args.bnb_4bit_quant_storage or model_args.dtype}"
        )
    lines.append(f"# data_dir: {project.data_dir} [{_data_status(project.data_dir, stage)}]")
    lines.append(f"# output_dir: {args.output_dir} [{_resume_status(setup)}]; run name {args.run_name}")
    if reports_to_wandb(args.report_to):
        mode, reason = choose_mode()
        lines.append(f"# W&B: {mode} ({reason}); project {project.wandb_project}")
    else:
        lines.append("# W&B: not reported to (report_to has no wandb)")
    lines += [f"# note: {note}" for note in setup.notes]
    lines.append("# resolved recipe (source in comments):")
    for key in sorted(recipe.values):
        lines.append(f"{key}: {_yaml_value(recipe.values[key])}  # {recipe.sources[key]}")
    if setup.resume is not None:
        lines.append(f"resume_from_checkpoint: {_yaml_value(setup.resume)}")
    return "\n".join(lines)
