"""The GPU researcher's path: launch configs that use the GPUs present, recipes whose folders line up, and a judge
validation that reaches the report. (The README's quickstart commands themselves: tests/test_quickstart.py.)"""

from __future__ import annotations

import subprocess
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


# ------------------------------------------------------------------------------------------------ the GPU check
GPU_CHECK = PROJECT_ROOT / "scripts" / "gpu_check.sh"
FAKE_PYTHON = """#!/bin/bash
case "$1" in
  -) cat >/dev/null; echo "preflight ok";;            # the package check
  -c) exit 1;;                                         # is vllm installed? no
  -m) exit 0;;                                         # pip install of carried wheels
  *) echo "RAN $*";;                                   # a benchmark
esac
"""


def _gpu_check(tmp_path: Path, budget: int, gpu: bool = True) -> subprocess.CompletedProcess:
    """scripts/gpu_check.sh with a stand-in python (its benchmarks only say what they were asked to run)."""
    import os
    import stat

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    python = bin_dir / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    if gpu:
        smi = bin_dir / "nvidia-smi"
        smi.write_text("#!/bin/bash\necho 'NVIDIA H200, 143771 MiB, 580.159.04'\n")
        smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHON": str(python), "BUDGET_S": str(budget),
           "OUT": str(tmp_path / "out")}
    return subprocess.run(["bash", str(GPU_CHECK)], capture_output=True, text=True, env=env, timeout=120)


def test_the_gpu_check_runs_every_stage_in_order_within_its_budget(tmp_path: Path) -> None:
    result = _gpu_check(tmp_path, budget=530)
    assert result.returncode == 0, result.stderr
    ran = [line for line in result.stdout.splitlines() if line.startswith("RAN ")]
    grid, judge = ran[:-1], ran[-1]
    assert [line.rsplit("--stages ", 1)[1] for line in grid] == ["build", "grid", "sft-lora", "sft-qlora"]
    assert all("bench/gpu_grid.py --backend transformers --rows-per-lang 20" in line for line in grid)
    assert "bench/learned_judge_throughput.py model=outputs/gpu-grid/model adapter=outputs/gpu-grid/adapter" in judge
    assert "gpu_check: build, at most 120 s" in result.stdout  # each stage capped, never past the deadline
    assert any(p.name.startswith("gpu_grid") for p in (tmp_path / "out").iterdir())  # records copied back


def test_the_gpu_check_runs_no_stage_past_its_deadline_and_refuses_without_a_gpu(tmp_path: Path) -> None:
    late = _gpu_check(tmp_path, budget=30)
    assert late.returncode == 0 and "RAN " not in late.stdout
    assert "gpu_check: build not run" in late.stdout and "gpu_check: sft-qlora not run" in late.stdout
    (tmp_path / "cpu").mkdir()
    none = _gpu_check(tmp_path / "cpu", budget=530, gpu=False)
    assert none.returncode == 2 and "no NVIDIA GPU here" in none.stderr
