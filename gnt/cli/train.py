"""LoRA/QLoRA training: ``train/sft.py RECIPE [key=value ...]`` and ``train/dpo.py RECIPE [key=value ...]``.

    accelerate launch train/sft.py recipes/qwen.yaml                 # all GPUs (accelerate config)
    python train/sft.py recipes/tiny.yaml max_steps=4                 # one process
    python train/sft.py recipes/qwen.yaml --dry-run                   # print the resolved recipe and the plan, exit
    accelerate launch train/dpo.py recipes/qwen-dpo.yaml sft_adapter=runs/qwen-sft

Recipe keys are TRL's SFTConfig/DPOConfig and ModelConfig fields plus the project keys (data_dir, sft_adapter,
wandb_project, merge_adapter, ...), listed below; ``--help-keys`` lists only their names. Rerunning with the same
output_dir resumes from its last complete checkpoint; rerunning a finished run does nothing and says so (a higher
max_steps extends it; resume_from_checkpoint=false trains it again). A run holds its output_dir: a second run into
it refuses, naming the first. Exit status: 0 done, 2 recipe/data/setup error (one ``error:`` line, before anything
is written), 1 a run that started and failed (a full disk: one ``error:`` line too).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gnt.cli.command import Call, Command


@dataclass
class TrainOptions:
    """What the command does with the recipe it resolved (not part of the recipe: runs do not record it)."""

    dry_run: bool = field(default=False, metadata={
        "help": "print the resolved recipe, the launch and what the run would do (files found or missing); "
                "load no model and train nothing"})


def _settings(stage: str):
    def settings() -> tuple[type, ...]:
        from gnt.training.config import stage_classes

        return (*stage_classes(stage), TrainOptions)

    return settings


def _elsewhere(stage: str):
    def elsewhere() -> dict[str, str]:
        from gnt.training.config import stage_elsewhere

        return stage_elsewhere(stage)

    return elsewhere


def _run(stage: str):
    def run(call: Call) -> None:
        recipe = call.recipe
        dry_run = bool(recipe.values.pop("dry_run", False))
        recipe.sources.pop("dry_run", None)
        recipe.overrides = [o for o in recipe.overrides if not o.startswith("dry_run=")]  # not in the run's name
        if dry_run:
            from gnt.training.dry_run import describe
            from gnt.training.world import launched_rank

            report = describe(stage, recipe)
            if launched_rank() == 0:
                print(report, flush=True)
            return
        if stage == "sft":
            from gnt.training.sft import run_sft as train
        elif stage == "grpo":
            from gnt.alignment.grpo import run_grpo as train
        else:
            from gnt.training.dpo import run_dpo as train
        train(recipe)

    return run


def _command(stage: str, line: str) -> Command:
    from gnt.training.config import STAGE_DEFAULTS, STAGE_KEYS, trainer_bounds

    return Command(
        name=stage, script=f"train/{stage}.py", line=line, settings=_settings(stage), run=_run(stage),
        summary=__doc__ or "", recipe="a training recipe (recipes/*.yaml) of these keys",
        defaults=STAGE_DEFAULTS, elsewhere=_elsewhere(stage), description=STAGE_KEYS, bounds=trainer_bounds(stage),
    )


SFT = _command("sft", "LoRA/QLoRA supervised fine-tuning (one process; GPUs: accelerate launch)")
DPO = _command("dpo", "DPO of an SFT adapter (one process; GPUs: accelerate launch)")
GRPO = _command("grpo", "GRPO of an SFT adapter with the GNT rewards (one process; GPUs: accelerate launch)")
