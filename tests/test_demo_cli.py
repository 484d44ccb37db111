"""The demo's command line: the project's one convention, step overrides as STEP.KEY=VALUE (old spellings kept)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def demo(*words: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "scripts/demo.py", *words], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def commands(result: subprocess.CompletedProcess) -> list[str]:
    return [line[2:] for line in result.stdout.splitlines() if line.startswith("$ ")]


def test_keys_and_step_overrides_reach_the_commands() -> None:
    result = demo("model=tiny", "out_dir=outputs/x", "steps=sft,eval", "sft.max_steps=3", "eval.rows_per_lang=4",
                  "templated.pairs_per_lang=2", "dry_run=true")
    assert result.returncode == 0, result.stderr
    sft, evaluation = commands(result)
    assert "train/sft.py recipes/tiny.yaml" in sft and sft.endswith("max_steps=3")
    assert "output_dir=outputs/x/runs/sft" in sft
    assert "eval/evaluate.py recipes/eval-tiny.yaml" in evaluation
    assert "steps=grid" in evaluation and "rows_per_lang=4" in evaluation
    assert "templated.pairs_per_lang=2" in evaluation


def test_the_gemma_demo_aligns_on_policy_chooses_its_stage_on_dev_and_scores_every_stage() -> None:
    align, select, every = commands(demo("out_dir=o", "steps=dpo,select,eval", "dpo.rounds=2", "dry_run=true"))
    assert "train/onpolicy.py recipes/gemma270m-onpolicy.yaml policy=o/runs/sft" in align
    assert "output_dir=o/runs/onpolicy" in align and "judge_keys.judge_adapter=o/runs/judge" in align
    assert align.endswith("rounds=2")  # the alignment step's keys are the on-policy recipe's
    assert "adapters=o/runs/sft,o/runs/onpolicy/round-1" in select and "split=dev" in select
    assert "steps=grid,judge" in select and "include_base=false" in select  # test rows never choose the stage
    assert "runs=o/runs/sft,o/runs/onpolicy/round-1 out_dir=o/eval" in every
    final = commands(demo("out_dir=o", "steps=eval", "evaluate=final", "dry_run=true"))[0]
    assert "runs=o/runs/onpolicy/round-1 out_dir=o/eval" in final
    assert "runs=o/runs/sft,o/runs/dpo" in commands(demo("model=tiny", "out_dir=o", "steps=eval", "dry_run=true"))[0]


def test_old_flags_are_synonyms() -> None:
    new = demo("model=tiny", "sft.max_steps=3", "dry_run=true")
    old = demo("--model", "tiny", "--set", "sft:max_steps=3", "--dry-run")
    assert new.returncode == old.returncode == 0, old.stderr
    assert commands(new) == commands(old) and len(commands(new)) == 6  # data, judge x2, sft, dpo, evaluation


def test_the_printed_commands_use_the_one_key_value_convention() -> None:
    for model, steps in (("gemma", 7), ("smollm", 4), ("tiny", 6)):  # gemma: + the stage choice on dev  # smollm judges lexically: no judge to train
        printed = commands(demo(f"model={model}", "dry_run=true"))
        assert len(printed) == steps
        for command in printed:
            assert not [word for word in command.split() if word.startswith("--")], command
        assert "data/build.py out_dir=" in printed[0]


def test_the_judge_is_trained_validated_and_used_where_the_demo_put_it() -> None:
    data, train, validate, *_, evaluation = commands(demo("out_dir=o", "judge_training.max_steps=5", "dry_run=true"))
    assert "judge_langs=it,es,de,el" in data  # the judge covers every language, the translator it and es
    assert "train/sft.py recipes/judge-gemma270m.yaml data_dir=o/data output_dir=o/runs/judge" in train
    assert train.endswith("max_steps=5")
    assert "eval/judge.py validate recipes/judge-gemma270m.yaml judge_adapter=o/runs/judge" in validate
    assert "data=o/data/eval/judge_references.jsonl" in validate
    assert "judge.judge_adapter=o/runs/judge" in evaluation


def test_unknown_keys_steps_and_values_fail_before_anything_runs() -> None:
    for words, expected in [
        (("modl=tiny",), "modl"),
        (("steps=data,evl",), "steps"),
        (("model=huge",), "model"),
        (("trian.max_steps=3",), "STEP.KEY=VALUE"),
    ]:
        result = demo(*words, "dry_run=true")
        assert result.returncode == 2, (words, result.stdout)
        assert expected in result.stderr and not commands(result), (words, result.stderr)


def test_help_lists_every_key_with_its_default() -> None:
    result = demo("--help")
    assert result.returncode == 0
    for line in ("model = gemma", "out_dir = null", "dry_run = false", "STEP.KEY=VALUE"):
        assert line in result.stdout


def test_the_demo_records_each_steps_time_and_peak_memory(tmp_path: Path) -> None:
    import json

    result = demo("model=tiny", f"out_dir={tmp_path / 'd'}", "steps=data")
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "d" / "demo_record.json").read_text(encoding="utf-8"))
    assert list(record["steps"]) == ["data"] and record["model"] == "tiny"
    data = record["steps"]["data"]
    assert data["seconds"] > 0 and 20 < data["peak_rss_mb"] < 4096  # a Python process that imported the data code
    assert record["peak_rss_mb"] == data["peak_rss_mb"] and record["environment"]["git"]
    assert "peak memory" in result.stdout
