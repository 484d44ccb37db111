"""The README's GPU quickstart runs as written: its commands are read from README.md and run unchanged in a CPU
sandbox where each one is a dry run of itself (tests/_quickstart.py says what each does), so the README and the
recipes, launch configs and scripts it names cannot drift apart."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gnt.paths import PROJECT_ROOT, SAMPLE_DIR

README = PROJECT_ROOT / "README.md"
HARNESS = Path(__file__).with_name("_quickstart.py")
LINKED = ("Makefile", "pyproject.toml", "constraints-cpu.txt", "comet-requirements.txt", "vllm-requirements.txt",
          "scripts", "data", "recipes", "train", "eval", "accelerate", "accelerate_config.yaml")
PLACEHOLDER = "/path/to/mGeNTE"
FAKES = {
    "nvidia-smi": 'printf "GPU 0: NVIDIA H200 (UUID: GPU-0)\\nGPU 1: NVIDIA H200 (UUID: GPU-1)\\n"',
    "make": 'exec /usr/bin/make -n "$@"   # print what the target would run',
    "scontrol": 'printf "node1\\nnode2\\n"',
    "srun": 'while [[ "$1" == -* ]]; do shift; done; exec "$@"',
    "sbatch": r'''array=""; nodes=1
while [[ "$1" == --* ]]; do
  case "$1" in --array=*) array="${1#--array=}";; --nodes=*) nodes="${1#--nodes=}";; esac; shift
done
script="$1"; shift
export SLURM_JOB_ID=4242 SLURM_JOB_NUM_NODES=$nodes SLURM_NODEID=0 SLURM_GPUS_ON_NODE=2 SLURM_SUBMIT_DIR="$PWD"
export SLURM_JOB_NODELIST="node[1-$nodes]"
if [ -n "$array" ]; then
  first=${array%-*}; last=${array#*-}
  export SLURM_ARRAY_TASK_ID=$first SLURM_ARRAY_TASK_MIN=$first SLURM_ARRAY_TASK_MAX=$last
  export SLURM_ARRAY_TASK_COUNT=$((last - first + 1))
fi
exec bash "$script" "$@"   # task 0 of the array, node 0 of the job''',
}
WRAPPERS = {".venv/bin/python": "python", ".venv/bin/accelerate": "accelerate", ".venv/bin/gnt": "gnt",
            ".venv-vllm/bin/python": "python"}


def quickstart_commands(text: str) -> list[str]:
    """The quickstart's commands in order: its bash block's lines, then the commands of its one-line bullets."""
    section = text.split("## GPU quickstart", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "the GPU quickstart has no bash block"
    lines = [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]
    bullets = [code for line in section.splitlines() if line.startswith("- ")
               for code in re.findall(r"`([^`]+)`", line) if re.match(r"(\.venv|sbatch|PYTHON=)", code)]
    return lines + bullets


def _executable(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/bash\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _stand_in_run(folder: Path, step: int, stage: str) -> None:
    """What a finished training run leaves for the evaluation to discover (the real ones need the 7B model),
    claimed as that stage's run folder as training claims it."""
    from gnt.output_folder import claim_output_folder

    claim_output_folder(folder, stage)
    adapter = {"base_model_name_or_path": "Qwen/Qwen2.5-7B-Instruct", "peft_type": "LORA", "r": 16}
    for where in (folder, folder / f"checkpoint-{step}"):
        where.mkdir(parents=True, exist_ok=True)
        (where / "adapter_config.json").write_text(json.dumps(adapter))
        (where / "adapter_model.safetensors").write_bytes(b"stand-in weights")


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("quickstart")
    for name in LINKED:
        (root / name).symlink_to(PROJECT_ROOT / name)
    for path, tool in WRAPPERS.items():
        _executable(root / path, f'exec "$QS_PYTHON" "$QS_HARNESS" {tool} "$@"')
    for name, body in FAKES.items():
        _executable(root / ".fakebin" / name, body)
    _stand_in_run(root / "runs" / "qwen-sft", 5, "sft")
    _stand_in_run(root / "runs" / "qwen-dpo", 5, "dpo")
    return root


