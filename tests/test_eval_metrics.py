"""Grid metrics against hand-computed values, bootstrap CIs, the paired test, judgments, extraction edge cases."""

from __future__ import annotations

import pytest

from gnt.bootstrap import BootstrapSettings, paired_bootstrap
from gnt.data.entry import Entry
from gnt.evaluation.generation_records import GENERATION_FAILED, generation_record
from gnt.evaluation.metrics import compute_metrics, paired_comparison
from gnt.generation.base import Generation
from gnt.prompts.grid import Cell, PromptGrid

CELL = "it/G+S/4"


def rec(i: int, set_: str, gender: str | None, label: str | None, error: str | None = None, cell: str = CELL) -> dict:
    return {"lang": "it", "id": f"r{i}", "set": set_, "gender": gender, "label": label, "error": error,
            "cell": cell, "key": f"{cell}/k{i}"}


# Eight rows: Set-G F (2), Set-G M (2), Set-N (4); two extraction errors.
FIXTURE = [
    rec(0, "Set-G", "F", "GENDERED"),             # correct
    rec(1, "Set-G", "F", "NEUTRAL"),              # wrong
    rec(2, "Set-G", "M", "GENDERED"),             # correct
    rec(3, "Set-G", "M", "GENDERED", "unterminated"),  # label readable, but an error: a failure
    rec(4, "Set-N", None, "NEUTRAL"),             # correct
    rec(5, "Set-N", None, "NEUTRAL"),             # correct
    rec(6, "Set-N", None, "GENDERED"),            # wrong
    rec(7, "Set-N", None, None, "no_label"),      # failure
]


def test_label_metrics_match_hand_computed_values() -> None:
    m = compute_metrics(FIXTURE, bootstrap=BootstrapSettings(500))
    for block in (m["cells"][CELL], m["languages"]["it"], m["overall"]):
        assert block["n"] == 8
        assert block["extraction_errors"]["n"] == 2
        assert block["extraction_errors"]["by_code"] == {"no_label": 1, "unterminated": 1}
        assert block["extraction_errors"]["rate"]["value"] == pytest.approx(2 / 8)
        acc = block["label_accuracy"]
        assert (acc["Set-G"]["value"], acc["Set-G"]["n"]) == (pytest.approx(2 / 4), 4)
        assert (acc["Set-N"]["value"], acc["Set-N"]["n"]) == (pytest.approx(2 / 4), 4)
        assert acc["all"]["value"] == pytest.approx(4 / 8)
        # GENDERED: TP 2 (r0, r2), FP 1 (r6), FN 2 (r1, r3) → F1 4/7; NEUTRAL: TP 2, FP 1 (r1), FN 2 (r6, r7) → 4/7
        assert block["label_macro_f1"]["value"] == pytest.approx(4 / 7, abs=1e-6)
        assert block["set_g_by_gender"]["F"]["value"] == pytest.approx(1 / 2)
        assert block["set_g_by_gender"]["M"]["value"] == pytest.approx(1 / 2)
        assert not {"gnt_accuracy", "coherence", "xcomet"} & set(block), "the judge's and xCOMET's own files hold those"


def test_macro_f1_is_unweighted_mean_of_class_f1() -> None:
    records = [rec(0, "Set-G", "M", "GENDERED"), rec(1, "Set-G", "M", "GENDERED"), rec(2, "Set-N", None, "GENDERED")]
    # GENDERED: TP 2, FP 1, FN 0 → 0.8; NEUTRAL: TP 0, FP 0, FN 1 → 0
    assert compute_metrics(records, bootstrap=BootstrapSettings(100))["overall"]["label_macro_f1"]["value"] == pytest.approx(0.4)


def test_confidence_intervals_contain_the_estimate_and_are_reproducible() -> None:
    records = [rec(i, "Set-G" if i % 3 else "Set-N", "F" if i % 2 else "M", "GENDERED" if i % 5 else "NEUTRAL")
               for i in range(60)]
    first = compute_metrics(records, bootstrap=BootstrapSettings(400, 3))
    assert first == compute_metrics(records, bootstrap=BootstrapSettings(400, 3))
    overall = first["overall"]
    stats = [overall["label_macro_f1"], overall["extraction_errors"]["rate"], *overall["label_accuracy"].values(),
             *overall["set_g_by_gender"].values()]
    for stat in stats:
        low, high = stat["ci"]
        assert low <= stat["value"] <= high
    assert overall["label_accuracy"]["all"]["ci"][0] < overall["label_accuracy"]["all"]["ci"][1]


