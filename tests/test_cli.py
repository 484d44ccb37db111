"""The ``gnt`` console script: its entry point, the subcommand list, and a subcommand run end to end."""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import tomllib

from gnt.cli import COMMANDS
from gnt.cli import main as gnt_main
from gnt.paths import PROJECT_ROOT

EXPECTED = ("build", "sft", "dpo", "eval", "judge", "comet", "attribute", "templated", "report", "watch")


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
    assert (PROJECT_ROOT / COMMANDS["eval"][1]).is_file()  # each names the script it stands for
    assert all((PROJECT_ROOT / script).is_file() for _, script, _ in COMMANDS.values())


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
