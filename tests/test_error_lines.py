"""The one top-level handler (gnt.cli.command.Command.main): unreadable recipes, damaged files and full disks end
in one ``error:`` line that names the file and says what to do, never in a traceback; a damaged done marker in the
checkpoint queue is evaluated again, not read as done."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _error_line import one_error_line

RECIPES = Path(__file__).resolve().parent.parent / "recipes"


# ------------------------------------------------------------------------------------------------ recipes
@pytest.mark.parametrize(("name", "content", "expected"), [
    ("latin1.yaml", "learning_rate: 1e-4\nrun_name: caf\xe9\n".encode("latin-1"), "latin1.yaml:2: not UTF-8 text"),
    ("binary.yaml", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary.yaml:1: not UTF-8 text (byte 0x89)"),
    ("nul.yaml", b"learning_rate: 1e-4\x00\x00", "nul.yaml:1: a NUL byte"),
    ("deep.yaml", ("a: " + "[" * 50000 + "]" * 50000 + "\n").encode(), "deep.yaml: nested too deeply to read"),
    ("deep-map.yaml", ("a: " + "{b: " * 50000 + "1" + "}" * 50000 + "\n").encode(), "nested too deeply"),
])
def test_a_recipe_that_is_not_text_or_nested_too_deeply_is_one_error_line(tmp_path: Path, capsys, name: str,
                                                                          content: bytes, expected: str) -> None:
    from gnt.cli.evaluate import main

    recipe = tmp_path / name
    recipe.write_bytes(content)
    assert main([str(recipe), f"out_dir={tmp_path / 'out'}"]) == 2
    assert expected in one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------ damaged files
def test_a_damaged_cached_model_says_which_folder_to_delete(tmp_path: Path, monkeypatch, capsys,
                                                            tiny_model_dir: Path) -> None:
    from gnt.cli.evaluate import main

    cached = tmp_path / "cache" / "models" / tiny_model_dir.name
    shutil.copytree(tiny_model_dir, cached)
    tokenizer = cached / "tokenizer.json"
    tokenizer.write_bytes(tokenizer.read_bytes()[:1000])  # truncated
    monkeypatch.setenv("GNT_CACHE_DIR", str(tmp_path / "cache"))
    argv = [str(RECIPES / "eval-tiny.yaml"), "steps=grid", "model=gnt:tiny", f"out_dir={tmp_path / 'eval'}",
            "langs=it", "rows_per_lang=2", "progress=false"]
    assert main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"the cached model {cached} is damaged (tokenizer.json: not valid JSON" in line
    assert f"delete that folder (rm -r {cached}) and run the command again" in line and "retry" not in line


def test_a_garbled_data_manifest_is_one_error_line_saying_to_rebuild(tmp_path: Path, capsys, tiny_model_dir: Path,
                                                                      training_data_dir: Path) -> None:
    from _training_helpers import tiny_overrides

    from gnt.cli.train import SFT

    data = tmp_path / "data"
    shutil.copytree(training_data_dir, data)
    (data / "manifest.json").write_text('{"format": "gnt-align/da', encoding="utf-8")
    out = tmp_path / "sft"
    argv = [str(RECIPES / "tiny.yaml"), *tiny_overrides(tiny_model_dir, data, out, "report_to=none")]
    assert SFT.main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"{data / 'manifest.json'} is damaged (not valid JSON: " in line
    assert f"rebuild the data with `python data/build.py out_dir={data}`" in line
    assert not (out / "gnt_run.json").exists()


def test_a_data_file_cut_mid_line_is_one_error_line(tmp_path: Path, capsys, eval_tiny_run: Path,
                                                    eval_data_dir: Path) -> None:
    from gnt.cli.evaluate import main

    data = tmp_path / "data"
    shutil.copytree(eval_data_dir, data)
    rows = data / "eval" / "mgente_test.jsonl"
    text = rows.read_text(encoding="utf-8")
    rows.write_text(text[: len(text) // 2], encoding="utf-8")  # cut in the middle of a line
    run = tmp_path / "runs" / "sft"
    shutil.copytree(eval_tiny_run, run)
    for record_path in run.rglob("gnt_run.json"):
        record = json.loads(record_path.read_text(encoding="utf-8"))
        record_path.write_text(json.dumps({**record, "data_dir": str(data)}), encoding="utf-8")
    argv = [str(RECIPES / "eval-tiny.yaml"), "steps=grid", f"runs={run}", f"out_dir={tmp_path / 'eval'}",
            "langs=it", "progress=false"]
    assert main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"{rows} is damaged (line " in line and "is not valid JSON" in line and "(cut short?)" in line


def test_a_garbled_wandb_ledger_is_one_error_line(tmp_path: Path, capsys) -> None:
    from _report_fixtures import make_results

    from gnt.cli.report import main

    run = tmp_path / "runs" / "sft"
    run.mkdir(parents=True)
    (run / "gnt_run.json").write_text(json.dumps({"stage": "sft", "wandb": {"run_id": "abc123", "project": "p",
                                                                           "mode": "offline"}}), encoding="utf-8")
    (run / "wandb_eval_log.json").write_text('{"logged": [{"model": "sft/check', encoding="utf-8")
    results = make_results(tmp_path / "results", run_dir=run, steps=(2,), langs=("it",), rows_per_set=2,
                           extras=False)
    assert main([str(results), f"wandb_run={run}", "wandb_mode=offline"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"{run / 'wandb_eval_log.json'} is damaged (not valid JSON: " in line and "delete it" in line


def test_a_garbled_done_marker_in_the_queue_is_evaluated_again(tmp_path: Path, caplog) -> None:
    from gnt.checkpoint_queue.watch import failed_items, pending_items, watch

    checkpoint = tmp_path / "queue" / "run" / "checkpoint-4"
    checkpoint.mkdir(parents=True)
    done = checkpoint.with_name("checkpoint-4.done.json")
    done.write_text('{"status": "o', encoding="utf-8")  # cut short while written
    assert failed_items(tmp_path / "queue") == []
    assert [item.name for item in pending_items(tmp_path / "queue")] == ["run/checkpoint-4"]
    assert "is damaged (not a done record): run/checkpoint-4 is evaluated again" in caplog.text
    assert checkpoint.with_name("checkpoint-4.damaged.json").is_file()
    records = watch(tmp_path / "queue", lambda item: {"evaluated": item.name}, once=True)
    assert [r["status"] for r in records] == ["ok"] and json.loads(done.read_text())["status"] == "ok"


# ------------------------------------------------------------------------------------------------ full disks
def test_a_full_disk_while_building_a_cached_model_names_the_cache_and_what_to_free(tmp_path: Path, capsys) -> None:
    from safetensors import SafetensorError

    from gnt.cli.command import Command
    from gnt.models.cache import build_cached

    def full(folder: Path) -> None:
        (folder / "config.json").write_text("{}", encoding="utf-8")
        raise SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No '
                              'space left on device" })')

    cache = tmp_path / "cache" / "models"
    command = Command("models", "gnt models", "", settings=lambda: (), recipe=None,
                      run=lambda call: build_cached(cache / "tiny-abc", full))
    assert command.main([]) == 1
    line = one_error_line(capsys.readouterr().err)
    assert f"No space left on device while building the model tiny-abc into the cache: '{cache}'" in line
    assert "GiB free on the disk of" in line and "run the same command again" in line
    assert list(cache.iterdir()) == []  # no half-built folder left behind
