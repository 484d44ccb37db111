"""The isolated xCOMET environment: where it is, how it is built, and the environment variables its processes get.

unbabel-comet 2.2.7 needs transformers < 5 (plus numpy < 2, protobuf < 5, torchmetrics < 0.11) while gnt needs
transformers 5, so comet never runs in gnt's interpreter: ``scripts/comet_env.sh`` builds ``.venv-comet`` from
``comet-requirements.txt`` and the scorer runs ``gnt/comet/runner.py`` with that environment's python.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gnt.paths import PROJECT_ROOT

REQUIREMENTS = PROJECT_ROOT / "comet-requirements.txt"
ENV_SCRIPT = PROJECT_ROOT / "scripts" / "comet_env.sh"
DEFAULT_VENV = PROJECT_ROOT / ".venv-comet"
STAMP_NAME = ".gnt-comet-installed"
BUILD_COMMAND = "make comet-env  (or: bash scripts/comet_env.sh)"


class CometEnvMissing(RuntimeError):
    """The comet environment is not built (and building it was not allowed)."""

    exit_code = 1


def venv_dir() -> Path:
    """``$GNT_COMET_VENV`` when set (a shared, pre-built environment), else ``<checkout>/.venv-comet``."""
    value = os.environ.get("GNT_COMET_VENV")
    return Path(value).expanduser().resolve() if value else DEFAULT_VENV


def comet_python(venv: Path | None = None) -> Path:
    """The comet environment's interpreter (it may not exist yet: see :func:`ensure_comet_env`)."""
    return (venv or venv_dir()) / "bin" / "python"


def is_built(venv: Path | None = None) -> bool:
    """True when the build script finished (it writes its stamp last) and the interpreter is there."""
    venv = venv or venv_dir()
    return (venv / STAMP_NAME).is_file() and comet_python(venv).is_file()


def ensure_comet_env(auto_install: bool = True, venv: Path | None = None) -> Path:
    """Return the comet interpreter, building the environment first when allowed.

    With ``auto_install`` the build script runs every time: it is a no-op (well under a second) when the stamp
    matches the pins, rebuilds when ``comet-requirements.txt`` changed, and takes a few minutes the first time.
    Without it, a missing environment raises :class:`CometEnvMissing` naming the command that builds it.
    """
    venv = venv or venv_dir()
    if auto_install:
        if not is_built(venv):
            print(f"building the xCOMET environment {venv} (a few minutes, once)", file=sys.stderr, flush=True)
        env = dict(os.environ, GNT_COMET_VENV=str(venv))
        done = subprocess.run(["bash", str(ENV_SCRIPT)], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise CometEnvMissing(
                f"building the comet environment failed (exit {done.returncode}):\n{done.stderr[-4000:]}"
            )
    if not is_built(venv):
        raise CometEnvMissing(f"the xCOMET environment {venv} is not built; build it with: {BUILD_COMMAND}")
    return comet_python(venv)


def check_buildable(auto_install: bool, venv: Path | None = None) -> None:
    """Raise :class:`CometEnvMissing` at once when the environment is not built and cannot be: building is not
    allowed (``xcomet_auto_install=false``), or the folder it would be built in is not writable."""
    venv = venv or venv_dir()
    if is_built(venv):
        return
    if not auto_install:
        raise CometEnvMissing(f"the xCOMET environment {venv} is not built; build it with: {BUILD_COMMAND} "
                              "(or let it be built on first use: xcomet_auto_install=true)")
    existing = next((p for p in (venv, *venv.parents) if p.exists()), None)
    if existing is None or not existing.is_dir() or not os.access(existing, os.W_OK):
        raise CometEnvMissing(f"the xCOMET environment {venv} is not built, and it cannot be built there "
                              f"({existing} is not a writable folder): point GNT_COMET_VENV at a built "
                              f"environment or a writable place, or build it with: {BUILD_COMMAND}")


def subprocess_env() -> dict[str, str]:
    """Environment for comet processes: the caller's, minus what would leak gnt's packages into comet's python.

    ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD``: torch >= 2.6 loads with ``weights_only=True`` by default, which refuses
    comet's multi-GPU prediction files (pickled ``Prediction`` objects written by comet itself; Unbabel/COMET PR
    #258) and can refuse full Lightning checkpoints. Both are files the user chose to trust (their model) or that
    comet wrote a moment ago, which is what comet assumed before torch 2.6.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONNOUSERSITE"] = "1"
    env.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    return env
