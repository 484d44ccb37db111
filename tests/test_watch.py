"""Evaluation while training: the checkpoint-queue callback and the watcher.

Unit tests cover the queue protocol (atomic copy without optimizer state, claims, done markers, end marker,
timeout, failures); the integration tests run TRL's SFTTrainer on the tiny model with the callback attached and
``save_total_limit=1`` (which deletes early checkpoints), a watcher thread evaluating the queue *while* training
runs, and then the evaluation core (transformers backend) scoring the queued checkpoints, ending in a report.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from gnt.checkpoint_queue import watch as watch_module
from gnt.checkpoint_queue.callback import QueueCheckpointCallback, mark_training_done, queue_checkpoint
from gnt.checkpoint_queue.layout import END_MARKER, QUEUE_ENTRY
from gnt.checkpoint_queue.watch import (
    QueueItem,
    claim,
    command_evaluator,
    pending_items,
    queued_items,
    training_finished,
    watch,
)
from gnt.io import read_json, write_json


def fake_checkpoint(run: Path, step: int) -> Path:
    folder = run / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "adapter_model.safetensors").write_bytes(b"weights" * 10)
    (folder / "adapter_config.json").write_text("{}", encoding="utf-8")
    (folder / "optimizer.pt").write_bytes(b"x" * 1000)
    (folder / "rng_state_0.pth").write_bytes(b"r")
    (folder / "global_step4").mkdir()
    write_json(folder / "trainer_state.json", {"global_step": step})
    return folder


def test_queue_copies_the_adapter_atomically_without_optimizer_state(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "sft"
    write_json(run / "gnt_run.json", {"stage": "sft", "status": "running"})
    checkpoint = fake_checkpoint(run, 4)
    queued = queue_checkpoint(checkpoint, tmp_path / "queue", global_step=4)
    assert queued == tmp_path / "queue" / "sft" / "checkpoint-4"
    names = {p.name for p in queued.iterdir()}
    assert {"adapter_model.safetensors", "adapter_config.json", "trainer_state.json", "gnt_run.json", QUEUE_ENTRY} == names
    assert read_json(queued / "gnt_run.json")["global_step"] == 4  # the run's record, with this step
    assert read_json(tmp_path / "queue/sft/gnt_run.json")["stage"] == "sft"  # <queue>/<run> looks like a run
    entry = read_json(queued / QUEUE_ENTRY)
    assert entry["run_dir"] == str(run.resolve()) and entry["global_step"] == 4
    assert not [p for p in queued.parent.iterdir() if p.name.startswith(".")]  # no temporary left behind
    assert queue_checkpoint(checkpoint, tmp_path / "queue", global_step=4) is None  # already queued
    assert queue_checkpoint(run / "checkpoint-99", tmp_path / "queue") is None  # missing: warned, not raised


def test_claims_done_markers_and_end_marker(tmp_path: Path) -> None:
    queue = tmp_path / "queue"
    run = tmp_path / "sft"
    for step in (2, 4):
        queue_checkpoint(fake_checkpoint(run, step), queue, global_step=step)
    items = pending_items(queue)
    assert [(i.run, i.step, i.name) for i in items] == [("sft", 2, "sft/checkpoint-2"), ("sft", 4, "sft/checkpoint-4")]
    assert claim(items[0]) and not claim(items[0])  # a second watcher cannot take it
    assert [i.step for i in pending_items(queue)] == [4]
    assert [i.step for i in pending_items(queue, stale_claim_s=0)] == [2, 4]  # a dead watcher's claim expires
    assert not training_finished(queue)
    mark_training_done(queue, "sft", 4)
    assert training_finished(queue)


def test_watch_evaluates_each_checkpoint_once_and_records_failures(tmp_path: Path) -> None:
    queue = tmp_path / "queue"
    run = tmp_path / "sft"
    for step in (1, 2, 3):
        queue_checkpoint(fake_checkpoint(run, step), queue, global_step=step)
    mark_training_done(queue, "sft", 3)
    seen: list[int] = []
    after: list[str] = []

    def evaluate(item: QueueItem) -> dict:
        seen.append(item.step)
        if item.step == 2:
            raise RuntimeError("out of memory")
        return {"ok": item.step}

    records = watch(queue, evaluate, poll_s=0.01, timeout_s=30, after_each=lambda item, rec: after.append(item.name))
    assert seen == [1, 2, 3] and len(after) == 3
    assert [r["status"] for r in records] == ["ok", "failed", "ok"]
    done = read_json(queue / "sft" / "checkpoint-2.done.json")
    assert done["status"] == "failed" and "out of memory" in done["error"]
    assert read_json(queue / "sft" / "checkpoint-3.done.json")["result"] == {"ok": 3}
    assert watch(queue, evaluate, poll_s=0.01, timeout_s=5) == []  # nothing twice
    assert seen == [1, 2, 3]


class FakeClock:
    """The watcher's clock and sleep, without waiting: each sleep moves the clock on and is counted."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_watch_stops_on_timeout_and_on_the_runs_own_record(tmp_path: Path, monkeypatch) -> None:
    queue = tmp_path / "queue"
    clock = FakeClock()
    monkeypatch.setattr(watch_module, "time", clock)
    assert watch(queue, lambda item: None, poll_s=0.05, timeout_s=0.3) == []  # no queue yet: waits, then stops
    assert clock.now - 1000.0 == pytest.approx(0.3)  # waited out the timeout, polling, and no longer
    assert len(clock.sleeps) >= 6 and max(clock.sleeps) <= 0.05 + 1e-9  # every poll_s, the last one cut short
    monkeypatch.undo()  # the seconds on a real clock: bench/waits.py
    run = tmp_path / "sft"
    write_json(run / "gnt_run.json", {"stage": "sft", "status": "running"})
    queue_checkpoint(fake_checkpoint(run, 1), queue, global_step=1)
    assert not training_finished(queue)
    write_json(run / "gnt_run.json", {"stage": "sft", "status": "complete"})  # the trainer's own end record
    assert training_finished(queue)
    assert len(watch(queue, lambda item: None, poll_s=0.05, timeout_s=10)) == 1