@pytest.fixture(scope="module")
def transcript(sandbox: Path) -> str:
    """Every quickstart command run in order in one bash session, as written (the mGeNTE path aside)."""
    commands = quickstart_commands(README.read_text(encoding="utf-8"))
    script = ["set -euo pipefail"]
    for number, command in enumerate(commands):
        script += [f"echo '>>> {number}'", command.replace(PLACEHOLDER, str(SAMPLE_DIR))]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "ACCELERATE_", "WANDB_"))}
    env.update(PATH=f"{sandbox / '.fakebin'}:{env['PATH']}", QS_PYTHON=sys.executable, QS_HARNESS=str(HARNESS),
               PYTHONPATH=str(PROJECT_ROOT), HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1", HOME=str(sandbox))
    result = subprocess.run(["bash", "-c", "\n".join(script)], cwd=sandbox, env=env, capture_output=True, text=True,
                            timeout=1500)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"a quickstart command failed:\n{output[-6000:]}"
    return result.stdout


def _facts(transcript: str, what: str) -> list[dict[str, str]]:
    return [dict(pair.split("=", 1) for pair in line.split()[2:])
            for line in transcript.splitlines() if line.startswith(f"QUICKSTART {what} ")]


def test_the_quickstart_has_the_commands_of_the_whole_path() -> None:
    commands = quickstart_commands(README.read_text(encoding="utf-8"))
    text = "\n".join(commands)
    for needed in ("make install", "make vllm-env", "data/build.py", "train/sft.py", "train/dpo.py",
                   "eval/judge.py validate", "eval/evaluate.py recipes/eval-vllm.yaml", "sbatch", "gnt launch"):
        assert needed in text, needed
    assert README.read_text(encoding="utf-8").splitlines().index("## GPU quickstart") < 100
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_install_targets_exist(transcript: str) -> None:
    assert "scripts/install.sh" in transcript and "scripts/vllm_env.sh" in transcript


def test_the_data_build_writes_where_the_training_recipes_read(transcript: str) -> None:
    assert _facts(transcript, "data/build.py") == [{"manifest": "True"}]
    sft, dpo = _facts(transcript, "train/sft.py"), _facts(transcript, "train/dpo.py")
    assert sft and all(f["data"] == "found" for f in sft + dpo)
    # the dry run is one process: 2 x 8 pairs per optimizer step per GPU (the launch's processes: the next test)
    assert dpo == [{"data": "found", "sft_adapter": "found", "batch": "16"}]


def test_training_launches_on_every_gpu_of_the_machine_and_over_nodes(transcript: str) -> None:
    launches = _facts(transcript, "accelerate")
    on_this_machine = [f for f in launches if f["machines"] == "1"]
    assert {f["processes"] for f in on_this_machine} == {"2"}  # the fake machine's two GPUs, never a fixed 8
    assert {f["script"] for f in on_this_machine} == {"train/sft.py", "train/dpo.py"}
    assert any(f["deepspeed"] == "True" for f in on_this_machine)  # the ZeRO-3 line
    over_nodes = sorted(f["processes"] for f in launches if f["machines"] == "2")
    assert over_nodes == ["16", "4"]  # gnt launch by hand (2 x 8 GPUs), the SLURM job (2 nodes x 2 GPUs)
    assert [f["exec"] for f in _facts(transcript, "gnt-launch")] == ["True", "True"]


def test_the_whole_evaluation_is_one_command(transcript: str) -> None:
    [judge] = _facts(transcript, "eval/judge.py-validate")
    assert judge == {"model": "Qwen/Qwen2.5-72B-Instruct", "backend": "vllm", "data": "True"}
    full, sharded = _facts(transcript, "eval/evaluate.py")
    assert full == {"steps": "grid,judge,xcomet,attribution,templated,report", "models": "3", "backend": "vllm",
                    "shard": "None"}
    assert sharded["shard"] == "0/8"  # the SLURM array's first task
