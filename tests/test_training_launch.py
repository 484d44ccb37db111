"""Training through ``accelerate launch`` on the tiny model, CPU only: SFT → DPO with one process (W&B offline),
two processes with DDP (gloo), DeepSpeed ZeRO-2 and ZeRO-3, and two local processes as two "machines" from the
SLURM script's generated commands. Every launch runs in its own session and is killed with it on timeout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from _training_helpers import (
    ACCELERATE,
    CONFIGS,
    PYTHON,
    RECIPES,
    Launch,
    clean_env,
    finish,
    free_port,
    run,
    start,
    tiny_overrides,
)
from safetensors.torch import load_file

from gnt.paths import PROJECT_ROOT

HOOKS = Path(__file__).parent / "hooks"
"""Test-only trainer callbacks, loaded through the recipe key ``callbacks``."""

pytestmark = pytest.mark.slow
CHECKPOINT_FILES = ("adapter_config.json", "adapter_model.safetensors", "tokenizer.json", "tokenizer_config.json",
                    "trainer_state.json", "gnt_run.json")


def adapter(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(folder / "adapter_model.safetensors")


def record(folder: Path) -> dict:
    return json.loads((folder / "gnt_run.json").read_text())


# ------------------------------------------------------------------------------------------------ one process


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path, training_data_dir: Path) -> dict:
    """SFT then DPO, each with `accelerate launch` and one process, reporting to W&B without any API key.

    The first SFT attempt is SIGKILLed right after its first checkpoint (like a preempted job); the same command
    is then run again and must resume.
    """
    root = tmp_path_factory.mktemp("chain")
    env = clean_env(home=root / "home")
    one = [*ACCELERATE, "--num_processes", "1", "--num_machines", "1", "--mixed_precision", "no",
           "--dynamo_backend", "no"]
    sft_dir, dpo_dir = root / "runs" / "tiny-sft", root / "runs" / "tiny-dpo"
    sft_command = [*one, "train/sft.py", str(RECIPES / "tiny.yaml"),
                   *tiny_overrides(tiny_model_dir, training_data_dir, sft_dir, "max_steps=4", "save_steps=2")]
    crash = {"GNT_TEST_CRASH_AFTER_SAVE": "1:kill", "PYTHONPATH": str(HOOKS)}  # the recipe's own callback
    killed = run([*sft_command, "callbacks=crash_after_save:CrashAfterSaveCallback"], {**env, **crash},
                 root / "sft-killed.log")
    first_checkpoint = (sft_dir / "checkpoint-2" / "adapter_model.safetensors").stat().st_mtime_ns
    sft = run(sft_command, env, root / "sft.log").check()
    dpo = run([*one, "train/dpo.py", str(RECIPES / "tiny-dpo.yaml"), f"sft_adapter={sft_dir}",
               f"data_dir={training_data_dir}", f"output_dir={dpo_dir}", "max_steps=2", "save_steps=1",
               "max_train_samples=8"],
              env, root / "dpo.log").check()
    return {"killed": killed, "first_checkpoint": first_checkpoint, "sft": sft, "dpo": dpo, "sft_dir": sft_dir,
            "dpo_dir": dpo_dir}


def test_killed_after_its_first_checkpoint_the_same_command_resumes(chain: dict) -> None:
    out: Path = chain["sft_dir"]
    assert chain["killed"].returncode != 0
    assert "killing this process after checkpoint-2" in chain["killed"].output
    assert f"resuming from {out / 'checkpoint-2'}" in chain["sft"].output
    assert "starting at step 2 of 4" in chain["sft"].output
    assert (out / "checkpoint-2" / "adapter_model.safetensors").stat().st_mtime_ns == chain["first_checkpoint"]
    state = json.loads((out / "checkpoint-4" / "trainer_state.json").read_text())
    assert state["global_step"] == 4
    assert [entry["step"] for entry in state["log_history"] if "loss" in entry] == [1, 2, 3, 4]
    top = record(out)
    assert top["status"] == "complete" and top["global_step"] == 4
    assert [r["checkpoint"] for r in top["resumed_from"]] == [str(out / "checkpoint-2")]


def test_sft_checkpoints_are_evaluable_adapters_with_run_records(chain: dict, tiny_model_dir: Path,
                                                                 training_data_dir: Path) -> None:
    out: Path = chain["sft_dir"]
    assert f"[gnt] SFT adapter: {out}" in chain["sft"].output
    for step in (2, 4):
        folder = out / f"checkpoint-{step}"
        assert all((folder / name).is_file() for name in CHECKPOINT_FILES), sorted(p.name for p in folder.iterdir())
        assert record(folder)["global_step"] == step
    top = record(out)
    assert top["format"] == "gnt-align/run/1" and top["stage"] == "sft" and top["status"] == "complete"
    assert top["base_model"] == str(tiny_model_dir) and top["sft_adapter"] is None and top["seed"] == 42
    assert top["recipe"]["learning_rate"] == 2e-3 and top["recipe"]["max_steps"] == 4
    assert top["data_dir"] == str(training_data_dir)
    from gnt.io import sha256_file

    assert top["data_manifest_sha256"] == sha256_file(training_data_dir / "manifest.json", length=64)
    manifest = json.loads((training_data_dir / "manifest.json").read_text())
    assert top["train_source_keys"] == sorted(set(manifest["source_keys"]["train"]) | set(manifest["source_keys"]["dev"]))
    assert not set(top["train_source_keys"]) & set(manifest["source_keys"]["test"])
    assert {"packages", "git"} <= set(top["environment"]) and top["environment"]["packages"]["trl"] == "1.16.0"
    assert (out / "adapter_model.safetensors").is_file()  # the final adapter at the root
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == str(tiny_model_dir)
    from transformers import AutoTokenizer

    assert len(AutoTokenizer.from_pretrained(out / "checkpoint-2")) == len(AutoTokenizer.from_pretrained(tiny_model_dir))


def test_wandb_ran_offline_without_a_key_and_logged_metrics_and_config(chain: dict) -> None:
    from gnt.report.wandb_offline import read_offline_run  # the reporting module's reader

    info = record(chain["sft_dir"])["wandb"]
    assert info["mode"] == "offline" and info["project"] == "gnt-align" and len(info["run_id"]) == 8
    assert info["dir"] == str(chain["sft_dir"])
    run_dir = Path(info["run_dir"])
    assert run_dir.is_dir() and run_dir.parent == chain["sft_dir"] / "wandb"
    assert f"no API key found (WANDB_API_KEY or ~/.netrc) -> offline run in {run_dir}" in chain["sft"].output
    logged = read_offline_run(next(run_dir.glob("run-*.wandb")))
    assert logged.run_id == info["run_id"] and logged.project == "gnt-align"
    assert list(logged.by("train/global_step", "train/loss")) == [3, 4]  # this attempt resumed at step 2
    assert logged.config["gnt"]["recipe"]["max_steps"] == 4
    assert logged.config["data_manifest"]["format"] == "gnt-align/data/1"
    assert logged.config["learning_rate"] == 2e-3  # the trainer's config, added by transformers' callback
    assert logged.summary["gnt/global_step"] == 4
    attempts = sorted((chain["sft_dir"] / "wandb").glob("offline-run-*"))
    assert len(attempts) == 2 and all(p.name.endswith(info["run_id"]) for p in attempts)  # one W&B run, resumed


def test_dpo_trains_over_the_same_base_with_the_sft_adapter_as_frozen_reference(chain: dict) -> None:
    sft_dir, out = chain["sft_dir"], chain["dpo_dir"]
    top = record(out)
    assert top["stage"] == "dpo" and top["status"] == "complete" and top["global_step"] == 2
    assert top["sft_adapter"] == str(sft_dir) and top["base_model"] == record(sft_dir)["base_model"]
    assert set(record(sft_dir)["train_source_keys"]) <= set(top["train_source_keys"])
    assert top["sft_run"]["wandb_run_id"] == record(sft_dir)["wandb"]["run_id"]
    sft = adapter(sft_dir)
    for step in (1, 2):
        folder = out / f"checkpoint-{step}"
        assert all((folder / name).is_file() for name in CHECKPOINT_FILES)
        config = json.loads((folder / "adapter_config.json").read_text())
        assert config["base_model_name_or_path"] == record(sft_dir)["base_model"]
        reference = adapter(folder / "ref")  # TRL's frozen copy, saved beside the trained adapter
        policy = adapter(folder)
        assert reference.keys() == sft.keys() == policy.keys()
        assert all(torch.equal(reference[k], sft[k]) for k in sft)  # the reference never moves
        assert any(not torch.equal(policy[k], sft[k]) for k in sft)  # the policy does


def test_dpo_reference_log_probs_are_the_sft_policys(chain: dict, tiny_model_dir: Path, training_data_dir: Path,
                                                     tmp_path: Path) -> None:
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from gnt.cli.train import DPO
    from gnt.training.dpo import prepare_dpo
    from gnt.training.runner import end_run

    run = prepare_dpo(DPO.call([str(RECIPES / "tiny-dpo.yaml"),
        f"sft_adapter={chain['sft_dir']}", f"data_dir={training_data_dir}", f"output_dir={tmp_path / 'dpo'}",
        "report_to=none", "max_train_samples=4",
    ]).recipe)
    try:
        trainer = run.trainer
        batch = trainer.data_collator([trainer.train_dataset[i] for i in range(2)])
        ref_chosen, ref_rejected = trainer.compute_ref_log_probs(trainer.model, batch)
    finally:
        end_run(run)

    def completion_logps(model) -> torch.Tensor:
        with torch.no_grad():
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], use_cache=False).logits
        logps = logits[:, :-1].log_softmax(-1).gather(-1, batch["input_ids"][:, 1:, None]).squeeze(-1)
        return (logps * batch["completion_mask"][:, 1:]).sum(-1)

    sft_policy = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model_dir), chain["sft_dir"]).eval()
    expected = completion_logps(sft_policy)
    torch.testing.assert_close(torch.cat([ref_chosen, ref_rejected]), expected, atol=1e-3, rtol=1e-5)
    with sft_policy.disable_adapter():
        bare = completion_logps(sft_policy)
    assert (bare - expected).abs().max() > 1e-2  # the bare base model would be a different reference


# ------------------------------------------------------------------------------------------------ two processes


def launch_two(config: str, out: Path, tiny_model_dir: Path, data: Path, *launch_args: str) -> Launch:
    argv = [*ACCELERATE, "--config_file", str(CONFIGS / config), "--main_process_port", str(free_port()),
            *launch_args, "train/sft.py", str(RECIPES / "tiny.yaml"),
            *tiny_overrides(tiny_model_dir, data, out, "max_steps=2", "save_steps=2", "report_to=none")]
    return run(argv, clean_env(), out.parent / f"{out.name}.log").check()


@pytest.fixture(scope="module")
def ddp(tmp_path_factory, tiny_model_dir: Path, training_data_dir: Path) -> tuple[Launch, Path]:
    out = tmp_path_factory.mktemp("ddp") / "run"
    return launch_two("multi_cpu.yaml", out, tiny_model_dir, training_data_dir), out


@pytest.fixture(scope="module")
def zero2(tmp_path_factory, tiny_model_dir: Path, training_data_dir: Path) -> tuple[Launch, Path]:
    out = tmp_path_factory.mktemp("zero2") / "run"
    return launch_two("zero2.yaml", out, tiny_model_dir, training_data_dir,
                      "--num_processes", "2", "--mixed_precision", "no"), out


@pytest.fixture(scope="module")
def zero3(tmp_path_factory, tiny_model_dir: Path, training_data_dir: Path) -> tuple[Launch, Path]:
    out = tmp_path_factory.mktemp("zero3") / "run"
    return launch_two("zero3.yaml", out, tiny_model_dir, training_data_dir,
                      "--num_processes", "2", "--mixed_precision", "no"), out


def assert_both_ranks_trained(launch: Launch, out: Path, distributed_type: str) -> None:
    for rank in (0, 1):
        assert f"[gnt rank {rank}/2] training on cpu" in launch.output
        assert f"[gnt rank {rank}/2] finished training at step 2" in launch.output
    assert launch.output.count("[gnt] run record:") == 1  # rank 0 only
    top = record(out)
    assert top["launch"]["world_size"] == 2 and top["launch"]["distributed_type"] == distributed_type
    assert top["status"] == "complete" and record(out / "checkpoint-2")["global_step"] == 2
    assert all((out / "checkpoint-2" / name).is_file() for name in CHECKPOINT_FILES)
    state = json.loads((out / "checkpoint-2" / "trainer_state.json").read_text())
    assert state["train_batch_size"] == 2 and state["global_step"] == 2


def test_ddp_two_processes(ddp) -> None:
    launch, out = ddp
    assert_both_ranks_trained(launch, out, "MULTI_CPU")
    assert "the 2 launched processes train on CPU as one gloo DDP group" in launch.output


def test_deepspeed_zero2_two_processes(zero2) -> None:
    launch, out = zero2
    assert_both_ranks_trained(launch, out, "DEEPSPEED")
    assert record(out)["launch"]["backend"] == "deepspeed ZeRO-2"


def test_deepspeed_zero3_two_processes_saves_whole_lora_weights(zero3, tiny_model_dir: Path) -> None:
    launch, out = zero3
    assert_both_ranks_trained(launch, out, "DEEPSPEED")
    assert record(out)["launch"]["backend"] == "deepspeed ZeRO-3"
    weights = adapter(out / "checkpoint-2")
    shapes = {tuple(t.shape) for k, t in weights.items() if "q_proj.lora_A" in k}
    assert shapes == {(8, 64)}  # gathered, not ZeRO-3 partitions


def test_fsdp_on_cpu_is_refused_not_silently_run_as_ddp(tmp_path: Path, tiny_model_dir: Path,
                                                       training_data_dir: Path) -> None:
    """accelerate enables FSDP only for GPU process groups: on CPU the shipped FSDP config would train as DDP."""
    out = tmp_path / "run"
    argv = [*ACCELERATE, "--config_file", str(CONFIGS / "fsdp.yaml"), "--main_process_port", str(free_port()),
            "--num_processes", "2", "--mixed_precision", "no", "train/sft.py", str(RECIPES / "tiny.yaml"),
            *tiny_overrides(tiny_model_dir, training_data_dir, out, "max_steps=2", "save_steps=2", "report_to=none")]
    launch = run(argv, clean_env(), tmp_path / "fsdp.log", timeout=900)
    assert launch.returncode != 0 and "error: FSDP cannot run without a GPU" in launch.output
    assert "accelerate/multi_cpu.yaml" in launch.output
    assert not (out / "checkpoint-2").exists() and "finished training" not in launch.output


def test_ddp_and_zero_runs_learn_the_same_adapter(ddp, zero2, zero3) -> None:
    reference = adapter(ddp[1])
    for _, out in (zero2, zero3):
        other = adapter(out)
        assert other.keys() == reference.keys()
        for key in reference:
            torch.testing.assert_close(other[key], reference[key], atol=1e-4, rtol=1e-3)


# ------------------------------------------------------------------------------------------------ two "machines"


def test_two_local_processes_as_two_machines_from_the_slurm_commands(tmp_path: Path, tiny_model_dir: Path,
                                                                     training_data_dir: Path) -> None:
    import subprocess

    out, port = tmp_path / "multinode", free_port()
    commands = []
    for rank in (0, 1):
        printed = subprocess.run(
            [PYTHON, "scripts/slurm/node_command.py", str(RECIPES / "tiny.yaml"), "stage=sft",
             f"main_process_port={port}", "launch_args=--mixed_precision no",
             *tiny_overrides(tiny_model_dir, training_data_dir, out, "max_steps=2", "save_steps=2",
                             "report_to=none")],
            cwd=PROJECT_ROOT, capture_output=True, text=True, check=True,
            env={**clean_env(), "SLURM_JOB_NUM_NODES": "2", "SLURM_NODEID": str(rank), "SLURM_GPUS_ON_NODE": "1",
                 "MAIN_ADDR": "127.0.0.1"},
        ).stdout
        commands.append(printed.split())
    assert commands[0][commands[0].index("--machine_rank") + 1] == "0"
    running = [start(argv, clean_env(), tmp_path / f"node{rank}.log") for rank, argv in enumerate(commands)]
    launches = [finish(r, timeout=300) for r in running]  # finish() kills a launch that hangs
    for launch in launches:
        launch.check()
    assert "[gnt rank 0/2] finished training at step 2" in launches[0].output
    assert "[gnt rank 1/2] finished training at step 2" in launches[1].output
    top = record(out)
    assert top["launch"]["num_machines"] == 2 and top["launch"]["world_size"] == 2
    assert top["launch"]["backend"] == "deepspeed ZeRO-2" and top["status"] == "complete"
