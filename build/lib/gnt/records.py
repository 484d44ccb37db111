"""Run records: what produced an output (recipe, versions, data hashes, git commit), saved beside it."""

from __future__ import annotations

import platform
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from typing import Any

from gnt.paths import PROJECT_ROOT

TRACKED_PACKAGES = (
    "gnt-align", "torch", "transformers", "tokenizers", "datasets", "trl", "peft", "accelerate", "bitsandbytes",
    "deepspeed", "wandb", "xgrammar", "vllm", "unbabel-comet", "lxt",
)


def package_versions(names: tuple[str, ...] = TRACKED_PACKAGES) -> dict[str, str]:
    """Installed versions of the packages that decide results (absent ones are omitted)."""
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def git_commit() -> dict[str, Any]:
    """The checkout's commit and whether it had uncommitted changes (``unknown`` outside a git checkout)."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=10, check=True,
            ).stdout.strip()
        )
        return {"commit": commit, "dirty": dirty}
    except (OSError, subprocess.SubprocessError):
        return {"commit": "unknown", "dirty": None}


def environment_record() -> dict[str, Any]:
    """Versions, git state, python and platform, with a UTC timestamp."""
    return {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "git": git_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": package_versions(),
    }