def test_aggregates_resample_rows_not_records() -> None:
    """The same row in two cells is one resampling unit: both cells' records move together."""
    cells = ["it/None/0", "it/G/2"]
    records = [rec(i, "Set-N", None, "NEUTRAL" if i < 10 else "GENDERED", cell=c) for c in cells for i in range(20)]
    m = compute_metrics(records, bootstrap=BootstrapSettings(300))
    assert m["overall"]["n"] == 40 and set(m["cells"]) == set(cells)
    assert m["overall"]["label_accuracy"]["all"]["value"] == pytest.approx(0.5)


def test_judgments_fill_gnt_accuracy_and_coherence() -> None:
    # neutral judgments per key; r3 and r7 are extraction errors (failures whatever the judge says)
    neutral = {0: False, 1: True, 2: True, 3: False, 4: True, 5: False, 6: False, 7: True}
    judgments = {f"{CELL}/k{i}": {"neutral": v, "label": "NEUTRAL" if v else "CORRECTLY GENDERED"}
                 for i, v in neutral.items()}
    del judgments[f"{CELL}/k5"]  # one clean output the judge never saw
    block = compute_metrics(FIXTURE, judgments, bootstrap=BootstrapSettings(200))["overall"]
    gnt = block["gnt_accuracy"]
    # Set-G: r0 gendered ✓, r1 neutral ✗, r2 neutral ✗, r3 error ✗ → 1/4; Set-N: r4 ✓, r6 ✗, r7 error ✗ (r5 unjudged)
    assert (gnt["Set-G"]["value"], gnt["Set-G"]["n"]) == (pytest.approx(1 / 4), 4)
    assert (gnt["Set-N"]["value"], gnt["Set-N"]["n"]) == (pytest.approx(1 / 3), 3)
    assert gnt["all"]["value"] == pytest.approx(2 / 7) and gnt["n_unjudged"] == 1
    coherence = block["coherence"]
    # GENDERED labels: r0 ✓ (gendered), r2 ✗ (neutral), r3 ✗ (error), r6 ✓ → 2/4
    # NEUTRAL labels: r1 ✓ (neutral), r4 ✓ (neutral); r5 unjudged → 2/2
    assert coherence["GENDERED"]["value"] == pytest.approx(2 / 4)
    assert (coherence["NEUTRAL"]["value"], coherence["NEUTRAL"]["n"]) == (pytest.approx(1.0), 2)
    assert coherence["n_unjudged"] == 1
    by_gender = block["gnt_accuracy_by_gender"]
    # Set-G F: r0 gendered ✓, r1 neutral ✗ → 1/2; Set-G M: r2 neutral ✗, r3 error ✗ → 0/2
    assert (by_gender["F"]["value"], by_gender["F"]["n"]) == (pytest.approx(1 / 2), 2)
    assert (by_gender["M"]["value"], by_gender["M"]["n"]) == (pytest.approx(0.0), 2)
    assert by_gender["n_unjudged"] == 0


def test_paired_bootstrap_says_no_difference_for_identical_outputs() -> None:
    result = paired_comparison(FIXTURE, [dict(r) for r in FIXTURE], bootstrap=BootstrapSettings(2000))
    assert result["diff"] == 0 and result["ci"] == [0.0, 0.0] and result["p_value"] == 1.0
    assert result["n"] == 8


def test_paired_bootstrap_detects_a_clear_difference() -> None:
    a = [1.0] * 90 + [0.0] * 10
    b = [1.0] * 40 + [0.0] * 60
    result = paired_bootstrap(a, b, bootstrap=BootstrapSettings(2000, 1))
    assert result["diff"] == pytest.approx(0.5)
    assert result["ci"][0] > 0.3 and result["p_value"] < 0.01
    with pytest.raises(ValueError):
        paired_bootstrap([1.0], [1.0, 0.0])


def test_empty_and_degenerate_blocks_do_not_crash() -> None:
    empty = compute_metrics([], bootstrap=BootstrapSettings(50))["overall"]
    assert empty["n"] == 0 and empty["label_accuracy"]["all"]["value"] is None
    only_g = compute_metrics([rec(0, "Set-G", "F", "GENDERED")], bootstrap=BootstrapSettings(50))["overall"]
    assert only_g["label_accuracy"]["Set-N"] == {"value": None, "ci": None, "n": 0}
    assert only_g["label_accuracy"]["Set-G"]["ci"] == [1.0, 1.0]


