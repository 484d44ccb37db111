"""``gnt eval RECIPE`` runs the recipe's steps in order, skips complete ones and reruns only what lost its files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gnt.cli.evaluate import load_pipeline, main
from gnt.filenames import RECORD, REPORT_HTML, SUMMARY
from gnt.recipe import RecipeError

# a tiny slice: one cell, two rows, two suite pairs, on the tiny model and its two checkpoints
SLICE = """\
langs: [it]
configs: [None]
shots: [0]
rows_per_lang: 2
max_new_tokens: 8
device: cpu
dtype: float32
cpu_threads: 1
bootstrap_samples: 20
"""
STEPS = """\
steps: [grid, templated, report]
templated:
  pairs_per_lang: 2
  styles: [plain]
  plots: false
report: {samples_per_cell: 1}
"""
MODELS = ["base", "sft/checkpoint-1", "sft/checkpoint-2"]


def _recipe(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "recipe.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _run(recipe: Path, run: Path, out: Path, capsys: pytest.CaptureFixture) -> dict[str, str]:
    """One ``gnt eval`` (with the old ``--run``/``--out`` flags); what each step did, from its progress line."""
    assert main([str(recipe), "--run", str(run), "--out", str(out), "--quiet"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
    return {line.split()[1].rstrip(":"): line.split()[2] for line in lines}


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory, eval_tiny_run: Path) -> tuple[Path, Path]:
    """A recipe with steps and the results folder of its first run (every step ran)."""
    folder = tmp_path_factory.mktemp("pipeline")
    recipe = _recipe(folder, SLICE + STEPS)
    out = folder / "eval"
    pipeline = load_pipeline([str(recipe), f"run={eval_tiny_run}", f"out={out}", "progress=false"])
    outcomes = pipeline.run(say=lambda _line: None)
    assert [(o.step, o.status) for o in outcomes] == [("grid", "ran"), ("templated", "ran"), ("report", "ran")]
    return recipe, out


def test_the_steps_ran_in_order_and_wrote_their_files(evaluated: tuple[Path, Path]) -> None:
    _, out = evaluated
    assert (out / SUMMARY).is_file()
    for name in MODELS:
        assert (out / name / RECORD).is_file(), name
        assert (out / name / "templated" / RECORD).is_file(), name
    assert (out / "templated_suite" / SUMMARY).is_file()
    html = (out / "report" / REPORT_HTML).read_text(encoding="utf-8")
    assert "sft/checkpoint-2" in html


def test_a_second_run_skips_every_step(evaluated, eval_tiny_run: Path, capsys) -> None:
    recipe, out = evaluated
    assert _run(recipe, eval_tiny_run, out, capsys) == {"grid": "skipped", "templated": "skipped", "report": "skipped"}


def test_deleting_one_steps_output_reruns_only_that_step(evaluated, eval_tiny_run: Path, capsys) -> None:
    recipe, out = evaluated
    shutil.rmtree(out / "report")
    assert _run(recipe, eval_tiny_run, out, capsys) == {"grid": "skipped", "templated": "skipped", "report": "ran"}
    assert (out / "report" / REPORT_HTML).is_file()
    (out / "sft/checkpoint-1" / "templated" / RECORD).unlink()
    # the suite reruns (from the generation cache) and rewrites results: the report that reads them follows
    assert _run(recipe, eval_tiny_run, out, capsys) == {"grid": "skipped", "templated": "ran", "report": "ran"}
    assert (out / "sft/checkpoint-1" / "templated" / RECORD).is_file()
    assert _run(recipe, eval_tiny_run, out, capsys) == {"grid": "skipped", "templated": "skipped", "report": "skipped"}


def test_a_changed_setting_reruns_its_step(evaluated, eval_tiny_run: Path, tmp_path: Path) -> None:
    recipe, out = evaluated
    copy = tmp_path / "eval"
    shutil.copytree(out, copy)
    pipeline = load_pipeline([str(recipe), f"run={eval_tiny_run}", f"out={copy}", "max_new_tokens=9", "steps=grid"])
    assert [(o.step, o.status) for o in pipeline.run(say=lambda _line: None)] == [("grid", "ran")]
    pipeline = load_pipeline([str(recipe), f"run={eval_tiny_run}", f"out={copy}", "max_new_tokens=9",
                              "templated.pairs_per_lang=1"])
    assert [(o.step, o.status) for o in pipeline.run(say=lambda _line: None)] == [
        ("grid", "skipped"), ("templated", "ran"), ("report", "ran")]


def test_a_recipe_without_steps_runs_the_grid_only(tmp_path: Path) -> None:
    assert load_pipeline([str(_recipe(tmp_path, SLICE)), "model=tiny"]).steps == ["grid"]


def test_an_unknown_step_names_the_closest_step_and_its_line(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, SLICE + "steps:\n  - grid\n  - templatd\n")
    with pytest.raises(RecipeError, match=r"recipe\.yaml:12: unknown step 'templatd'\. Did you mean 'templated'\?"):
        load_pipeline([str(recipe), "model=tiny"])
    with pytest.raises(RecipeError, match=r"override 'steps': unknown step 'reprot'\. Did you mean 'report'\?"):
        load_pipeline([str(_recipe(tmp_path, SLICE)), "model=tiny", "steps=grid,reprot"])


def test_an_unknown_step_setting_names_the_closest_key(tmp_path: Path, capsys) -> None:
    recipe = _recipe(tmp_path, SLICE + "steps: [grid, templated]\ntemplated:\n  styles: [plain]\n  pairs_per_lnag: 2\n")
    with pytest.raises(RecipeError, match=r"recipe\.yaml:13: templated setting: unknown key 'pairs_per_lnag'\. "
                                          r"Closest valid keys: pairs_per_lang"):
        load_pipeline([str(recipe), "model=tiny"])
    # the same from the command line, through the script: exit status 2 before anything runs
    out = tmp_path / "never"
    assert main([str(_recipe(tmp_path, SLICE)), "model=tiny", f"out={out}", "report.sampels_per_cell=2"]) == 2
    err = capsys.readouterr().err
    assert "override 'report.sampels_per_cell': report setting: unknown key" in err and "samples_per_cell" in err
    assert not out.exists()


def test_the_old_flags_are_recipe_keys(tmp_path: Path, capsys) -> None:
    from gnt.cli.templated import COMMAND
    from gnt.evaluation.config import EvalConfig
    from gnt.templated_suite.run import SuiteConfig

    recipe = _recipe(tmp_path, SLICE + "runs: [runs/a]\n")
    call = COMMAND.call([str(recipe), "--run", "runs/b", "run=runs/c,runs/d", "--adapter", "x/ckpt",
                         "--out", "o", "--quiet", "--allow-leakage", "--suite", "s.jsonl"])
    evaluation = call.owned(EvalConfig)
    assert evaluation["runs"] == ["runs/a", "runs/b", "runs/c", "runs/d"]  # flags add to what the recipe lists
    assert evaluation["adapters"] == ["x/ckpt"] and evaluation["out_dir"] == "o"
    assert evaluation["progress"] is False and evaluation["allow_leakage"] is True
    assert call.owned(SuiteConfig) == {"suite": "s.jsonl"}
    with pytest.raises(RecipeError, match="unknown key 'suite'"):  # a templated key is not a grid key
        load_pipeline([str(recipe), "--suite", "s.jsonl"])
    assert COMMAND.call(["--help"]) is None
    printed = capsys.readouterr().out
    assert "usage: eval/templated.py [wmt24] [RECIPE] [key=value ...]" in printed
    assert "\n  pairs_per_lang = null  (" in printed and "\n  grid_shots = 4  (" in printed
    assert "\n  runs = (empty)  (list[str])  also --run" in printed and "(no description)" not in printed
