"""Every shipped evaluation recipe parses; discovery names models as the results layout documents."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gnt.cli.evaluate import load_eval_config
from gnt.evaluation.discovery import ModelUnderTest, discover_models
from gnt.evaluation.rows import load_rows
from gnt.generation.base import Adapter
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


# ------------------------------------------------------------------------------------ one config model, every kind

JUDGE_RECIPES = sorted(RECIPES_DIR.glob("judge*.yaml"))


@pytest.mark.parametrize("recipe", JUDGE_RECIPES, ids=[p.name for p in JUDGE_RECIPES])
def test_every_judge_recipe_loads(recipe: Path) -> None:
    from gnt.judge.config import load_judge_recipe

    loaded = load_judge_recipe(recipe)
    assert loaded.judge_settings().judge_retries == loaded.judge_retries and loaded.recipe == str(recipe)


def test_eval_and_judge_take_the_same_backend_keys_with_the_same_defaults_and_meaning() -> None:
    import dataclasses

    from gnt.evaluation.config import SCHEMA as EVAL
    from gnt.evaluation.config import EvalConfig
    from gnt.judge.config import SCHEMA as JUDGE
    from gnt.judge.config import JudgeRecipe
    from gnt.settings import BackendSettings

    names = [f.name for f in dataclasses.fields(BackendSettings)]
    assert {"backend", "dtype", "device", "base_url", "api_key_env", "timeout_s", "http_retries", "concurrency"} <= set(names)
    for name in names:
        eval_key, judge_key = EVAL.keys[name], JUDGE.keys[name]
        assert (eval_key.annotation, eval_key.default, eval_key.help) == (
            judge_key.annotation, judge_key.default, judge_key.help), name
        assert getattr(EvalConfig(), name) == getattr(JudgeRecipe(judge="lexical"), name), name


def test_eval_and_judge_build_the_same_http_backend_from_the_same_keys() -> None:
    from gnt.cli.evaluate import load_eval_config
    from gnt.evaluation.driver import default_backend_factory as eval_backend
    from gnt.generation.identity import model_identity
    from gnt.judge.config import load_judge_recipe
    from gnt.judge.config import make_backend as judge_backend

    keys = [("backend", "http"), ("base_url", "http://127.0.0.1:9/v1"), ("served_model", "served"),
            ("http_retries", "2"), ("concurrency", "3"), ("timeout_s", "7"), ("regex_field", "guided_regex")]
    backends = [eval_backend(load_eval_config(None, keys), "org/base", []),
                judge_backend(load_judge_recipe(None, [("judge_model", "org/judge"), *keys]))]
    try:
        seen = [(b.base_url, b.model, b.max_retries, b.concurrency, b.timeout_s, b.regex_field) for b in backends]
        assert seen[0] == seen[1] == ("http://127.0.0.1:9/v1", "served", 2, 3, 7.0, "guided_regex")
        # one cache identity rule for every user: the identity of the model served, not the name it is served as
        assert [b.model_id for b in backends] == [f"{model_identity(m)}|http" for m in ("org/base", "org/judge")]
    finally:
        for backend in backends:
            backend.close()


def test_max_retries_keeps_its_old_meaning_in_each_kind_under_its_new_name(caplog, monkeypatch) -> None:
    from gnt import deprecated
    from gnt.cli.evaluate import load_eval_config
    from gnt.judge.config import load_judge_recipe

    monkeypatch.setattr(deprecated, "_warned", set())  # as in a fresh process
    with caplog.at_level("WARNING", logger="gnt.deprecated"):
        evaluation = load_eval_config(None, [("max_retries", "2")])
        judge = load_judge_recipe(None, [("judge", "lexical"), ("max_retries", "1"), ("http_max_retries", "4")])
    assert (evaluation.http_retries, judge.judge_retries, judge.http_retries) == (2, 1, 4)
    assert judge.judge_settings().judge_retries == 1  # the re-asks, not the HTTP retries
    assert "'max_retries' is deprecated since 2026-12-01: write http_retries" in caplog.text
    assert "'max_retries' is deprecated since 2026-12-01: write judge_retries" in caplog.text
    assert "'http_max_retries' is deprecated since 2026-12-01: write http_retries" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="gnt.deprecated"):
        load_eval_config(None, [("max_retries", "3")])
    assert caplog.text == ""  # each old spelling warns once per process


def test_the_judge_chunk_size_is_the_judge_chunk_and_batch_size_the_backend_batch() -> None:
    from gnt.judge.config import load_judge_recipe

    recipe = load_judge_recipe(RECIPES_DIR / "judge-tiny.yaml", [("batch_size", "4"), ("chunk_size", "32")])
    assert recipe.judge_settings().chunk_size == 32 and recipe.batch_size == 4
    assert not hasattr(recipe.judge_settings(), "batch_size")


def test_system_role_has_one_vocabulary_in_training_and_evaluation(tmp_path: Path) -> None:
    from gnt.cli.evaluate import load_eval_config
    from gnt.training.config import load_recipe

    recipe = tmp_path / "r.yaml"
    recipe.write_text("system_role: no\n")  # YAML 1.1: an unquoted no is a boolean
    assert load_eval_config(recipe).system_role == "merge"
    assert [load_eval_config(None, [("system_role", v)]).system_role for v in ("yes", "keep", "auto")] == [
        "keep", "keep", "auto"]
    assert load_recipe("sft", str(RECIPES_DIR / "tiny.yaml"), [("system_role", "yes")]).values["system_role"] == "keep"
    with pytest.raises(RecipeError, match="system_role"):
        load_eval_config(None, [("system_role", "sometimes")])


def test_a_wrong_typed_value_names_the_file_and_line_in_eval_and_judge(tmp_path: Path) -> None:
    from gnt.cli.evaluate import load_eval_config
    from gnt.judge.config import load_judge_recipe

    recipe = tmp_path / "r.yaml"
    recipe.write_text("backend: http\nbase_url: http://x/v1\nconcurrency: many\n")
    with pytest.raises(RecipeError, match=r"r\.yaml:3: concurrency: expected int, got 'many'"):
        load_eval_config(recipe)
    with pytest.raises(RecipeError, match=r"r\.yaml:3: concurrency: expected int, got 'many'"):
        load_judge_recipe(recipe)
    recipe.write_text("judge: lexical\ntimeout_s: true\n")
    with pytest.raises(RecipeError, match=r"r\.yaml:2: timeout_s: expected float"):
        load_judge_recipe(recipe)


def test_an_eval_key_in_a_judge_recipe_is_refused_with_the_closest_keys() -> None:
    from gnt.judge.config import load_judge_recipe

    with pytest.raises(RecipeError, match="unknown key 'http_retry'.*Closest valid keys: http_retries"):
        load_judge_recipe(None, [("judge", "lexical"), ("http_retry", "1")])


def test_the_offline_aliases_work_in_every_recipe_kind(tiny_model_dir: Path, monkeypatch, capsys) -> None:
    import gnt.models.tiny as tiny
    from gnt.cli.evaluate import load_eval_config
    from gnt.cli.train import SFT
    from gnt.judge.config import load_judge_recipe, make_backend
    from gnt.templated_suite.run import load_config

    monkeypatch.setattr(tiny, "default_cache_dir", lambda: tiny_model_dir.parent)
    assert SFT.main([str(RECIPES_DIR / "tiny.yaml"), "data_dir=d", "output_dir=o", "--dry-run"]) == 0
    assert load_eval_config(None, [("model", "gnt:tiny")]).model == "gnt:tiny"  # built by discovery, on use
    assert load_config(None, [("model", "gnt:tiny")])[1].model == str(tiny_model_dir)
    judge = load_judge_recipe(RECIPES_DIR / "judge-tiny.yaml", [("device", "cpu"), ("dtype", "float32")])
    backend = make_backend(judge)
    try:
        # the recipe's backend keys reach the backend, and the alias names the offline folder (nothing downloaded)
        assert (backend.model_name, backend.batch_size, backend.device, backend.dtype) == (
            str(tiny_model_dir), 8, "cpu", "float32")
    finally:
        backend.close()
    for load in (lambda: load_eval_config(None, [("model", "gnt:huge")]),
                 lambda: load_judge_recipe(None, [("judge_model", "gnt:huge")]),
                 lambda: load_config(None, [("model", "gnt:huge")])):
        with pytest.raises(RecipeError, match="unknown model alias 'gnt:huge'; valid: gnt:tiny, gnt:smollm"):
            load()
    assert SFT.main([str(RECIPES_DIR / "tiny.yaml"), "model_name_or_path=gnt:huge", "--dry-run"]) == 2
    assert "model_name_or_path: unknown model alias 'gnt:huge'" in capsys.readouterr().err


def test_keys_carry_their_choices_and_help_for_the_generated_usage() -> None:
    from gnt.bootstrap import DEFAULT_SAMPLES
    from gnt.evaluation.config import SCHEMA as EVAL
    from gnt.training.config import stage_schema

    assert EVAL.keys["system_role"].choices == stage_schema("sft").keys["system_role"].choices == ("auto", "keep", "merge")
    assert EVAL.keys["backend"].choices == ("transformers", "vllm", "http")
    assert EVAL.keys["bootstrap_samples"].default == DEFAULT_SAMPLES and "bootstrap" in EVAL.keys["bootstrap_samples"].help


def _model_on(name: str, data_dir: Path) -> ModelUnderTest:
    return ModelUnderTest(name, "base", Adapter(name, "/nowhere", "h"), "adapter", run_record={"data_dir": str(data_dir)})


def test_runs_from_copies_of_one_build_are_scored_together_and_different_builds_are_refused(
        tmp_path: Path, eval_data_dir: Path) -> None:
    """A run record keeps the absolute data path it trained from, so a copied outputs folder names the same build at
    two places: that is one build (same held-out rows); a build whose held-out rows differ is still refused."""
    config = load_eval_config(RECIPES_DIR / "eval-tiny.yaml", [("out_dir", str(tmp_path / "out"))])
    copy = tmp_path / "copied" / "data"
    shutil.copytree(eval_data_dir, copy)
    held_out = load_rows(config, [_model_on("sft", eval_data_dir), _model_on("dpo", copy)])
    assert held_out.entries and held_out.info["data_dir"] in {str(eval_data_dir.resolve()), str(copy.resolve())}
    assert len(held_out.info["same_rows_in"]) == 1

    rows = copy / "eval" / "mgente_test.jsonl"
    rows.write_text("".join(rows.read_text(encoding="utf-8").splitlines(keepends=True)[1:]), encoding="utf-8")
    with pytest.raises(RecipeError, match="different data builds.*held-out test rows differ"):
        load_rows(config, [_model_on("sft", eval_data_dir), _model_on("dpo", copy)])
