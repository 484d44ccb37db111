"""Print (or run) this machine's ``accelerate launch`` command for a training run over several machines.

    gnt launch recipes/qwen.yaml stage=sft                       # inside a SLURM job: the rest comes from it
    gnt launch recipes/qwen.yaml stage=sft num_machines=2 machine_rank=1 processes_per_machine=8 \\
        main_process_ip=10.0.0.1 learning_rate=1e-4              # by hand; learning_rate goes to the training

The RECIPE is the training recipe. Machine count, rank, GPUs per machine and the main address default to the
SLURM job's environment (SLURM_JOB_NUM_NODES, SLURM_NODEID, SLURM_GPUS_ON_NODE, MAIN_ADDR and MAIN_PORT, which
scripts/slurm/train.sbatch sets). Every key that is not a launch key is handed to the training script as a recipe
override. With exec=true the command replaces this process (what train.sbatch does on every node).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from gnt.cli.command import Call, Command
from gnt.recipe import RecipeError

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class NodeLaunchOptions:
    """Where this machine sits in the run; None takes the value from the SLURM job's environment."""

    stage: Literal["sft", "dpo"] | None = field(default=None, metadata={
        "help": "the training stage this machine launches (train/sft.py or train/dpo.py); required"})
    num_machines: int | None = field(default=None, metadata={"help": "machines in the run (SLURM_JOB_NUM_NODES)"})
    machine_rank: int | None = field(default=None, metadata={"help": "this machine's rank, 0 on the main machine "
                                                                     "(SLURM_NODEID)"})
    processes_per_machine: int | None = field(default=None, metadata={
        "help": "training processes on this machine, one per GPU (SLURM_GPUS_ON_NODE or CUDA_VISIBLE_DEVICES)"})
    main_process_ip: str | None = field(default=None, metadata={"help": "the main machine's address (MAIN_ADDR)"})
    main_process_port: int | None = field(default=None, metadata={"help": "its port (MAIN_PORT; else 29500)"})
    config_file: str = field(default="accelerate/multinode-deepspeed.yaml", metadata={
        "help": "the accelerate config of the run (its distributed type and ZeRO stage)"})
    launch_args: list[str] = field(default_factory=list, metadata={
        "help": "extra accelerate launch options, one string each ('--mixed_precision no')"})
    exec: bool = field(default=False, metadata={"help": "run the command in place of this process instead of "
                                                        "printing it"})


MACHINE_KEYS = ("num_machines", "machine_rank", "processes_per_machine", "main_process_ip")


def _settings() -> tuple[type, ...]:
    return (NodeLaunchOptions,)


def _override(key: str, value: Any) -> str:
    """A training key handed on, as the training script reads it (``key=value``; a list as ``a,b``)."""
    if value is True:
        value = "true"
    elif isinstance(value, list):
        value = ",".join(value)
    return f"{key}={value}"


def _run(call: Call) -> int:
    from gnt.training.launch import DEFAULT_PORT, NodeLaunch, node_command, shell_line, slurm_defaults

    if call.recipe_file is None:
        raise RecipeError(f"give the training recipe\n{call.command.usage()}")
    options = call.build(NodeLaunchOptions)
    if options.stage is None:
        raise RecipeError("give stage=sft or stage=dpo")
    from_slurm = slurm_defaults()
    machine = {key: getattr(options, key) if getattr(options, key) is not None else from_slurm.get(key)
               for key in (*MACHINE_KEYS, "main_process_port")}
    missing = [key for key in MACHINE_KEYS if machine[key] is None]
    if missing:
        raise RecipeError(f"not in a SLURM job and not given: {', '.join(missing)}")
    try:
        launch = NodeLaunch(
            stage=options.stage, recipe=call.recipe_file, config_file=options.config_file,
            launch_args=[part for arg in options.launch_args for part in arg.split(maxsplit=1)],
            overrides=[_override(key, value) for key, value in call.passed_on],
            **{**machine, "main_process_port": machine["main_process_port"] or DEFAULT_PORT},
        )
    except ValueError as exc:
        raise RecipeError(str(exc)) from None
    command = node_command(launch)
    if options.exec:
        os.chdir(ROOT)
        os.execv(command[0], command)
    print(shell_line(command))
    return 0


COMMAND = Command(
    name="launch", script="scripts/slurm/node_command.py",
    line="print or run this machine's accelerate launch for a run over several machines",
    settings=_settings, run=_run, summary=__doc__ or "", recipe="the training recipe (recipes/qwen.yaml)",
    own_recipe=False, pass_on="a key of the training recipe, handed to train/sft.py or train/dpo.py",
)


def main(argv: list[str] | None = None) -> int:
    return COMMAND.main(argv)