def test_command_evaluator_fills_placeholders(tmp_path: Path) -> None:
    queue = tmp_path / "queue"
    queue_checkpoint(fake_checkpoint(tmp_path / "sft", 7), queue, global_step=7)
    mark_training_done(queue, "sft", 7)
    out = tmp_path / "out with space"
    evaluate = command_evaluator("{python} -c 'import sys; open(sys.argv[1], \"w\").write(sys.argv[2])' "
                                 "{out}.txt {step}:{name}", out_dir=out)
    records = watch(queue, evaluate, poll_s=0.01, timeout_s=30)
    assert records[0]["status"] == "ok"
    assert Path(f"{out}.txt").read_text() == "7:sft/checkpoint-7"
    failing = command_evaluator("{python} -c 'raise SystemExit(3)'")
    item = queued_items(queue)[0]
    with pytest.raises(RuntimeError, match="exited with 3"):
        failing(item)


# ----------------------------------------------------------------------------------------------------------------
# A real tiny training run with the callback attached
# ----------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path, eval_data_dir: Path) -> dict:
    """TRL SFT on the tiny model, 3 steps, saving every step with save_total_limit=1, callback attached, and a
    watcher thread evaluating the queue while the trainer runs (the stub evaluator loads each adapter)."""
    from datasets import load_dataset
    from peft import LoraConfig, PeftModel
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    root = tmp_path_factory.mktemp("watch")
    output_dir, queue = root / "runs" / "sft", root / "queue"
    manifest = read_json(eval_data_dir / "manifest.json")
    write_json(output_dir / "gnt_run.json", {  # what train/sft.py writes before training
        "stage": "sft", "status": "running", "base_model": str(tiny_model_dir), "recipe_path": "recipes/tiny.yaml",
        "data_dir": str(eval_data_dir), "data_manifest_sha256": "test", "seed": 0,
        "train_source_keys": manifest["source_keys"]["train"], "wandb": {"mode": "disabled"},
    })
    seen: list[dict] = []

    def evaluate(item: QueueItem) -> dict:
        base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
        model = PeftModel.from_pretrained(base, item.path)  # the queued copy is a loadable adapter
        seen.append({"step": item.step, "lora_params": sum("lora" in n for n, _ in model.named_parameters()),
                     "at": time.monotonic()})
        return {"step": item.step}

    records: list[dict] = []
    watcher = threading.Thread(target=lambda: records.extend(watch(queue, evaluate, poll_s=0.05, timeout_s=120)))
    watcher.start()
    rows = load_dataset("json", data_files=str(eval_data_dir / "sft/train.jsonl"), split="train").select(range(6))
    callback = QueueCheckpointCallback(queue)
    trainer = SFTTrainer(
        model=str(tiny_model_dir), train_dataset=rows,
        peft_config=LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"),
        args=SFTConfig(output_dir=str(output_dir), max_steps=3, per_device_train_batch_size=2, save_strategy="steps",
                       save_steps=1, save_total_limit=1, report_to=[], use_cpu=True, max_length=512,
                       logging_steps=1),
        callbacks=[callback],
    )
    trainer.train()
    finished_training = time.monotonic()
    watcher.join(timeout=120)
    assert not watcher.is_alive(), "the watcher did not stop after the end marker"
    return {"root": root, "output_dir": output_dir, "queue": queue, "seen": seen, "records": records,
            "finished_training": finished_training, "callback": callback}


