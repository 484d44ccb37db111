"""Damaged results are never read as done: each results file's size and hash is recorded in its part's record
(written last) and checked before a step counts as complete, so damage sends the step back to work with a warning,
and a reader leaves the damaged part out, naming the file and the command that writes it again."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from _report_fixtures import make_results, make_run
from test_model_folder import GRID, judge, sweep

from gnt.cli.evaluate import load_eval_config
from gnt.evaluation.step import STEP as GRID_STEP
from gnt.io import read_json, write_json
from gnt.paths import SAMPLE_DIR
from gnt.results.folder import ResultsFolder
from gnt.results.model_folder import GRID as GRID_PART
from gnt.results.model_folder import ModelFolder


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("pristine") / "eval"
    sweep(out, tiny_model_dir)
    return out


@pytest.fixture()
def swept(pristine: Path, tmp_path: Path) -> Path:
    """A copy of one swept results folder (caches included) for each test to damage."""
    import shutil

    return Path(shutil.copytree(pristine, tmp_path / "eval"))


def grid_complete(out: Path, tiny_model_dir: Path) -> str | None:
    config = load_eval_config(None, GRID, model=str(tiny_model_dir), mgente=str(SAMPLE_DIR), out_dir=str(out))
    return GRID_STEP.complete(config, ResultsFolder(out, ("base",)))


def cut_in_half(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[: len(lines) // 2]), encoding="utf-8")


@pytest.mark.parametrize("damage", ["generations cut in half", "generations deleted", "metrics emptied",
                                    "metrics truncated", "record is [1]", "record of eval-record/2"])
def test_a_damaged_grid_part_is_evaluated_again_and_written_whole(swept: Path, tiny_model_dir: Path, damage: str,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    folder = ModelFolder(swept, "base")
    n = len(folder.generations())
    assert grid_complete(swept, tiny_model_dir) is not None
    generations, metrics, record = (folder.path / name for name in ("generations.jsonl", "metrics.json", "record.json"))
    if damage == "generations cut in half":
        cut_in_half(generations)
    elif damage == "generations deleted":
        generations.unlink()
    elif damage == "metrics emptied":
        metrics.write_text("{}")
    elif damage == "metrics truncated":
        metrics.write_text(metrics.read_text()[:200])
    elif damage == "record is [1]":
        record.write_text("[1]")
    else:
        write_json(record, {**read_json(record), "format": "gnt-align/eval-record/2"})
    with caplog.at_level(logging.WARNING):
        assert grid_complete(swept, tiny_model_dir) is None, "damage is never read as complete"
    assert "evaluated again" in caplog.text
    sweep(swept, tiny_model_dir)  # the rerun (from the generation cache) writes the part whole again
    assert folder.check(GRID_PART).ok and grid_complete(swept, tiny_model_dir) is not None
    assert len(folder.generations()) == n and folder.grid_metrics()["overall"]["n"] == n


@pytest.mark.parametrize("damage", ["truncated", "deleted"])
def test_damaged_judgments_send_the_judge_back_to_work(swept: Path, damage: str) -> None:
    from gnt.judge.config import JudgeRecipe
    from gnt.judge.step import STEP as JUDGE_STEP

    judge(swept)
    folder = ResultsFolder(swept, ("base",))
    config = JudgeRecipe(judge="lexical")
    assert JUDGE_STEP.complete(config, folder) is not None
    judgments = swept / "base" / "judgments.jsonl"
    cut_in_half(judgments) if damage == "truncated" else judgments.unlink()
    assert JUDGE_STEP.complete(config, folder) is None
    metrics, warnings = folder.model("base").metrics()
    assert metrics is not None and "gnt_accuracy" not in metrics["overall"], "never composed from half a judgment"
    assert any("judge left out" in w and "judgments.jsonl" in w and "eval/judge.py" in w for w in warnings)
    judge(swept)
    assert JUDGE_STEP.complete(config, folder) is not None


def test_damaged_templated_and_attribution_parts_are_done_again(tmp_path: Path) -> None:
    from gnt.attribution.config import AttributionConfig
    from gnt.attribution.step import attributed
    from gnt.evaluation.config import EvalConfig
    from gnt.evaluation.step import recipe_of_record
    from gnt.results.part import write_part
    from gnt.templated_suite.run import SuiteConfig
    from gnt.templated_suite.step import STEP as TEMPLATED_STEP
    from gnt.templated_suite.step import TemplatedStepConfig

    out = make_results(tmp_path / "eval", steps=(4,), rows_per_set=2)
    model = out / "sft" / "checkpoint-4"
    config = TemplatedStepConfig(SuiteConfig(), EvalConfig())
    for name in ("base", "sft/checkpoint-4"):
        write_part(out / name / "templated", {"metrics.json": {"styles": {}}}, {
            "suite_config": json.loads(json.dumps(vars(config.suite))),
            "eval_recipe": recipe_of_record(config.evaluation.to_json())}, record_name="record.json")
    write_json(out / "templated_suite" / "summary.json", {"models": []})
    folder = ResultsFolder(out, ("base", "sft/checkpoint-4"))
    assert TEMPLATED_STEP.complete(config, folder) is not None
    (model / "templated" / "metrics.json").write_text('{"styles": {')
    assert TEMPLATED_STEP.complete(config, folder) is None

    attribution = AttributionConfig(cells=["it/G+S/4"], method="gradxinput")
    assert attributed(attribution, model)
    cut_in_half(model / "attribution" / "it_G+S_4" / "gradxinput" / "parts.jsonl")
    assert not attributed(attribution, model)


def test_a_copy_of_a_model_folder_is_not_a_second_model(tmp_path: Path) -> None:
    import shutil

    from gnt.report.collect import collect
    from gnt.results.folder import model_names

    out = make_results(tmp_path / "eval", steps=(4,), rows_per_set=2, extras=False)
    shutil.copytree(out / "base", out / "base.bak")
    assert model_names(out) == ["base", "sft/checkpoint-4"]
    assert ResultsFolder.on_disk(out).models == ("base", "sft/checkpoint-4")
    results = collect(out)
    assert [m.name for m in results.models] == ["base", "sft/checkpoint-4"]
    assert any("base.bak: left out: its record.json is that of 'base'" in w for w in results.warnings)


def test_cache_lines_that_are_not_results_are_ignored_with_a_warning(tmp_path: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    from gnt.evaluation.cache import GenerationCache
    from gnt.io import append_jsonl
    from gnt.judge.apply import usable_verdicts

    path = tmp_path / "generations.jsonl"
    append_jsonl(path, [{"key": "a", "text": 123}, {"key": "b", "text": "<it> **NEUTRAL** [x]", "n_tokens": "7"},
                        {"key": "c", "text": "<it> **NEUTRAL** [y]", "n_tokens": 7}])
    with caplog.at_level(logging.WARNING):
        cache = GenerationCache(path)
    assert cache.get("a") is None and cache.get("b") is None and cache.get("c") is not None
    assert "ignored 2 line(s)" in caplog.text
    usable, rejected = usable_verdicts({"k1": (True, 123), "k2": ("yes", "NEUTRAL"), "k3": (True, "NEUTRAL")},
                                       ("NEUTRAL", "GENDERED"), "base")
    assert usable == {"k3": {"neutral": True, "label": "NEUTRAL"}} and rejected == 2


def test_a_judge_cache_line_with_label_123_is_never_counted(tmp_path: Path) -> None:
    from test_judge_apply import _backend, _entries, _results

    from gnt.io import read_jsonl, write_jsonl
    from gnt.judge.apply import judge_results
    from gnt.judge.llm_judge import JudgeCache, JudgeSettings, LLMJudge

    out = _results(tmp_path)
    folder = ResultsFolder.on_disk(out)
    cache = out / "cache" / "judgments.jsonl"

    def run() -> dict:
        judge = LLMJudge(_backend(), JudgeSettings(judge_retries=1), JudgeCache(cache))
        return judge_results(folder, ["base"], llm=judge, entries=_entries())["base"]

    assert run()["n_judged"] == 6
    write_jsonl(cache, [{**line, "label": 123} if line.get("label") else line for line in read_jsonl(cache)])
    block = run()
    assert block["n_judged"] == 0 and block["n_rejected"] == 6
    metrics, _ = folder.model("base").metrics()
    assert metrics is not None and metrics["overall"]["gnt_accuracy"]["all"]["n"] == 1  # the extraction error only


def test_a_run_killed_during_its_wandb_logging_logs_on_the_next_run(tmp_path: Path) -> None:
    from gnt.report.build import build_report
    from gnt.report.collect import collect
    from gnt.report.config import ReportConfig
    from gnt.report.step import STEP as REPORT_STEP
    from gnt.report.wandb_log import LEDGER, unlogged

    run = make_run(tmp_path, "sft", [4])
    out = make_results(tmp_path / "eval", run_dir=run, steps=(4,), rows_per_set=2, extras=False)
    config = ReportConfig(wandb=True, wandb_mode="offline")
    build_report(out, config)  # the report is written; the W&B logging after it never happened
    folder = ResultsFolder(out, ("base", "sft/checkpoint-4"))
    assert unlogged(collect(out), run) == ["base", "sft/checkpoint-4"]
    assert REPORT_STEP.complete(config, folder) is None, "the logging still owed makes the step run again"
    assert REPORT_STEP.complete(ReportConfig(), folder) is not None  # without W&B the report alone is the step
    from gnt.io import hash_json
    from gnt.report.wandb_log import eval_metrics

    results = collect(out)
    write_json(run / LEDGER, {"logged": [{"model": m.name, "hash": hash_json(eval_metrics(results, m))}
                                         for m in results.models]})
    assert REPORT_STEP.complete(config, folder) is not None


def test_two_reports_into_one_folder_at_once_do_not_break_each_other(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A second build that runs while the first draws its figures (two evaluations or two reports into one
    folder) used to delete the first one's figures under it (ENOENT, exit 1): each build now stages its own."""
    from gnt.report import document
    from gnt.report.build import build_report

    out = make_results(tmp_path / "eval", steps=(4,), rows_per_set=2)
    draw = document.all_figures
    nested: list[Path] = []
    other_started: list[bool] = []

    def draw_while_another_builds(results, directory):
        drawn = draw(results, directory)
        if not other_started:
            other_started.append(True)
            nested.append(build_report(out))  # the other writer runs to its end meanwhile
        return drawn

    monkeypatch.setattr(document, "all_figures", draw_while_another_builds)
    report = build_report(out)
    assert nested and report.is_file() and (report.parent / "report.html").is_file()
    for line in report.read_text(encoding="utf-8").splitlines():
        if line.startswith("![") and "](" in line:
            assert (report.parent / line.split("](", 1)[1].rstrip(")")).is_file(), line
    assert not list(report.parent.glob(".build-*")), "no staging folder left behind"


