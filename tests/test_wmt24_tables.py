"""The paper's tables from items: macro-averages over template types, shared resamples, paired tests, placement,
the stereotype file and the comparison of two runs' readings."""

from __future__ import annotations

import numpy as np
import pytest

from gnt.bootstrap import resampling_weights
from gnt.data.errors import DataError
from gnt.templated_suite.wmt24.moved import format_moved, items_writer, moved, read_items, write_items
from gnt.templated_suite.wmt24.placement import STATISTICS, place
from gnt.templated_suite.wmt24.reader import parse_segment
from gnt.templated_suite.wmt24.score import SystemScores
from gnt.templated_suite.wmt24.stereotypes import check_design, load_stereotypes
from gnt.templated_suite.wmt24.tables import Resamples, paired_test, stereotype_table, system_table

B = 200


def _item(seg, template, variant, label, strategy=None, **extra):
    return {"seg_id": seg, "template": template, "variant": variant, "label": label, "strategy": strategy,
            "reason": "no_form" if label == "unknown" else None, **extra}


def _resamples(units: dict[str, list[str]], seed: int = 0) -> Resamples:
    return Resamples(units, {k: resampling_weights(len(v), B, seed + i) for i, (k, v) in enumerate(units.items())},
                     B, 0.05)


def test_each_template_type_weighs_the_same_in_a_table_side():
    # Template 1 has three determined items, all M; template 2 one, F. Pooled, M_det would be 3/4; the paper's
    # macro-average gives each type half.
    items = [_item(s, "1", "determined", "M") for s in "abc"] + [_item("d", "2", "determined", "F")]
    result = system_table(items, "omission", _resamples({"1": list("abc"), "2": ["d"]})).to_json(0.05)
    assert (result["determined"]["M"]["value"], result["determined"]["F"]["value"]) == (0.5, 0.5)
    assert result["n_determined"] == {"classified": 4, "items": 4}
    assert result["ambiguous"]["M"]["value"] is None  # templates 3 and 4 absent: nothing to average


def test_a_delta_is_paired_when_both_sides_share_segments():
    # Template 4: in each dialogue the determined and the ambiguous slots read alike (N in a, M in b), so N_det and
    # N_amb vary from resample to resample but their difference is 0 on every one.
    items = [_item("a", "4", v, "N", "N1") for v in ("determined", "ambiguous")]
    items += [_item("b", "4", v, "M") for v in ("determined", "ambiguous")]
    result = system_table(items, "omission", _resamples({"4": ["a", "b"]})).to_json(0.05)
    assert result["determined"]["N"]["ci"] == [0.0, 1.0]
    assert result["delta"]["N"] == {"value": 0.0, "ci": [0.0, 0.0], "n": 2}


def test_unknowns_are_left_out_and_a_side_without_any_classified_item_has_no_value():
    items = [_item("a", "5", "determined", "unknown"), _item("b", "5", "ambiguous", "N", "N3")]
    result = system_table(items, "active", _resamples({"5": ["a", "b"]})).to_json(0.05)
    assert result["determined"]["N"] == {"value": None, "ci": None, "n": 0}
    assert result["n_determined"] == {"classified": 0, "items": 1}
    assert result["delta"]["N"]["value"] is None and result["ambiguous"]["N3"]["value"] == 1.0


def _stereo_items(system_labels: dict[str, tuple[str, str, str]]) -> list[dict]:
    """Template-7 items: per adjective, its label without an adverb, with the masculine and the feminine one."""
    items = []
    for adjective, labels in system_labels.items():
        for condition, label in zip(("none", "M", "F"), labels, strict=True):
            items.append(_item(f"{adjective}-{condition}", "7", "ambiguous", label,
                               "N1" if label == "N" else None, adjective=adjective, adverb_stereotype=condition))
    return items


def test_stereotype_contrasts_are_paired_per_adjective():
    # Half the adjectives answer M whatever the adverb, half move from N to M with a masculine adverb.
    items = _stereo_items({f"adj{i}": ("M", "M", "M") if i % 2 else ("N", "M", "N") for i in range(10)})
    units = {"7-adjectives": sorted({it["adjective"] for it in items})}
    result = stereotype_table(items, _resamples(units)).to_json(0.05)
    assert result["conditions"]["none"]["M"]["value"] == 0.5 and result["conditions"]["M"]["M"]["value"] == 1.0
    masc = result["contrasts"]["masculine_vs_none"]["M"]
    assert masc["value"] == 0.5 and masc["ci"][0] > 0.0 and masc["p_value"] < 0.05
    assert result["contrasts"]["feminine_vs_none"]["M"] == {"value": 0.0, "ci": [0.0, 0.0], "n": 10, "p_value": 1.0}


