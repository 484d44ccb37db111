"""The old spellings: one dated table, each still works where its new key is a key, and each warns once."""

from __future__ import annotations

import datetime
import logging
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gnt import deprecated
from gnt.cli import COMMANDS
from gnt.cli.command import tokenize
from gnt.deprecated import DEPRECATED
from gnt.paths import PROJECT_ROOT, RECIPES_DIR


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a new process: no old spelling has warned yet."""
    monkeypatch.setattr(deprecated, "_warned", set())


def _all_keys() -> set[str]:
    keys: set[str] = set()
    for command in COMMANDS.values():
        for each in (command, *command.actions.values()):
            keys |= set(each.schema.keys)
    return keys


def test_every_row_is_dated_and_names_a_key_that_exists() -> None:
    keys = _all_keys()
    for entry in DEPRECATED:
        assert datetime.date.fromisoformat(entry.since) <= datetime.date.today(), entry
        assert entry.old != entry.new and entry.kind in ("key", "switch", "word"), entry
        if entry.kind in ("key", "switch"):
            assert entry.new in keys, f"{entry.old} → {entry.new}: no command has the key {entry.new}"


def test_an_old_key_warns_once_and_means_its_new_key(fresh: None, caplog: pytest.LogCaptureFixture) -> None:
    build = COMMANDS["build"]
    with caplog.at_level(logging.WARNING, logger="gnt.deprecated"):
        first = build.call(["--out", "a", "prompts=p"])
        second = build.call(["out=b"])
    assert first.values["out_dir"] == "a" and first.values["prompts_dir"] == "p" and second.values["out_dir"] == "b"
    warnings = [r.getMessage() for r in caplog.records]
    assert len([w for w in warnings if "'out' is deprecated since 2026-12-01: write out_dir" in w]) == 1, warnings
    assert any("'prompts' is deprecated" in w for w in warnings)


def test_switches_and_words(fresh: None, caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("langs: [it]\n")
    with caplog.at_level(logging.WARNING, logger="gnt.deprecated"):
        call = COMMANDS["eval"].call(["--recipe", str(recipe), "--quiet", "--set", "judge:judge=lexical"])
        attribute = COMMANDS["attribute"].call(["res", "--all-rows"])
    assert call.recipe.path == str(recipe) and call.values["progress"] is False
    assert call.values["judge"] == {"judge": "lexical"} and attribute.values["max_rows"] is None
    text = caplog.text
    for old in ("'--recipe' is deprecated", "'--quiet' is deprecated", "'--set' is deprecated",
                "'--all-rows' is deprecated"):
        assert old in text, old


def test_no_shipped_recipe_uses_an_old_key() -> None:
    old_keys = {e.old for e in DEPRECATED if e.kind == "key"}
    for path in sorted(RECIPES_DIR.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        used = set(data) | {key for value in data.values() if isinstance(value, dict) for key in value}
        assert not used & old_keys, f"{path.name} uses {sorted(used & old_keys)}"


def test_the_commands_the_demo_runs_use_no_old_spelling(fresh: None, caplog: pytest.LogCaptureFixture) -> None:
    printed = subprocess.run([sys.executable, "scripts/demo.py", "model=tiny", "dry_run=true"], cwd=PROJECT_ROOT,
                             capture_output=True, text=True, timeout=120)
    assert printed.returncode == 0, printed.stderr
    commands = [line[2:].split() for line in printed.stdout.splitlines() if line.startswith("$ ")]
    by_script = {command.script: command for command in COMMANDS.values()}
    assert len(commands) == 6  # data, the judge's training and validation, SFT, DPO, evaluation
    with caplog.at_level(logging.WARNING, logger="gnt.deprecated"):
        for words in commands:
            by_script[words[1]].parse(words[2:])
    assert not caplog.records, caplog.text
    assert all(not key.startswith("-") for words in commands for key, _ in tokenize(words[2:]).options)
