"""Per-node launch commands for multi-machine training (SLURM or by hand).

One ``accelerate launch`` runs on every machine; each starts one worker per local GPU and they meet at the main
machine's address. Only three numbers differ between machines (machine rank, and on heterogeneous clusters the
process count), so the command is generated here, where a test can check it, instead of being assembled in shell.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

DEFAULT_CONFIG = "accelerate/multinode-deepspeed.yaml"
DEFAULT_PORT = 29500


@dataclass
class NodeLaunch:
    """What one machine of a multi-machine run launches."""

    stage: str
    recipe: str
    num_machines: int
    machine_rank: int
    processes_per_machine: int
    main_process_ip: str
    main_process_port: int = DEFAULT_PORT
    config_file: str = DEFAULT_CONFIG
    launch_args: list[str] = field(default_factory=list)
    """Extra ``accelerate launch`` options (e.g. ``--mixed_precision no``)."""
    overrides: list[str] = field(default_factory=list)
    """Recipe overrides passed to the training script."""
    python: str = sys.executable

    def __post_init__(self) -> None:
        if self.stage not in ("sft", "dpo"):
            raise ValueError(f"stage must be sft or dpo, got {self.stage!r}")
        if not 0 <= self.machine_rank < self.num_machines:
            raise ValueError(f"machine_rank {self.machine_rank} outside 0..{self.num_machines - 1}")
        if self.processes_per_machine < 1:
            raise ValueError("processes_per_machine must be at least 1")


def node_command(launch: NodeLaunch) -> list[str]:
    """The argv this machine runs (``python -m accelerate.commands.launch`` = ``accelerate launch`` of this venv)."""
    return [
        launch.python, "-m", "accelerate.commands.launch",
        "--config_file", launch.config_file,
        "--num_machines", str(launch.num_machines),
        "--num_processes", str(launch.num_machines * launch.processes_per_machine),  # the total, all machines
        "--machine_rank", str(launch.machine_rank),
        "--main_process_ip", launch.main_process_ip,
        "--main_process_port", str(launch.main_process_port),
        *launch.launch_args,
        f"train/{launch.stage}.py", launch.recipe, *launch.overrides,
    ]


def gpus_on_node(env: Mapping[str, str]) -> int | None:
    """GPUs SLURM gave this node (``SLURM_GPUS_ON_NODE``, else ``CUDA_VISIBLE_DEVICES``), None if unknown."""
    if env.get("SLURM_GPUS_ON_NODE", "").isdigit():
        return int(env["SLURM_GPUS_ON_NODE"])
    visible = env.get("CUDA_VISIBLE_DEVICES", "")
    if visible and visible != "NoDevFiles":
        return len([d for d in visible.split(",") if d.strip()])
    return None


def slurm_defaults(env: Mapping[str, str] | None = None) -> dict[str, object]:
    """Machine count, rank, GPUs per node and main address from a SLURM job's environment (missing keys omitted).

    The main address is ``MAIN_ADDR`` (the batch script sets it from ``scontrol show hostnames``) or ``MASTER_ADDR``.
    """
    env = os.environ if env is None else env
    values: dict[str, object] = {}
    nodes = env.get("SLURM_JOB_NUM_NODES") or env.get("SLURM_NNODES")
    if nodes and nodes.isdigit():
        values["num_machines"] = int(nodes)
    if env.get("SLURM_NODEID", "").isdigit():
        values["machine_rank"] = int(env["SLURM_NODEID"])
    gpus = gpus_on_node(env)
    if gpus:
        values["processes_per_machine"] = gpus
    address = env.get("MAIN_ADDR") or env.get("MASTER_ADDR")
    if address:
        values["main_process_ip"] = address
    port = env.get("MAIN_PORT") or env.get("MASTER_PORT")
    if port and port.isdigit():
        values["main_process_port"] = int(port)
    return values


def shell_line(argv: Sequence[str]) -> str:
    return shlex.join(list(argv))
