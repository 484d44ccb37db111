"""Judging an evaluation results folder: judgments, GNT accuracy and coherence on known judgments, cache, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _judge_fakes import ScriptedBackend
from _report_fixtures import metrics_of

from gnt.bootstrap import BootstrapSettings
from gnt.data.entry import Entry
from gnt.evaluation.metrics import grid_metrics
from gnt.io import read_jsonl, write_json, write_jsonl
from gnt.judge.apply import judge_results
from gnt.judge.lexical import LexicalJudge
from gnt.judge.llm_judge import JudgeCache, JudgeSettings, LLMJudge
from gnt.results.folder import ResultsFolder
from gnt.results.model_folder import GRID, ModelFolder

ROOT = Path(__file__).resolve().parent.parent
CELL = "it/G+S/4"
# (id, set, generated label, translation, judge label or a fault); row 7 is an extraction error.
ROWS = [
    ("1", "Set-G", "GENDERED", "La signora Rossi è stanca.", "CORRECTLY GENDERED"),
    ("2", "Set-G", "NEUTRAL", "La persona che presiede è stanca.", "NEUTRAL"),
    ("3", "Set-G", "GENDERED", "Chi presiede è stanco di aspettare.", "NEUTRAL"),
    ("4", "Set-N", "NEUTRAL", "La cittadinanza è preoccupata.", "NEUTRAL"),
    ("5", "Set-N", "NEUTRAL", "I cittadini sono preoccupati.", "WRONGLY GENDERED"),
    ("6", "Set-N", "NEUTRAL", "Il personale docente è d'accordo.", "FAULT"),
    ("7", "Set-N", None, None, None),
    ("8", "Set-N", "GENDERED", "Gli insegnanti sono d'accordo.", "WRONGLY GENDERED"),
]
LABELS = {t: lab for _, _, _, t, lab in ROWS if t}
GENDERED_WORDS = {"1": ("signora", "stanca"), "3": ("stanco",), "5": ("cittadini", "preoccupati"),
                  "8": ("insegnanti",), "4": (), "2": (), "6": ()}


def _records(model: str) -> list[dict]:
    records = []
    for row_id, set_name, label, translation, _ in ROWS:
        records.append({
            "model": model, "id": row_id, "lang": "it", "set": set_name, "gender": "F" if set_name == "Set-G" else None,
            "source_key": f"sk{row_id}", "cell": CELL, "key": f"{model}-gen-{row_id}", "source": f"Source {row_id}.",
            "raw": "", "label": label, "translation": translation,
            "error": None if translation else "no_label", "ref_g": translation or "", "ref_n": [translation or ""],
        })
    return records


def _entries() -> list[Entry]:
    return [Entry(r[0], "it", r[1], f"Source {r[0]}.", "ref g", ("ref n",), gender="F" if r[1] == "Set-G" else None,
                  gendered_words=GENDERED_WORDS.get(r[0], ())) for r in ROWS]


def _results(tmp_path: Path, edit=lambda record: None) -> Path:
    """Two model folders written as the sweep writes them, each record first passed to ``edit``."""
    out = tmp_path / "eval"
    for model in ("base", "sft/checkpoint-2"):
        records = _records(model.replace("/", "_"))
        for record in records:
            edit(record)
        metrics = grid_metrics(records, model=model, global_step=None, leakage={}, bootstrap=BootstrapSettings(50))
        ModelFolder(out, model).write(GRID, {"generations.jsonl": records, "metrics.json": metrics},
                                      {"status": "ok", "model": {"name": model}})
    write_jsonl(out / "cache" / "generations.jsonl", [{"key": "x", "text": "y"}])  # not a model folder
    return out


def _backend() -> ScriptedBackend:
    return ScriptedBackend(LABELS, faults={"Il personale docente è d'accordo.": ["{not json"] * 20})


def test_gnt_accuracy_and_coherence_from_known_judgments(tmp_path):
    out = _results(tmp_path)
    folder = ResultsFolder.on_disk(out)
    assert list(folder.models) == ["base", "sft/checkpoint-2"]  # the generation cache is not a model folder
    backend = _backend()
    judge = LLMJudge(backend, JudgeSettings(judge_retries=1), JudgeCache(out / "cache" / "judgments.jsonl"))
    validation = {"kind": "references", "results": [
        {"format": "CROSS-P+L", "lang": "all", "cells": {"overall": {"accuracy": 0.8}}}]}
    grid_file = (out / "base" / "metrics.json").read_bytes()
    summaries = judge_results(folder, folder.models, llm=judge, lexical=LexicalJudge(), entries=_entries(),
                              validation=validation)
    assert (out / "base" / "metrics.json").read_bytes() == grid_file, "the judge never writes the grid's file"
    # 7 clean records per model, identical in both models: 7 distinct items, the fault retried once
    assert judge.stats.items == 14 and judge.stats.unique == 7 and backend.calls == 2 and len(backend.requests) == 8

    metrics = metrics_of(out, "base")
    gnt = metrics["overall"]["gnt_accuracy"]
    # Set-G rows 1-3: only row 1 judged gendered -> 1/3. Set-N: rows 4, 5, 7 (extraction error = failure), 8;
    # row 6 is a judge error, left out -> 1/4. All: 2/7.
    assert gnt["Set-G"]["value"] == pytest.approx(1 / 3) and gnt["Set-G"]["n"] == 3
    assert gnt["Set-N"]["value"] == pytest.approx(1 / 4) and gnt["Set-N"]["n"] == 4
    assert gnt["all"]["value"] == pytest.approx(2 / 7) and gnt["n_unjudged"] == 1
    coherence = metrics["cells"][CELL]["coherence"]
    # GENDERED labels: rows 1 (gendered), 3 (neutral), 8 (gendered) -> 2/3; NEUTRAL: 2 ok, 4 ok, 5 gendered -> 2/3
    assert coherence["GENDERED"]["value"] == pytest.approx(2 / 3)
    assert coherence["NEUTRAL"]["value"] == pytest.approx(2 / 3)
    assert gnt["all"]["ci"] is not None

    block = metrics["judge"]
    assert block["n_judged"] == 6 and block["n_judge_errors"] == 1 and block["n_extraction_errors"] == 1
    assert block["judge_errors_by_kind"] == {"invalid_json": 1}
    assert block["validation"]["accuracy"]["all"]["overall"] == 0.8
    # lexical vs LLM on annotated judged rows 1, 3, 5, 8: lexical gendered on all four, LLM neutral on row 3
    agreement = block["agreement_lexical"]
    assert agreement["n"] == 4 and agreement["agreement"] == pytest.approx(3 / 4) and agreement["n_unannotated"] == 3
    assert summaries["sft/checkpoint-2"]["n_judged"] == 6

    judgments = read_jsonl(out / "base" / "judgments.jsonl")
    assert len(judgments) == 7 and {j["key"] for j in judgments} == {f"base-gen-{i}" for i in "1234568"}
    error = next(j for j in judgments if j["error"])
    assert error["raw"] == "{not json" and error["error_kind"] == "invalid_json" and error["neutral"] is None
    assert error["judge_error"].startswith("invalid_json: ") and error["judge"] == "fake-judge"
    ok = next(j for j in judgments if j["id"] == "5")
    assert ok["label"] == "WRONGLY GENDERED" and ok["neutral"] is False and ok["phrases"][0]["gender"] == "M"
    assert len(read_jsonl(out / "base" / "judgments-lexical.jsonl")) == 7
    assert (out / "base" / "judge_summary.json").is_file()

    # a rerun judges nothing: every item (the judge error too) comes from the cache
    rerun_backend = ScriptedBackend(LABELS)
    rerun = LLMJudge(rerun_backend, JudgeSettings(judge_retries=1), JudgeCache(out / "cache" / "judgments.jsonl"))
    judge_results(folder, folder.models, llm=rerun, lexical=LexicalJudge(), entries=_entries())
    assert rerun_backend.requests == [] and rerun.stats.cached == 7
    assert metrics_of(out, "base")["overall"]["gnt_accuracy"]["all"]["value"] == pytest.approx(2 / 7)


def test_lexical_judge_alone_and_the_cli(tmp_path):
    def carry_words(record: dict) -> None:  # records that carry their gendered words need no dataset
        record["gendered_words"] = list(GENDERED_WORDS.get(record["id"], ()))

    out = _results(tmp_path, carry_words)
    result = subprocess.run(
        [sys.executable, str(ROOT / "eval" / "judge.py"), "judge", str(out), "judge=lexical", "models=base"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    metrics = metrics_of(out, "base")
    # lexical: gendered rows 1, 3, 5, 8; neutral 2, 4, 6. Set-G: 1 and 3 right -> 2/3; Set-N: 4, 6 right of
    # 4, 5, 6, 7(error), 8 -> 2/5.
    assert metrics["overall"]["gnt_accuracy"]["Set-G"]["value"] == pytest.approx(2 / 3)
    assert metrics["overall"]["gnt_accuracy"]["Set-N"]["value"] == pytest.approx(2 / 5)
    assert metrics["judge"]["kind"] == "lexical" and metrics["judge"]["n_unannotated"] == 3
    assert not (out / "sft" / "checkpoint-2" / "judgments.jsonl").exists()

    bad = subprocess.run(
        [sys.executable, str(ROOT / "eval" / "judge.py"), "judge", str(out), "judge=lexical", "models=nope"],
        capture_output=True, text=True, timeout=120,
    )
    assert bad.returncode == 2 and "nope" in bad.stderr
    typo = subprocess.run([sys.executable, str(ROOT / "eval" / "judge.py"), "validate", "fromat=CROSS-L"],
                          capture_output=True, text=True, timeout=120)
    assert typo.returncode == 2 and "format" in typo.stderr
    check = subprocess.run([sys.executable, str(ROOT / "eval" / "judge.py"), "check"],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0 and "0 error(s), 0 warning(s)" in check.stdout
    json.dumps(metrics)


def test_lexical_judge_does_not_call_a_non_translation_neutral(tmp_path):
    """Fluent text that does not translate its source holds no annotated gendered word: the lexical judge must
    abstain on it (counted), not call it neutral, and GNT accuracy over adequate outputs counts it as a failure."""
    nonsense = "L'acqua di Sancho, che è il nostro perso, ha perso una morte finitura."

    def translate_badly(record: dict) -> None:
        if record["id"] == "4":  # Set-N; its references say "La cittadinanza è preoccupata."
            record["translation"] = nonsense
            record.pop("chrf", None)

    out = _results(tmp_path, translate_badly)
    judge_results(ResultsFolder.on_disk(out), ["base"], lexical=LexicalJudge(), entries=_entries())
    judgments = {j["id"]: j for j in read_jsonl(out / "base" / "judgments.jsonl")}
    assert judgments["4"]["label"] == "ABSTAIN" and judgments["4"]["neutral"] is None
    assert judgments["4"]["abstained"] == "inadequate translation"
    assert judgments["2"]["label"] == "NEUTRAL"  # an adequate neutral translation is still judged
    metrics = metrics_of(out, "base")
    assert metrics["judge"]["n_abstained"] == {"inadequate translation": 1}
    overall = metrics["overall"]
    # Set-N rows 4 (abstained), 5 (gendered), 6 (neutral), 7 (extraction error), 8 (gendered): over judged
    # outputs 1/4 (row 4 unjudged); over adequate outputs row 4 is a failure: 1/5.
    assert overall["gnt_accuracy"]["Set-N"]["value"] == pytest.approx(1 / 4)
    assert overall["gnt_accuracy_adequate"]["Set-N"]["value"] == pytest.approx(1 / 5)
    assert overall["adequacy"]["n_inadequate"] == 1


def test_rows_recorded_by_the_evaluation_are_found(tmp_path):
    from gnt.judge.apply import recorded_rows

    assert recorded_rows(tmp_path) is None
    write_json(tmp_path / "base" / "record.json", {"rows": {"source": "data/sample"}})  # relative to the project
    rows = recorded_rows(tmp_path, ["it"])
    assert rows and {e.lang for e in rows} == {"it"} and rows[0].gendered_words
    build = tmp_path / "mgente_test.jsonl"
    write_jsonl(build, [e.to_record() for e in _entries()])
    write_json(tmp_path / "base" / "record.json", {"rows": {"source": str(build)}})
    assert [e.id for e in recorded_rows(tmp_path)] == [r[0] for r in ROWS]
    templated = tmp_path / "templated_test.jsonl"  # templated_rows=true: a second file the evaluation read
    write_jsonl(templated, [Entry("tpl-it-1-amb", "it", "Set-N", '"I am tidy," I said.', "«Sono ordinato», dissi.",
                                  ("«Sono una persona ordinata», dissi.",), origin="templated").to_record()])
    write_json(tmp_path / "base" / "record.json", {"rows": {"source": str(build),
                                                            "files": {str(build): "x", str(templated): "y"}}})
    assert [e.id for e in recorded_rows(tmp_path)] == [*(r[0] for r in ROWS), "tpl-it-1-amb"]
    write_json(tmp_path / "sft" / "record.json", {"rows": {"files": {str(templated.relative_to(Path.cwd()))
                                                                     if templated.is_relative_to(Path.cwd())
                                                                     else str(templated): "y"}}})
    assert len(recorded_rows(tmp_path)) == len(ROWS) + 1, "every model's files, each file read once"
