"""The command line of ``train/sft.py`` and ``train/dpo.py``: parse, dry-run or run, and turn user errors into
one ``error:`` line and exit status 2 (tracebacks are for bugs, not for a misspelt key or a missing directory)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from gnt.data.errors import DataError, DataErrors
from gnt.recipe import EXIT_USAGE, RecipeError, parse_command_line
from gnt.training.world import launched_rank

USAGE = """\
usage: {script} RECIPE.yaml [--key value | --key=value | key=value ...] [--dry-run]

  accelerate launch train/{stage}.py recipes/{example}.yaml            # all GPUs (accelerate config)
  python train/{stage}.py recipes/tiny{suffix}.yaml --max_steps 4      # one process
  python train/{stage}.py recipes/{example}.yaml --dry-run             # print the resolved config, exit

Recipe keys: TRL {config} and ModelConfig fields, plus the project keys (data_dir{extra}, wandb_project,
wandb_group, wandb_tags, merge_adapter, ...), listed below; `--help-keys` lists only their names.
Exit status: 0 done, 2 recipe/data/setup error (one `error:` line), 1 unexpected failure.
"""


def usage(stage: str) -> str:
    return USAGE.format(
        script=f"train/{stage}.py", stage=stage, example="qwen" if stage == "sft" else "qwen-dpo",
        suffix="" if stage == "sft" else "-dpo", config="SFTConfig" if stage == "sft" else "DPOConfig",
        extra="" if stage == "sft" else ", sft_adapter",
    )


def main(stage: str, argv: Sequence[str] | None = None) -> int:
    """Run ``stage`` as the command line says; return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--help-keys" in argv:
        from gnt.training.config import describe_keys

        print(describe_keys(stage))
        return 0
    try:
        cli = parse_command_line(argv)
        if cli.help:
            from gnt.cli.help import CONVENTION, keys_section
            from gnt.training.config import stage_schema

            print(f"{usage(stage)}\n{keys_section('keys', stage_schema(stage))}\n\n{CONVENTION}")
            return 0
        if cli.recipe is None:
            raise RecipeError(f"no recipe given\n{usage(stage)}")
        if cli.dry_run:
            from gnt.training.dry_run import describe

            report = describe(stage, cli.recipe, cli.overrides)
            if launched_rank() == 0:
                print(report, flush=True)
            return 0
        if stage == "sft":
            from gnt.training.sft import run_sft as run
        else:
            from gnt.training.dpo import run_dpo as run
        run(cli.recipe, cli.overrides)
        return 0
    except (RecipeError, DataError, DataErrors) as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return EXIT_USAGE
