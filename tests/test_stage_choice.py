"""The stage choice: the aligned stage ends the chain only where it beats SFT on dev without losing the label, the
stated genders or the translation, and the report says which stage and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gnt.alignment.stage_choice import StageRule, choice_sentence, delta
from gnt.report.config import ReportConfig
from gnt.report.document import _stage_choice_section


def _delta(gnt: float | None, label: float | None = 0.0, chrf: float | None = 0.0,
           setg: float | None = 0.0) -> dict:
    return {"gnt_n_adequate": gnt, "gnt_g_adequate": setg, "label_bal": label, "chrf": chrf}


@pytest.mark.parametrize(("change", "earned", "why"), [
    (_delta(0.05), True, None),
    (_delta(0.0), False, "not higher"),
    (_delta(-0.1), False, "-10.0 points"),
    (_delta(0.05, label=-0.03), False, "label balanced accuracy falls"),
    (_delta(0.05, label=-0.02), True, None),
    (_delta(0.05, chrf=-1.5), False, "chrF++ falls"),
    (_delta(None), False, "not higher"),
    (_delta(0.1, setg=-0.05), False, "Set-G GNT accuracy (inadequate = wrong) falls by more than 2 points (-5.0)"),
    (_delta(0.1, setg=-0.02), True, None),
    (_delta(0.1, setg=None), False, "Set-G GNT accuracy"),
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
    with_misses = _choice("sft", ["because"]) | {"setn_misses": {
        "sft": {"rows": 10, "right": 6, "inadequate": 3, "not_neutral": 1}, "aligned": None}}
    path.write_text(json.dumps(with_misses))
    misses = next(b for b in _stage_choice_section(str(path), {}) if getattr(b, "name", None) == "stage_choice_setn_misses")
    assert misses.rows == [["right", "6"], ["below the adequacy bar", "3"], ["adequate, not judged neutral", "1"]]


def test_each_figure_is_kept_per_origin_and_the_origins_add_up_to_the_whole(tmp_path: Path) -> None:
    """Half the rows of each set made templated (their ids start as templated ids do): each origin's label
    accuracies are computed over its own outputs, so weighted by their outputs they give the whole folder's."""
    from _report_fixtures import make_results

    from gnt.alignment.stage_choice import choose_stage, model_figures, origin_figures, origin_of, setn_misses
    from gnt.data.templated.pairs import TEMPLATED_ID_PREFIX
    from gnt.results.model_folder import ModelFolder

    def templated_half(row: dict) -> dict:
        return {**row, "id": f"{TEMPLATED_ID_PREFIX}{row['id']}"} if int(row["id"][-3:]) % 2 else row

    out = make_results(tmp_path / "dev", steps=(4,), rows_per_set=8, langs=("it", "es"), rewrite=templated_half)
    whole, parts = model_figures(out), origin_figures(out)
    assert origin_of("tpl-it-000123-amb") == "templated" and origin_of("IT-021") == "mgente"
    for name in whole:
        rows = ModelFolder(out, name).generations()
        for key, set_name in (("label_n", "Set-N"), ("label_g", "Set-G")):
            n = {origin: sum(1 for r in rows if r["set"] == set_name and origin_of(r["id"]) == origin)
                 for origin in ("mgente", "templated")}
            assert n["mgente"] and n["templated"]
            combined = sum(parts[name][o][key] * n[o] for o in n) / sum(n.values())  # type: ignore[operator]
            assert combined == pytest.approx(whole[name][key], abs=1e-5)
        assert parts[name]["mgente"] != parts[name]["templated"], "two subsets, two sets of figures"
    choice = choose_stage(out, "base", "sft/checkpoint-4")
    for origin in ("mgente", "templated"):
        kept = choice["by_origin"][origin]
        assert kept["sft"] == parts["base"][origin] and kept["aligned"] == parts["sft/checkpoint-4"][origin]
        assert kept["delta"]["label_n"] == pytest.approx(kept["aligned"]["label_n"] - kept["sft"]["label_n"])
    assert choice["setn_misses"] == {"sft": setn_misses(out)["base"], "aligned": setn_misses(out)["sft/checkpoint-4"]}


def test_set_n_misses_split_into_inadequate_and_not_neutral_rows(tmp_path: Path) -> None:
    """Counted again here from the rows (chrF++ against the references) and the judgments themselves."""
    from _report_fixtures import make_results

    from gnt.alignment.stage_choice import model_figures, setn_misses
    from gnt.evaluation.adequacy import chrf_pp, is_adequate
    from gnt.filenames import JUDGMENTS
    from gnt.results.model_folder import ModelFolder

    def half_adequate(row: dict) -> dict:  # the fixture's own translations share nothing with its references
        adequate = row["translation"] is not None and int(row["id"][-3:]) % 2 == 0
        return {**row, "translation": row["ref_n"][0]} if adequate else row

    out = make_results(tmp_path / "dev", steps=(4,), rows_per_set=8, langs=("it", "es"), rewrite=half_adequate)
    figures, misses = model_figures(out), setn_misses(out)
    assert set(misses) == set(figures)
    for name, counts in misses.items():
        folder = ModelFolder(out, name)
        neutral = {j["key"]: j["neutral"] for j in folder.iter_lines(JUDGMENTS)}
        expected = {"right": 0, "inadequate": 0, "not_neutral": 0}
        for row in (r for r in folder.generations() if r["set"] == "Set-N"):
            if row["error"] or not is_adequate(chrf_pp(row["translation"], [row["ref_g"], *row["ref_n"]])):
                expected["inadequate"] += 1
            else:
                expected["right" if neutral[row["key"]] else "not_neutral"] += 1
        assert counts == {"rows": sum(expected.values()), **expected}
        assert expected["inadequate"] and expected["not_neutral"] and expected["right"]
        assert counts["right"] / counts["rows"] == pytest.approx(figures[name]["gnt_n_adequate"], abs=1e-5)


def test_the_report_shows_the_dev_figures_per_origin(tmp_path: Path) -> None:
    choice = _choice("sft", ["because"])
    choice["by_origin"] = {
        "mgente": {"sft": {"gnt_n_adequate": 0.75}, "aligned": {"gnt_n_adequate": 0.75}, "delta": {"gnt_n_adequate": 0.0}},
        "templated": {"sft": {"gnt_n_adequate": 0.75}, "aligned": {"gnt_n_adequate": 0.8}, "delta": {"gnt_n_adequate": 0.05}},
    }
    path = tmp_path / "stage_choice.json"
    path.write_text(json.dumps(choice))
    table = next(b for b in _stage_choice_section(str(path), {}) if getattr(b, "name", None) == "stage_choice_by_origin")
    rows = {(r[0], r[1]): r[2:] for r in table.rows if r[0].startswith("GNT acc. Set-N")}
    assert rows[("GNT acc. Set-N, inadequate = wrong", "templated")] == ["75.0", "80.0", "+5.0"]
    assert rows[("GNT acc. Set-N, inadequate = wrong", "mgente")] == ["75.0", "75.0", "+0.0"]
