"""Paired templated-suite tests between two models: N_amb and ΔN differences over the same pairs."""

from __future__ import annotations

import pytest

from gnt.bootstrap import BootstrapSettings
from gnt.templated_suite.paired import paired_suite_test


def _items(labels: list[tuple[str, str]], lang: str = "it", style: str = "plain") -> list[dict]:
    """One pair per (determined label, ambiguous label)."""
    items = []
    for number, (det, amb) in enumerate(labels):
        items.append({"style": style, "lang": lang, "pair_id": f"p{number}", "variant": "determined", "label": det})
        items.append({"style": style, "lang": lang, "pair_id": f"p{number}", "variant": "ambiguous", "label": amb})
    return items


def test_a_model_that_answers_ambiguity_neutrally_is_significantly_better() -> None:
    base = _items([("M", "M")] * 30)  # masculine default everywhere: N_amb = ΔN = 0
    tuned = _items([("M", "N")] * 24 + [("M", "M")] * 6)
    for statistic in ("N_amb", "dN"):
        result = paired_suite_test(base, tuned, style="plain", lang="it", statistic=statistic, bootstrap=BootstrapSettings(500))
        assert result["base"] == 0.0 and result["other"] == pytest.approx(0.8)
        assert result["delta"] == pytest.approx(0.8) and result["p_value"] < 0.01 and result["ci"][0] > 0.5
        assert result["n_pairs"] == 30


def test_neutral_everywhere_raises_n_amb_but_not_delta_n() -> None:
    base = _items([("M", "M")] * 20)
    always_neutral = _items([("N", "N")] * 20)  # no response to ambiguity: ΔN stays 0
    n_amb = paired_suite_test(base, always_neutral, style="plain", lang="it", statistic="N_amb", bootstrap=BootstrapSettings(300))
    d_n = paired_suite_test(base, always_neutral, style="plain", lang="it", statistic="dN", bootstrap=BootstrapSettings(300))
    assert n_amb["delta"] == pytest.approx(1.0)
    assert d_n["delta"] == pytest.approx(0.0) and d_n["p_value"] == 1.0


def test_unknowns_are_left_out_and_other_styles_languages_ignored() -> None:
    base = _items([("M", "M"), ("M", "unknown")]) + _items([("N", "N")], lang="es")
    other = _items([("M", "N"), ("M", "N")]) + _items([("M", "M")], style="grid")
    result = paired_suite_test(base, other, style="plain", lang="it", statistic="N_amb", bootstrap=BootstrapSettings(200))
    assert result["base"] == 0.0 and result["other"] == 1.0 and result["n_pairs"] == 2
    assert paired_suite_test(base, other, style="plain", lang="de", statistic="N_amb") is None
    with pytest.raises(ValueError, match="statistic"):
        paired_suite_test(base, other, style="plain", lang="it", statistic="bogus")