@pytest.mark.parametrize(
    ("raw", "error", "label", "translation"),
    [
        ("<it> **NEUTRAL** [Il documento [A6-0123/2009] è approvato]", None, "NEUTRAL",
         "Il documento [A6-0123/2009] è approvato"),                   # `]` inside the translation
        ("<it> [La cittadinanza è stanca]", "no_label", None, None),    # missing label marker
        ("<it> **GENDERED** [I cittadini sono sta", "unterminated", "GENDERED", "I cittadini sono sta"),  # truncated
        ("", "empty", None, None),                                      # empty output
        ("<de> **NEUTRAL** [La cittadinanza è stanca]", "wrong_lang_tag", "NEUTRAL", "La cittadinanza è stanca"),
    ],
)
def test_extraction_edge_cases_are_counted_never_raised(raw, error, label, translation) -> None:
    entry = Entry("IT-1", "it", "Set-N", "The citizens are tired.", "I cittadini sono stanchi.",
                  ("La cittadinanza è stanca.",))
    cell = Cell("it", "G+S", 4)
    prompt = PromptGrid(["it"]).render(entry.source, cell)
    record = generation_record(entry, cell, prompt, "k", Generation(raw), "base")
    assert (record["error"], record["label"], record["translation"]) == (error, label, translation)
    assert record["label_correct"] == (error is None and label == "NEUTRAL")
    assert record["ref_g"] == entry.ref_g and record["ref_n"] == list(entry.ref_n)
    m = compute_metrics([record], bootstrap=BootstrapSettings(20))["overall"]
    assert m["extraction_errors"]["by_code"] == ({error: 1} if error else {})
    assert m["label_accuracy"]["all"]["value"] == (1.0 if error is None else 0.0)


def test_a_record_carries_the_chrf_of_its_own_translation() -> None:
    """chrF++ against the row's best reference, 0 for an extraction error: what adequacy and GNT counts read."""
    entry = Entry("IT-1", "it", "Set-N", "The citizens are tired.", "I cittadini sono stanchi.",
                  ("La cittadinanza è stanca.",))
    cell = Cell("it", "None", 0)
    prompt = PromptGrid(["it"]).render(entry.source, cell)
    exact = generation_record(entry, cell, prompt, "k", Generation("<it> **NEUTRAL** [La cittadinanza è stanca.]"), "b")
    close = generation_record(entry, cell, prompt, "k", Generation("<it> **NEUTRAL** [La cittadinanza è stufa.]"), "b")
    broken = generation_record(entry, cell, prompt, "k", Generation("<it> **NEUTRAL** [La cittadinanza"), "b")
    assert exact["chrf"] == pytest.approx(100.0) and 30.0 < close["chrf"] < 100.0 and broken["chrf"] == 0.0
    adequacy = compute_metrics([exact, close, broken], bootstrap=BootstrapSettings(20))["overall"]["adequacy"]
    assert adequacy["adequate"]["value"] == pytest.approx(2 / 3)


def test_backend_failure_is_a_counted_error() -> None:
    entry = Entry("IT-1", "it", "Set-G", "He is tired.", "È stanco.", ("È una persona stanca.",), gender="M")
    cell = Cell("it", "None", 0)
    prompt = PromptGrid(["it"]).render(entry.source, cell)
    record = generation_record(entry, cell, prompt, "k", Generation("", error="HTTP 500"), "base")
    assert record["error"] == GENERATION_FAILED and record["generation_error"] == "HTTP 500"
    assert compute_metrics([record], bootstrap=BootstrapSettings(20))["overall"]["extraction_errors"]["by_code"] == {GENERATION_FAILED: 1}


