"""Judge prompts and exemplars: the shipped files load cleanly; defective files are reported row by row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gnt.data.errors import DataErrors
from gnt.judge.prompts import (
    EXEMPLAR_LABEL_PATTERN,
    check_exemplar_file,
    check_prompt_files,
    load_exemplars,
    load_prompt,
)
from gnt.judge.schema import FORMATS, json_schema, schema_errors

FIXTURES = Path(__file__).parent / "fixtures" / "judge"
LANGS = ("it", "es", "de", "el")


def test_shipped_prompts_and_exemplars_are_clean():
    errors, warnings = check_prompt_files()
    assert errors == [] and warnings == [], [str(e) for e in errors + warnings]
    for lang in LANGS:
        exemplars = load_exemplars(lang).exemplars
        short = {"CORRECTLY GENDERED": "CG", "WRONGLY GENDERED": "WG", "NEUTRAL": "N"}
        assert tuple(short[e.label] for e in exemplars) == EXEMPLAR_LABEL_PATTERN


@pytest.mark.parametrize("name", list(FORMATS))
@pytest.mark.parametrize("lang", LANGS)
def test_messages_follow_the_published_layout(lang, name):
    prompt = load_prompt(lang, name)
    messages = prompt.messages("The citizens are tired.", "TARGET TEXT")
    assert messages[0]["role"] == "system" and len(messages) == 1 + 2 * 8 + 1
    assert [m["role"] for m in messages[1:]] == ["user", "assistant"] * 8 + ["user"]
    if prompt.fmt.cross:
        assert messages[-1]["content"] == 'Source: "The citizens are tired."\nTarget: "TARGET TEXT"'
        assert messages[1]["content"].startswith('Source: "') and '\nTarget: "' in messages[1]["content"]
    else:
        assert messages[-1]["content"] == 'Target: "TARGET TEXT"'
        assert "Source:" not in messages[1]["content"]
    for turn in messages[2:-1:2]:  # every exemplar answer is valid in this format, even under the strict schema
        reply = json.loads(turn["content"])
        assert schema_errors(reply, prompt.fmt) == []
        assert set(reply) == set(json_schema(prompt.fmt, "strict")["properties"])
    assert "JSON" in prompt.system


def test_fingerprint_changes_with_prompt_content(tmp_path):
    a = load_prompt("it", "CROSS-P+L")
    assert a.fingerprint == load_prompt("it", "CROSS-P+L").fingerprint
    assert a.fingerprint != load_prompt("it", "CROSS-L").fingerprint
    assert a.fingerprint != load_prompt("it", "CROSS-P+L", n_exemplars=4).fingerprint
    assert load_prompt("it", "CROSS-P+L", n_exemplars=0).exemplars == ()


def test_broken_exemplar_file_reports_each_defect_with_its_row():
    path = FIXTURES / "broken_exemplars.jsonl"
    exemplars, errors, warnings = check_exemplar_file(path)
    by_line: dict[int, list[str]] = {}
    for e in errors:
        assert e.path == str(path)
        by_line.setdefault(e.line, []).append(e.message)
    assert "not valid JSON" in by_line[2][0]
    assert "outside the enum" in by_line[3][0]
    assert "duplicated exemplar" in by_line[4][0] and "line 1" in by_line[4][0]
    assert any("missing key(s): phrases" in m for m in by_line[5])
    assert any("unknown key(s): phrase" in m for m in by_line[5])
    assert any("phrases break the schema" in m and "non-empty" in m for m in by_line[6])
    assert any("phrases break the schema" in m and "too long" in m for m in by_line[7])
    assert "expected a JSON object" in by_line[9][0]
    assert any("'X' is not one of" in m for m in by_line[10]) and any("note" in m for m in by_line[10])
    assert sorted(by_line) == [2, 3, 4, 5, 6, 7, 9, 10]
    assert [e.line for e in exemplars] == [1, 8]
    assert [w.line for w in warnings] == [8] and "label does not follow" in warnings[0].message
    with pytest.raises(DataErrors) as info:
        load_exemplars("it", path=path)
    text = str(info.value)
    assert f"{path}:2:" in text and f"{path}:4:source:" in text and f"{path}:3:label:" in text


def test_design_warnings_and_missing_files(tmp_path):
    lines = (FIXTURES / "broken_exemplars.jsonl").read_text(encoding="utf-8").splitlines()
    short = tmp_path / "it.jsonl"
    short.write_text(lines[0] + "\n", encoding="utf-8")
    loaded = load_exemplars("it", path=short)
    assert len(loaded.exemplars) == 1 and "1 exemplars" in loaded.warnings[0].message
    errors, _ = check_prompt_files(["it"], ["CROSS-P+L"], prompts_dir=tmp_path / "none", exemplars_dir=tmp_path / "x")
    assert len(errors) == 2 and "not found" in errors[0].message and "not found" in errors[1].message
