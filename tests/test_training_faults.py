"""Training under faults: a loss or weights that stop being finite, a Ctrl-C, a full disk during a checkpoint save
and a damaged last checkpoint each end in one clear line (or a warning), never in an adapter called finished that
is not, and the same command then resumes from the last checkpoint that reads whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _error_line import one_error_line
from transformers import TrainerCallback

pytestmark = pytest.mark.usefixtures("one_torch_thread")

RECIPES = Path(__file__).resolve().parent.parent / "recipes"


def _sft(tiny_model_dir: Path, data: Path, out: Path, *extra: str) -> int:
    from _training_helpers import tiny_overrides

    from gnt.cli.train import SFT

    return SFT.main([str(RECIPES / "tiny.yaml"),
                     *tiny_overrides(tiny_model_dir, data, out, "report_to=none", "save_steps=1", *extra)])


class PoisonAtStep3(TrainerCallback):
    """Makes the adapter's weights NaN as step 3 begins (what an infinite learning rate does)."""

    def on_step_begin(self, args, state, control, model=None, **kwargs):
        if state.global_step == 2:
            import torch

            with torch.no_grad():
                for parameter in model.parameters():
                    if parameter.requires_grad:
                        parameter.mul_(float("nan"))
        return control


class InterruptAtStep2(TrainerCallback):
    """Ctrl-C while step 2 trains."""

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step == 1:
            raise KeyboardInterrupt
        return control


def test_nan_weights_stop_training_and_no_adapter_is_called_finished(
        tmp_path: Path, capsys, tiny_model_dir: Path, training_data_dir: Path) -> None:
    out = tmp_path / "sft"
    code = _sft(tiny_model_dir, training_data_dir, out, "max_steps=5",
                f"callbacks={__name__}:PoisonAtStep3")
    assert code == 1
    line = one_error_line(capsys.readouterr().err)
    assert "training diverged at step 3: the trained weights hold NaN or infinite values" in line
    assert f"the last good checkpoint is {out / 'checkpoint-2'}" in line and "Lower learning_rate" in line
    record = json.loads((out / "gnt_run.json").read_text(encoding="utf-8"))
    assert record["status"] == "diverged" and record["final_adapter"] is None
    assert not (out / "adapter_model.safetensors").exists()  # no final adapter as if it were good
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]


def test_ctrl_c_is_one_line_that_says_how_to_resume_and_resuming_works(
        tmp_path: Path, capsys, tiny_model_dir: Path, training_data_dir: Path) -> None:
    out = tmp_path / "sft"
    assert _sft(tiny_model_dir, training_data_dir, out, "max_steps=3",
                f"callbacks={__name__}:InterruptAtStep2") == 130
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith("error: interrupted. Finished work is kept: run the same command again")
    assert "training resumes from its last complete checkpoint" in line
    assert _sft(tiny_model_dir, training_data_dir, out, "max_steps=3") == 0
    record = json.loads((out / "gnt_run.json").read_text(encoding="utf-8"))
    assert record["status"] == "complete" and record["global_step"] == 3
    assert record["resumed_from"][-1]["checkpoint"].endswith("checkpoint-1")


def test_a_full_disk_during_a_checkpoint_save_is_one_line_and_the_run_resumes_once_space_is_free(
        tmp_path: Path, capsys, monkeypatch, tiny_model_dir: Path, training_data_dir: Path) -> None:
    import peft.peft_model
    from safetensors import SafetensorError

    real = peft.peft_model.safe_save_file
    saves = {"n": 0}

    def fills_up(*args, **kwargs):
        saves["n"] += 1
        if saves["n"] == 2:  # checkpoint-2's adapter: the disk is full
            raise SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: '
                                  '"No space left on device" })')
        return real(*args, **kwargs)

    monkeypatch.setattr(peft.peft_model, "safe_save_file", fills_up)
    out = tmp_path / "sft"
    assert _sft(tiny_model_dir, training_data_dir, out, "max_steps=3") == 1
    line = one_error_line(capsys.readouterr().err)
    assert "[Errno 28] No space left on device while saving a checkpoint or the adapter" in line
    assert str(out) in line and "GiB free on the disk of" in line and "run the same command again" in line
    assert not (out / "checkpoint-2" / "gnt_run.json").exists()  # never marked complete
    monkeypatch.setattr(peft.peft_model, "safe_save_file", real)  # space freed
    assert _sft(tiny_model_dir, training_data_dir, out, "max_steps=3") == 0
    record = json.loads((out / "gnt_run.json").read_text(encoding="utf-8"))
    assert record["status"] == "complete" and record["resumed_from"][-1]["checkpoint"].endswith("checkpoint-1")


@pytest.mark.parametrize("damaged", ["trainer_state.json", "adapter_model.safetensors"])
def test_a_damaged_last_checkpoint_is_passed_over_and_the_one_before_it_resumed(
        tmp_path: Path, capsys, tiny_model_dir: Path, training_data_dir: Path, damaged: str) -> None:
    out = tmp_path / "sft"
    assert _sft(tiny_model_dir, training_data_dir, out, "max_steps=2") == 0
    path = out / "checkpoint-2" / damaged
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # cut in half
    capsys.readouterr()
    assert _sft(tiny_model_dir, training_data_dir, out, "max_steps=3") == 0
    err = capsys.readouterr().err
    assert f"warning: {out / 'checkpoint-2'} is damaged ({damaged}: " in err
    assert f"resuming from {out / 'checkpoint-1'}" in err
    record = json.loads((out / "gnt_run.json").read_text(encoding="utf-8"))
    assert record["status"] == "complete" and record["global_step"] == 3
    assert record["resumed_from"][-1]["checkpoint"].endswith("checkpoint-1")
