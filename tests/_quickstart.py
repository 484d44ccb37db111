"""The README's GPU quickstart, run as written in a CPU sandbox: every command a dry run of itself.

tests/test_quickstart.py builds a sandbox folder that looks like a checkout after `make install` and `make
vllm-env` on a 2-GPU SLURM login node: the repository's folders linked in, `.venv/bin/{python,accelerate,gnt}` and
`.venv-vllm/bin/python` as small scripts that run this file, and `nvidia-smi`, `make`, `sbatch`, `srun` and
`scontrol` stand-ins on PATH. The quickstart's bash lines then run there unchanged, and each command does what it
can without a GPU, printing one ``QUICKSTART <what> <facts>`` line that the test checks:

- ``data/build.py`` runs for real (on the bundled sample standing in for the user's mGeNTE copy);
- ``train/sft.py`` / ``train/dpo.py`` run with ``--dry-run`` (resolved recipe, data folder found, effective batch);
- ``accelerate launch`` options go through accelerate's own parser and launch validation, then the training
  script's dry run; ``gnt launch`` / ``scripts/slurm/node_command.py`` print their ``accelerate launch`` line,
  which is validated the same way (``exec=true`` would replace the process: it is what is not done here);
- ``eval/evaluate.py`` builds its pipeline (every step's settings checked, the runs' checkpoints discovered);
- ``eval/judge.py validate`` resolves and validates its judge recipe.

Any error exits non-zero, which fails the quickstart line it came from.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

MARK = "QUICKSTART"


def say(what: str, **facts: object) -> None:
    print(MARK, what, " ".join(f"{k}={v}" for k, v in facts.items()), flush=True)


def _run(argv: list[str]) -> str:
    result = subprocess.run([sys.executable, *argv], capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise SystemExit(result.returncode)
    return result.stdout


def _training_dry_run(script: str, args: list[str]) -> None:
    out = _run([script, *args, "--dry-run"])
    facts = {}
    for line in out.splitlines():
        if line.startswith("# data_dir:"):
            facts["data"] = line.split("[", 1)[1].split()[0]
        elif line.startswith("# sft_adapter:"):
            facts["sft_adapter"] = line.split("[", 1)[1].split("]")[0].split()[0]
        elif line.startswith("# precision:"):
            facts["batch"] = line.rsplit("=", 1)[1].strip()
    say(script, **facts)


def _accelerate_launch(args: list[str]) -> None:
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser

    parsed = launch_command_parser().parse_args(args)
    validated = _validate_launch_command(parsed)[0]
    say("accelerate", processes=validated.num_processes, machines=validated.num_machines,
        deepspeed=validated.use_deepspeed, script=validated.training_script)
    _training_dry_run(validated.training_script, list(validated.training_script_args))


def _node_launch(args: list[str]) -> None:
    """`gnt launch` / node_command.py: print this machine's command (not exec it), then check that command."""
    out = _run(["-m", "gnt.cli", "launch", *[a for a in args if a != "exec=true"]])
    command = shlex.split(out.strip().splitlines()[-1])
    start = command.index("accelerate.commands.launch") + 1
    say("gnt-launch", exec="exec=true" in args)
    _accelerate_launch(command[start:])


def python(argv: list[str]) -> None:
    script, args = argv[0], argv[1:]
    if script == "data/build.py":
        _run(argv)
        say(script, manifest=Path("outputs/data/manifest.json").is_file())
    elif script in ("train/sft.py", "train/dpo.py"):
        _training_dry_run(script, args)
    elif script == "eval/evaluate.py":
        from gnt.cli.evaluate import load_pipeline

        pipeline = load_pipeline(args)
        say(script, steps=",".join(pipeline.steps), models=len(pipeline.models), backend=pipeline.config.backend,
            shard=pipeline.config.shard)
    elif script == "eval/judge.py" and args[:1] == ["validate"]:
        from gnt.cli.judge import COMMAND
        from gnt.judge.config import JudgeRecipe

        call = COMMAND.call(args)
        recipe = call.build(JudgeRecipe, recipe=call.recipe.path).validate()
        say("eval/judge.py-validate", model=recipe.judge_model, backend=recipe.backend, data=Path(recipe.data).is_dir())
    elif script == "scripts/slurm/node_command.py":
        _node_launch(args)
    else:
        raise SystemExit(f"quickstart sandbox: no dry run for `python {shlex.join(argv)}`")


def accelerate(argv: list[str]) -> None:
    if argv[:1] != ["launch"]:
        raise SystemExit(f"quickstart sandbox: no dry run for `accelerate {shlex.join(argv)}`")
    _accelerate_launch(argv[1:])


def gnt(argv: list[str]) -> None:
    if argv[:1] != ["launch"]:
        raise SystemExit(f"quickstart sandbox: no dry run for `gnt {shlex.join(argv)}`")
    _node_launch(argv[1:])


if __name__ == "__main__":
    {"python": python, "accelerate": accelerate, "gnt": gnt}[sys.argv[1]](sys.argv[2:])
