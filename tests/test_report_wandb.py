"""W&B tracking of evaluations: the offline run reader, and eval metrics logged into the training run's W&B run at
the checkpoints' global steps (offline, no API key), read back from the binary ``.wandb`` files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _report_fixtures import make_results, make_run, metrics_of

from gnt.io import read_json

wandb = pytest.importorskip("wandb")


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)


def fake_training_run(run_dir: Path, run_id: str, steps: int) -> None:
    """An offline training run as transformers' W&B callback writes it: train/* against train/global_step."""
    run = wandb.init(project="gnt-test", id=run_id, dir=str(run_dir), mode="offline", reinit="create_new")
    run.define_metric("train/global_step")
    run.define_metric("*", step_metric="train/global_step", step_sync=True)
    for step in range(1, steps + 1):
        run.log({"train/loss": 1.0 / step, "train/global_step": step, "train/text": "x" * 40})
    run.finish()


def test_offline_reader_reads_history_across_blocks_and_survives_truncation(tmp_path: Path) -> None:
    from gnt.report.wandb_offline import offline_run_dirs, read_offline_run

    run = wandb.init(project="gnt-test", id="reader01", dir=str(tmp_path), mode="offline", reinit="create_new")
    for step in range(600):  # > 32 KiB: records cross block boundaries
        run.log({"a": step, "pad": "y" * 80})
    run.log({"big": "z" * 70000, "nested": {"x": 1, "y": "two"}})  # one record over several blocks
    run.summary["final"] = 3.5
    run.finish()
    folders = offline_run_dirs(tmp_path, "reader01")
    assert len(folders) == 1
    decoded = read_offline_run(folders[0], wait_complete_s=30)
    assert decoded.run_id == "reader01" and decoded.project == "gnt-test" and decoded.corrupt_chunks == 0
    assert [v for _, v in decoded.values("a")] == list(range(600))
    assert decoded.history[-1]["big"] == "z" * 70000 and decoded.last_step == 600
    assert decoded.history[-1]["nested"] == {"x": 1, "y": "two"}
    assert decoded.summary["final"] == 3.5
    assert decoded.path.stat().st_size > 3 * 32768
    # a writer killed mid-record: the complete records before it are still read
    data = decoded.path.read_bytes()
    cut = tmp_path / "cut" / decoded.path.name
    cut.parent.mkdir()
    cut.write_bytes(data[: 2 * 32768 + 100])
    partial = read_offline_run(cut)
    assert 0 < len(partial.history) < 601
    assert [v for _, v in partial.values("a")] == list(range(len(partial.values("a"))))
    bad = tmp_path / "bad.wandb"
    bad.write_bytes(b"not a wandb file")
    with pytest.raises(ValueError, match="not a W&B run file"):
        read_offline_run(bad)


def test_eval_metrics_land_at_checkpoint_steps_of_the_training_run(tmp_path: Path) -> None:
    from gnt.report.wandb_log import log_eval_to_wandb
    from gnt.report.wandb_offline import offline_run_dirs, read_offline_run

    run_dir = make_run(tmp_path, "sft", [4, 8], run_id="evalrun1")
    fake_training_run(run_dir, "evalrun1", steps=8)
    results = make_results(tmp_path / "eval", run_dir=run_dir, steps=(4, 8), extras=False, langs=("it", "de"),
                           rows_per_set=4)
    # a checkpoint of another run in the same results folder must not be logged into this run
    other = read_json(results / "sft/checkpoint-4/record.json")
    assert other["model"]["adapter"]["path"].startswith(str(run_dir))

    summary = log_eval_to_wandb(results, run_dir, images=True, samples_per_cell=2)
    assert summary["mode"] == "offline" and summary["run_id"] == "evalrun1"
    assert [(e["model"], e["global_step"]) for e in summary["logged"]] == [
        ("base", 0), ("sft/checkpoint-4", 4), ("sft/checkpoint-8", 8)]

    folders = offline_run_dirs(run_dir, "evalrun1")
    assert len(folders) == 2  # the training segment and the evaluation segment, same run id
    training, evaluation = (read_offline_run(f, wait_complete_s=30) for f in folders)
    assert training.last_step == 7
    assert [row["_step"] for row in evaluation.history] == [8, 9, 10]  # continues after training, for sync --append
    assert {"name": "", "glob_name": "eval/*", "step_metric": "train/global_step"} in evaluation.metrics
    for name, step in (("base", 0), ("sft/checkpoint-4", 4), ("sft/checkpoint-8", 8)):
        metrics = metrics_of(results, name)
        assert evaluation.by("train/global_step", "eval/it/gnt_accuracy/Set-N")[step] == pytest.approx(
            metrics["languages"]["it"]["gnt_accuracy"]["Set-N"]["value"])
        assert evaluation.by("train/global_step", "eval/all/label_accuracy/Set-G")[step] == pytest.approx(
            metrics["overall"]["label_accuracy"]["Set-G"]["value"])
        assert evaluation.by("train/global_step", "eval/de/coherence/NEUTRAL")[step] == pytest.approx(
            metrics["languages"]["de"]["coherence"]["NEUTRAL"]["value"])
        assert evaluation.by("train/global_step", "eval/all/gnt_accuracy_by_gender/F")[step] == pytest.approx(
            metrics["overall"]["gnt_accuracy_by_gender"]["F"]["value"])  # logged as the catalog declares it
    # generation samples as a W&B table, plots as images (files beside the offline run)
    last = evaluation.history[-1]
    table = last["eval/samples"]
    assert table["_type"] == "table-file" and table["ncols"] == 10 and table["nrows"] > 0
    content = json.loads((folders[1] / "files" / table["path"]).read_text(encoding="utf-8"))
    assert content["columns"][:3] == ["model", "global_step", "cell"] and content["data"][0][0] == "sft/checkpoint-8"
    assert last["eval/plots/fig3_label_vs_gnt"]["_type"] == "image-file"
    assert (folders[1] / "files" / last["eval/plots/fig3_label_vs_gnt"]["path"]).is_file()

    # logging again logs nothing twice (ledger in the run folder)
    again = log_eval_to_wandb(results, run_dir, images=False)
    assert again["logged"] == [] and len(again["skipped"]) == 3
    assert len(offline_run_dirs(run_dir, "evalrun1")) == 2


