"""End-to-end checkpoint sweeps on the tiny model: coverage, outputs, one base load, cache, resume, leakage, CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _eval_helpers import ScriptedBackend, make_checkpoint

from gnt.cli.evaluate import load_eval_config
from gnt.evaluation.leakage import LeakageError
from gnt.evaluation.results import load_summary
from gnt.evaluation.sweep import GenerationFailure, run_sweep
from gnt.generation.base import Generation
from gnt.io import read_json
from gnt.paths import PROJECT_ROOT, RECIPES_DIR, SAMPLE_DIR
from gnt.prompts.grid import PromptGrid
from gnt.recipe import RecipeError
from gnt.results.model_folder import JUDGE, ModelFolder

# A small slice of the grid: 2 languages × 2 configurations × 2 shot counts, 2 rows per language, 16 tokens.
GRID = [("steps", "grid"), ("langs", "it,de"), ("configs", "G+S,None"), ("shots", "0,2"), ("rows_per_lang", "2"),
        ("max_new_tokens", "16"), ("chunk_size", "8"), ("batch_size", "8"), ("bootstrap_samples", "200"),
        ("progress", "false")]
N_CELLS, N_ROWS = 8, 4  # rows: 2 per language, each in the 4 cells of its language
MODELS = ["base", "sft/checkpoint-1", "sft/checkpoint-2"]


def config_for(out: Path, runs: list[Path], extra: list[tuple[str, str]] = (), **explicit):
    return load_eval_config(RECIPES_DIR / "eval-tiny.yaml", [*GRID, *extra], runs=[str(r) for r in runs],
                            out_dir=str(out), **explicit)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, eval_tiny_run: Path):
    """One uninterrupted sweep over base + 2 checkpoints; returns (out dir, base loads it caused)."""
    from gnt.generation.transformers_backend import TransformersBackend

    out = tmp_path_factory.mktemp("sweep") / "eval"
    loads = TransformersBackend.loads
    run_sweep(config_for(out, [eval_tiny_run]))
    return out, TransformersBackend.loads - loads


def read_model(out: Path, name: str) -> tuple[list[dict], dict, dict]:
    folder = ModelFolder(out, name)
    return folder.generations(), read_json(folder.path / "metrics.json"), dict(folder.record())


def test_sweep_covers_the_grid_writes_everything_and_loads_the_base_once(sweep) -> None:
    out, loads = sweep
    assert loads == 1, "base + 2 checkpoints must share one base-model load"
    summary = load_summary(out)
    assert [m["name"] for m in summary["models"]] == MODELS
    assert (out / "cache" / "generations.jsonl").is_file()
    expected_cells = {f"{lang}/{config}/{shots}" for lang in ("it", "de") for config in ("G+S", "None") for shots in (0, 2)}
    for entry in summary["models"]:
        records, metrics, record = read_model(out, entry["name"])
        assert len(records) == N_CELLS * 2 and {r["cell"] for r in records} == expected_cells
        base = entry["name"] == "base"  # the record says what the report would otherwise guess
        assert record["format"] == "gnt-align/eval-record/3" and record["step"] == "grid"
        assert (record["kind"], record["stage"]) == (("base", "base") if base else ("checkpoint", "sft"))
        assert set(metrics["cells"]) == expected_cells and set(metrics["languages"]) == {"it", "de"}
        assert metrics["overall"]["n"] == len(records)
        assert not {"gnt_accuracy", "coherence", "xcomet"} & set(metrics["overall"]), "the later steps' own files"
        first = records[0]
        for key in ("id", "lang", "set", "gender", "source_key", "cell", "config", "shots", "prompt_hash", "key", "raw",
                    "label", "translation", "error", "ref_g", "ref_n", "source"):
            assert key in first
        assert record["counts"] == {"requests": 16, "cache_hits": 0, "generated": 16, "failed": 0}
        assert set(record["shot_orders"]) == expected_cells and len(record["shot_orders"]["it/G+S/2"]) == 2
        assert record["decoding"]["max_new_tokens"] == 16 and record["constraint"]["it"].startswith("<it>")
        assert record["backend"]["backend"] == "transformers" and record["model_id"].endswith("transformers/float32")
        assert record["environment"]["packages"]["transformers"]
    base = read_model(out, "base")[2]
    ckpt = read_model(out, "sft/checkpoint-2")[2]
    assert base["leakage"]["status"] == "not_applicable" and base["global_step"] is None
    assert ckpt["leakage"]["status"] == "clean" and ckpt["global_step"] == 2
    assert len(ckpt["model"]["adapter"]["weights_hash"]) == 16
    assert "train_source_keys" not in ckpt["run_record"] and ckpt["run_record"]["n_train_source_keys"] > 0
    # The three models saw the same prompts, but produced different outputs (the adapters are applied).
    raws = {name: [r["raw"] for r in read_model(out, name)[0]] for name in MODELS}
    assert [r["prompt_hash"] for r in read_model(out, "base")[0]] == [r["prompt_hash"] for r in read_model(out, MODELS[1])[0]]
    assert raws["base"] != raws["sft/checkpoint-1"] != raws["sft/checkpoint-2"]


def test_a_second_invocation_generates_nothing(sweep, eval_tiny_run: Path) -> None:
    from gnt.generation.transformers_backend import TransformersBackend

    out, _ = sweep
    before = {name: (out / name / "generations.jsonl").read_bytes() for name in MODELS}
    metrics_before = {name: read_model(out, name)[1] for name in MODELS}
    loads = TransformersBackend.loads
    run_sweep(config_for(out, [eval_tiny_run]))
    assert TransformersBackend.loads == loads, "a fully cached rerun never loads the model"
    for name in MODELS:
        _, metrics, record = read_model(out, name)
        assert record["counts"]["generated"] == 0 and record["counts"]["cache_hits"] == 16
        assert (out / name / "generations.jsonl").read_bytes() == before[name]
        assert metrics == metrics_before[name]


def test_a_cached_rerun_keeps_the_grids_files_and_the_judges_part(sweep, eval_tiny_run: Path) -> None:
    from gnt.judge.apply import judge_results
    from gnt.judge.lexical import LexicalJudge
    from gnt.results.folder import ResultsFolder

    out, _ = sweep
    folder = ModelFolder(out, "sft/checkpoint-2")
    judge_results(ResultsFolder(out, (folder.name,)), [folder.name], lexical=LexicalJudge())
    grid_file = (folder.path / "metrics.json").read_bytes()
    judged = folder.metrics()[0]
    assert judged is not None and judged["judged"] and "gnt_accuracy" in judged["overall"]
    run_sweep(config_for(out, [eval_tiny_run]))
    assert (folder.path / "metrics.json").read_bytes() == grid_file, "an unchanged model's metrics are kept"
    assert folder.check(JUDGE).ok and folder.metrics()[0] == judged, "and the judge's part still composes"
    run_sweep(config_for(out, [eval_tiny_run], [("bootstrap_samples", "100")]))
    assert folder.metrics()[0]["bootstrap"]["samples"] == 100, "other bootstrap settings recompute the metrics"
    assert folder.check(JUDGE).ok, "the same generations: the judge's part still holds"
    run_sweep(config_for(out, [eval_tiny_run]))  # leave the shared sweep as the other tests expect it


def test_metrics_are_recomputed_from_generations_with_judgments(sweep) -> None:
    from gnt.bootstrap import recorded_bootstrap
    from gnt.evaluation.metrics import compute_metrics

    out, _ = sweep
    folder = ModelFolder(out, "sft/checkpoint-1")
    records = folder.generations()
    stored = folder.grid_metrics()
    again = compute_metrics(records, bootstrap=recorded_bootstrap(stored))
    assert {k: again[k] for k in ("cells", "languages", "overall")} == {k: stored[k] for k in ("cells", "languages", "overall")}
    judgments = {r["key"]: {"neutral": True, "label": "NEUTRAL"} for r in records}
    written = {**compute_metrics(records, judgments, bootstrap=recorded_bootstrap(stored)), "leakage": stored["leakage"]}
    set_n = [r for r in records if r["set"] == "Set-N"]
    expected = sum(r["error"] is None for r in set_n) / len(set_n)  # all judged neutral: Set-N correct unless errors
    assert written["overall"]["gnt_accuracy"]["Set-N"]["value"] == pytest.approx(expected)
    assert written["overall"]["coherence"] is not None and written["leakage"]["status"] == "clean"


def test_a_new_checkpoint_is_the_only_thing_computed(sweep, eval_tiny_run: Path, tiny_model_dir: Path, tmp_path: Path) -> None:
    out_before, _ = sweep
    run = shutil.copytree(eval_tiny_run, tmp_path / "runs" / "sft")
    make_checkpoint(tiny_model_dir, run / "checkpoint-3", seed=33)
    shutil.copy(run / "checkpoint-2" / "gnt_run.json", run / "checkpoint-3" / "gnt_run.json")
    out = shutil.copytree(out_before, tmp_path / "eval")
    run_sweep(config_for(out, [run]))
    generated = {m["name"]: m["counts"]["generated"] for m in load_summary(out)["models"]}
    assert generated == {"base": 0, "sft/checkpoint-1": 0, "sft/checkpoint-2": 0, "sft/checkpoint-3": 16}


def test_kill_and_resume_gives_identical_results(sweep, eval_tiny_run: Path, tmp_path: Path) -> None:
    from gnt.evaluation.driver import default_backend_factory as make_backend

    class Killed(Exception):
        pass

    calls = {"n": 0}

    def dying_factory(config, base_model, adapter_paths):
        backend = make_backend(config, base_model, adapter_paths)
        generate = backend.generate

        def generate_then_die(requests):
            if calls["n"] == 3:  # mid-way through the second model (2 chunks of 8 per model)
                raise Killed
            calls["n"] += 1
            return generate(requests)

        backend.generate = generate_then_die
        return backend

    out = tmp_path / "eval"
    with pytest.raises(Killed):
        run_sweep(config_for(out, [eval_tiny_run]), backend_factory=dying_factory)
    cache = out / "cache" / "generations.jsonl"
    assert len(cache.read_text().splitlines()) == 24  # 3 chunks of 8 survived the kill
    with open(cache, "a", encoding="utf-8") as handle:
        handle.write('{"key": "a-batch-cut-by-the-kill", "text": "<it> **NEU')  # a torn last line
    run_sweep(config_for(out, [eval_tiny_run]))
    reference, _ = sweep
    counts = {m["name"]: m["counts"] for m in load_summary(out)["models"]}
    assert counts["base"]["cache_hits"] == 16 and counts["sft/checkpoint-1"]["cache_hits"] == 8
    for name in MODELS:
        assert read_model(out, name)[1] == read_model(reference, name)[1]
        assert (out / name / "generations.jsonl").read_bytes() == (reference / name / "generations.jsonl").read_bytes()


def _leaky_copy(run: Path, target: Path, data_dir: Path) -> Path:
    """A copy of ``run`` whose records say it trained on some of the held-out test rows."""
    test_keys = json.loads((data_dir / "manifest.json").read_text())["source_keys"]["test"]
    copy = shutil.copytree(run, target)
    for record_path in [copy / "gnt_run.json", *copy.glob("checkpoint-*/gnt_run.json")]:
        record = json.loads(record_path.read_text())
        record["train_source_keys"] = record["train_source_keys"] + test_keys
        record_path.write_text(json.dumps(record))
    return copy


def test_leakage_is_refused_loudly_unless_allowed(eval_tiny_run: Path, eval_data_dir: Path, tmp_path: Path, caplog) -> None:
    leaky = _leaky_copy(eval_tiny_run, tmp_path / "runs" / "leaky", eval_data_dir)
    made = []

    def factory(config, base_model, adapter_paths):
        made.append(base_model)
        return ScriptedBackend(lambda r: "<it> **NEUTRAL** [x]")

    out = tmp_path / "eval"
    with pytest.raises(LeakageError, match="leaky/checkpoint-1"):
        run_sweep(config_for(out, [leaky]), backend_factory=factory)
    assert made == [] and not (out / "summary.json").exists(), "refused before generating anything"
    assert "LEAKAGE: leaky/checkpoint-1 was trained on" in caplog.text
    run_sweep(config_for(out, [leaky], allow_leakage=True), backend_factory=factory)
    records, metrics, record = read_model(out, "leaky/checkpoint-2")
    assert metrics["leakage"]["status"] == "leak"
    assert metrics["leakage"]["overlap"] == len({r["source_key"] for r in records}) > 0
    assert record["leakage"]["allowed"] is True
    assert read_model(out, "base")[1]["leakage"]["status"] == "not_applicable"


EDGE_OUTPUTS = [
    "<{lang}> **NEUTRAL** [Il documento [A6-0123/2009] è approvato]",  # `]` inside: clean
    "<{lang}> [senza etichetta]",                                      # no_label
    "<{lang}> **GENDERED** [troncato a metà",                          # unterminated
    "",                                                                # empty
    "<xx> **NEUTRAL** [lingua sbagliata]",                             # wrong_lang_tag
    Generation("", error="HTTP 503 after retries"),                    # generation_failed
]


def test_base_only_sweep_over_mgente_counts_every_extraction_error(tiny_model_dir: Path, tmp_path: Path) -> None:
    seen = []

    def reply(request):
        seen.append(request)
        lang = request.constraint.value[1:3]
        item = EDGE_OUTPUTS[len(seen) % len(EDGE_OUTPUTS)]
        return item if isinstance(item, Generation) else item.format(lang=lang)

    config = load_eval_config(RECIPES_DIR / "eval-tiny.yaml", [("steps", "grid"), ("langs", "it"), ("configs", "None"), ("shots", "0"),
                              ("progress", "false"), ("chunk_size", "5")],
                              model=str(tiny_model_dir), mgente=str(SAMPLE_DIR), out_dir=str(tmp_path / "eval"))
    out = run_sweep(config, backend_factory=lambda c, b, a: ScriptedBackend(reply, system_role=False))
    records, metrics, record = read_model(out, "base")
    demos = PromptGrid(["it"]).demonstration_keys()
    assert records and not {r["source_key"] for r in records} & demos, "prompt demonstrations are never evaluated"
    assert record["rows"]["excluded_demos_and_exemplars"] > 0
    codes = metrics["overall"]["extraction_errors"]["by_code"]
    assert set(codes) == {"no_label", "unterminated", "empty", "wrong_lang_tag", "generation_failed"}
    assert sum(codes.values()) + sum(r["error"] is None for r in records) == len(records)
    clean = [r for r in records if r["error"] is None]
    assert clean[0]["translation"] == "Il documento [A6-0123/2009] è approvato"
    assert all(role != "system" for r in seen for role, _ in r.messages), "system text folded for such templates"
    assert record["system_role"] is False
    # a failed generation is not cached: the rerun asks for it again
    failed = sum(r["error"] == "generation_failed" for r in records)
    run_sweep(config, backend_factory=lambda c, b, a: ScriptedBackend(reply, system_role=False))
    assert read_model(out, "base")[2]["counts"]["generated"] == failed


def test_a_backend_failing_everything_stops_the_sweep(tiny_model_dir: Path, tmp_path: Path) -> None:
    dead = ScriptedBackend(lambda r: Generation("", error="ConnectError: connection refused"))
    config = load_eval_config(RECIPES_DIR / "eval-tiny.yaml", [("steps", "grid"), ("langs", "it"), ("chunk_size", "2"), ("progress", "false")],
                              model=str(tiny_model_dir), mgente=str(SAMPLE_DIR), out_dir=str(tmp_path / "eval"))
    with pytest.raises(GenerationFailure, match="connection refused"):
        run_sweep(config, backend_factory=lambda c, b, a: dead)
    assert dead.calls == 3


def test_configuration_errors_are_clear(tmp_path: Path, tiny_model_dir: Path) -> None:
    with pytest.raises(RecipeError, match="give mgente="):
        run_sweep(load_eval_config(None, model=str(tiny_model_dir), out_dir=str(tmp_path)))
    with pytest.raises(RecipeError, match="nothing to evaluate"):
        run_sweep(load_eval_config(None, out_dir=str(tmp_path)))
    with pytest.raises(RecipeError, match="no checkpoint"):
        run_sweep(load_eval_config(None, runs=[str(tmp_path)], out_dir=str(tmp_path)))
    with pytest.raises(RecipeError, match="Closest valid keys: langs"):
        load_eval_config(None, [("lang", "it")])


def test_cli_reruns_the_sweep_from_cache_and_prints_the_table(sweep, eval_tiny_run: Path, capsys) -> None:
    from gnt.cli.evaluate import main
    out, _ = sweep
    overrides = [f"{k}={v}" for k, v in GRID if k != "progress"]  # GRID holds steps=grid: eval-tiny.yaml names the
    # demo's whole pipeline, and this test is about the grid
    assert main([str(RECIPES_DIR / "eval-tiny.yaml"), "--run", str(eval_tiny_run), "--out", str(out), *overrides]) == 0
    printed = capsys.readouterr().out
    assert "Label metrics" in printed and "sft/checkpoint-2" in printed and "summary.json" in printed
    assert main([str(RECIPES_DIR / "eval-tiny.yaml"), "--run", str(eval_tiny_run), "shots=3"]) == 2
    assert "shots" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------------------------
# A model whose every generation failed is a run error, not a result
# ----------------------------------------------------------------------------------------------------------------


def _base_only(tiny_model_dir: Path, out: Path, extra: list[tuple[str, str]] = ()):
    # one chunk holds every request, so the consecutive-failed-chunks guard never fires: only the new check can
    return load_eval_config(RECIPES_DIR / "eval-tiny.yaml", [("steps", "grid"), ("langs", "it"), ("configs", "None"), ("shots", "0"),
                            ("rows_per_lang", "3"), ("chunk_size", "64"), ("progress", "false"), *extra],
                            model=str(tiny_model_dir), mgente=str(SAMPLE_DIR), out_dir=str(out))


def test_a_model_whose_every_generation_failed_fails_the_run_and_is_retried(tiny_model_dir: Path,
                                                                             tmp_path: Path) -> None:
    from gnt.cli.command import exit_status
    from gnt.cli.evaluate import COMMAND
    from gnt.report.build import build_report

    out = tmp_path / "eval"
    config = _base_only(tiny_model_dir, out)
    dead = ScriptedBackend(lambda r: Generation("", error="SafetensorError: incomplete metadata"))
    with pytest.raises(GenerationFailure) as failed:
        run_sweep(config, backend_factory=lambda c, b, a: dead)
    assert exit_status(failed.value, COMMAND.exits) == 1  # as eval/evaluate.py maps it
    with pytest.raises(GenerationFailure, match=r"1 of 1 model\(s\) failed.*base \(SafetensorError"):
        run_sweep(config, backend_factory=lambda c, b, a: dead)
    assert dead.calls == 2  # nothing was cached: the second run asked again
    record = read_json(out / "base" / "record.json")
    assert record["status"] == "failed" and "SafetensorError" in record["error"]
    assert not (out / "base" / "metrics.json").exists(), "no 0.0 metrics that look like a result"
    assert not (out / "base" / "generations.jsonl").exists(), "nothing for the judge or xCOMET to score"
    [entry] = load_summary(out)["models"]
    assert entry["status"] == "failed" and entry["headline"] is None
    report = build_report(out).read_text(encoding="utf-8")
    assert "| base | base | 0 | failed | failed |" in report and "every generation in error" in report
    # the next run retries every failed generation and the model becomes a result
    alive = ScriptedBackend(lambda r: "<it> **NEUTRAL** [Ciao]")
    run_sweep(config, backend_factory=lambda c, b, a: alive)
    record = read_json(out / "base" / "record.json")
    assert record["status"] == "ok" and record["counts"]["generated"] == record["counts"]["requests"] == 3
    assert read_json(out / "base" / "metrics.json")["overall"]["n"] == 3


def test_a_dead_http_server_fails_the_run(tiny_model_dir: Path, tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = _base_only(tiny_model_dir, tmp_path / "eval", [("backend", "http"), ("served_model", "tiny"),
                        ("base_url", f"http://127.0.0.1:{port}/v1"), ("max_retries", "0"), ("timeout_s", "2")])
    with pytest.raises(GenerationFailure, match="model\\(s\\) failed"):
        run_sweep(config)
    assert read_json(tmp_path / "eval" / "base" / "record.json")["status"] == "failed"


def test_nonsense_decoding_lengths_are_refused(tiny_model_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="max_new_tokens: -1: give a value in \\[1, 1048576\\]"):
        _base_only(tiny_model_dir, tmp_path, [("max_new_tokens", "-1")])


def test_the_offline_model_aliases_are_accepted_by_the_evaluator_and_judge(tiny_model_dir: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import gnt.models.tiny as tiny
    from gnt.evaluation.discovery import discover_models
    from gnt.judge.config import resolve_model_path

    monkeypatch.setattr(tiny, "default_cache_dir", lambda: tiny_model_dir.parent)
    [base] = discover_models([], [], "gnt:tiny")
    assert base.base_model == str(tiny_model_dir)
    assert resolve_model_path("gnt:tiny") == resolve_model_path("tiny") == str(tiny_model_dir)
    with pytest.raises(RecipeError, match="unknown model alias 'gnt:huge'; valid: gnt:tiny, gnt:smollm"):
        discover_models([], [], "gnt:huge")


def test_concurrent_summary_writers_lose_no_entry(tmp_path: Path) -> None:
    out = tmp_path / "eval"
    script = (
        "import sys; from pathlib import Path; from gnt.evaluation.results import update_summary\n"
        "out, tag = Path(sys.argv[1]), sys.argv[2]\n"
        "for i in range(100):\n"
        "    name = f'{tag}/checkpoint-{i}'\n"
        "    (out / name).mkdir(parents=True, exist_ok=True); (out / name / 'record.json').write_text('{}')\n"
        "    update_summary(out, [{'name': name, 'record': f'{name}/record.json'}])\n"
    )
    env = {**__import__("os").environ, "PYTHONPATH": str(PROJECT_ROOT)}
    writers = [subprocess.Popen([sys.executable, "-c", script, str(out), tag], env=env) for tag in ("a", "b")]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    names = [m["name"] for m in load_summary(out)["models"]]
    assert len(names) == len(set(names)) == 200


def test_a_truncated_adapter_fails_the_run_instead_of_scoring_zero(eval_tiny_run: Path, tmp_path: Path) -> None:
    adapter = tmp_path / "copy" / "checkpoint-1"
    shutil.copytree(eval_tiny_run / "checkpoint-1", adapter)
    weights = adapter / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:200])
    config = load_eval_config(RECIPES_DIR / "eval-tiny.yaml", [*GRID, ("include_base", "false"), ("chunk_size", "64")],
                              adapters=[str(adapter)], out_dir=str(tmp_path / "eval"))
    with pytest.raises(GenerationFailure, match=r"copy/checkpoint-1 \("):
        run_sweep(config)
    record = read_json(tmp_path / "eval" / "copy" / "checkpoint-1" / "record.json")
    assert record["status"] == "failed" and not (tmp_path / "eval" / "copy" / "checkpoint-1" / "metrics.json").exists()


def test_a_base_model_can_be_scored_prompted_with_shots_beside_zero_shot_checkpoints(tmp_path: Path,
                                                                                     eval_tiny_run: Path) -> None:
    """``base_shots``: the untrained base answers at the few-shot cells, the checkpoints at their own; the report's
    paired tests then match the two by row."""
    from gnt.report.significance import paired_bootstrap

    out = tmp_path / "eval"
    grid = [item for item in GRID if item[0] != "shots"]
    run_sweep(load_eval_config(RECIPES_DIR / "eval-tiny.yaml", [*grid, ("shots", "0"), ("base_shots", "2")],
                               runs=[str(eval_tiny_run)], out_dir=str(out)))
    base, _, base_record = read_model(out, "base")
    tuned, _, tuned_record = read_model(out, "sft/checkpoint-2")
    cells = {f"{lang}/{config}" for lang in ("it", "de") for config in ("G+S", "None")}
    assert {r["cell"] for r in base} == {f"{c}/2" for c in cells} == set(base_record["grid"]["cells"])
    assert {r["cell"] for r in tuned} == {f"{c}/0" for c in cells} == set(tuned_record["grid"]["cells"])
    assert {r["id"] for r in base} == {r["id"] for r in tuned}
    values = {f"{r['lang']}|{r['id']}|{r['cell']}": float(r["error"] is None) for r in base}
    shifted = {f"{r['lang']}|{r['id']}|{r['cell']}": float(r["error"] is None) for r in tuned}
    result = paired_bootstrap(values, shifted)
    assert result is not None and result.n_pairs == len({r["id"] for r in base}), "different cells: matched by row"
