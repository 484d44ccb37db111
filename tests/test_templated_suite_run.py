"""The suite end to end (gnt.templated_suite.run): scripted backends for exact numbers, the tiny model for plumbing.

The scripted "models" answer with the suite's own references, so their metrics are known in advance: a
masculine-default model (ΔN = 0, ΔM > 0) and a model that goes neutral exactly on ambiguous inputs (ΔN = 1 on
gender-marked adjectives). The tiny random model runs base + two real LoRA checkpoints through the transformers
backend and the shared cache; a rerun must generate nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _eval_helpers import ScriptedBackend

from gnt.data.entry import LANGUAGE_NAMES
from gnt.data.templated import generate_pairs, suite_records, write_suite
from gnt.evaluation.discovery import ModelUnderTest
from gnt.generation.base import GenerationRequest
from gnt.io import read_json, read_jsonl
from gnt.paths import RECIPES_DIR
from gnt.templated_suite.run import SUITE_FILE, limit_pairs, load_config, load_suite, run_suite

LANG_BY_NAME = {name: code for code, name in LANGUAGE_NAMES.items()}


def _fake_adapter(folder: Path, payload: bytes) -> Path:
    """An adapter folder as discovery sees it (config + weights file); scripted backends never load it."""
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "scripted"}), encoding="utf-8")
    (folder / "adapter_model.safetensors").write_bytes(payload)
    return folder


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory) -> Path:
    """runs/sft with checkpoint-1 (masculine default) and checkpoint-2 (neutral when ambiguous); no leakage record."""
    run = tmp_path_factory.mktemp("tpl-runs") / "sft"
    for step in (1, 2):
        folder = _fake_adapter(run / f"checkpoint-{step}", f"weights-{step}".encode())
        (folder / "gnt_run.json").write_text(
            json.dumps({"base_model": "scripted", "global_step": step, "train_source_keys": []}), encoding="utf-8"
        )
    return run


def _references(langs: tuple[str, ...], pairs: int) -> dict[tuple[str, str], dict]:
    records = limit_pairs(suite_records(generate_pairs(langs, max_pairs=pairs * len(langs), seed=0)), pairs)
    return {(r["lang"], r["source"]): r for r in records}


def _reply_factory(references: dict[tuple[str, str], dict]):
    """Reply with a reference: the base and checkpoint-1 always gendered, checkpoint-2 neutral when ambiguous."""

    def reply(request: GenerationRequest) -> str:
        text = request.messages[-1][1]
        if request.constraint is not None:  # grid style
            lang = re.search(r"<(\w\w)>", request.constraint.value).group(1)
            source = text.rsplit("<en> ", 1)[1]
        else:
            lang = LANG_BY_NAME[re.search(r"into (\w+)\.", text).group(1)]
            source = text.split("\n\n", 1)[1]
        record = references[(lang, source)]
        neutral = request.adapter is not None and request.adapter.name.endswith("checkpoint-2") and record["variant"] == "ambiguous"
        translation = record["ref_neutral"] if neutral else record["ref_gendered"]
        if request.constraint is not None:
            return f"<{lang}> **{'NEUTRAL' if neutral else 'GENDERED'}** [{translation}]"
        return translation

    return reply


def test_scripted_models_give_the_expected_metrics_and_a_rerun_generates_nothing(tmp_path, scripted_run):
    langs = ("it", "de")
    references = _references(langs, 6)
    out = tmp_path / "eval"
    suite, evaluation = load_config(
        None, [("pairs_per_lang", 6), ("langs", "it,de"), ("bootstrap_samples", 100), ("grid_shots", 0),
               ("progress", False)],
        runs=[str(scripted_run)], model="scripted", out_dir=str(out),
    )
    backends: list[ScriptedBackend] = []

    def factory(config, base_model, adapter_paths):
        backends.append(ScriptedBackend(_reply_factory(references)))
        return backends[-1]

    folder = run_suite(suite, evaluation, backend_factory=factory)
    n_items = len(references)
    assert backends[0].calls > 0 and len(backends[0].requests) == 3 * 2 * n_items

    def metrics(model: str) -> dict:
        return read_json(out / model / "templated" / "metrics.json")["styles"]

    base, ckpt2 = metrics("base"), metrics("sft/checkpoint-2")
    for style in ("plain", "grid"):
        for lang in langs:
            marked = base[style][lang]["subsets"]["gender_marked"]
            assert marked["ambiguous"]["M"]["value"] == 1.0  # masculine default everywhere
            assert marked["delta"]["N"]["value"] == 0.0
            assert marked["delta"]["M"]["value"] > 0
            neutral = ckpt2[style][lang]["subsets"]["gender_marked"]
            assert neutral["ambiguous"]["N"]["value"] == 1.0
            assert neutral["delta"]["N"]["value"] == 1.0
            assert neutral["unknown_rate"]["ambiguous"]["value"] == 0.0
    assert base["grid"]["it"]["grid_labels"]["neutral_label"]["ambiguous"]["value"] == 0.0
    assert ckpt2["grid"]["it"]["grid_labels"]["neutral_label"]["ambiguous"]["value"] == 1.0

    outputs = read_jsonl(out / "sft" / "checkpoint-1" / "templated" / "outputs.jsonl")
    assert len(outputs) == 2 * n_items and {o["style"] for o in outputs} == {"plain", "grid"}
    assert all(o["label"] != "unknown" for o in outputs)
    record = read_json(out / "sft" / "checkpoint-1" / "templated" / "record.json")
    assert record["counts"]["generated"] == 2 * n_items and record["global_step"] == 1
    assert record["leakage"]["status"] == "clean"

    summary = read_json(folder / "summary.json")
    assert [m["name"] for m in summary["models"]] == ["base", "sft/checkpoint-1", "sft/checkpoint-2"]
    assert summary["models"][2]["headline"]["grid/it/delta_N"] == pytest.approx(
        ckpt2["grid"]["it"]["subsets"]["all"]["delta"]["N"]["value"]
    )
    assert (folder / "summary.tsv").read_text(encoding="utf-8").startswith("model\tglobal_step\tstyle")
    for name in ("strategies_plain", "strategies_grid", "deltas_plain", "deltas_grid"):
        png = folder / "plots" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000

    before = (out / "base" / "templated" / "metrics.json").read_text(encoding="utf-8")
    suite.plots = False
    run_suite(suite, evaluation, backend_factory=factory)  # rerun: everything from the cache
    assert backends[-1].calls == 0
    assert read_json(out / "base" / "templated" / "record.json")["counts"]["generated"] == 0
    assert json.loads(before)["styles"] == read_json(out / "base" / "templated" / "metrics.json")["styles"]


def test_a_checkpoint_whose_every_generation_failed_fails_the_run_and_stays_out_of_the_summary(tmp_path, scripted_run):
    from gnt.evaluation.sweep import GenerationFailure
    from gnt.generation.base import Generation

    references = _references(("it",), 3)
    out = tmp_path / "eval"
    suite, evaluation = load_config(
        None, [("pairs_per_lang", 3), ("langs", "it"), ("bootstrap_samples", 20), ("plots", False),
               ("progress", False), ("chunk_size", 100)],
        runs=[str(scripted_run)], model="scripted", out_dir=str(out),
    )
    working = _reply_factory(references)

    def reply(request: GenerationRequest):  # checkpoint-2's adapter does not load: every request of it fails
        if request.adapter is not None and request.adapter.name.endswith("checkpoint-2"):
            return Generation("", error="adapter failed to load")
        return working(request)

    with pytest.raises(GenerationFailure, match=r"sft/checkpoint-2 \(adapter failed to load\)"):
        run_suite(suite, evaluation, backend_factory=lambda c, b, a: ScriptedBackend(reply))
    failed = out / "sft" / "checkpoint-2" / "templated"
    record = read_json(failed / "record.json")
    assert record["status"] == "failed" and record["counts"]["failed"] == record["counts"]["requests"] > 0
    assert not (failed / "metrics.json").exists() and not (failed / "outputs.jsonl").exists()
    summary = read_json(out / "templated_suite" / "summary.json")
    assert [m["name"] for m in summary["models"]] == ["base", "sft/checkpoint-1"]

    run_suite(suite, evaluation, backend_factory=lambda c, b, a: ScriptedBackend(working))  # failures are retried
    assert read_json(failed / "record.json")["status"] == "ok" and (failed / "metrics.json").is_file()
    assert len(read_json(out / "templated_suite" / "summary.json")["models"]) == 3


def test_a_model_that_echoes_its_plain_prompt_is_untranslated_not_neutral(tmp_path, scripted_run):
    """Gemma 3 270M's base repeats the plain prompt (instruction, source, the instruction again): the English
    adjective is in it, but that is no translation, so it must not count as the neutral strategy N4."""
    references = _references(("it",), 3)
    working = _reply_factory(references)

    def reply(request: GenerationRequest) -> str:
        text = request.messages[-1][1]
        if request.adapter is None and request.constraint is None:  # the base, plain style: an echo
            return f"{text} mendatang\nmodel\n{text.split(chr(10))[0]}"
        return working(request)

    suite, evaluation = load_config(
        None, [("pairs_per_lang", 3), ("langs", "it"), ("bootstrap_samples", 20), ("plots", False),
               ("progress", False), ("chunk_size", 100)],
        runs=[str(scripted_run)], model="scripted", out_dir=str(tmp_path / "eval"),
    )
    run_suite(suite, evaluation, backend_factory=lambda c, b, a: ScriptedBackend(reply))
    outputs = [r for r in read_jsonl(tmp_path / "eval" / "base" / "templated" / "outputs.jsonl") if r["style"] == "plain"]
    assert outputs and {r["label"] for r in outputs} == {"unknown"}
    assert {r["reason"] for r in outputs} == {"untranslated"}
    trained = read_jsonl(tmp_path / "eval" / "sft" / "checkpoint-2" / "templated" / "outputs.jsonl")
    assert {r["label"] for r in trained if r["style"] == "plain"} - {"unknown"}  # real translations are still read


def test_suite_comes_from_the_runs_data_build_and_is_limited_per_template(tmp_path):
    data = tmp_path / "data"
    write_suite(generate_pairs(("it", "es"), max_pairs=200, seed=1), data / SUITE_FILE)
    model = ModelUnderTest("sft/checkpoint-1", "base", run_record={"data_dir": str(data)})
    model.adapter = object()  # type: ignore[assignment]  # only its presence matters here
    suite, evaluation = load_config(None, [("langs", "it"), ("pairs_per_lang", 22)])
    records, info = load_suite(suite, evaluation, [model])
    assert info["source"] == str((data / SUITE_FILE).resolve())
    assert {r["lang"] for r in records} == {"it"}
    pairs = {r["pair_id"] for r in records}
    assert len(pairs) == 22 and len(records) == 44
    assert len({r["template_id"] for r in records}) == 22  # round-robin over templates, not the file's first pairs
    assert info["counts"] == {"it/ambiguous": 22, "it/determined": 22}


def test_recipe_parses_and_unknown_keys_are_rejected():
    suite, evaluation = load_config(RECIPES_DIR / "templated-tiny.yaml")
    assert suite.styles == ["plain", "grid"] and suite.pairs_per_lang == 8
    assert Path(evaluation.model).is_dir()  # "tiny" resolved to the offline model folder
    from gnt.recipe import RecipeError

    with pytest.raises(RecipeError, match="pairs_per_lang"):
        load_config(None, [("pairs_per_langs", 3)])


def test_tiny_model_end_to_end_over_base_and_checkpoints(tmp_path, tiny_model_dir, eval_tiny_run):
    """Real generation: base + checkpoint-1 + checkpoint-2 of a tiny LoRA run, both styles, through the CLI."""
    import importlib.util

    from gnt.generation.transformers_backend import TransformersBackend

    spec = importlib.util.spec_from_file_location("templated_cli", Path(__file__).resolve().parent.parent / "eval" / "templated.py")
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)  # type: ignore[union-attr]
    out = tmp_path / "eval"
    argv = [
        str(RECIPES_DIR / "templated-tiny.yaml"), "--run", str(eval_tiny_run), "--model", str(tiny_model_dir),
        "--out", str(out), "--quiet", "langs=it,de", "pairs_per_lang=2", "max_new_tokens=6", "grid_config=None",
        "bootstrap_samples=50", "plots=false",
    ]
    assert cli.main(argv) == 0
    names = ["base", "sft/checkpoint-1", "sft/checkpoint-2"]
    for name in names:
        record = read_json(out / name / "templated" / "record.json")
        assert record["counts"]["requests"] == 2 * 8 and record["counts"]["failed"] == 0
        assert len(read_jsonl(out / name / "templated" / "outputs.jsonl")) == 16
    assert len(read_jsonl(out / "cache" / "generations.jsonl")) == 3 * 16
    loads = TransformersBackend.loads
    assert cli.main(argv) == 0  # rerun: all cached, the model is never even loaded
    assert TransformersBackend.loads == loads
    for name in names:
        assert read_json(out / name / "templated" / "record.json")["counts"]["generated"] == 0
    assert len(read_jsonl(out / "cache" / "generations.jsonl")) == 3 * 16
