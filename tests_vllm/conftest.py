"""Contract tests against the real vLLM package (``make test-vllm``, in ``.venv-vllm``; no GPU needed).

This folder is outside ``tests/`` (the only folder ``make test`` collects), so the main suite neither runs nor
skips these. Run anywhere else without vLLM, they fail at once with the command to use instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# gnt is installed editable (scripts/vllm_env.sh) and pytest puts this folder on sys.path (prepend import mode)

try:
    import vllm  # noqa: F401
except ImportError as exc:  # not a skip: a contract suite that silently passes without its library guards nothing
    raise pytest.UsageError(
        f"tests_vllm needs the real vLLM package ({exc}); run `make test-vllm` (builds .venv-vllm)"
    ) from None


@pytest.fixture(scope="session")
def tiny_model_dir() -> Path:
    """The offline tiny Qwen2 (config + tokenizer + weights), cached under $GNT_CACHE_DIR like the main suite's."""
    from gnt.models.cache import default_cache_dir
    from gnt.models.tiny import ensure_tiny_model

    os.environ.setdefault("GNT_CACHE_DIR", str(Path.home() / ".cache" / "gnt-align"))
    return ensure_tiny_model(default_cache_dir())


@pytest.fixture(scope="session")
def adapter_dirs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two adapter folders as the trainer writes them (the engine arguments read only their config's rank)."""
    import json

    folders = []
    runs = tmp_path_factory.mktemp("runs")
    for name, rank in (("checkpoint-1", 4), ("checkpoint-2", 16)):
        folder = runs / name
        folder.mkdir()
        (folder / "adapter_config.json").write_text(json.dumps({"r": rank, "peft_type": "LORA"}), encoding="utf-8")
        (folder / "adapter_model.safetensors").write_bytes(b"not read by these tests")
        folders.append(folder)
    return folders