def test_callback_queues_every_checkpoint_despite_save_total_limit(trained: dict) -> None:
    output_dir, queue = trained["output_dir"], trained["queue"]
    assert sorted(p.name for p in output_dir.glob("checkpoint-*")) == ["checkpoint-3"]  # the trainer deleted 1, 2
    assert [i.step for i in queued_items(queue)] == [1, 2, 3]
    for step in (1, 2, 3):
        folder = queue / "sft" / f"checkpoint-{step}"
        assert (folder / "adapter_model.safetensors").is_file() and (folder / "adapter_config.json").is_file()
        assert not (folder / "optimizer.pt").exists()
        assert read_json(folder / "gnt_run.json")["global_step"] == step
    assert read_json(queue / "sft" / END_MARKER)["global_step"] == 3


def test_watcher_beside_the_trainer_evaluated_each_checkpoint(trained: dict) -> None:
    seen = trained["seen"]
    assert sorted(s["step"] for s in seen) == [1, 2, 3]
    assert all(s["lora_params"] > 0 for s in seen)
    assert [r["status"] for r in trained["records"]] == ["ok", "ok", "ok"]
    assert all((trained["queue"] / "sft" / f"checkpoint-{s}.done.json").is_file() for s in (1, 2, 3))


def test_queued_checkpoints_through_the_evaluation_core_and_report(trained: dict, tmp_path: Path) -> None:
    """The evaluation core (transformers backend, tiny model) scores the queued adapters; the report reads them."""
    pytest.importorskip("gnt.evaluation.sweep")
    from gnt.cli.evaluate import load_pipeline
    from gnt.cli.watch import recipe_evaluator
    from gnt.report import build_report
    from gnt.report.config import ReportConfig

    queue = tmp_path / "queue"
    for step in (1, 3):  # a fresh queue holding two of the trained checkpoints (the others are done)
        source = trained["queue"] / "sft" / f"checkpoint-{step}"
        queue_checkpoint(source, queue, run_name="sft", global_step=step)
    mark_training_done(queue, "sft", 3)
    out = tmp_path / "eval"
    evaluate = recipe_evaluator(load_pipeline([
        str(Path(__file__).parent.parent / "recipes/eval-tiny.yaml"), f"out_dir={out}",
        "langs=it", "configs=G+S", "shots=0", "rows_per_lang=2", "max_new_tokens=12", "bootstrap_samples=50",
        "steps=grid",  # the grid only: eval-tiny.yaml names the demo's whole pipeline
    ]))
    records = watch(queue, evaluate, poll_s=0.01, timeout_s=300)
    assert [r["status"] for r in records] == ["ok", "ok"], [r.get("error") for r in records]
    summary = read_json(out / "summary.json")
    names = {m["name"] for m in summary["models"]}
    assert {"base", "sft/checkpoint-1", "sft/checkpoint-3"} <= names
    assert read_json(out / "sft/checkpoint-3/metrics.json")["global_step"] == 3
    report = build_report(out, ReportConfig(bootstrap_samples=50)).read_text(encoding="utf-8")
    assert "| sft/checkpoint-3 | sft | 3 |" in report
    assert json.loads((out / "report" / "report_data.json").read_text())["models"][0] == "base"


def test_only_world_process_zero_queues(tmp_path: Path) -> None:
    """on_save runs on every rank; only rank 0 copies (and writes the end marker)."""
    from transformers import TrainerControl, TrainerState, TrainingArguments

    run = tmp_path / "sft"
    fake_checkpoint(run, 5)
    args = TrainingArguments(output_dir=str(run), report_to=[], use_cpu=True)
    callback = QueueCheckpointCallback(tmp_path / "queue")
    other_rank = TrainerState(global_step=5, is_world_process_zero=False)
    callback.on_save(args, other_rank, TrainerControl())
    callback.on_train_end(args, other_rank, TrainerControl())
    assert not (tmp_path / "queue").exists()
    rank_zero = TrainerState(global_step=5, is_world_process_zero=True)
    callback.on_save(args, rank_zero, TrainerControl())
    callback.on_train_end(args, rank_zero, TrainerControl())
    assert callback.queued == [tmp_path / "queue" / "sft" / "checkpoint-5"]
    assert training_finished(tmp_path / "queue")