def test_balanced_accuracy_and_the_constant_label_baseline() -> None:
    """Balanced accuracy weighs each set half; every constant label scores 50% on it, whatever the set sizes."""
    block = compute_metrics(FIXTURE, bootstrap=BootstrapSettings(200))["overall"]
    assert block["label_balanced_accuracy"]["value"] == pytest.approx((2 / 4 + 2 / 4) / 2)
    constant = [rec(i, "Set-G" if i < 3 else "Set-N", "M" if i < 3 else None, "NEUTRAL") for i in range(10)]
    block = compute_metrics(constant, bootstrap=BootstrapSettings(200))["overall"]
    assert block["label_accuracy"]["Set-N"]["value"] == 1.0  # a constant label aces one set ...
    assert block["label_balanced_accuracy"]["value"] == pytest.approx(0.5)  # ... and decides nothing
    baselines = block["label_baselines"]
    # 3 Set-G, 7 Set-N: always NEUTRAL has F1 2·7/(2·7+3) = 14/17 on NEUTRAL, 0 on GENDERED -> macro 7/17
    assert baselines == {"balanced_accuracy": 0.5, "accuracy": 0.7, "macro_f1": pytest.approx(7 / 17, abs=1e-6),
                         "label": "NEUTRAL"}
    assert block["label_macro_f1"]["value"] == pytest.approx(baselines["macro_f1"], abs=1e-6)


def test_a_label_that_is_95_percent_one_class_is_flagged_as_collapse() -> None:
    records = [rec(i, "Set-G" if i % 2 else "Set-N", "M", "NEUTRAL" if i else "GENDERED") for i in range(20)]
    distribution = compute_metrics(records, bootstrap=BootstrapSettings(50))["overall"]["label_distribution"]
    assert distribution["counts"] == {"GENDERED": 1, "NEUTRAL": 19} and distribution["majority_share"] == 0.95
    assert distribution["collapsed"] == "NEUTRAL" and distribution["collapse"] == 1.0
    records[2]["label"] = "GENDERED"  # 18 of 20: 90%, a bias but not a collapse
    distribution = compute_metrics(records, bootstrap=BootstrapSettings(50))["overall"]["label_distribution"]
    assert distribution["collapsed"] is None and distribution["collapse"] == 0.0
    errors_only = [rec(i, "Set-N", None, None, "no_label") for i in range(3)]
    assert compute_metrics(errors_only, bootstrap=BootstrapSettings(50))["overall"]["label_distribution"]["collapse"] is None


def test_adequacy_uses_chrf_against_every_reference_and_counts_errors_as_inadequate() -> None:
    from gnt.evaluation.adequacy import ADEQUACY_THRESHOLD, chrf_pp

    refs = ["Il commissario ci ha detto di essere soddisfatto.", "Chi rappresenta la Commissione è soddisfatto."]
    close = "Il commissario ha detto di essere soddisfatto."
    nonsense = "L'acqua di Sancho, che è il nostro perso, ha perso una morte finitura."
    assert chrf_pp(close, refs) >= 60 > ADEQUACY_THRESHOLD > chrf_pp(nonsense, refs)
    assert chrf_pp(refs[1], refs) == pytest.approx(100.0)  # the best-matching reference counts
    assert chrf_pp("", refs) == chrf_pp(None, refs) == 0.0
    records = [
        {**rec(0, "Set-N", None, "NEUTRAL"), "translation": close, "ref_g": refs[0], "ref_n": [refs[1]]},
        {**rec(1, "Set-N", None, "NEUTRAL"), "translation": nonsense, "ref_g": refs[0], "ref_n": [refs[1]]},
        {**rec(2, "Set-N", None, None, "unterminated"), "translation": None, "ref_g": refs[0], "ref_n": [refs[1]]},
    ]
    judged_neutral = {r["key"]: {"neutral": True} for r in records[:2]}
    block = compute_metrics(records, judged_neutral, bootstrap=BootstrapSettings(100))["overall"]
    adequacy = block["adequacy"]
    assert adequacy["adequate"]["value"] == pytest.approx(1 / 3) and adequacy["n_inadequate"] == 1
    assert adequacy["adequate_among_extracted"]["value"] == pytest.approx(1 / 2)
    assert adequacy["chrf"]["value"] == pytest.approx((chrf_pp(close, refs) + chrf_pp(nonsense, refs)) / 3, abs=1e-3)
    # the judge calls the nonsense neutral: over all outputs it is a success, over adequate ones a failure
    assert block["gnt_accuracy"]["Set-N"]["value"] == pytest.approx(2 / 3)
    assert block["gnt_accuracy_adequate"]["Set-N"]["value"] == pytest.approx(1 / 3)
    assert block["gnt_accuracy_adequate"]["among_adequate"]["Set-N"]["value"] == 1.0
