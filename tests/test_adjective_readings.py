"""The judge-free reading of templated outputs: the adjective's form per row, as the suite's classifier gives it."""

from __future__ import annotations

import json
from pathlib import Path

from gnt.alignment.adjective_readings import read_entries, readings, right_form_values, summary
from gnt.data.entry import Entry

FORMS = {"gender_marked": "true", "form_m": "curioso", "form_f": "curiosa", "form_n": "una persona curiosa"}
SET_N_TEXT = ["«Sono una persona curiosa», dissi.", "«Sono curiosa», dissi.", "«Sono Curioso», dissi.",
              "«Sono attento», dissi."]
SET_G_TEXT = ["«Sono curioso», disse.", "«Sono curioso», disse.", "«Sono una persona curiosa», disse.",
              "«Sono curiosa», disse."]


def _entries() -> dict[str, Entry]:
    entries = {}
    for r in range(4):
        entries[f"it-N{r:03d}"] = Entry(f"it-N{r:03d}", "it", "Set-N", '"I am curious," I said.', "«Sono curioso»",
                                        ("«Sono una persona curiosa», dissi.",), origin="templated", meta=FORMS)
        entries[f"it-G{r:03d}"] = Entry(f"it-G{r:03d}", "it", "Set-G", '"I am curious," he said.', "«Sono curioso»",
                                        ("«Sono una persona curiosa», disse.",), gender="F" if r % 2 else "M",
                                        origin="templated", meta=FORMS)
    entries["it-G003"] = Entry("it-G003", "it", "Set-G", '"I am kind," she said.', "«Sono gentile»", ("x",),
                               gender="F", origin="templated", meta={**FORMS, "gender_marked": "false"})
    return entries


def _rewrite(row: dict) -> dict:
    """Set-N row 1 is feminine for the base and neutral for the checkpoint: the one row the two stages differ in."""
    r = int(row["id"][-3:])
    if row["set"] == "Set-N":
        text = SET_N_TEXT[0] if (r == 1 and row["model"] != "base") else SET_N_TEXT[r]
    else:
        text = SET_G_TEXT[r]
    return {**row, "translation": text}


def test_each_templated_output_is_read_by_the_form_of_its_adjective(tmp_path: Path) -> None:
    from _report_fixtures import make_results

    out = make_results(tmp_path / "res", steps=(4,), rows_per_set=4, langs=("it",), rewrite=_rewrite)
    entries = _entries()
    del entries["it-N003"]  # an output of an entry not in the file is not read
    found = readings(out, entries)
    assert set(found) == {"base", "sft/checkpoint-4"}
    base, tuned = found["base"], found["sft/checkpoint-4"]
    cells = {key.split("|")[2] for key in base}
    assert len(cells) == 3 and len(base) == 3 * (3 + 3), "3 Set-N and 3 gender-marked Set-G rows per cell"
    forms = {key.split("|")[1]: r.form for key, r in base.items()}
    assert forms == {"it-N000": "N", "it-N001": "F", "it-N002": "M", "it-G000": "own", "it-G001": "other",
                     "it-G002": "N"}, "case-folded; Set-G M/F read against the stated gender"
    assert {key.split("|")[1]: r.form for key, r in tuned.items()}["it-N001"] == "N"

    judged = {j["key"]: j["label"] for j in map(json.loads, (out / "base" / "judgments.jsonl").open())}
    rows = {f"{g['lang']}|{g['id']}|{g['cell']}": g for g in map(json.loads, (out / "base" / "generations.jsonl").open())}
    assert all(base[key].judge == judged.get(rows[key]["key"]) for key in base)

    told = summary(base)
    assert told["Set-N"]["forms"] == {"F": 3, "M": 3, "N": 3} and told["Set-N"]["right_form_share"] == 1 / 3
    assert told["Set-G"]["forms"] == {"N": 3, "other": 3, "own": 3} and told["Set-G"]["rows"] == 9
    neutral_on_gendered = sum(r.judge == "NEUTRAL" and r.form in ("M", "F") for r in base.values() if r.set == "Set-N")
    assert told["Set-N"]["judge_neutral_gendered_adjective"] == neutral_on_gendered

    before, after = right_form_values(base, "Set-N"), right_form_values(tuned, "Set-N")
    assert before.keys() == after.keys()
    assert {k for k in before if before[k] != after[k]} == {k for k in before if "|it-N001|" in k}


def test_entries_are_read_back_as_the_build_writes_them(tmp_path: Path) -> None:
    path = tmp_path / "templated_test.jsonl"
    entries = _entries()
    path.write_text("".join(json.dumps(e.to_record()) + "\n" for e in entries.values()) + "\n", encoding="utf-8")
    assert read_entries(path) == entries
    assert all(read_entries(path)[k].meta == e.meta for k, e in entries.items())
