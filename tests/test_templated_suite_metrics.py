"""Suite metrics (gnt.templated_suite.metrics) against values computed by hand on a small fixture."""

from __future__ import annotations

import random

import pytest

from gnt.bootstrap import BootstrapSettings
from gnt.templated_suite.metrics import block_metrics, compute_metrics, language_metrics, tidy_rows


def item(pair: int, variant: str, kind: str, label: str, strategy: str | None = None, *, expected: str | None = None,
         cue: str | None = None, adj: str | None = None, reason: str | None = None, **extra) -> dict:
    return {
        "pair_id": f"p{pair}", "lang": "it", "style": "plain", "variant": variant, "kind": kind, "label": label,
        "strategy": strategy, "expected_gender": expected, "cue_stereotype": cue, "adjective_stereotype": adj,
        "reason": reason, "gender_marked": True, **extra,
    }


def fixture_items() -> list[dict]:
    """Five pairs. Determined classes: M, F, M, M, unknown; ambiguous: M, N3, N1, M, unknown."""
    return [
        item(1, "determined", "omission_i", "M", expected="M"),
        item(1, "ambiguous", "omission_i", "M"),
        item(2, "determined", "omission_you", "F", expected="F", cue="F"),
        item(2, "ambiguous", "omission_you", "N", "N3", cue="F"),
        item(3, "determined", "active_they", "M", expected="M"),
        item(3, "ambiguous", "active_they", "N", "N1"),
        item(4, "determined", "active_they", "M", expected="F", cue="M"),
        item(4, "ambiguous", "active_they", "M", cue="M"),
        item(5, "determined", "omission_i", "unknown", expected="M", reason="no_form"),
        item(5, "ambiguous", "omission_i", "unknown", reason="no_form"),
    ]


def value(result: dict) -> float | None:
    return result["value"]


def test_proportions_and_deltas_match_hand_computation():
    block = block_metrics(fixture_items(), "t", bootstrap=BootstrapSettings(200))
    assert block["n_pairs"] == 5
    assert block["classified"] == {"determined": 4, "ambiguous": 4}
    assert block["counts"]["determined"] == {"M": 3, "F": 1, "N": 0, "unknown": 1}
    assert value(block["unknown_rate"]["determined"]) == pytest.approx(1 / 5)
    # determined: M 3/4, F 1/4, N 0; ambiguous: M 2/4, F 0, N 2/4
    assert [value(block["determined"][c]) for c in "MFN"] == pytest.approx([0.75, 0.25, 0.0])
    assert [value(block["ambiguous"][c]) for c in "MFN"] == pytest.approx([0.5, 0.0, 0.5])
    assert value(block["delta"]["M"]) == pytest.approx(-0.25)
    assert value(block["delta"]["F"]) == pytest.approx(-0.25)
    assert value(block["delta"]["N"]) == pytest.approx(0.5)
    assert value(block["N_det"]) == 0.0
    assert block["strategies"]["ambiguous"] == {"N1": 1, "N2": 0, "N3": 1, "N4": 0, "N5": 0}
    assert block["strategy_shares"]["ambiguous"]["N3"] == pytest.approx(0.5)
    assert block["strategy_shares"]["determined"]["N1"] is None  # no N output to share out
    assert block["unknown_reasons"]["ambiguous"] == {"no_form": 1}
    for c in "MFN":
        low, high = block["delta"][c]["ci"]
        assert low <= value(block["delta"][c]) <= high


def test_omission_and_active_subsets():
    metrics = language_metrics(fixture_items(), "t", bootstrap=BootstrapSettings(200))["subsets"]
    omission, active = metrics["omission"], metrics["active"]
    # omission (pairs 1, 2, 5): det M, F; amb M, N
    assert [value(omission["delta"][c]) for c in "MFN"] == pytest.approx([0.0, -0.5, 0.5])
    assert value(omission["unknown_rate"]["ambiguous"]) == pytest.approx(1 / 3)
    # active (pairs 3, 4): det M, M; amb N, M
    assert [value(active["delta"][c]) for c in "MFN"] == pytest.approx([-0.5, 0.0, 0.5])
    assert metrics["omission_you"]["n_pairs"] == 1


