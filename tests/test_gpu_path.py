"""The GPU researcher's path: launch configs that use the GPUs present, recipes whose folders line up, and a judge
validation that reaches the report. (The README's quickstart commands themselves: tests/test_quickstart.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gnt.paths import PROJECT_ROOT, RECIPES_DIR, SAMPLE_DIR

LAUNCH_CONFIGS = ["accelerate_config.yaml", "accelerate/zero2.yaml", "accelerate/zero3.yaml", "accelerate/fsdp.yaml",
                  "accelerate/multinode-deepspeed.yaml"]
GPU_SFT = ["qwen.yaml", "qwen-qlora.yaml", "llama.yaml", "gemma.yaml"]
GPU_DPO = ["qwen-dpo.yaml"]


def _validated_launch(*argv: str):
    """What accelerate 1.15's own `accelerate launch` makes of these options (its parser and validation)."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser

    args = launch_command_parser().parse_args([*argv, "train/sft.py", "recipes/qwen.yaml"])
    return _validate_launch_command(args)[0]


@pytest.mark.parametrize("config", LAUNCH_CONFIGS)
def test_a_gpu_launch_config_starts_as_many_workers_as_asked_and_never_a_fixed_count(config: str,
                                                                                     monkeypatch) -> None:
    monkeypatch.chdir(PROJECT_ROOT)
    assert "num_processes" not in yaml.safe_load((PROJECT_ROOT / config).read_text())
    with pytest.raises(ValueError, match="manually pass in `--num_processes`"):
        _validated_launch("--config_file", config)  # refused, not 8 workers on a 4-GPU machine
    assert _validated_launch("--config_file", config, "--num_processes", "4").num_processes == 4


def test_the_default_launch_config_is_ddp_in_bf16(monkeypatch) -> None:
    monkeypatch.chdir(PROJECT_ROOT)
    args = _validated_launch("--config_file", "accelerate_config.yaml", "--num_processes", "2")
    assert args.multi_gpu and args.mixed_precision == "bf16" and not args.use_deepspeed and not args.use_fsdp


def _recipe(name: str) -> dict:
    return yaml.safe_load((RECIPES_DIR / name).read_text())


def test_gpu_recipes_read_the_folder_the_data_build_writes_and_dpo_starts_from_the_sft_run() -> None:
    from gnt.data.build import BuildConfig

    written = BuildConfig().out_dir
    for name in GPU_SFT + GPU_DPO:
        assert _recipe(name)["data_dir"] == written, name
    assert _recipe("qwen-dpo.yaml")["sft_adapter"] == _recipe("qwen.yaml")["output_dir"]


def test_the_full_evaluation_recipes_name_every_step() -> None:
    for name in ("eval.yaml", "eval-vllm.yaml"):
        assert _recipe(name)["steps"] == ["grid", "judge", "xcomet", "attribution", "templated", "report"], name


def test_a_judge_validation_written_by_default_shows_in_the_report_of_the_default_results_folder(
        tmp_path: Path, monkeypatch) -> None:
    """`eval/judge.py validate` without `validation=` writes where the report of an evaluation into the default
    out_dir reads it (it used to write outputs/judge-validation.json, which no report read)."""
    from _report_fixtures import make_results

    from gnt.cli.judge import main as judge
    from gnt.report.build import build_report
    from gnt.settings import OutputSettings

    monkeypatch.chdir(tmp_path)
    results = make_results(tmp_path / OutputSettings().out_dir, validation=False, langs=("it",))
    assert judge(["validate", "judge=lexical", f"data={SAMPLE_DIR}", "langs=it"]) == 0
    report = build_report(results).read_text(encoding="utf-8")
    assert "Judge validation:" in report and "not been validated" not in report
