"""Judge resources in the fbk-NEUTR-evAL layout: read as published, every known defect class caught with file:line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _judge_fakes import ScriptedBackend

from gnt.data.errors import DataErrors
from gnt.judge.llm_judge import JudgeItem, JudgeSettings, LLMJudge
from gnt.judge.resources import check_resources, load_resource_prompt

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "judge_resources"
CLEAN, DEFECTS = FIXTURES / "clean", FIXTURES / "defects"


def _messages(problems) -> list[str]:
    return [str(p) for p in problems]


def test_clean_resources_load_with_no_error_or_warning():
    found = check_resources(CLEAN, ["it"])
    assert found.errors == [] and found.warnings == []
    assert sorted(found.prompts) == [("it", f) for f in ("CROSS-L", "CROSS-P+L", "MONO-L", "MONO-P+L")]
    assert all(len(shots) == 3 for shots in found.shots.values())


def test_each_defect_class_is_reported_with_file_and_line():
    found = check_resources(DEFECTS, ["it", "el"])
    errors, warnings = _messages(found.errors), _messages(found.warnings)
    shots = DEFECTS / "shots"
    assert f"{shots}/it/cross-p_l.tsv:2:out: out is not valid JSON: Expecting property name enclosed in double quotes (character 125)" in errors
    assert any(e.startswith(f"{shots}/it/cross-l.tsv:3:out: label 'CORRECTLY NEUTRAL' is outside the CROSS-L label set") for e in errors)
    assert any(e.startswith(f"{shots}/it/cross-l.tsv:4:out: label 'WRONGLY NEUTRAL' is outside the CROSS-L") for e in errors)
    assert any(e.startswith(f"{shots}/it/mono-p_l.tsv:4:out: label 'WRONGLY GENDERED' is outside the MONO-P+L") for e in errors)
    assert len(errors) == 4
    assert f"{shots}/it/cross-p_l.tsv:3:out: annotated phrase 'Le persone insegnanti' does not occur in the target text" in warnings
    contradiction = [w for w in warnings if "same source labelled" in w]
    assert contradiction == [
        f"{shots}/it/cross-p_l.tsv:4:out: same source labelled WRONGLY GENDERED here (CROSS-P+L) but NEUTRAL in MONO-L "
        f"({shots}/it/mono-l.tsv:4): one of them is wrong"
    ]
    lacking = [w for w in warnings if "lacks" in w]
    assert len(lacking) == 1 and "language el lacks MONO-L, MONO-P+L, CROSS-L" in lacking[0]


def test_a_format_a_language_lacks_is_an_error_naming_it_not_a_crash():
    with pytest.raises(Exception, match=r"no MONO-L judge prompt for el"):
        load_resource_prompt(DEFECTS, "el", "MONO-L")
    with pytest.raises(DataErrors, match=r"cross-l.tsv:3:out: label 'CORRECTLY NEUTRAL'"):
        load_resource_prompt(DEFECTS, "it", "CROSS-L")


@pytest.mark.parametrize("fmt", ["MONO-L", "MONO-P+L", "CROSS-L", "CROSS-P+L"])
def test_shots_become_exemplar_turns_in_their_own_format(fmt):
    prompt = load_resource_prompt(CLEAN, "it", fmt)
    turns = prompt.exemplar_turns()
    assert len(turns) == 6
    first = json.loads(turns[1]["content"])
    assert first["label"] == ("CORRECTLY GENDERED" if fmt.startswith("CROSS") else "GENDERED")
    assert ("phrases" in first) == fmt.endswith("P+L")
    assert turns[0]["content"].startswith('Source: "Mrs Rossi' if fmt.startswith("CROSS") else 'Target: "La signora Rossi')
    assert prompt.system.startswith("You judge")


def test_an_llm_judge_runs_on_resources(tmp_path):
    backend = ScriptedBackend({"Il comitato ha deciso.": "NEUTRAL"})
    judge = LLMJudge(backend, JudgeSettings(format="CROSS-L", judge_resources=str(CLEAN)))
    [judgment] = judge.judge([JudgeItem("it", "The committee decided.", "Il comitato ha deciso.")])
    assert judgment.ok and judgment.label == "NEUTRAL"
    assert judge.describe()["prompts"]["it"]["exemplars"].endswith("shots/it/cross-l.tsv")


def test_check_command_exit_status():
    def run(root: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(ROOT / "eval" / "judge.py"), "check", f"judge_resources={root}", "langs=it,el"],
            capture_output=True, text=True, cwd=ROOT,
        )

    clean, broken = run(CLEAN), run(DEFECTS)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert broken.returncode == 2
    assert "4 error(s), 3 warning(s)" in broken.stdout
    assert "cross-p_l.tsv:2:out: out is not valid JSON" in broken.stdout


def test_skip_bad_shots_leaves_out_the_defective_ones_and_says_so():
    prompt = load_resource_prompt(DEFECTS, "it", "CROSS-L", skip_bad_shots=True)
    assert [e.source for e in prompt.exemplars] == ["Mrs Rossi thanked the committee."]
    left_out = [str(w) for w in prompt.warnings if "left out" in str(w)]
    assert len(left_out) == 2 and "cross-l.tsv:3:out: shot left out (skip_bad_shots): label 'CORRECTLY NEUTRAL'" in left_out[0]