def test_stereotype_effect_and_misgendering():
    cue = language_metrics(fixture_items(), "t", bootstrap=BootstrapSettings(200))["stereotype"]["cue"]
    # ambiguous, no cue (pairs 1, 3, 5): M 1/2, N 1/2; F cue (pair 2): N; M cue (pair 4): M
    assert value(cue["none"]["ambiguous"]["N"]) == pytest.approx(0.5)
    assert value(cue["F"]["effect"]["N"]) == pytest.approx(0.5)
    assert value(cue["F"]["effect"]["M"]) == pytest.approx(-0.5)
    assert value(cue["M"]["effect"]["M"]) == pytest.approx(0.5)
    assert value(cue["M"]["effect"]["N"]) == pytest.approx(-0.5)
    # determined: pair 2 (F, F cue) congruent and right; pair 4 (F, M cue) incongruent and misgendered as M
    misgendered = cue["determined_misgendered"]
    assert value(misgendered["congruent"]) == 0.0
    assert value(misgendered["incongruent"]) == 1.0
    assert value(misgendered["none"]) == 0.0
    assert value(misgendered["effect"]) == pytest.approx(1.0)


def test_a_model_blind_to_ambiguity_has_zero_deltas():
    rng = random.Random(0)
    items = []
    for pair in range(60):
        label = rng.choice(["M", "F", "N", "unknown"])
        strategy = rng.choice(["N1", "N3"]) if label == "N" else None
        kind = rng.choice(["omission_i", "omission_you", "active_they"])
        items.append(item(pair, "determined", kind, label, strategy, expected=rng.choice("MF")))
        items.append(item(pair, "ambiguous", kind, label, strategy))
    metrics = language_metrics(items, "blind", bootstrap=BootstrapSettings(300))
    for subset in ("all", "omission", "active"):
        for c in "MFN":
            result = metrics["subsets"][subset]["delta"][c]
            assert result["value"] == 0.0 and result["ci"] == [0.0, 0.0], (subset, c, result)


def test_empty_groups_give_none_not_errors():
    items = [item(1, "determined", "omission_i", "unknown", expected="M"), item(1, "ambiguous", "omission_i", "unknown")]
    block = block_metrics(items, "u", bootstrap=BootstrapSettings(50))
    assert block["determined"]["M"] == {"value": None, "ci": None, "n": 0}
    assert block["delta"]["N"]["value"] is None
    assert block_metrics([], "empty", bootstrap=BootstrapSettings(50))["n_pairs"] == 0


def test_grid_labels_and_tidy_rows():
    items = fixture_items()
    for it in items:
        it["style"] = "grid"
        it["grid_label"] = "NEUTRAL" if it["variant"] == "ambiguous" else "GENDERED"
        it["extraction_error"] = None
    items[-1]["extraction_error"], items[-1]["grid_label"] = "no_label", None
    metrics = compute_metrics(items, bootstrap=BootstrapSettings(100))
    labels = metrics["styles"]["grid"]["it"]["grid_labels"]
    assert value(labels["neutral_label"]["ambiguous"]) == 1.0
    assert value(labels["neutral_label"]["determined"]) == 0.0
    assert value(labels["extraction_error_rate"]) == pytest.approx(0.1)
    assert labels["extraction_errors"] == {"no_label": 1}
    rows = tidy_rows("base", metrics, 0)
    delta_n = [r for r in rows if r["subset"] == "all" and r["metric"] == "delta_N"]
    assert len(delta_n) == 1 and delta_n[0]["value"] == pytest.approx(0.5)
    assert {r["metric"] for r in rows} >= {"N_det", "delta_M", "delta_F", "unknown_amb"}


def test_bootstrap_is_reproducible():
    a = block_metrics(fixture_items(), "same", bootstrap=BootstrapSettings(100, 7))
    b = block_metrics(fixture_items(), "same", bootstrap=BootstrapSettings(100, 7))
    assert a == b
