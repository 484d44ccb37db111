"""Gold files of the field read in their own columns and labels; per-class figures with CIs, per language."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gnt.judge.gold import read_gold
from gnt.judge.validation import ABSTAIN, gold_summary, validate_tsv

ROOT = Path(__file__).resolve().parent.parent
GOLD = Path(__file__).parent / "fixtures" / "gold"
CG, WG, N, G = "CORRECTLY GENDERED", "WRONGLY GENDERED", "NEUTRAL", "GENDERED"


def test_genderous_layout_maps_mfn_of_ambiguous_sources_and_counts_what_it_skips():
    gold = read_gold(GOLD / "genderous_layout.tsv")
    assert gold.layout == "genderous"
    assert [(r.lang, r.raw, r.gold) for r in gold.rows][:3] == [("el", "M", WG), ("de", "M", WG), ("es", "F", WG)]
    assert [r.gold for r in gold.rows].count(N) == 1 and len(gold.rows) == 9
    assert gold.rows[0].source == "The proud baker closed the shop." and gold.rows[0].line == 2
    assert gold.skipped == {"language NL (not one of it, es, de, el)": 4, "error [incorrect]": 1, "(empty)": 1, "error [mixed]": 1}
    assert "gender-ambiguous by design: M/F → WRONGLY GENDERED, N → NEUTRAL" in gold.mapping


def test_long_layouts_with_source_gender_or_ambiguity_flag():
    by_gender = read_gold(GOLD / "src_hyp_human_mfn.tsv")
    assert [r.gold for r in by_gender.rows] == [CG, WG, WG, N, CG]
    assert "source=src, translation=hyp, gold=human" in by_gender.mapping and "mapped by source_gender" in by_gender.mapping
    flagged = read_gold(GOLD / "tgt_label_ambiguous_flag.tsv")
    assert [r.gold for r in flagged.rows] == [WG, WG, N, CG]  # "She left early": F from its English cue
    assert "English cues" in flagged.mapping
    bare = read_gold(GOLD / "tgt_label_mfn_no_source.tsv")
    assert [r.gold for r in bare.rows] == [G, N] and "MONO view only" in bare.mapping


def test_mfn_without_source_gender_cannot_score_a_cross_judge():
    with pytest.raises(ValueError, match="validate with a MONO format"):
        validate_tsv(GOLD / "tgt_label_mfn_no_source.tsv", lambda items: [N] * len(items), "CROSS-L")


def test_report_per_class_first_with_cis_per_language_and_abstentions():
    def classify(items):  # says WG on Greek, NEUTRAL on German, abstains on Spanish
        return [{"el": WG, "de": N, "es": ABSTAIN}[i.lang] for i in items]

    report = validate_tsv(GOLD / "genderous_layout.tsv", classify, "CROSS-L")
    labels = report["labels"]
    assert labels["class_counts"] == {WG: 8, N: 1}
    # WG: 4 Greek right of 8 gold; predicted WG 4 times, all right
    assert labels["per_label"][WG]["recall"] == pytest.approx(0.5) and labels["per_label"][WG]["precision"] == 1.0
    assert labels["per_label"][N]["recall"] == 1.0 and labels["per_label"][N]["precision"] == pytest.approx(0.5)
    ci = labels["ci"]["per_label"][WG]["recall"]
    assert ci["value"] == pytest.approx(0.5) and 0 <= ci["ci"][0] <= 0.5 <= ci["ci"][1] <= 1
    assert labels["ci"]["macro_f1"]["value"] == pytest.approx(labels["macro_f1"])
    assert report["abstained"] == 3 and report["abstention_rate"] == pytest.approx(3 / 9)
    assert report["covered"]["n"] == 6 and report["covered"]["accuracy"] == pytest.approx(5 / 6)
    assert report["per_lang"]["es"]["abstained"] == 3 and report["per_lang"]["el"]["labels"]["accuracy"] == 1.0
    assert report["kappa"] == labels["kappa"] and report["macro_f1"] == labels["macro_f1"]  # the report's headline
    text = gold_summary(report)
    assert text.index("class counts") < text.index("macro-F1") < text.index("kappa")
    assert "3 abstained (33.3%)" in text and "gender-ambiguous by design" in text and "\n  es (3 rows, 3 abstained):" in text


def _validate(tsv: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "v.json"
    run = subprocess.run(
        [sys.executable, str(ROOT / "eval" / "judge.py"), "validate", "judge=lexical", f"tsv={tsv}", f"out={out}"],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run, json.loads(out.read_text())


def test_validate_command_on_genderous_layout_with_the_lexical_judge(tmp_path):
    run, report = _validate(GOLD / "genderous_layout.tsv", tmp_path)
    assert report["n"] == 9 and report["format"] == "MONO-L"
    assert report["labels"]["class_counts"] == {G: 8, N: 1}
    # it knows the lexicon's Greek and Spanish adjective forms, the German predicative "schüchtern" (neutral) and,
    # from the bundled sample's training split, the German "Bäcker": no abstention, and every judgment is right
    assert report["abstained"] == 0 and report["per_lang"]["de"]["abstained"] == 0
    assert report["labels"]["accuracy"] == 1.0
    assert "class counts: GENDERED 8, NEUTRAL 1" in run.stdout


def test_validate_command_on_the_bundled_gold_in_our_layout(tmp_path):
    run, report = _validate(ROOT / "data" / "judge" / "gold" / "lexical_gold.tsv", tmp_path)
    assert report["n"] == 32 and report["abstained"] == 4  # with what the bundled sample's training split teaches
    assert report["labels"]["class_counts"] == {G: 20, N: 12}
    assert report["judge_info"]["learned"]["it"]["gendered_forms"] > 100
    assert "4 abstained (12.5%)" in run.stdout


def test_validate_command_scores_the_judge_labels_recorded_in_the_file(tmp_path):
    out = tmp_path / "r.json"
    run = subprocess.run(
        [sys.executable, str(ROOT / "eval" / "judge.py"), "validate", "judge=recorded", f"tsv={GOLD / 'genderous_layout.tsv'}",
         f"out={out}"],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(out.read_text())
    # the recorded GPT labels agree with the human ones except on the first Greek row (N for a gendered translation)
    assert report["format"] == "CROSS-L" and report["n"] == 9 and report["errors"] == 0
    assert report["labels"]["confusion"][WG] == {CG: 0, WG: 7, N: 1}
    assert report["labels"]["per_label"][N]["precision"] == pytest.approx(0.5)
    assert "NEUTRAL" in run.stdout.split("macro-F1")[0]  # per-class lines come before macro-F1
