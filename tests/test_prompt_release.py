"""Prompt texts in the mGeNTE release layout (prompt_en-{lang}.yaml), read as they are; genders checked or flagged."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gnt.data.errors import DataErrors
from gnt.paths import PROMPTS_DIR
from gnt.prompts.texts import load_prompt_texts

ROOT = Path(__file__).resolve().parent.parent
RELEASE = Path(__file__).parent / "fixtures" / "prompts_release"


def test_clean_release_file_loads_with_no_warning():
    texts = load_prompt_texts("it", RELEASE / "clean")  # found under config/, as the release keeps it
    assert [(d.set, d.gender) for d in texts.demonstrations] == [("Set-G", "F"), ("Set-G", "M"), ("Set-N", None), ("Set-N", None)]
    assert texts.demonstrations[0].source == "Mrs Bianchi said that she is proud of the committee."
    assert texts.demonstrations[0].translation.endswith("orgogliosa della commissione.")
    assert texts.system.startswith("You translate") and texts.guidelines.startswith("Guidelines:")
    assert texts.warnings == ()


def test_swapped_gender_with_known_words_is_an_error_and_unverifiable_one_a_warning(caplog):
    path = RELEASE / "defects" / "prompt_en-el.yaml"
    with pytest.raises(DataErrors) as info:
        load_prompt_texts("el", RELEASE / "defects")
    assert [str(e) for e in info.value.errors] == [
        f"{path}:21:demonstrations[0]: gender F contradicts the gendered words the el lexicon finds in its target: περήφανος (M)"
    ]
    assert f"{path}:25:demonstrations[1]: gender M could not be verified" in caplog.text


def test_unverifiable_gender_loads_with_a_warning_that_says_so(tmp_path):
    data = yaml.safe_load((RELEASE / "defects" / "prompt_en-el.yaml").read_text(encoding="utf-8"))
    data["demonstrations"][0]["assistant"] = "<el> **GENDERED** [Η κ. Νικολάου είπε ότι είναι περήφανη για το αποτέλεσμα.]"
    (tmp_path / "prompt_en-el.yaml").write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    texts = load_prompt_texts("el", tmp_path)
    assert [str(w).split(": ", 1)[1] for w in texts.warnings] == [
        "gender M could not be verified: its target has no gendered word listed or known to the el lexicon"
    ]


def test_release_defects_of_shape_are_reported_with_their_line(tmp_path):
    data = yaml.safe_load((RELEASE / "clean" / "config" / "prompt_en-it.yaml").read_text(encoding="utf-8"))
    data["demonstrations"][2]["type"] = "gendered"  # a NEUTRAL answer typed gendered
    data["demonstrations"][3]["assistant"] = "**NEUTRAL** no brackets"
    (tmp_path / "prompt_en-it.yaml").write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    with pytest.raises(DataErrors) as info:
        load_prompt_texts("it", tmp_path)
    text = str(info.value)
    assert "demonstrations[2]: type gendered but the answer is labelled NEUTRAL" in text
    assert "demonstrations[3]: assistant turn is not '<it> **LABEL** [translation]'" in text


def test_our_layout_warns_when_a_gendered_demonstration_lists_no_words_and_none_are_known(tmp_path):
    prompts = tmp_path / "prompts"
    shutil.copytree(PROMPTS_DIR, prompts)
    path = prompts / "el.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["demonstrations"][0]["gendered_words"] = []
    data["demonstrations"][0]["translation"] = "Σας ευχαριστώ για την υπομονή σας με το Σώμα."
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    texts = load_prompt_texts("el", prompts)
    assert len(texts.warnings) == 1 and "could not be verified" in str(texts.warnings[0])
    assert "demonstrations[0]" in str(texts.warnings[0])


def test_data_build_reads_the_release_layout_and_stops_on_the_swapped_gender(tmp_path):
    run = subprocess.run(
        [sys.executable, str(ROOT / "data" / "build.py"), "--prompts", str(RELEASE / "defects"), "--langs", "el",
         "--out", str(tmp_path / "out"), "--templated-pairs", "0", "--no-progress"],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert run.returncode == 2
    assert "demonstrations[0]: gender F contradicts" in run.stderr
    assert not (tmp_path / "out").exists()
