"""Every shipped evaluation recipe parses; discovery names models as the results layout documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gnt.evaluation.config import load_eval_config
from gnt.evaluation.discovery import discover_models
from gnt.paths import RECIPES_DIR
from gnt.recipe import RecipeError

EVAL_RECIPES = sorted(RECIPES_DIR.glob("eval*.yaml"))


def test_the_eval_recipes_are_shipped() -> None:
    assert {p.name for p in EVAL_RECIPES} >= {"eval.yaml", "eval-tiny.yaml", "eval-vllm.yaml", "eval-http.yaml"}


@pytest.mark.parametrize("recipe", EVAL_RECIPES, ids=[p.name for p in EVAL_RECIPES])
def test_every_eval_recipe_parses_and_validates(recipe: Path) -> None:
    config = load_eval_config(recipe, [("out_dir", "/tmp/x")])
    assert config.cells() and config.max_new_tokens > 0 and config.out_dir == "/tmp/x"


def test_defaults_are_the_full_grid_and_the_tiny_slice_is_small() -> None:
    full = load_eval_config(RECIPES_DIR / "eval.yaml")
    assert len(full.cells()) == 48 and full.max_new_tokens == 256 and full.constrained
    tiny = load_eval_config(RECIPES_DIR / "eval-tiny.yaml")
    assert [c.name for c in tiny.cells()] == [f"{lang}/{config}/4" for lang in ("it", "es", "de", "el")
                                              for config in ("G+S", "None")]
    vllm = load_eval_config(RECIPES_DIR / "eval-vllm.yaml")
    assert vllm.backend == "vllm" and vllm.enable_prefix_caching and vllm.dtype == "bfloat16"


def test_recipe_errors_name_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("langs: [it]\nbackend: tensorrt\n")
    with pytest.raises(RecipeError, match="backend"):
        load_eval_config(bad)
    with pytest.raises(RecipeError, match="base_url"):
        load_eval_config(RECIPES_DIR / "eval-http.yaml", [("base_url", "null")])
    with pytest.raises(RecipeError, match="configs"):
        load_eval_config(None, [("configs", "G+S,X")])


def _fake_adapter(folder: Path, base: str, weights: bytes, record: dict | None = None) -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": base, "r": 8}))
    (folder / "adapter_model.safetensors").write_bytes(weights)
    if record is not None:
        (folder / "gnt_run.json").write_text(json.dumps(record))
    return folder


def test_discovery_names_steps_final_adapter_and_bases(tmp_path: Path) -> None:
    run = tmp_path / "my run"
    run.mkdir()
    (run / "gnt_run.json").write_text(json.dumps({"base_model": "org/base", "global_step": 30}))
    for step, weights in ((20, b"b"), (10, b"a"), (30, b"c")):
        _fake_adapter(run / f"checkpoint-{step}", "org/base", weights, {"base_model": "org/base", "global_step": step})
    (run / "checkpoint-40").mkdir()  # being written: no weights yet, skipped
    models = discover_models([str(run)], [], None)
    assert [m.name for m in models] == ["base", "my_run/checkpoint-10", "my_run/checkpoint-20", "my_run/checkpoint-30"]
    assert [m.global_step for m in models] == [None, 10, 20, 30]
    # a final adapter at the run's root is evaluated only when it differs from every checkpoint
    (run / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "org/base", "r": 8}))
    (run / "adapter_model.safetensors").write_bytes(b"c")
    assert [m.name for m in discover_models([str(run)], [], None)][-1] == "my_run/checkpoint-30"
    (run / "adapter_model.safetensors").write_bytes(b"d")
    final = discover_models([str(run)], [], None)[-1]
    assert (final.name, final.global_step) == ("my_run/final", 30)
    # explicit adapters over another base: one base entry per base model
    other = _fake_adapter(tmp_path / "extra" / "adapter", "org/other", b"e")
    names = [m.name for m in discover_models([str(run)], [str(other)], None)]
    assert names[:2] == ["base-base", "base-other"] and names[-1] == "extra/adapter"
    assert [m.name for m in discover_models([], [], "org/base")] == ["base"]
    with pytest.raises(RecipeError, match="no checkpoint"):
        discover_models([str(tmp_path / "extra")], [], None)
