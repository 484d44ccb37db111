"""Reliability: bad inputs and faults end in one clear ``error:`` line and a non-zero exit before any work where
that can be known, nothing is silently wrong, nothing is overwritten and no secret is stored.

One test (or a few) per failure case; the numbers in the comments are the cases of the README's Reliability
section. Each runs in-process on small fixtures.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def _one_error_line(err: str) -> str:
    """The last line of stderr, checked to be an ``error:`` line with no traceback before it."""
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert lines and lines[-1].startswith("error: "), err
    return lines[-1]


# ------------------------------------------------------------------------------------------------ judge
def _judge_results(tmp_path: Path) -> Path:
    from test_judge_apply import GENDERED_WORDS, _results

    from gnt.io import read_jsonl, write_jsonl

    out = _results(tmp_path)
    records = read_jsonl(out / "base" / "generations.jsonl")
    for record in records:
        record["gendered_words"] = list(GENDERED_WORDS.get(record["id"], ()))
    write_jsonl(out / "base" / "generations.jsonl", records)
    return out


def test_a_missing_or_unreadable_validation_report_is_one_error_before_judging(tmp_path: Path, capsys) -> None:
    from gnt.cli.judge import main

    out = _judge_results(tmp_path)
    assert main([str(out), "judge=lexical", "models=base", f"validation={tmp_path / 'nonexist.json'}"]) == 2
    assert "nonexist.json: no such file" in _one_error_line(capsys.readouterr().err)
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    assert main([str(out), "judge=lexical", "models=base", f"validation={tmp_path / 'bad.json'}"]) == 2
    assert "not a readable JSON report" in _one_error_line(capsys.readouterr().err)
    assert not (out / "base" / "judgments-lexical.jsonl").exists()  # nothing judged


def test_a_negative_n_exemplars_is_refused(capsys) -> None:
    from gnt.cli.judge import main
    from gnt.judge.prompts import load_prompt

    assert main(["check", "n_exemplars=-1"]) == 2
    assert "n_exemplars must be >= 0" in _one_error_line(capsys.readouterr().err)
    with pytest.raises(ValueError, match="n_exemplars"):
        load_prompt("it", "CROSS-L", n_exemplars=-1)
    assert len(load_prompt("it", "CROSS-L", n_exemplars=2).exemplars) == 2


# ------------------------------------------------------------------------------------------------ data build
def _build(argv: list[str]) -> int:
    from gnt.cli.build import main

    return main([*argv, "progress=false"])


def test_one_tsv_asked_for_two_languages_is_an_error(tmp_path: Path, capsys) -> None:
    from gnt.paths import SAMPLE_DIR

    tsv = SAMPLE_DIR / "en-it.tsv"
    assert _build([f"mgente={tsv}", "langs=it,es", f"out_dir={tmp_path / 'd'}", "templated_pairs=0"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "holds en-it rows only, and langs also asks for es" in line and "langs=it" in line
    assert not (tmp_path / "d").exists()
    # one TSV with the default languages is that file's language, as documented
    assert _build([f"mgente={tsv}", f"out_dir={tmp_path / 'd'}", "templated_pairs=0"]) == 0


def test_a_common_set_row_that_names_no_entry_is_an_error(tmp_path: Path, capsys) -> None:
    from gnt.paths import SAMPLE_DIR

    data = tmp_path / "mgente"
    (data / "common").mkdir(parents=True)
    (data / "en-it.tsv").write_bytes((SAMPLE_DIR / "en-it.tsv").read_bytes())
    lines = (SAMPLE_DIR / "common" / "en-it.tsv").read_text(encoding="utf-8").splitlines()
    cells = lines[1].split("\t")
    cells[0] = "no-such-id"
    lines.append("\t".join(cells))
    (data / "common" / "en-it.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert _build([f"mgente={data}", "langs=it", f"out_dir={tmp_path / 'd'}", "templated_pairs=0"]) == 2
    err = capsys.readouterr().err
    assert f"common/en-it.tsv:{len(lines)}:ID: ID 'no-such-id' is no row of en-it.tsv" in err and "Traceback" not in err
    assert not (tmp_path / "d").exists()


def test_more_templated_pairs_than_exist_is_said_and_recorded(tmp_path: Path, capsys) -> None:
    from gnt.io import read_json

    out = tmp_path / "d"
    assert _build(["langs=it", f"out_dir={out}", "templated_pairs=99999999"]) == 0
    manifest = read_json(out / "manifest.json")
    written = manifest["counts"]["templated_pairs"]["written"]
    assert 0 < written < 99999999 and manifest["counts"]["templated_pairs"]["asked"] == 99999999
    assert f"note: templated_pairs=99999999 asks for more pairs than the templates give for it: all {written} " \
           "written" in capsys.readouterr().out
    assert manifest["notes"]


def test_a_killed_build_leaves_nothing_a_later_build_keeps(tmp_path: Path) -> None:
    import os

    from gnt.io import atomic_directory

    target = tmp_path / "data"
    with atomic_directory(target) as tmp:
        (tmp / "a").write_text("first", encoding="utf-8")
    stale = tmp_path / ".data.tmp-abc123"  # a build killed while writing
    (stale / "sft").mkdir(parents=True)
    with atomic_directory(target) as tmp:
        (tmp / "a").write_text("second", encoding="utf-8")
    assert not stale.exists() and (target / "a").read_text() == "second"
    # killed between its two renames: the previous output is put back, not lost
    os.replace(target, tmp_path / ".data.old-99999")
    with atomic_directory(tmp_path / "other") as tmp:
        pass
    assert not target.exists()  # another target's writer leaves it alone
    with atomic_directory(target) as tmp:
        assert (target / "a").read_text() == "second"
        (tmp / "a").write_text("third", encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "other"]


# ------------------------------------------------------------------------------------------------ evaluation
EVAL_TINY = str(Path(__file__).resolve().parent.parent / "recipes" / "eval-tiny.yaml")


def test_a_shard_that_did_not_merge_does_not_name_a_summary_that_is_not_there(tmp_path: Path, monkeypatch,
                                                                            capsys) -> None:
    from gnt.cli.evaluate import main
    from gnt.pipeline import Pipeline

    monkeypatch.setattr(Pipeline, "run", lambda self, say=print: [])  # the worker's share: no summary merged yet
    out = tmp_path / "eval"
    assert main([EVAL_TINY, "steps=grid", "model=gnt:tiny", f"out_dir={out}", "shard=0/2", "progress=false"]) == 0
    printed = capsys.readouterr().out
    assert "results:" not in printed and f"shard 0/2 done; {out / 'summary.json'} is written when the last" in printed
    out.mkdir()
    monkeypatch.setattr(Pipeline, "run", lambda self, say=print: (out / "summary.json").write_text("{}"))
    assert main([EVAL_TINY, "steps=grid", "model=gnt:tiny", f"out_dir={out}", "shard=1/2", "progress=false"]) == 0
    assert f"results: {out / 'summary.json'}" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------------ secrets
def test_an_api_key_echoed_in_an_error_body_is_never_stored(tmp_path: Path, monkeypatch) -> None:
    from http_server import OpenAITestServer, Reply
    from test_judge_http import ITEMS

    from gnt.generation.http_backend import HTTPBackend
    from gnt.judge.llm_judge import JudgeCache, JudgeSettings, LLMJudge
    from gnt.redact import redact

    secret = "sk-test-0123456789abcdefSECRET"
    monkeypatch.setenv("GNT_TEST_JUDGE_KEY", secret)
    holder: dict = {}

    def echo_headers(body: dict) -> Reply:  # a server that quotes the request's headers in its 401 body
        return Reply(status=401, body={"error": {"message": "bad key", "headers": holder["server"].requests[-1]["headers"],
                                                 "hint": f"api_key={secret[::-1]}"}})

    with OpenAITestServer(responder=echo_headers) as server:
        holder["server"] = server
        backend = HTTPBackend(server.url, "judge-model", api_key_env="GNT_TEST_JUDGE_KEY", concurrency=1,
                              timeout_s=2.0, max_retries=0, backoff_s=0.01)
        cache = tmp_path / "judgments.jsonl"
        (result,) = LLMJudge(backend, JudgeSettings(judge_retries=2), JudgeCache(cache)).judge(ITEMS[:1])
        backend.close()
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {secret}"  # it was sent, and echoed
    assert result.error == "judge_error" and result.error_kind == "backend_error" and "HTTP 401" in result.error_detail
    stored = cache.read_text(encoding="utf-8")
    assert secret not in stored and secret[::-1] not in stored and "[REDACTED]" in stored
    assert secret not in str(result.to_record())
    assert redact("Authorization: Bearer abc.def-ghi tail") == "Authorization: Bearer [REDACTED] tail"
    assert redact("plain text about a bear") == "plain text about a bear"


# ------------------------------------------------------------------------------------------------ training
TRAIN_RECIPES = Path(__file__).resolve().parent.parent / "recipes"


def _train(stage: str, argv: list[str]) -> int:
    from gnt.cli.train import DPO, SFT

    return (SFT if stage == "sft" else DPO).main(argv)


def _sft_args(tiny_model_dir: Path, data: Path, out: Path, *extra: str) -> list[str]:
    from _training_helpers import tiny_overrides

    return [str(TRAIN_RECIPES / "tiny.yaml"), *tiny_overrides(tiny_model_dir, data, out, "report_to=none", *extra)]


@pytest.mark.parametrize("value", ["per_device_train_batch_size=0", "learning_rate=-1", "lora_r=-8",
                                   "report_to=bogus", "lora_target_modules=5", "lora_dropout=1.5", "save_steps=0"])
def test_a_training_value_the_trainer_would_refuse_is_one_error_before_anything_is_written(
        tmp_path: Path, tiny_model_dir: Path, training_data_dir: Path, capsys, value: str) -> None:
    out = tmp_path / "sft"
    argv = [*_sft_args(tiny_model_dir, training_data_dir, out), value]
    assert _train("sft", argv) == 2
    assert value.split("=")[0] in _one_error_line(capsys.readouterr().err)
    assert not (out / "gnt_run.json").exists()
    assert _train("sft", [*argv, "--dry-run"]) == 2  # the dry run refuses it too
    assert value.split("=")[0] in _one_error_line(capsys.readouterr().err)


def test_a_trainer_that_refuses_late_leaves_the_folder_as_it_was(tmp_path: Path, tiny_model_dir: Path,
                                                                 training_data_dir: Path, capsys) -> None:
    out = tmp_path / "sft"
    assert _train("sft", [*_sft_args(tiny_model_dir, training_data_dir, out), "lora_target_modules=no_such_proj"]) == 2
    _one_error_line(capsys.readouterr().err)
    assert not (out / "gnt_run.json").exists()  # no record of a run that never trained (was status: running)


def test_dpo_into_an_existing_file_is_one_error_line(tmp_path: Path, training_data_dir: Path, capsys) -> None:
    target = tmp_path / "a-file"
    target.write_text("keep\n", encoding="utf-8")
    argv = [str(TRAIN_RECIPES / "tiny-dpo.yaml"), f"data_dir={training_data_dir}", f"sft_adapter={tmp_path}",
            f"output_dir={target}", "report_to=none"]
    assert _train("dpo", argv) == 2
    assert "is a file, not a folder" in _one_error_line(capsys.readouterr().err)
    assert target.read_text(encoding="utf-8") == "keep\n"


def test_a_finished_run_rerun_is_a_no_op_and_a_higher_max_steps_extends_it(
        tmp_path: Path, tiny_model_dir: Path, training_data_dir: Path, capsys) -> None:
    from gnt.io import read_json, sha256_file

    out = tmp_path / "sft"
    argv = _sft_args(tiny_model_dir, training_data_dir, out, "max_steps=2", "save_steps=1")
    assert _train("sft", argv) == 0
    capsys.readouterr()
    adapter = sha256_file(out / "adapter_model.safetensors")
    assert _train("sft", argv) == 0
    printed = capsys.readouterr().err
    assert "is finished (step 2; this recipe asks max_steps=2): nothing to train" in printed
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]
    assert sha256_file(out / "adapter_model.safetensors") == adapter
    assert read_json(out / "gnt_run.json")["global_step"] == 2
    assert _train("sft", [*argv, "max_steps=3"]) == 0  # extending is an explicit choice
    assert "checkpoint-3" in {p.name for p in out.glob("checkpoint-*")}
    record = read_json(out / "gnt_run.json")
    assert record["global_step"] == 3 and record["status"] == "complete"
    assert record["resumed_from"][-1]["checkpoint"].endswith("checkpoint-2")


def test_a_second_run_into_a_held_output_dir_refuses_naming_the_holder(
        tmp_path: Path, tiny_model_dir: Path, training_data_dir: Path, capsys) -> None:
    import os

    from gnt.training.run_lock import hold_run_folder

    out = tmp_path / "sft"
    lock = hold_run_folder(out, "sft")  # the first run, still training
    try:
        assert _train("sft", _sft_args(tiny_model_dir, training_data_dir, out)) == 2
        line = _one_error_line(capsys.readouterr().err)
        assert f"output_dir {out} is in use by another training run (SFT run, pid {os.getpid()} on" in line
        assert not (out / "gnt_run.json").exists() and not list(out.glob("checkpoint-*"))
    finally:
        lock.release()
    hold_run_folder(out, "sft").release()  # free again once the holder is gone


def test_disk_errors_are_one_error_line_in_every_command(tmp_path: Path, monkeypatch, capsys, tiny_model_dir: Path,
                                                         training_data_dir: Path) -> None:
    import errno

    import gnt.data.build as build_module
    import gnt.training.runner as runner
    from gnt.cli import COMMANDS
    from gnt.cli.command import Command

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x"))

    monkeypatch.setattr(build_module, "write_json", full)
    assert _build(["langs=it", f"out_dir={tmp_path / 'd'}", "templated_pairs=0"]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert "[Errno 28] No space left on device" in line and "the disk is full" in line
    monkeypatch.setattr(runner, "train_run", full)
    assert _train("sft", _sft_args(tiny_model_dir, training_data_dir, tmp_path / "sft")) == 1
    assert "No space left on device" in _one_error_line(capsys.readouterr().err)
    def read_only(call) -> None:
        raise OSError(errno.EROFS, "Read-only file system", "/ro")

    for name in ("report", "judge", "comet", "attribute", "templated", "watch"):  # every command's one handler
        command = Command(name, COMMANDS[name].script, "", settings=lambda: (), run=read_only, recipe=None,
                          exits=COMMANDS[name].exits)
        assert command.main([]) == 1
        assert "Read-only file system: '/ro' (that file system is read-only" in _one_error_line(capsys.readouterr().err)


def test_wandb_with_a_key_but_no_network_goes_offline_at_once_or_fails_when_online_was_asked(
        tmp_path: Path, monkeypatch, capsys) -> None:
    from _training_helpers import free_port

    from gnt.training.config import TrainingError
    from gnt.training.wandb_setup import finish_run, plan_wandb, start_run

    for name in ("WANDB_MODE", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("WANDB_API_KEY", "k" * 40)
    monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens: no network
    plan = plan_wandb(project="gnt-test", entity=None, group=None, name="r", tags=[], output_dir=tmp_path / "run",
                      previous_run_id=None)
    assert plan.mode == "online"
    record = start_run(plan, {"gnt": {}})
    try:
        assert record["mode"] == "offline" and record["run_dir"]
        assert "cannot be reached" in capsys.readouterr().err
    finally:
        finish_run()
    monkeypatch.setenv("WANDB_MODE", "online")  # asked for explicitly: fail at once, with the reason
    explicit = plan_wandb(project="gnt-test", entity=None, group=None, name="r", tags=[],
                          output_dir=tmp_path / "run2", previous_run_id=None)
    with pytest.raises(TrainingError, match="WANDB_MODE=online is set but 127.0.0.1:.* cannot be reached"):
        start_run(explicit, {})


@pytest.mark.parametrize(("words", "expected"), [
    (["configs=None"], "attribution.cells: it/G+S/4 not in this evaluation's grid (its cells: it/None/4)"),
    (["shots=0"], "attribution.cells: it/G+S/4 not in this evaluation's grid (its cells: it/G+S/0, it/None/0)"),
    (["langs=es"], "attribution.cells: it/G+S/4 not in this evaluation's grid"),
    (["attribution.cells=it-None-4"], "attribution.cells: 'it-None-4' is not a grid cell"),
    (["attribution.models=nosuch"], "attribution.models: no model nosuch in this evaluation (models: base, sft/"),
    (["steps=attribution"], "steps attribution read the grid sweep's results, and"),
    (["templated.pairs_per_lang=-1"], "pairs_per_lang must be positive"),
    (["judge.recipe=/nonexist/judge.yaml"], "recipe not found: /nonexist/judge.yaml"),
])
def test_steps_that_do_not_fit_the_grid_fail_before_the_first_generation(
        tmp_path: Path, monkeypatch, capsys, eval_tiny_run: Path, words: list[str],
        expected: str) -> None:
    from gnt.cli.evaluate import main
    from gnt.pipeline import Pipeline

    def never(self, say=print):
        raise AssertionError("a step ran")

    monkeypatch.setattr(Pipeline, "run", never)
    out = tmp_path / "eval"
    argv = [EVAL_TINY, f"runs={eval_tiny_run}",
            f"out_dir={out}", "rows_per_lang=4", "progress=false", *words]
    if not any(word.startswith("langs=") for word in words):
        argv.append("langs=it")  # a list key given twice collects both values
    assert main(argv) == 2
    assert expected in _one_error_line(capsys.readouterr().err)
    assert not out.exists()


def test_a_missing_xcomet_environment_is_one_error_line_before_any_work(tmp_path: Path, monkeypatch, capsys,
                                                                       eval_tiny_run: Path) -> None:
    from _report_fixtures import make_results

    from gnt.cli.comet import main as comet
    from gnt.cli.evaluate import main as evaluate
    from gnt.pipeline import Pipeline

    monkeypatch.setenv("GNT_COMET_VENV", str(tmp_path / "nonexist"))
    results = make_results(tmp_path / "results", steps=(2,), langs=("it",), rows_per_set=2, extras=False)
    assert comet([str(results), "xcomet_auto_install=false"]) == 1
    assert f"the xCOMET environment {tmp_path / 'nonexist'} is not built" in _one_error_line(capsys.readouterr().err)
    assert not list(results.rglob("xcomet*"))
    unwritable = tmp_path / "a-file" / "venv"  # cannot be built there: its parent is a file
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    monkeypatch.setenv("GNT_COMET_VENV", str(unwritable))
    assert comet([str(results)]) == 1
    assert "cannot be built there" in _one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "nonexist").exists()

    def never(self, say=print):
        raise AssertionError("a step ran")

    monkeypatch.setattr(Pipeline, "run", never)  # the pipeline's xcomet step: refused before the grid
    monkeypatch.setenv("GNT_COMET_VENV", str(tmp_path / "nonexist"))
    argv = [EVAL_TINY, f"runs={eval_tiny_run}", f"out_dir={tmp_path / 'eval'}", "langs=it", "steps=grid,xcomet",
            "xcomet.xcomet_auto_install=false"]
    assert evaluate(argv) == 1
    assert "is not built" in _one_error_line(capsys.readouterr().err)


# ------------------------------------------------------------------------------------------------ attribution
@pytest.mark.parametrize(("words", "expected"), [
    (["targets=S_X"], "targets: unknown 'S_X'; valid: S_L, S_T"),
    (["sets=Set-X"], "sets: unknown 'Set-X'; valid: Set-G, Set-N"),
    (["balance_by=judged"], "balance_by=judged needs the judge's judgments"),
])
def test_an_attribution_that_would_select_nothing_is_refused(tmp_path: Path, capsys, words: list[str],
                                                             expected: str) -> None:
    from _report_fixtures import make_results

    from gnt.cli.attribute import main

    results = make_results(tmp_path / "results", steps=(2,), langs=("it",), rows_per_set=2, extras=False, judge=False)
    model = results / "sft" / "checkpoint-2"
    assert main([str(model), "cells=it/G+S/4", *words]) == 2
    assert expected in _one_error_line(capsys.readouterr().err)
    assert not (model / "attribution").exists()


# ------------------------------------------------------------------------------------------------ install noise
def test_the_harmless_bitsandbytes_kernels_notice_is_silenced_and_nothing_else(caplog) -> None:
    import logging

    import gnt  # noqa: F401 - the filter is installed when gnt is imported

    logger = logging.getLogger("bitsandbytes.backends.cpu.ops")
    with caplog.at_level(logging.WARNING, logger=logger.name):
        logger.warning("Failed to load CPU gemm_4bit_forward from kernels-community: %s. Please make sure you "
                       "already `pip install kernels` and the kernels >= 0.11.1", "No module named 'kernels'")
        logger.warning("another bitsandbytes warning")
    assert [r.getMessage() for r in caplog.records] == ["another bitsandbytes warning"]


def test_the_package_metadata_uses_the_spdx_license_string() -> None:
    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == "Apache-2.0"  # a table is deprecated (setuptools warned three times)
    assert any(r.startswith("setuptools>=77") for r in project["build-system"]["requires"])


def test_a_shard_worker_is_not_refused_for_steps_only_the_merge_runs(tmp_path: Path, monkeypatch, capsys,
                                                                    eval_tiny_run: Path) -> None:
    from gnt.cli.evaluate import main
    from gnt.pipeline import Pipeline

    monkeypatch.setattr(Pipeline, "run", lambda self, say=print: [])
    argv = [EVAL_TINY, f"runs={eval_tiny_run}", f"out_dir={tmp_path / 'eval'}", "langs=it", "configs=None",
            "progress=false"]
    assert main([*argv, "shard=0/2"]) == 0  # the worker generates its share of the grid; attribution is not its
    assert main(argv) == 2  # the whole evaluation would reach the attribution step: refused
    assert "attribution.cells: it/G+S/4 not in" in _one_error_line(capsys.readouterr().err)
