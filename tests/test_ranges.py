"""Range checks in the settings schema (gnt.recipe.Bounds): every number of every command is finite, fits a
machine, and lies in its key's range; a value outside is one error line naming the key, exit status 2, before
anything is loaded or written."""

from __future__ import annotations

from pathlib import Path

import pytest
from _error_line import one_error_line

RECIPES = Path(__file__).resolve().parent.parent / "recipes"


@pytest.mark.parametrize("value", [
    "lora_r=1000000000", "dataloader_num_workers=-1", "dataloader_num_workers=1000000000", "warmup_steps=nan",
    "neftune_noise_alpha=-1", "learning_rate=inf", "learning_rate=nan", "decision_token_weight=nan",
    "decision_token_weight=inf", "weight_decay=nan", "weight_decay=inf", "label_smoothing_factor=nan",
    "label_smoothing_factor=inf", "seed=-5", "max_steps=99999999999999999999999",
])
def test_an_sft_number_out_of_range_is_one_error_line(tmp_path: Path, capsys, tiny_model_dir: Path,
                                                       training_data_dir: Path, value: str) -> None:
    from _training_helpers import tiny_overrides

    from gnt.cli.train import SFT

    out = tmp_path / "sft"
    argv = [str(RECIPES / "tiny.yaml"), *tiny_overrides(tiny_model_dir, training_data_dir, out, "report_to=none"),
            value]
    assert SFT.main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    key, given = value.split("=")
    assert f"{key}: " in line and " give " in line, line
    assert ("not a finite number" in line) == (given in ("nan", "inf")), line
    assert not out.exists()


@pytest.mark.parametrize("value", ["beta=nan", "beta=inf", "beta=0", "beta=-1", "learning_rate=inf"])
def test_a_dpo_beta_that_learns_nothing_or_inverts_the_objective_is_refused(tmp_path: Path, capsys,
                                                                             training_data_dir: Path,
                                                                             value: str) -> None:
    from gnt.cli.train import DPO

    out = tmp_path / "dpo"
    argv = [str(RECIPES / "tiny-dpo.yaml"), f"data_dir={training_data_dir}", f"sft_adapter={tmp_path}",
            f"output_dir={out}", "report_to=none", value]
    assert DPO.main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"{value.split('=')[0]}: " in line
    if value in ("beta=0", "beta=-1"):
        assert "give a value in (0, 1000] (DPO's KL weight: 0 learns nothing, a negative value inverts" in line
    assert not out.exists()


@pytest.mark.parametrize("value", [
    "bootstrap_samples=1000000000", "cpu_threads=1000000000", "max_lora_rank=-1", "max_model_len=-1",
    "max_new_tokens=1000000000", "timeout_s=inf", "alpha=nan", "report.samples_per_cell=-1",
    "judge.temperature=nan", "gpu_memory_utilization=0",
])
def test_an_evaluation_number_out_of_range_is_one_error_line(tmp_path: Path, capsys, value: str) -> None:
    from gnt.cli.evaluate import main

    out = tmp_path / "eval"
    argv = [str(RECIPES / "eval-tiny.yaml"), "model=gnt:tiny", f"out_dir={out}", "progress=false", value]
    assert main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert value.split("=")[0].split(".")[-1] in line, line
    assert not out.exists()


@pytest.mark.parametrize(("command", "value"), [
    ("report", "samples_per_cell=-1"), ("report", "bootstrap_samples=1000000000"), ("judge", "temperature=nan"),
    ("judge", "max_new_tokens=1000000000"), ("watch", "poll_s=inf"), ("watch", "poll_s=0"),
])
def test_the_other_commands_check_their_numbers_too(tmp_path: Path, capsys, command: str, value: str) -> None:
    from _report_fixtures import make_results

    from gnt.cli import COMMANDS

    results = make_results(tmp_path / "results", steps=(2,), langs=("it",), rows_per_set=2, extras=False)
    before = sorted(p.relative_to(results).as_posix() for p in results.rglob("*"))
    subject = str(tmp_path / "queue") if command == "watch" else str(results)
    assert COMMANDS[command].main([subject, value]) == 2
    assert value.split("=")[0] in one_error_line(capsys.readouterr().err)
    assert sorted(p.relative_to(results).as_posix() for p in results.rglob("*")) == before
    assert not (tmp_path / "queue").exists()


def test_bounds_are_declared_once_and_inherited_by_a_redefined_field() -> None:
    from gnt.judge.llm_judge import JudgeSettings
    from gnt.recipe import RecipeError, RecipeSchema

    schema = RecipeSchema.from_dataclasses([JudgeSettings])  # redefines max_new_tokens' default, not its range
    with pytest.raises(RecipeError, match="max_new_tokens: 1000000000: give a value in \\[1, 1048576\\]"):
        schema.coerce("max_new_tokens", 10**9, "test")
    assert schema.coerce("max_new_tokens", 512, "test") == 512


def test_an_entry_of_a_typed_mapping_key_is_coerced_like_the_key(tmp_path: Path) -> None:
    """``rewards.chrf=1.0`` on the command line is a number in the config, as it is written in a recipe; before,
    the entry stayed the string '1.0', and the reward check refused it as not a number."""
    from gnt.cli import COMMANDS
    from gnt.recipe import RecipeError

    onpolicy = COMMANDS["onpolicy"]
    call = onpolicy.call(["recipes/gemma270m-onpolicy.yaml", "rewards.chrf=0.5", "dpo.max_steps=3"])
    assert call is not None
    rewards = call.values["rewards"]
    assert rewards == {"label": 1.0, "judge": 1.0, "adequacy": 1.0, "chrf": 0.5}
    assert all(isinstance(weight, float) for weight in rewards.values())
    assert call.values["dpo"]["max_steps"] == "3", "an untyped mapping keeps its text for its own config"
    with pytest.raises(RecipeError, match="override 'rewards.chrf'.*valid number"):
        onpolicy.call(["recipes/gemma270m-onpolicy.yaml", "rewards.chrf=many"])
