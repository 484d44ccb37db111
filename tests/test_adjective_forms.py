"""The judge-free reading of templated outputs: the adjective's form per row, as the suite's classifier gives it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gnt.data.entry import Entry
from gnt.io import read_json, sha256_file
from gnt.report.adjective_forms import read_entries, readings, right_form_values, summary

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


def test_the_report_reads_the_forms_beside_the_judge_and_each_checkpoint_against_the_base(
        tmp_path: Path) -> None:
    """The report finds the templated build file its records name, shows each model's forms and the checkpoint
    against the base (the one Set-N row of four that turned neutral: +25 points); a build file changed since the
    evaluation is named, and nothing is read from it."""
    from _report_fixtures import make_results

    from gnt.report import build_report
    from gnt.report.config import ReportConfig

    path = tmp_path / "data" / "eval" / "templated_test.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(e.to_record()) + "\n" for e in _entries().values()), encoding="utf-8")
    out = make_results(tmp_path / "res", steps=(4, 8), rows_per_set=4, langs=("it",), rewrite=_rewrite,
                       rows={"files": {str(path): sha256_file(path)}})
    report = build_report(out, ReportConfig(out_dir=str(tmp_path / "report"), bootstrap_samples=200))
    data = read_json(report.with_name("report_data.json"))
    forms = data["adjective_forms"]
    assert forms["base"]["Set-N"]["right_form_share"] == 1 / 4 and forms["base"]["Set-G"]["right_form_share"] == 1 / 3
    assert forms["sft/checkpoint-4"]["Set-N"]["right_form_share"] == 2 / 4
    paired = {(p["model"], p["against"], p["set"]): p for p in data["adjective_forms_paired"]}
    assert paired[("sft/checkpoint-4", "base", "Set-N")]["delta"] == pytest.approx(0.25)
    assert paired[("sft/checkpoint-4", "base", "Set-G")]["delta"] == 0 and len(paired) == 4, "both against the base"
    assert paired[("sft/checkpoint-8", "base", "Set-N")]["delta"] == pytest.approx(0.25)
    text = report.read_text(encoding="utf-8")
    assert "Templated rows read without the judge" in text and "| sft/checkpoint-4 | 12 | 50.0 |" in text

    path.write_text(path.read_text(encoding="utf-8").replace("curiosa", "curiosissima"), encoding="utf-8")
    changed = build_report(out, ReportConfig(out_dir=str(tmp_path / "again"), bootstrap_samples=200))
    assert f"Not read: {path} is missing or changed since the evaluation" in changed.read_text(encoding="utf-8")
    assert "adjective_forms" not in read_json(changed.with_name("report_data.json"))


def test_the_stage_choice_section_reads_its_dev_folder_without_the_judge(tmp_path: Path) -> None:
    """A stage choice names its dev results folder and the two models; the report reads their templated rows there
    (SFT: base here, aligned: the checkpoint whose one Set-N row of four turned neutral)."""
    from _report_fixtures import make_results

    from gnt.io import write_json
    from gnt.report import build_report
    from gnt.report.config import ReportConfig

    path = tmp_path / "data" / "eval" / "templated_dev.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(e.to_record()) + "\n" for e in _entries().values()), encoding="utf-8")
    dev = make_results(tmp_path / "dev", steps=(4,), rows_per_set=4, langs=("it",), rewrite=_rewrite,
                       rows={"files": {str(path): sha256_file(path)}})
    results = make_results(tmp_path / "eval", steps=(4,), rows_per_set=4, langs=("it",))
    choice = tmp_path / "stage_choice.json"
    write_json(choice, {"format": "gnt-align/stage-choice/1", "results": str(dev), "final": "aligned",
                        "models": {"sft": "base", "aligned": "sft/checkpoint-4"}})
    report = build_report(results, ReportConfig(out_dir=str(tmp_path / "report"), bootstrap_samples=200,
                                                stage_choice=str(choice)))
    read = read_json(report.with_name("report_data.json"))["stage_choice_adjective_forms"]
    assert read["sft"]["Set-N"]["right_form_share"] == 1 / 4 and read["aligned"]["Set-N"]["right_form_share"] == 2 / 4
    assert read["paired"]["Set-N"]["delta"] == pytest.approx(0.25) and read["paired"]["Set-G"]["delta"] == 0
    assert "| Set-N adjective neutral % | 25.0 | 50.0 | +25.0" in report.read_text(encoding="utf-8")
    assert "adjective_forms" not in read_json(report.with_name("report_data.json")), "the eval folder has none"
