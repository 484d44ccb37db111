"""Judge validation: figures on a hand-labelled TSV match hand computation; the reference table on the sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _judge_fakes import ScriptedBackend

from gnt.data.errors import DataErrors
from gnt.data.mgente import load_mgente
from gnt.judge.agreement import classification_report, cohen_kappa
from gnt.judge.llm_judge import JudgeSettings, LLMJudge
from gnt.judge.prompts import exemplar_source_keys
from gnt.judge.validation import (
    gold_summary,
    llm_classifier,
    read_gold_tsv,
    reference_items,
    reference_table,
    validate_references,
    validate_tsv,
)
from gnt.paths import SAMPLE_DIR

FIXTURES = Path(__file__).parent / "fixtures" / "judge"
CG, WG, N = "CORRECTLY GENDERED", "WRONGLY GENDERED", "NEUTRAL"
# Predictions per translation of fixtures/judge/gold.tsv, whose gold is CG CG CG WG WG WG N N N N.
PREDICTED = {
    "La signora Haug ha ragione, conosce il dossier.": CG,
    "Ha detto di essere stanco.": CG,
    "Mia sorella è infermiera.": WG,
    "I cittadini sono preoccupati.": WG,
    "Los votantes han hablado.": WG,
    "Die Lehrer waren sich einig.": N,
    "La cittadinanza è preoccupata.": N,
    "El electorado ha hablado.": N,
    "Die Lehrkräfte waren sich einig.": N,
    "Τα μέλη ψήφισαν.": CG,
}


def test_gold_tsv_figures_match_hand_computation():
    judge = LLMJudge(ScriptedBackend(PREDICTED), JudgeSettings(format="CROSS-P+L"))
    report = validate_tsv(FIXTURES / "gold.tsv", llm_classifier(judge), "CROSS-P+L")
    labels = report["labels"]
    # 7 of 10 right. Per label P = R = F1: CG 2/3, WG 2/3, N 3/4 -> macro-F1 = (2/3 + 2/3 + 3/4) / 3.
    assert labels["accuracy"] == pytest.approx(0.7)
    assert labels["per_label"][CG]["f1"] == pytest.approx(2 / 3)
    assert labels["per_label"][N]["precision"] == pytest.approx(3 / 4)
    assert labels["macro_f1"] == pytest.approx((2 / 3 + 2 / 3 + 3 / 4) / 3)
    # kappa: p_o = 0.7, marginals gold (3, 3, 4) = pred (3, 3, 4) -> p_e = (9 + 9 + 16) / 100 = 0.34.
    assert labels["kappa"] == pytest.approx((0.7 - 0.34) / (1 - 0.34))
    assert labels["confusion"] == {
        CG: {CG: 2, WG: 1, N: 0},
        WG: {CG: 0, WG: 2, N: 1},
        N: {CG: 1, WG: 0, N: 3},
    }
    binary = report["binary"]  # gold G x6, N x4; pred G G G G G N N N N G -> 8 right
    assert binary["accuracy"] == pytest.approx(0.8)
    assert binary["macro_f1"] == pytest.approx((5 / 6 + 3 / 4) / 2)
    assert binary["kappa"] == pytest.approx((0.8 - 0.52) / (1 - 0.52))
    assert report["errors"] == 0 and report["n"] == 10
    text = gold_summary(report)
    assert "accuracy 0.700" in text and "kappa 0.545" in text


def test_mono_format_folds_gold_and_errors_count_as_wrong():
    faults = {"Τα μέλη ψήφισαν.": ["garbage"] * 5}
    judge = LLMJudge(ScriptedBackend(PREDICTED, faults), JudgeSettings(format="MONO-L", judge_retries=1))
    report = validate_tsv(FIXTURES / "gold.tsv", llm_classifier(judge), "MONO-L")
    labels = report["labels"]
    # gold G x6 N x4; pred G G G G G N N N N ERROR -> 8 right, the error is wrong but not a label
    assert report["errors"] == 1 and labels["accuracy"] == pytest.approx(0.8)
    assert labels["confusion"]["NEUTRAL"]["JUDGE_ERROR"] == 1
    assert set(labels["per_label"]) == {"GENDERED", "NEUTRAL"}
    assert labels["per_label"]["NEUTRAL"]["recall"] == pytest.approx(3 / 4)


def test_kappa_and_report_edge_cases():
    assert cohen_kappa(["a", "a"], ["a", "a"]) is None
    assert cohen_kappa(["a", "b", "a", "b"], ["a", "b", "a", "b"]) == pytest.approx(1.0)
    assert cohen_kappa(["a", "b"], ["b", "a"]) == pytest.approx(-1.0)
    report = classification_report([N, N], [N, CG], [CG, WG, N])
    assert set(report["per_label"]) == {CG, N}  # WG is in neither: no meaningless zero in the macro mean


def test_bad_gold_tsv_reports_rows():
    with pytest.raises(DataErrors) as info:
        read_gold_tsv(FIXTURES / "bad_gold.tsv")
    text = str(info.value)
    assert "bad_gold.tsv:2:gold: gold label 'MASCULINE' unknown" in text
    assert "bad_gold.tsv:3:translation: empty translation" in text
    assert "bad_gold.tsv:2:lang:" in text
    assert len(read_gold_tsv(FIXTURES / "gold.tsv")) == 10


def test_reference_validation_table_on_the_sample(tmp_path):
    entries = load_mgente(SAMPLE_DIR)
    exclude = exemplar_source_keys()
    refs = reference_items(entries, exclude)
    assert len(refs) == 2 * (len(entries) - 32)  # the 8 exemplar rows per language are left out
    # A judge that always says WRONGLY GENDERED on Ref-G and is perfect on Ref-N.
    ref_n = {e.ref_n[0] for e in entries}

    def label(target: str) -> str:
        return N if target in ref_n else WG

    backend = ScriptedBackend(label)
    classifiers = {
        fmt: llm_classifier(LLMJudge(backend, JudgeSettings(format=fmt))) for fmt in ("CROSS-P+L", "MONO-L")
    }
    report = validate_references(entries, classifiers, exclude, judge_info={"judge_model": "fake"})
    assert report["excluded_exemplar_rows"] == 32
    assert report["judge"] == "fake" and report["format"] == "CROSS-P+L" and report["n"] == len(refs)
    cross_all = next(r for r in report["results"] if r["format"] == "CROSS-P+L" and r["lang"] == "all")
    cells = cross_all["cells"]
    assert cells["Set-G/Ref-G"]["accuracy"] == 0.0 and cells["Set-N/Ref-G"]["accuracy"] == 1.0
    assert cells["Set-G/Ref-N"]["accuracy"] == 1.0 and cells["Set-N/Ref-N"]["accuracy"] == 1.0
    assert cells["overall"]["accuracy"] == pytest.approx(1 - cells["Set-G/Ref-G"]["n"] / cells["overall"]["n"])
    mono_all = next(r for r in report["results"] if r["format"] == "MONO-L" and r["lang"] == "all")
    assert mono_all["cells"]["overall"]["accuracy"] == 1.0  # MONO: both gendered labels are GENDERED
    assert report["misjudged"] == [], "binary view: a correct gender judged wrong is still GENDERED"
    assert {r["lang"] for r in report["results"]} == {"it", "es", "de", "el", "all"}
    table = reference_table(report)
    assert "| CROSS-P+L | all | 0.0 | 100.0 | 100.0 | 100.0 |" in table
    json.dumps(report)  # JSON-ready


def test_templated_set_n_references_are_validated_and_reported_apart() -> None:
    """An ambiguous templated input's Ref-N is neutral and its Ref-G gendered by construction, so both are judged;
    a templated Set-G row's Ref-N keeps its gendered cue and is left out. The two origins get their own cells."""
    from gnt.data.entry import Entry

    mgente = [e for e in load_mgente(SAMPLE_DIR) if e.lang == "it"][:6]
    ambiguous = Entry("tpl-it-000001-amb", "it", "Set-N", '"Honestly, I\'m loyal," I confessed.',
                      "«Sinceramente, sono leale ma ansioso», confessai.", ("«Sinceramente, sono leale», confessai.",),
                      origin="templated")
    determined = Entry("tpl-it-000001-det", "it", "Set-G", '"As a nurse, I\'m calm," she said.',
                       "«Come infermiera, sono calma», disse.", ("«Come infermiera, sono una persona calma», disse.",),
                       gender="F", origin="templated")
    epicene = Entry("tpl-it-000002-amb", "it", "Set-N", '"Maybe I am sensitive," I said.',
                    "«Forse sono sensibile», dissi.", ("«Forse sono sensibile», dissi.",), origin="templated")
    entries = [*mgente, ambiguous, determined, epicene]
    refs = reference_items(entries)
    assert [(r.entry.id, r.reference) for r in refs if r.entry.origin == "templated"] == [
        (ambiguous.id, "Ref-G"), (ambiguous.id, "Ref-N"), (epicene.id, "Ref-N")], \
        "a Ref-G that is the Ref-N word for word genders nobody: judged once, as NEUTRAL"
    ref_n = {e.ref_n[0] for e in mgente}  # right on every mGeNTE reference, NEUTRAL on every templated one

    def label(target: str) -> str:
        return N if target in ref_n or "Sinceramente" in target or "sensibile" in target else WG

    classifiers = {"MONO-L": llm_classifier(LLMJudge(ScriptedBackend(label), JudgeSettings(format="MONO-L")))}
    report = validate_references(entries, classifiers)
    assert report["excluded_exemplar_rows"] == 0 and report["excluded_templated_set_g_rows"] == 1
    assert report["excluded_ungendered_ref_g"] == 1
    assert report["by_origin"]["mgente"]["overall"]["accuracy"] == 1.0
    templated = report["by_origin"]["templated"]
    assert templated["Set-N/Ref-N"]["accuracy"] == 1.0 and templated["Set-N/Ref-G"]["accuracy"] == 0.0
    assert "| MONO-L | all, templated rows | – | – | 0.0 | 100.0 | 66.7 | 0 |" in reference_table(report)
    assert report["misjudged"] == [{"id": ambiguous.id, "lang": "it", "origin": "templated", "cell": "Set-N/Ref-G",
                                    "translation": ambiguous.ref_g, "gold": "GENDERED", "judged": "NEUTRAL"}]
