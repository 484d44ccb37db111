"""Where this process sits in the launch (rank, world size, backend), rank-aware printing, and CPU launch fixes.

Measured with accelerate 1.15 / transformers 5.24 on a machine without GPUs: when ``accelerate launch`` starts two
workers (the MULTI_GPU + ``use_cpu: false`` trick), ``TrainingArguments`` builds a state with world size 1 in each of
them, so both train alone (no gradient sync) and both write the same files. The fix is to tell transformers it is a
CPU run (``use_cpu``: accelerate then forms a gloo MULTI_CPU group). DeepSpeed is the exception: it needs
``use_cpu`` off and an explicit ``ddp_backend: gloo`` so accelerate counts its processes. :func:`adapt_to_launch`
applies exactly these fixes, only on machines without an accelerator and only when several processes were launched.
FSDP has no such fix: accelerate enables it only for GPU-type process groups, so on CPU an FSDP launch would train as
DDP while its record said FSDP; it is refused instead (measured: the 2-process FSDP launch of the tiny model ran as
gloo DDP).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from gnt.recipe import RecipeError


class FSDPNeedsGPU(RecipeError):
    """An FSDP launch on a machine without GPUs (it would silently run as DDP)."""


def launched_world_size() -> int:
    """Processes started by the launcher (1 for a plain ``python train/sft.py``)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def launched_rank() -> int:
    """This process's global rank as the launcher set it (0 when not launched)."""
    return int(os.environ.get("RANK", "0"))


def deepspeed_launch() -> bool:
    return os.environ.get("ACCELERATE_USE_DEEPSPEED", "false").lower() == "true"


def fsdp_launch() -> bool:
    return os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true"


FSDP_ON_CPU = (
    "FSDP cannot run without a GPU: accelerate 1.15 turns FSDP on only for GPU-type process groups (MULTI_GPU, "
    "MULTI_XPU, ...); on CPU it forms a gloo MULTI_CPU group, ignores the FSDP config and would train plain DDP. "
    "Here launch accelerate/multi_cpu.yaml (DDP) or accelerate/zero3.yaml (sharded, DeepSpeed); FSDP on GPUs."
)


def has_accelerator() -> bool:
    """Whether a GPU-like device is visible (CUDA, XPU, MPS)."""
    import torch

    if torch.cuda.is_available():
        return True
    if hasattr(torch, "xpu") and torch.xpu.is_available():
        return True
    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def adapt_to_launch(trainer_kwargs: dict[str, Any], *, dry_run: bool = False) -> list[str]:
    """Adjust trainer keyword arguments for a CPU-only machine; return one note per change.

    - several CPU processes, DeepSpeed: ``ddp_backend: gloo`` and ``use_cpu: false`` (see module docstring);
    - several CPU processes, DDP: ``use_cpu: true`` so the processes form one gloo group;
    - dry-run of a bf16/fp16 recipe on CPU: validated with ``use_cpu: true`` (TrainingArguments refuses bf16
      without a GPU unless ``use_cpu`` is set; a real CPU run must set ``bf16: false`` itself).
    """
    if has_accelerator():
        return []
    notes = []
    if launched_world_size() > 1 and fsdp_launch():
        if not dry_run:
            raise FSDPNeedsGPU(FSDP_ON_CPU)
        notes.append("dry-run of an FSDP launch without GPU: validated as a DDP run (FSDP itself needs GPUs)")
    if launched_world_size() > 1:
        if deepspeed_launch():
            if trainer_kwargs.get("ddp_backend") is None:
                trainer_kwargs["ddp_backend"] = "gloo"
                notes.append("no GPU + DeepSpeed launch: ddp_backend=gloo so accelerate counts the DeepSpeed processes")
            if trainer_kwargs.get("use_cpu"):
                trainer_kwargs["use_cpu"] = False
                notes.append("no GPU + DeepSpeed launch: use_cpu=false (DeepSpeed uses its own CPU accelerator)")
        elif not trainer_kwargs.get("use_cpu"):
            trainer_kwargs["use_cpu"] = True
            notes.append(
                f"no GPU: the {launched_world_size()} launched processes train on CPU as one gloo DDP group "
                "(use_cpu=true)"
            )
    elif dry_run and (trainer_kwargs.get("bf16", True) or trainer_kwargs.get("fp16")) and not trainer_kwargs.get("use_cpu"):
        trainer_kwargs["use_cpu"] = True
        notes.append("dry-run on a machine without GPU: mixed precision validated as if use_cpu=true")
    return notes


def launch_info() -> dict[str, Any]:
    """The launch as the environment describes it (no process group needed): for dry-runs and run records."""
    env = os.environ
    world = launched_world_size()
    local_world = int(env.get("LOCAL_WORLD_SIZE", world))
    if deepspeed_launch():
        backend = f"deepspeed ZeRO-{env.get('ACCELERATE_DEEPSPEED_ZERO_STAGE', '?')}"
    elif fsdp_launch():
        backend = "fsdp"
    elif world > 1:
        backend = "ddp"
    else:
        backend = "single process"
    try:
        import torch

        cuda_devices = torch.cuda.device_count()
    except ImportError:  # pragma: no cover - torch is a core dependency
        cuda_devices = 0
    return {
        "launcher": "accelerate" if any(k.startswith("ACCELERATE_") for k in env) else "python",
        "world_size": world,
        "rank": launched_rank(),
        "local_rank": int(env.get("LOCAL_RANK", "0")),
        "num_machines": max(1, world // max(1, local_world)),
        "backend": backend,
        "mixed_precision": env.get("ACCELERATE_MIXED_PRECISION", "from recipe"),
        "master": f"{env['MASTER_ADDR']}:{env.get('MASTER_PORT', '')}" if "MASTER_ADDR" in env else None,
        "cuda_devices": cuda_devices,
    }


def say(message: str, *, all_ranks: bool = False) -> None:
    """Print a ``[gnt]`` line: from rank 0 only unless ``all_ranks`` (then prefixed with the rank)."""
    rank, world = launched_rank(), launched_world_size()
    if all_ranks and world > 1:
        print(f"[gnt rank {rank}/{world}] {message}", file=sys.stderr, flush=True)
    elif rank == 0:
        print(f"[gnt] {message}", file=sys.stderr, flush=True)