def test_clear_errors_and_disabled_mode(tmp_path: Path) -> None:
    from gnt.io import write_json
    from gnt.report.wandb_log import WandbLogError, log_eval_to_wandb

    with pytest.raises(WandbLogError, match="gnt_run.json not found"):
        log_eval_to_wandb(tmp_path, tmp_path / "missing")
    write_json(tmp_path / "run" / "gnt_run.json", {"stage": "sft", "wandb": {"mode": "disabled", "run_id": None}})
    result = log_eval_to_wandb(tmp_path, tmp_path / "run")  # trained without W&B: nothing to log into, no crash
    assert result["logged"] == [] and result["mode"] == "disabled"
    write_json(tmp_path / "run" / "gnt_run.json", {"stage": "sft", "wandb": {}})
    assert "no wandb.run_id" in log_eval_to_wandb(tmp_path, tmp_path / "run", mode="offline")["skipped"][0]
    write_json(tmp_path / "run" / "gnt_run.json", {"stage": "sft", "wandb": {"run_id": "x", "mode": "disabled"}})
    assert log_eval_to_wandb(tmp_path, tmp_path / "run", mode="disabled")["skipped"] == ["W&B mode is disabled"]


def test_a_relative_wandb_dir_is_found_from_the_run_folder_not_the_cwd(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from gnt.report.wandb_log import log_eval_to_wandb
    from gnt.report.wandb_offline import offline_run_dirs

    project = tmp_path / "project"
    run_dir = make_run(project / "runs", "sft", [4], run_id="relrun01")
    record = read_json(run_dir / "gnt_run.json")
    record["wandb"]["dir"] = "runs/sft"  # as training wrote it, started from the project folder
    record["output_dir"] = "/somewhere/else/runs/sft"  # the run folder was moved since
    (run_dir / "gnt_run.json").write_text(json.dumps(record))
    fake_training_run(run_dir, "relrun01", steps=4)
    results = make_results(tmp_path / "eval", run_dir=run_dir, steps=(4,), extras=False, langs=("it",),
                           rows_per_set=2)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    summary = log_eval_to_wandb(results, run_dir, images=False)
    assert [e["model"] for e in summary["logged"]] == ["base", "sft/checkpoint-4"]
    assert len(offline_run_dirs(run_dir, "relrun01")) == 2  # the training segment and the evaluation one
    assert not any(elsewhere.rglob("*")), "nothing written under the current directory"


def test_nothing_is_recorded_as_logged_when_the_wandb_folder_is_missing(tmp_path: Path) -> None:
    from gnt.report.wandb_log import WandbLogError, log_eval_to_wandb

    run_dir = make_run(tmp_path, "sft", [4], run_id="gonerun1", wandb_dir=tmp_path / "gone")
    results = make_results(tmp_path / "eval", run_dir=run_dir, steps=(4,), extras=False, langs=("it",),
                           rows_per_set=2)
    with pytest.raises(WandbLogError, match="does not exist; nothing was logged"):
        log_eval_to_wandb(results, run_dir, images=False)
    assert not (run_dir / "wandb_eval_log.json").exists() and not (tmp_path / "gone").exists()
