"""The ``gnt`` console script: its entry point, the subcommand list, and a subcommand run end to end."""

from __future__ import annotations

import dataclasses
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from _report_fixtures import metrics_of

from gnt.cli import COMMANDS
from gnt.cli import main as gnt_main
from gnt.paths import PROJECT_ROOT

EXPECTED = ("build", "sft", "dpo", "grpo", "onpolicy", "eval", "judge", "comet", "attribute", "templated", "report", "watch", "model", "launch")


def gnt(*args: str, cwd: Path = PROJECT_ROOT) -> subprocess.CompletedProcess:
    """The console script's code path, as a module (the venv's installed ``gnt`` may belong to another checkout)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(PROJECT_ROOT), os.environ.get("PYTHONPATH"))))}
    return subprocess.run([sys.executable, "-m", "gnt.cli", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env=env)


def test_pyproject_declares_the_gnt_console_script() -> None:
    scripts = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"gnt": "gnt.cli:main"}
    assert pkgutil.resolve_name(scripts["gnt"]) is gnt_main  # what the installed `gnt` wrapper imports and calls


def test_help_lists_every_subcommand_with_one_line() -> None:
    done = gnt("--help")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert tuple(COMMANDS) == EXPECTED
    for name in EXPECTED:
        described = [line for line in lines if line.split()[:1] == [name]]
        assert len(described) == 1 and len(described[0].split()) > 2, (name, done.stdout)
    assert (PROJECT_ROOT / COMMANDS["eval"].script).is_file()  # each names the script it stands for
    assert all((PROJECT_ROOT / command.script).is_file() for command in COMMANDS.values())


def test_unknown_subcommand_is_a_usage_error_with_the_closest_name() -> None:
    done = gnt("evaluate")
    assert done.returncode == 2
    assert "unknown command 'evaluate'" in done.stderr and "gnt eval" in done.stderr
    assert gnt().returncode == 2  # no command: usage on stdout, exit 2


def test_gnt_build_runs_end_to_end_like_the_script(tmp_path: Path) -> None:
    flags = ("--langs", "it", "--templated-pairs", "10", "--no-progress")
    via_gnt = gnt("build", "--out", str(tmp_path / "a"), *flags, cwd=tmp_path)
    assert via_gnt.returncode == 0, via_gnt.stderr
    assert "sft/train" in via_gnt.stdout and str(tmp_path / "a") in via_gnt.stdout
    via_script = subprocess.run([sys.executable, str(PROJECT_ROOT / "data/build.py"), "--out", str(tmp_path / "b"),
                                 *flags], capture_output=True, text=True, timeout=300)
    assert via_script.returncode == 0, via_script.stderr
    for name in ("sft/train.jsonl", "dpo/train.jsonl", "eval/mgente_test.jsonl", "eval/templated_suite.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    counts = [json.loads((tmp_path / d / "manifest.json").read_text())["counts"] for d in ("a", "b")]
    assert counts[0] == counts[1] and counts[0]["totals"]


def test_subcommand_flags_and_errors_are_the_scripts(tmp_path: Path) -> None:
    assert gnt("build", "--help").stdout.startswith("usage: gnt build ")
    bad = gnt("build", "--langs", "xx", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and "unknown language" in bad.stderr and not (tmp_path / "x").exists()
    dry = gnt("sft", str(PROJECT_ROOT / "recipes/tiny.yaml"), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "learning_rate" in dry.stdout
    typo = gnt("judge", "validate", "fromat=CROSS-L")
    assert typo.returncode == 2 and "format" in typo.stderr


# ----------------------------------------------------------------------------------------------------------------
# One convention: [SUBJECT] [RECIPE] [key=value | --key value]; --help from the config; unknown keys exit 2
# ----------------------------------------------------------------------------------------------------------------


def _commands(tmp_path: Path) -> dict[str, tuple]:
    """Per converted command: its main, the arguments before the keys (its subject), and its schema."""
    from gnt.cli import attribute, build, comet, judge, report, watch

    queue = tmp_path / "queue"
    queue.mkdir(exist_ok=True)
    return {
        "build": (build.main, [], build.COMMAND.schema),
        "report": (report.main, [str(tmp_path)], report.COMMAND.schema),
        "attribute": (attribute.main, [str(tmp_path)], attribute.COMMAND.schema),
        "watch": (watch.main, [str(queue), "command=true"], watch.COMMAND.schema),
        "judge": (judge.main, [str(tmp_path)], judge.COMMAND.schema),
        "judge validate": (judge.main, ["validate"], judge.COMMAND.actions["validate"].schema),
        "judge check": (judge.main, ["check"], judge.COMMAND.actions["check"].schema),
        "comet": (comet.main, [str(tmp_path)], comet.COMMAND.schema),
    }


@pytest.mark.parametrize("name", ["build", "report", "attribute", "watch", "judge", "judge validate", "judge check",
                                  "comet"])
def test_help_lists_every_key_with_its_default(name: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from gnt.cli.help import describe_default

    main, subject, schema = _commands(tmp_path)[name]
    action = subject[:1] if name.startswith("judge ") else []  # validate / check: the help of that action
    assert main([*action, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: ") and "[key=value ...]" in out.splitlines()[0]
    assert schema.keys
    for key, spec in schema.keys.items():
        assert f"\n  {key} = {describe_default(spec.default)}  (" in out, (name, key)
    assert "exit status 2" in out


@pytest.mark.parametrize("script", ["eval/evaluate.py", "eval/templated.py", "eval/judge.py", "eval/comet.py"])
def test_every_key_of_the_evaluation_commands_has_a_meaning(script: str, capsys: pytest.CaptureFixture) -> None:
    """The same help layout in every command, and no key left without its meaning."""
    from gnt.cli import comet, evaluate, judge, templated

    main = {"eval/evaluate.py": evaluate.main, "eval/templated.py": templated.main, "eval/judge.py": judge.main,
            "eval/comet.py": comet.main}[script]
    assert main(["x", "--help"] if script == "eval/comet.py" else ["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: ") and "exit status 2" in out
    assert "\n  max_new_tokens = " in out or script == "eval/comet.py"
    assert "(no description)" not in out, script


def test_help_gives_the_meaning_written_on_each_field(capsys: pytest.CaptureFixture) -> None:
    from gnt.cli import attribute, build, report, watch
    from gnt.data.build import BuildConfig

    for command in (build.COMMAND, report.COMMAND, attribute.COMMAND, watch.COMMAND):
        assert all(spec.help for spec in command.schema.keys.values()), command.script
    assert build.main(["--help"]) == 0
    out = capsys.readouterr().out
    meaning = next(f.metadata["help"] for f in dataclasses.fields(BuildConfig) if f.name == "templated_pairs")
    assert f"  templated_pairs = {BuildConfig.templated_pairs}  (int)\n      {meaning}" in out
    assert "out_dir = outputs/data  (str)  also --out" in out


@pytest.mark.parametrize(("name", "typo", "closest"), [
    ("build", "templated_pair=3", "templated_pairs"),
    ("report", "samples_per_cel=2", "samples_per_cell"),
    ("attribute", "--max-row=3", "max_rows"),
    ("watch", "pol_s=1", "poll_s"),
    ("judge", "judge_modle=x", "judge_model"),
    ("judge validate", "fromat=CROSS-L", "format"),
    ("judge check", "exemplar_dir=x", "exemplars_dir"),
    ("comet", "xcomet_batchsize=3", "xcomet_batch_size"),
])
def test_an_unknown_key_exits_2_naming_the_closest(name: str, typo: str, closest: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture) -> None:
    main, subject, _ = _commands(tmp_path)[name]
    assert main([*subject, typo]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "unknown key" in err[-1] and f"Closest valid keys: {closest}" in err[-1], err
    assert "Traceback" not in "\n".join(err)


def test_gnt_build_key_value_is_the_old_flags(tmp_path: Path) -> None:
    old = gnt("build", "--out", str(tmp_path / "a"), "--langs", "it", "--templated-pairs", "10", "--no-progress")
    new = gnt("build", f"out_dir={tmp_path / 'b'}", "langs=it", "templated_pairs=10", "progress=false")
    assert old.returncode == 0 and new.returncode == 0, (old.stderr, new.stderr)
    assert "rows (" not in new.stderr  # progress=false: no progress bars
    for name in ("sft/train.jsonl", "dpo/train.jsonl", "eval/mgente_test.jsonl", "eval/templated_suite.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    counts = json.loads((tmp_path / "b" / "manifest.json").read_text())["counts"]["mgente"]
    assert {key.split("/")[0] for key in counts["test"]} == {"it"}


def test_build_reads_its_keys_from_a_recipe_with_file_and_line_errors(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture) -> None:
    from gnt.cli.build import COMMAND, build_config

    recipe = tmp_path / "data.yaml"
    recipe.write_text("langs: [it, es]\nseed: 3\ntemplated_pairs: 0\n")
    config = build_config(COMMAND.call([str(recipe), "seed=5", "--out", str(tmp_path / "d")]))
    assert config.langs == ("it", "es") and config.seed == 5 and config.templated_pairs == 0
    assert config.out_dir == str(tmp_path / "d") and config.test_fraction == 0.2  # BuildConfig's own default
    recipe.write_text("langs: it\ntemplatedpairs: 3\n")
    from gnt.cli.build import main

    assert main([str(recipe)]) == 2
    err = capsys.readouterr().err
    assert f"{recipe}:2: unknown key 'templatedpairs'" in err and "templated_pairs" in err


def attribute_config(argv: list[str]):
    """The attribution or contrastive config an ``eval/attribute.py`` command line resolves to."""
    from gnt.cli.attribute import COMMAND, build_config

    return build_config(COMMAND.call(argv))


def test_attribute_keys_and_old_flags_give_the_same_config() -> None:
    from gnt.attribution.config import AttributionConfig, ContrastiveConfig

    new = attribute_config(["res", "max_rows=2", "sets=Set-N", "plots=false", "cells=it/G+S/4,es/G+S/4"])
    old = attribute_config(["res", "--max-rows", "2", "--sets", "Set-N", "--no-plots", "--cell", "it/G+S/4",
                        "--cell", "es/G+S/4"])
    assert new == old and isinstance(new, AttributionConfig)
    assert new.cells == ("it/G+S/4", "es/G+S/4") and new.plots is False and new.max_rows == 2
    assert attribute_config(["res", "--all-rows"]).max_rows is None
    contrastive = attribute_config(["contrastive=true", "data=d", "--include-non-common"])
    assert isinstance(contrastive, ContrastiveConfig) and contrastive.common_only is False
    assert contrastive.max_rows == ContrastiveConfig.max_rows != AttributionConfig.max_rows  # each mode's default


def test_attribute_refuses_a_key_of_the_other_mode(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from gnt.cli.attribute import main

    assert main([str(tmp_path), "min_refs=2"]) == 2
    assert "min_refs: not a key of attribution" in capsys.readouterr().err
    assert main(["contrastive=true", "balance_by=judged"]) == 2
    assert "balance_by: not a key of contrastive=true" in capsys.readouterr().err
    assert main(["method=attnlrp"]) == 2  # no result folder and not contrastive
    assert "give an evaluation result folder" in capsys.readouterr().err


def test_report_key_value_writes_where_out_dir_says(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from _report_fixtures import make_results

    from gnt.cli.report import main

    results = make_results(tmp_path / "results", steps=(2,), extras=False, langs=("it",), rows_per_set=2)
    assert main([str(results), f"out_dir={tmp_path / 'r'}", "bootstrap_samples=20", "title=Run one"]) == 0
    assert f"report: {tmp_path / 'r' / 'report.md'}" in capsys.readouterr().out
    assert (tmp_path / "r" / "report.md").read_text(encoding="utf-8").startswith("# Run one")
    assert main([str(results), "report=false"]) == 0  # nothing to write, nothing to log
    assert not (results / "report").exists()
    assert main(["out_dir=x"]) == 2
    assert "give the RESULTS first" in capsys.readouterr().err


def test_judge_takes_the_results_folder_first_as_it_did_after_the_word_judge(tmp_path: Path) -> None:
    from test_judge_apply import GENDERED_WORDS, _results

    def carry_words(record: dict) -> None:
        record["gendered_words"] = list(GENDERED_WORDS.get(record["id"], ()))

    metrics = []
    for form in (["judge"], []):
        out = _results(tmp_path / f"r{len(form)}", carry_words)
        done = gnt("judge", *form, str(out), "judge=lexical", "models=base")
        assert done.returncode == 0, done.stderr
        metrics.append(metrics_of(out, "base")["overall"]["gnt_accuracy"])
    assert metrics[0] == metrics[1] and metrics[0]["Set-G"]["value"] > 0
    typo = gnt("judge", "valdate")
    assert typo.returncode == 2 and "did you mean `validate`" in typo.stderr


def test_attribute_without_a_result_reads_a_recipe_in_first_place(tmp_path: Path) -> None:
    from gnt.attribution.config import ContrastiveConfig

    recipe = tmp_path / "contrastive.yaml"
    recipe.write_text("contrastive: true\ndata: data/sample\nlangs: [it]\nmin_refs: 3\n")
    config = attribute_config([str(recipe), "max_rows=2"])
    assert isinstance(config, ContrastiveConfig) and config.result_dir is None
    assert (config.data, config.langs, config.min_refs, config.max_rows) == ("data/sample", ("it",), 3, 2)
    with_result = attribute_config([str(tmp_path), str(recipe)])  # a result folder first, then the recipe
    assert with_result.result_dir == str(tmp_path) and with_result.min_refs == 3