def test_an_adapter_retrained_in_place_is_evaluated_again(tmp_path: Path, tiny_model_dir: Path,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    """Results are of the weights they were computed from: an adapter folder overwritten by a new training run
    keeps its name, so a grid that looked at names only would serve the old adapter's results as the new one's."""
    from _eval_helpers import make_checkpoint
    from test_report_producers import _backend

    from gnt.evaluation.discovery import adapter_name
    from gnt.evaluation.sweep import run_sweep
    from gnt.generation.identity import adapter_weights_hash

    adapter, out = make_checkpoint(tiny_model_dir, tmp_path / "adapter", seed=1), tmp_path / "eval"
    name = adapter_name(adapter)

    def config():
        return load_eval_config(None, GRID, model=str(tiny_model_dir), mgente=str(SAMPLE_DIR), out_dir=str(out),
                                adapters=[str(adapter)], include_base="false")

    def complete() -> str | None:
        return GRID_STEP.complete(config(), ResultsFolder(out, (name,)))

    def recorded_hash() -> str:
        return read_json(out / name / "record.json")["model"]["adapter"]["weights_hash"]

    run_sweep(config(), backend_factory=lambda c, b, a: _backend())
    first = adapter_weights_hash(adapter)
    assert recorded_hash() == first and complete() is not None
    make_checkpoint(tiny_model_dir, adapter, seed=2)  # the same folder, new weights
    second = adapter_weights_hash(adapter)
    assert second != first
    with caplog.at_level(logging.WARNING):
        assert complete() is None, "results of the old weights are never read as the new adapter's"
    assert f"its results are of adapter weights {first}, {adapter.resolve()} holds {second} now" in caplog.text
    run_sweep(config(), backend_factory=lambda c, b, a: _backend())
    assert recorded_hash() == second and complete() is not None


def test_a_local_base_model_replaced_in_place_is_evaluated_again(tiny_model_dir: Path, tmp_path: Path,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    """A base model folder overwritten under the same path (a re-export, a new snapshot) no longer vouches for the
    results computed from the old files; an untouched one keeps them, and so does a record of a hub id."""
    import shutil

    from gnt.evaluation.step import base_changed

    base = Path(shutil.copytree(tiny_model_dir, tmp_path / "base-model"))
    out = tmp_path / "eval"
    sweep(out, base)
    assert grid_complete(out, base) is not None, "untouched: complete"
    record = read_json(out / "base" / "record.json")
    assert str(record["base_identity"]).startswith("base-model@")
    config = read_json(base / "config.json")
    write_json(base / "config.json", {**config, "max_position_embeddings": config["max_position_embeddings"] * 2})
    with caplog.at_level(logging.WARNING):
        assert grid_complete(out, base) is None
    assert "its results are of base model base-model@" in caplog.text and "evaluated again" in caplog.text
    sweep(out, base)
    assert grid_complete(out, base) is not None, "evaluated against the new files: complete again"
    assert base_changed({"base_identity": "Qwen/Qwen2.5-0.5B@main"}, "Qwen/Qwen2.5-0.5B", {}) is None
    assert base_changed({}, str(base), {}) is None, "a record from before the identity was kept is not checked"
