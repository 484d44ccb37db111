"""The stage choice: the aligned stage ends the chain only where it beats SFT on dev without losing the label or
the translation, and the report says which stage and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gnt.alignment.stage_choice import StageRule, choice_sentence, delta
from gnt.report.config import ReportConfig
from gnt.report.document import _stage_choice_section


def _delta(gnt: float | None, label: float | None = 0.0, chrf: float | None = 0.0) -> dict:
    return {"gnt_n_adequate": gnt, "label_bal": label, "chrf": chrf}


@pytest.mark.parametrize(("change", "earned", "why"), [
    (_delta(0.05), True, None),
    (_delta(0.0), False, "not higher"),
    (_delta(-0.1), False, "-10.0 points"),
    (_delta(0.05, label=-0.03), False, "label balanced accuracy falls"),
    (_delta(0.05, label=-0.02), True, None),
    (_delta(0.05, chrf=-1.5), False, "chrF++ falls"),
    (_delta(None), False, "not higher"),
])
def test_the_rule_keeps_alignment_only_where_it_earns_it(change, earned, why) -> None:
    failures = StageRule().failures(change)
    assert (not failures) is earned
    if why:
        assert any(why in text for text in failures), failures


def test_delta_is_aligned_minus_sft_and_none_where_either_is_missing() -> None:
    change = delta({"gnt_n_adequate": 0.5, "label_bal": None, "chrf": 40.0},
                   {"gnt_n_adequate": 0.25, "label_bal": 0.8, "chrf": 41.0})
    assert change["gnt_n_adequate"] == 0.25 and change["label_bal"] is None and change["chrf"] == -1.0


def _choice(final: str, reasons: list[str]) -> dict:
    return {"final": final, "models": {"sft": "runs/sft", "aligned": "onpolicy/round-1"}, "reasons": reasons,
            "figures": {"sft": {"gnt_n_adequate": 0.3, "chrf": 40.0}, "aligned": {"gnt_n_adequate": 0.2, "chrf": 41.0},
                        "delta": {"gnt_n_adequate": -0.1, "chrf": 1.0}}}


def test_the_sentence_names_the_final_stage_and_why() -> None:
    kept = choice_sentence(_choice("sft", ["Set-N GNT accuracy (inadequate = wrong) is not higher than SFT's"]))
    assert kept.startswith("The chain ends at SFT `runs/sft`") and "not higher than SFT's" in kept
    assert "ends at the aligned stage `onpolicy/round-1`" in choice_sentence(_choice("aligned", []))


def test_the_report_shows_the_choice_and_its_dev_figures(tmp_path: Path) -> None:
    path = tmp_path / "stage_choice.json"
    path.write_text(json.dumps(_choice("sft", ["because"])))
    data: dict = {}
    blocks = _stage_choice_section(str(path), data)
    texts = [getattr(b, "text", "") for b in blocks]
    assert any("ends at SFT" in t and "because" in t for t in texts)
    table = next(b for b in blocks if getattr(b, "name", None) == "stage_choice")
    gnt_row = next(r for r in table.rows if r[0].startswith("GNT acc. Set-N"))
    assert gnt_row[1:] == ["30.0", "20.0", "-10.0"]
    assert data["stage_choice"]["final"] == "sft"
    assert _stage_choice_section(None, {}) == []
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert "could not be read" in _stage_choice_section(str(broken), {})[1].text
    assert ReportConfig().stage_choice is None
