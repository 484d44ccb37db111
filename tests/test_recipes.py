"""Training recipes: parsing, overrides, coercion, errors, dry-runs of every shipped recipe, launch configs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from gnt.cli.command import tokenize
from gnt.cli.train import DPO, GRPO, SFT
from gnt.paths import PROJECT_ROOT, RECIPES_DIR
from gnt.recipe import RecipeError, coerce_value, load_yaml_mapping
from gnt.training.config import build_setup, load_recipe
from gnt.training.launch import NodeLaunch, node_command, slurm_defaults

TRAINING_RECIPES = {
    "qwen.yaml": "sft", "qwen-dpo.yaml": "dpo", "qwen-qlora.yaml": "sft", "llama.yaml": "sft",
    "gemma.yaml": "sft", "tiny.yaml": "sft", "tiny-dpo.yaml": "dpo", "smollm.yaml": "sft", "smollm-dpo.yaml": "dpo",
    "gemma270m.yaml": "sft", "gemma270m-dpo.yaml": "dpo", "tiny-grpo.yaml": "grpo",
    "qwen-grpo.yaml": "grpo",
}
ONPOLICY_RECIPES = {"gemma270m-onpolicy.yaml", "qwen-onpolicy.yaml"}
"""Recipes of train/onpolicy.py: rounds of sampling, judging and DPO, not one training stage."""
ACCELERATE = PROJECT_ROOT / "accelerate"


# ------------------------------------------------------------------------------------------------ command line


def main(stage: str, argv: list[str]) -> int:
    return {"sft": SFT, "dpo": DPO, "grpo": GRPO}[stage].main(argv)


def test_overrides_in_every_form() -> None:
    words = tokenize(
        ["recipes/tiny.yaml", "--learning_rate", "1e-4", "max_steps=3", "--seed=7", "--packing",
         "--lora_target_modules", "q_proj", "v_proj", "--dry-run"]
    )
    assert words.positionals == ["recipes/tiny.yaml"]
    assert words.options == [
        ("learning_rate", "1e-4"), ("max_steps", "3"), ("seed", "7"), ("packing", True),
        ("lora_target_modules", ["q_proj", "v_proj"]), ("dry-run", True),
    ]
    invocation = SFT.parse(["--config", "r.yaml", "--dry-run"])  # TrlParser habit (deprecated, still works)
    assert invocation.recipe == "r.yaml" and invocation.overrides == [("dry_run", True)]
    assert tokenize(["lr=1", "--x", "2"]).options == [("lr", "1"), ("x", "2")]


def test_overrides_win_over_the_recipe_and_are_typed() -> None:
    recipe = SFT.call([str(RECIPES_DIR / "tiny.yaml"), "--learning_rate", "1e-4", "max_steps=3", "wandb_tags=a,b"]).recipe
    assert recipe.values["learning_rate"] == pytest.approx(1e-4)
    assert recipe.values["max_steps"] == 3 and recipe.values["wandb_tags"] == ["a", "b"]
    assert recipe.sources["learning_rate"] == "override" and recipe.sources["seed"] == "recipe"
    assert recipe.sources["use_peft"] == "default"


@pytest.mark.parametrize(
    ("value", "annotation", "expected"),
    [
        ("1e-4", float, 1e-4),  # YAML 1.1 reads 1e-4 as a string
        ("4", float, 4),
        ("true", bool, True),
        ("no", bool, False),
        ("null", int | None, None),
        ("none", str | None, "none"),  # report_to: none stays a string
        ("q_proj,v_proj", list[str] | None, ["q_proj", "v_proj"]),
        ("[q_proj, v_proj]", list[str], ["q_proj", "v_proj"]),
        ("all-linear", list[str] | None, ["all-linear"]),
        ('{"a": 1}', dict | str | None, {"a": 1}),
    ],
)
def test_values_are_coerced_by_field_type(value, annotation, expected) -> None:
    assert coerce_value(value, annotation) == expected


def test_unquoted_no_in_yaml_becomes_the_strategy_no(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("eval_strategy: no\nsave_strategy: steps\n")
    assert load_recipe("sft", str(recipe), []).values["eval_strategy"] == "no"


def test_wrong_type_names_the_key_and_line(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("output_dir: x\nlearning_rate: fast\n")
    with pytest.raises(RecipeError, match=r"r\.yaml:2: learning_rate: expected float"):
        load_recipe("sft", str(recipe), [])


# ------------------------------------------------------------------------------------------------ documented errors


def test_unknown_key_lists_closest_keys_and_exits_2(tmp_path: Path, capsys) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("output_dir: x\nlearing_rate: 1.0e-4\n")
    assert main("sft", [str(recipe), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "r.yaml:2: unknown key 'learing_rate'" in err and "Closest valid keys: learning_rate" in err


def test_key_of_the_other_stage_says_which_script(capsys) -> None:
    assert main("sft", [str(RECIPES_DIR / "tiny.yaml"), "beta=0.2", "--dry-run"]) == 2
    assert "It is a DPO key: run DPO recipes with train/dpo.py" in capsys.readouterr().err
    assert main("dpo", [str(RECIPES_DIR / "tiny-dpo.yaml"), "--packing", "--dry-run"]) == 2
    assert "It is a SFT key" in capsys.readouterr().err


def test_malformed_yaml_names_file_line_and_column(tmp_path: Path, capsys) -> None:
    recipe = tmp_path / "bad.yaml"
    recipe.write_text("output_dir: x\nlora_target_modules: [q_proj,\n  v_proj\nlearning_rate: 1\n")
    assert main("sft", [str(recipe), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {recipe}:") and "malformed YAML" in err
    assert err.count("\n") == 1  # one line, no traceback


def test_duplicate_keys_are_refused(tmp_path: Path) -> None:
    recipe = tmp_path / "dup.yaml"
    recipe.write_text("seed: 1\nseed: 2\n")
    with pytest.raises(RecipeError, match=r"dup\.yaml:2:1: malformed YAML: duplicate key 'seed' \(first on line 1\)"):
        load_yaml_mapping(recipe)


def test_a_missing_recipe_is_named(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="recipe not found"):
        load_recipe("sft", str(tmp_path / "nope.yaml"), [])


@pytest.mark.parametrize(("stage", "text", "overrides", "message"), [
    ("sft", "model_name_or_path: gnt:tiny\noutput_dir: out\nbf16: false\n", [], "'data_dir' is required"),
    ("sft", "model_name_or_path: gnt:tiny\noutput_dir: out\nbf16: false\n", [("data_dir", "d"), ("use_peft", "false")],
     "use_peft: false is not supported"),
    ("dpo", "output_dir: out\ndata_dir: d\nbf16: false\n", [], "'sft_adapter' is required"),
    ("dpo", "output_dir: out\ndata_dir: d\nbf16: false\n", [("sft_adapter", "s"), ("lora_r", "4")],
     "lora_r: DPO continues training the SFT adapter"),
    ("dpo", "output_dir: out\ndata_dir: d\nbf16: false\n", [("sft_adapter", "s"), ("pair_kinds", "[label_desicion]")],
     "pair_kinds: .*give a non-empty list of setn_neutral_vs_gendered"),
    ("dpo", "output_dir: out\ndata_dir: d\nbf16: false\n", [("sft_adapter", "s"), ("pair_kinds", "[]")],
     "pair_kinds: \\[\\]: give a non-empty list"),
])
def test_required_and_refused_keys(tmp_path: Path, stage: str, text: str, overrides: list, message: str) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(text)
    with pytest.raises(RecipeError, match=message):
        build_setup(stage, load_recipe(stage, str(recipe), overrides))


# ------------------------------------------------------------------------------------------------ shipped recipes


def test_every_training_recipe_is_listed_here() -> None:
    """A new training recipe must be added to TRAINING_RECIPES so the dry-run test covers it."""
    training = {p.name for p in RECIPES_DIR.glob("*.yaml") if not p.name.startswith(("eval", "judge", "templated"))}
    assert training == set(TRAINING_RECIPES) | ONPOLICY_RECIPES


@pytest.mark.parametrize("name", sorted(TRAINING_RECIPES))
def test_every_recipe_dry_runs(name: str, capsys) -> None:
    stage = TRAINING_RECIPES[name]
    assert main(stage, [str(RECIPES_DIR / name), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"gnt-align {stage.upper()} dry-run" in out and "# launch:" in out
    resolved = yaml.safe_load(out)  # the report is YAML (comments + resolved keys)
    assert resolved["use_peft"] is True and resolved["output_dir"].startswith("runs/")
    assert resolved.get("save_total_limit") is None  # the evaluator reads every checkpoint


def test_gpu_recipes_use_bf16_and_cpu_recipes_do_not() -> None:
    for name, stage in TRAINING_RECIPES.items():
        values = load_recipe(stage, str(RECIPES_DIR / name), []).values
        cpu = name.startswith(("tiny", "smollm", "gemma270m"))
        assert values["bf16"] is (not cpu), name
        if not cpu:
            assert values.get("dtype") == "bfloat16" and values["report_to"] == ["wandb"]


def test_qlora_recipe_stores_4bit_in_the_compute_dtype() -> None:
    values = load_recipe("sft", str(RECIPES_DIR / "qwen-qlora.yaml"), []).values
    assert values["load_in_4bit"] and values["bnb_4bit_quant_type"] == "nf4" and values["use_bnb_nested_quant"]
    assert values["bnb_4bit_quant_storage"] == values["dtype"] == "bfloat16"


def test_gemma_recipe_stops_on_end_of_turn() -> None:
    values = load_recipe("sft", str(RECIPES_DIR / "gemma.yaml"), []).values
    assert values["eos_token"] == "<end_of_turn>" and values["system_role"] == "auto"


def test_dry_run_shows_the_override_and_the_world(capsys) -> None:
    assert main("sft", [str(RECIPES_DIR / "qwen.yaml"), "--learning_rate", "3e-5", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "learning_rate: 3.0e-05  # override" in out
    assert "world size 1" in out and "effective batch = 4 x 4 x 1 = 16" in out


def test_help(capsys) -> None:
    assert main("dpo", ["--help"]) == 0
    assert "usage: train/dpo.py [RECIPE] [key=value ...]" in capsys.readouterr().out
    assert main("sft", ["--help-keys"]) == 0
    assert "ModelConfig" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------------ launch configs


def test_accelerate_configs() -> None:
    top = yaml.safe_load((PROJECT_ROOT / "accelerate_config.yaml").read_text())
    assert top["distributed_type"] == "MULTI_GPU" and top["mixed_precision"] == "bf16"
    cpu = yaml.safe_load((ACCELERATE / "multi_cpu.yaml").read_text())
    assert (cpu["distributed_type"], cpu["num_processes"], cpu["use_cpu"]) == ("MULTI_GPU", 2, False)
    zero2 = yaml.safe_load((ACCELERATE / "zero2.yaml").read_text())
    zero3 = yaml.safe_load((ACCELERATE / "zero3.yaml").read_text())
    assert zero2["deepspeed_config"]["zero_stage"] == 2
    assert zero3["deepspeed_config"]["zero_stage"] == 3
    assert zero3["deepspeed_config"]["zero3_init_flag"] and zero3["deepspeed_config"]["zero3_save_16bit_model"]
    fsdp = yaml.safe_load((ACCELERATE / "fsdp.yaml").read_text())
    assert fsdp["distributed_type"] == "FSDP" and fsdp["fsdp_config"]["fsdp_state_dict_type"] == "FULL_STATE_DICT"
    multinode = yaml.safe_load((ACCELERATE / "multinode-deepspeed.yaml").read_text())
    assert multinode["distributed_type"] == "DEEPSPEED" and multinode["num_machines"] == 2
    assert multinode["deepspeed_config"]["deepspeed_multinode_launcher"] == "standard"


def test_node_commands_differ_only_in_machine_rank() -> None:
    common = dict(stage="sft", recipe="recipes/qwen.yaml", num_machines=2, processes_per_machine=8,
                  main_process_ip="10.0.0.1", overrides=["learning_rate=1e-4"], python="python")
    first, second = (node_command(NodeLaunch(machine_rank=r, **common)) for r in (0, 1))
    assert first[:3] == ["python", "-m", "accelerate.commands.launch"]
    assert first[first.index("--num_processes") + 1] == "16"  # the total over machines
    assert first[first.index("--machine_rank") + 1] == "0" and second[second.index("--machine_rank") + 1] == "1"
    assert [a for a in first if a not in ("0", "1")] == [a for a in second if a not in ("0", "1")]
    assert first[-3:] == ["train/sft.py", "recipes/qwen.yaml", "learning_rate=1e-4"]
    with pytest.raises(ValueError, match="machine_rank 2 outside"):
        NodeLaunch(machine_rank=2, **common)


def test_slurm_environment_fills_the_launch() -> None:
    env = {"SLURM_JOB_NUM_NODES": "4", "SLURM_NODEID": "3", "SLURM_GPUS_ON_NODE": "8", "MAIN_ADDR": "gpu017",
           "MAIN_PORT": "29517"}
    assert slurm_defaults(env) == {"num_machines": 4, "machine_rank": 3, "processes_per_machine": 8,
                                   "main_process_ip": "gpu017", "main_process_port": 29517}
    assert slurm_defaults({"CUDA_VISIBLE_DEVICES": "0,1,2,3"})["processes_per_machine"] == 4


def test_slurm_script_and_node_command_cli() -> None:
    subprocess.run(["bash", "-n", str(PROJECT_ROOT / "scripts/slurm/train.sbatch")], check=True)
    import sys

    def node_command(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(PROJECT_ROOT / "scripts/slurm/node_command.py"), *argv],
                              capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})

    new = node_command("recipes/qwen-dpo.yaml", "stage=dpo", "num_machines=2", "machine_rank=1",
                       "processes_per_machine=4", "main_process_ip=10.1.2.3", "launch_args=--mixed_precision no",
                       "sft_adapter=runs/qwen-sft")
    assert new.returncode == 0, new.stderr
    assert "--num_processes 8 --machine_rank 1 --main_process_ip 10.1.2.3" in new.stdout
    assert "--mixed_precision no train/dpo.py" in new.stdout
    assert new.stdout.strip().endswith("train/dpo.py recipes/qwen-dpo.yaml sft_adapter=runs/qwen-sft")
    # the old spelling (flags, then -- and the training keys) gives the same command and says what to write
    old = node_command("--stage", "dpo", "--recipe", "recipes/qwen-dpo.yaml", "--num-machines", "2",
                       "--machine-rank", "1", "--processes-per-machine", "4", "--main-ip", "10.1.2.3",
                       "--launch-arg", "--mixed_precision no", "--", "sft_adapter=runs/qwen-sft")
    assert old.returncode == 0, old.stderr
    assert old.stdout == new.stdout
    for spelling in ("'--recipe' is deprecated", "'--launch-arg' is deprecated", "'--' is deprecated",
                     "'main_ip' is deprecated"):
        assert spelling in old.stderr
    missing = node_command("recipes/qwen.yaml", "stage=sft", "num_machines=2")
    assert missing.returncode == 2
    assert "not in a SLURM job and not given: machine_rank, processes_per_machine, main_process_ip" in missing.stderr


@pytest.mark.parametrize(("override", "expected"), [
    ("max_steps=-3", "max_steps: -3: give a positive number of optimizer steps, or -1"),
    ("max_steps=0", "max_steps: 0: give a positive number"),
    ("max_length=0", "max_length: 0: give a positive number of tokens"),
    ("max_train_samples=-1", "max_train_samples: -1: give a positive number of rows"),
    ("max_eval_samples=0", "max_eval_samples: 0: give a positive number of rows"),
])
def test_values_with_another_meaning_or_a_late_crash_are_refused(override: str, expected: str, capsys) -> None:
    assert main("sft", [str(RECIPES_DIR / "tiny.yaml"), override, "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and expected in err[-1]


@pytest.mark.parametrize(
    ("value", "annotation", "message"),
    [
        (True, int, "a boolean where a number is expected"),  # pydantic alone would read True as 1
        ("fast", float | None, "expected float | None, got 'fast'"),
        ([1, 2], str, "not a string"),
        (4.5, int, "fractional part"),
        ("fast", float, "unable to parse string as a number"),
    ],
)
def test_values_that_do_not_fit_say_what_was_expected(value, annotation, message) -> None:
    with pytest.raises(ValueError, match=message):
        coerce_value(value, annotation)


def test_an_integer_for_a_float_field_stays_an_integer() -> None:
    # TrainingArguments reads warmup_steps 4 (steps) and 0.4 (a ratio) differently
    assert type(coerce_value("4", float)) is int and type(coerce_value(4, float | None)) is int
    assert coerce_value(16, str) == "16"  # run_name: 16


@pytest.mark.parametrize("name", sorted(ONPOLICY_RECIPES))
def test_every_onpolicy_recipe_resolves_with_its_dpo_recipe(name: str) -> None:
    from gnt.alignment.onpolicy import OnPolicyConfig, dpo_recipe
    from gnt.cli.onpolicy import COMMAND

    call = COMMAND.call([str(RECIPES_DIR / name)])
    assert call is not None
    config = call.build(OnPolicyConfig).validate()
    assert config.samples_per_prompt >= 2 and config.rewards.get("judge") and config.judge
    assert (PROJECT_ROOT / config.judge).is_file() and (PROJECT_ROOT / (config.dpo_recipe or "")).is_file()
    resolved = dpo_recipe(config, config.policy or "", Path("pairs"), Path("round-1"))
    assert resolved.values["pair_kinds"] == ["onpolicy"]