def _scores(name: str, labels: dict[str, str]) -> SystemScores:
    """A system whose template-4 slots are determined M and ambiguous ``labels[segment]``."""
    items = []
    for seg, label in labels.items():
        items += [_item(seg, "4", "determined", "M"), _item(seg, "4", "ambiguous", label, "N3" if label == "N" else None)]
    resamples = _resamples({"4": sorted(labels)})
    tables = {t: system_table(items, t, resamples) for t in ("omission", "active", "strategies")}
    return SystemScores(name, "es", tables, stereotype_table(items, resamples), {}, {})


def test_a_model_is_placed_among_the_systems_on_shared_resamples():
    segments = [f"s{i}" for i in range(20)]
    never = _scores("Never", dict.fromkeys(segments, "M"))
    half = _scores("Half", {s: "N" if i % 2 else "M" for i, s in enumerate(segments)})
    ours = _scores("ours", {s: "N" if i % 2 else "M" for i, s in enumerate(segments)})
    placement = place(ours, [never, half], 0.05)
    dn = placement["omission"]["dN"]
    assert dn["value"] == 0.5 and (dn["rank"], dn["of"]) == (1, 2)
    assert dn["below"] == ["Never"] and dn["above"] == []  # Half is the same system: difference 0, p = 1
    assert dn["versus"]["Half"] == {"value": 0.0, "ci": [0.0, 0.0], "n": 20, "p_value": 1.0}
    assert {(t, s) for t, stats in placement.items() for s in stats} == {(t, s) for t, s, _ in STATISTICS}
    assert placement["active"]["dN"]["rank"] is None  # no template-5 item: nothing to rank


def test_paired_test_of_identical_resamples_is_exact():
    from gnt.templated_suite.wmt24.tables import Estimate

    a = Estimate(0.3, np.full(B, 0.3), 10)
    assert paired_test(a - a, 0.05) == {"value": 0.0, "ci": [0.0, 0.0], "n": 10, "p_value": 1.0}


# ---------------------------------------------------------------------------------------------- stereotypes
def test_the_shipped_stereotypes_cover_the_suite_design():
    stereotypes = load_stereotypes()
    assert stereotypes["descriptor"]["suave"] == "M" and stereotypes["descriptor"]["perky"] == "F"
    assert stereotypes["adverb"]["suavely"] == "M" and stereotypes["adverb"]["gently"] == "F"
    assert sum(v == "M" for v in stereotypes["adverb"].values()) == 7 and len(stereotypes["adverb"]) == 29


def test_a_bad_stereotype_row_or_a_broken_design_is_located(tmp_path):
    bad = tmp_path / "stereotypes.tsv"
    bad.write_text("en\tkind\tstereotype\nsuave\tdescriptor\tX\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"stereotypes.tsv:2:stereotype: stereotype must be M or F"):
        load_stereotypes(bad)
    bad.write_text("en\tkind\tstereotype\nsuave\tdescriptor\tM\nsuave\tdescriptor\tF\n", encoding="utf-8")
    with pytest.raises(DataError, match=r":3:en: descriptor 'suave' given twice"):
        load_stereotypes(bad)
    stereotypes = load_stereotypes()
    two_masculine = parse_segment('The suave nurse smiled. "I think I\'m tall," he said to the jovial doctor.', "0007")
    with pytest.raises(DataError, match="segment 0007 pairs two descriptors of one stereotype"):
        check_design([two_masculine], stereotypes)
    unknown = parse_segment('"I think I\'m tall," I said loudly.', "0008")
    with pytest.raises(DataError, match="1 adverb.* without a stereotype: loudly"):
        check_design([unknown], stereotypes)


# ---------------------------------------------------------------------------------------------- moved items
def test_moved_items_are_counted_per_transition_with_examples(tmp_path):
    base = {"system": "S", "slot": 0, "template": "1", "variant": "determined", "adjective": "fit",
            "rule": "epicene_form", "reason": None, "evidence": "en forma", "text": "estoy en forma"}
    before = [base | {"seg_id": "0001", "label": "N", "strategy": "N1"},
              base | {"seg_id": "0002", "label": "M", "strategy": None, "rule": "masculine_form"}]
    after = [base | {"seg_id": "0001", "label": "N", "strategy": "N3"},
             base | {"seg_id": "0002", "label": "M", "strategy": None, "rule": "masculine_form"},
             base | {"seg_id": "0003", "label": "unknown", "strategy": None, "rule": None, "reason": "no_form"}]
    for name, items in (("before", before), ("after", after)):
        with items_writer(tmp_path / name / "items.tsv.gz") as writer:
            write_items(writer, items)
    result = moved(read_items(tmp_path / "before"), read_items(tmp_path / "after"))
    assert (result["compared"], result["moved"], result["only_after"]) == (2, 1, 1)
    assert result["transitions"] == {"N1 -> N3": 1} and result["per_system"] == {"S": {"N1 -> N3": 1}}
    [example] = result["examples"]["N1 -> N3"]
    assert (example["seg_id"], example["text"], example["after"]["strategy"]) == ("0001", "estoy en forma", "N3")
    assert "N1 -> N3" in format_moved(result)
    with pytest.raises(DataError, match="no items.tsv.gz"):
        read_items(tmp_path / "nowhere")
