"""Helpers for the training tests: hermetic subprocess launches that never outlive their test."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from gnt.paths import PROJECT_ROOT

PYTHON = sys.executable
ACCELERATE = [PYTHON, "-m", "accelerate.commands.launch"]
RECIPES = PROJECT_ROOT / "recipes"
CONFIGS = PROJECT_ROOT / "accelerate"


def free_port() -> int:
    """A TCP port nobody listens on now (other engineers' tests run concurrently on this machine)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_env(home: Path | None = None) -> dict[str, str]:
    """The test process's environment without W&B credentials/mode and test hooks, one thread per process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "GNT_TEST_", "ACCELERATE_"))}
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    env.update(OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    if home is not None:  # no ~/.netrc W&B login either: "no API key" must really mean none
        env.update(HOME=str(home), HF_HOME=str(home / "hf"))
    return env


@dataclass
class Launch:
    argv: list[str]
    returncode: int
    output: str

    def check(self) -> Launch:
        assert self.returncode == 0, f"{' '.join(self.argv)} failed ({self.returncode}):\n{self.output[-6000:]}"
        return self


@dataclass
class Running:
    argv: list[str]
    process: subprocess.Popen
    log: Path
    handle: object


def start(argv: list[str], env: dict[str, str], log: Path) -> Running:
    """Start a launch in its own session (so the launcher and all its workers can be killed together)."""
    handle = open(log, "w", encoding="utf-8")  # noqa: SIM115 - closed by finish()
    process = subprocess.Popen(argv, cwd=PROJECT_ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT,
                               start_new_session=True, text=True)
    return Running(argv, process, log, handle)


def finish(running: Running, timeout: float) -> Launch:
    """Wait for a launch; on timeout kill its whole process group (launcher and workers)."""
    try:
        running.process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(running.process.pid, signal.SIGKILL)  # leftovers too (workers, a W&B service)
        running.process.wait()
        running.handle.close()
    return Launch(running.argv, running.process.returncode, running.log.read_text(encoding="utf-8", errors="replace"))


def run(argv: list[str], env: dict[str, str], log: Path, timeout: float = 300) -> Launch:
    return finish(start(argv, env, log), timeout)


def tiny_overrides(model: Path, data: Path, out: Path, *extra: str) -> list[str]:
    """Overrides that make the tiny recipes hermetic and short."""
    return [f"model_name_or_path={model}", f"data_dir={data}", f"output_dir={out}", "max_train_samples=16",
            *extra]