def test_watch_cli_with_a_command(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("watch_cli", Path(__file__).parent.parent / "eval/watch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    queue = tmp_path / "queue"
    queue_checkpoint(fake_checkpoint(tmp_path / "sft", 3), queue, global_step=3)
    mark_training_done(queue, "sft", 3)
    assert module.main([str(queue), "--command", "test -d {checkpoint}", "--poll", "0.01", "--timeout", "30"]) == 0
    assert "1 checkpoint(s) evaluated, 0 failed" in capsys.readouterr().out
    assert read_json(queue / "sft" / "checkpoint-3.done.json")["status"] == "ok"
    queue_checkpoint(fake_checkpoint(tmp_path / "sft", 4), queue, global_step=4)
    assert module.main([str(queue), "--command", "false", "--once"]) == 1  # a failed evaluation: exit 1


# ----------------------------------------------------------------------------------------------------------------
# The command runs without a shell; bad templates, recipes and queues stop before anything is claimed
# ----------------------------------------------------------------------------------------------------------------


def _watch_cli():
    import importlib.util

    spec = importlib.util.spec_from_file_location("watch_cli", Path(__file__).parent.parent / "eval/watch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_folder_name_never_runs_as_a_shell_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    queue = tmp_path / "queue"
    run = "r$(touch${IFS}PWNED)"
    queue_checkpoint(fake_checkpoint(tmp_path / run, 2), queue, global_step=2)
    mark_training_done(queue, run, 2)
    log = tmp_path / "seen.txt"
    script = "import sys; open(sys.argv[1], 'a').write(sys.argv[2] + chr(10))"
    for template in (f'{{python}} -c "{script}" {log} "{{run_dir}}"', f"{{python}} -c \"{script}\" {log} '{{name}}'",
                     f"{{python}} -c \"{script}\" {log} {{checkpoint}}"):
        records = watch(queue, command_evaluator(template), once=True)
        assert [r["status"] for r in records] == ["ok"]
        for path in queue.rglob("*.done.json"):
            path.unlink()
        for path in queue.rglob("*.claim"):
            path.unlink()
    assert not list(tmp_path.rglob("PWNED")), "the folder name ran as a command"
    seen = log.read_text().splitlines()
    assert seen == [str(queue / run), f"{run}/checkpoint-2", str(queue / run / "checkpoint-2")]


def test_an_unknown_placeholder_is_an_error_before_anything_is_claimed(tmp_path: Path, capsys) -> None:
    queue = tmp_path / "queue"
    queue_checkpoint(fake_checkpoint(tmp_path / "sft", 3), queue, global_step=3)
    mark_training_done(queue, "sft", 3)
    assert _watch_cli().main([str(queue), "--command", "echo {bogus}", "--once"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: --command: unknown placeholder {bogus}; valid: {checkpoint}")
    assert not list(queue.rglob("*.claim")) and not list(queue.rglob("*.done.json"))
    assert _watch_cli().main([str(queue), "--command", "no-such-program-here {checkpoint}", "--once"]) == 2
    assert "not an executable on PATH" in capsys.readouterr().err
    assert _watch_cli().main([str(queue), "--command", "test -d {checkpoint}", "--once"]) == 0  # still queued


def test_a_missing_queue_folder_is_an_error(tmp_path: Path, capsys) -> None:
    assert _watch_cli().main([str(tmp_path / "no-queue"), "--command", "true", "--once"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"error: queue folder {tmp_path / 'no-queue'} does not exist")


def test_a_recipe_that_is_a_yaml_list_is_one_error_line(tmp_path: Path, capsys) -> None:
    queue = tmp_path / "queue"
    queue_checkpoint(fake_checkpoint(tmp_path / "sft", 3), queue, global_step=3)
    recipe = tmp_path / "r.yaml"
    recipe.write_text("- langs: it\n- shots: 4\n")
    assert _watch_cli().main([str(queue), "--recipe", str(recipe), "--once"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"error: {recipe}: a recipe is a mapping of keys to values, got a list"
    assert "Traceback" not in "\n".join(err) and not list(queue.rglob("*.claim"))


def test_watch_keys_as_key_value_and_evaluation_keys_passed_on(tmp_path: Path, capsys) -> None:
    queue = tmp_path / "queue"
    queue_checkpoint(fake_checkpoint(tmp_path / "sft", 3), queue, global_step=3)
    mark_training_done(queue, "sft", 3)
    seen = tmp_path / "seen.txt"
    template = f"{{python}} -c \"import sys; open(sys.argv[1], 'w').write(sys.argv[2])\" {seen} {{out}}"
    code = _watch_cli().main([str(queue), f"command={template}", "poll_s=0.01", "timeout_s=30",
                              f"out_dir={tmp_path / 'eval'}"])
    assert code == 0 and seen.read_text() == str(tmp_path / "eval")  # out_dir reached the command's {out}
    assert "1 checkpoint(s) evaluated, 0 failed" in capsys.readouterr().out
    # with a command there is no evaluation recipe to take other keys: a typo is named, nothing claimed
    queue_checkpoint(fake_checkpoint(tmp_path / "sft", 4), queue, global_step=4)
    assert _watch_cli().main([str(queue), "command=true", "backend=vllm", "once=true"]) == 2
    assert "unknown key 'backend'" in capsys.readouterr().err
    # with an evaluation recipe, its keys pass on; a key neither knows names the closest of both
    recipe = Path(__file__).parent.parent / "recipes" / "eval-tiny.yaml"
    assert _watch_cli().main([str(queue), str(recipe), "langz=it", "once=true"]) == 2
    err = capsys.readouterr().err
    assert "unknown key 'langz'" in err and "langs" in err
    assert _watch_cli().main([str(queue), str(recipe), "polls=1", "once=true"]) == 2
    assert "Watcher keys close to it: poll_s" in capsys.readouterr().err
    assert _watch_cli().main([str(queue), str(recipe), "command=true"]) == 2  # both ways at once
    assert "one of them" in capsys.readouterr().err
    assert not list(queue.rglob("*checkpoint-4*.claim")) and not (queue / "sft" / "checkpoint-4.done.json").exists()


# ----------------------------------------------------------------------------------------------------------------
# Reliability: bad durations refused before anything is claimed; failed checkpoints evaluated again on a rerun
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["poll_s=-1", "timeout_s=-4", "stale_claim_s=-1", "poll_s=nan"])
def test_a_negative_duration_is_one_error_line_before_anything_is_claimed(tmp_path: Path, capsys, key: str) -> None:
    queue = tmp_path / "queue"
    queue_checkpoint(fake_checkpoint(tmp_path / "sft", 3), queue, global_step=3)
    mark_training_done(queue, "sft", 3)
    assert _watch_cli().main([str(queue), "command=echo {checkpoint}", "timeout_s=4", key]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    name = key.split("=")[0]
    assert err[-1].startswith((f"error: {name}=", f"error: override '{name}': {name}: ")) and "seconds" in err[-1]
    assert "Traceback" not in "\n".join(err) and not list(queue.rglob("*.claim"))


def test_a_rerun_evaluates_the_failed_checkpoints_again_and_says_so(tmp_path: Path, capsys, caplog) -> None:
    queue = tmp_path / "queue"
    for step in (2, 4):
        queue_checkpoint(fake_checkpoint(tmp_path / "sft", step), queue, global_step=step)
    mark_training_done(queue, "sft", 4)
    assert _watch_cli().main([str(queue), "command=false", "poll_s=0.01", "timeout_s=30"]) == 1
    assert "2 checkpoint(s) evaluated, 2 failed" in capsys.readouterr().out
    # without retrying, the failures are named, not silently skipped
    assert _watch_cli().main([str(queue), "command=true", "poll_s=0.01", "timeout_s=30", "retry_failed=false"]) == 0
    assert "0 checkpoint(s) evaluated" in capsys.readouterr().out
    assert "2 checkpoint(s) failed before" in caplog.text and "sft/checkpoint-2" in caplog.text
    # the fixed command evaluates them again (the default)
    assert _watch_cli().main([str(queue), "command=test -d {checkpoint}", "poll_s=0.01", "timeout_s=30"]) == 0
    assert "2 checkpoint(s) evaluated, 0 failed" in capsys.readouterr().out and "evaluating again 2" in caplog.text
    assert read_json(queue / "sft" / "checkpoint-2.done.json")["status"] == "ok"
    assert read_json(queue / "sft" / "checkpoint-2.failed.json")["status"] == "failed"  # the earlier record kept
    assert _watch_cli().main([str(queue), "command=false", "poll_s=0.01", "timeout_s=30"]) == 0  # ok ones stay done
