"""The report reads every block the project's own steps write: a results folder made by the real writers (grid
sweep, lexical judge, xCOMET summary and merge, preference block, templated-suite metrics), read back field by field.

A reader that guessed at a field name the writers do not use would show "not run" or "—" here, so each block's
number is compared with the number in the file its producer wrote.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _eval_helpers import ScriptedBackend
from _report_fixtures import metrics_of

from gnt.bootstrap import BootstrapSettings
from gnt.io import read_json
from gnt.output_format import format_output
from gnt.paths import SAMPLE_DIR
from gnt.report.config import ReportConfig
from gnt.results.model_folder import GRID, ModelFolder
from gnt.results.part import write_part

BOOT = 60


def _backend():
    """Answers every grid request in the output format with the row's own reference (an adequate translation),
    alternating labels and references (NEUTRAL + Ref-N, GENDERED + Ref-G); no system role."""
    from itertools import count

    from gnt.data.mgente import load_mgente

    references = {e.source: e for e in load_mgente(SAMPLE_DIR, ["it"])}
    calls = count(1)

    def reply(request) -> str:
        entry = references[request.messages[-1][1].rsplit("<en> ", 1)[1]]
        label, text = ("NEUTRAL", entry.ref_n[0]) if next(calls) % 2 else ("GENDERED", entry.ref_g)
        return format_output("it", label, text)

    return ScriptedBackend(reply, model_id="scripted-producers", system_role=False)


def _score_xcomet(out: Path, model: str) -> dict:
    """xCOMET through the scorer's own functions; the cache is filled first, so no comet environment is needed."""
    from gnt.comet.config import CometConfig
    from gnt.comet.folder import score_folder
    from gnt.comet.scoring import CometCache, failure_code, item_key, matching_reference, model_identity
    from gnt.filenames import XCOMET_CACHE as CACHE
    from gnt.io import read_jsonl
    from gnt.results.folder import ResultsFolder

    settings = CometConfig(xcomet_model="fake/xcomet", bootstrap_samples=BOOT)
    identity = model_identity("fake/xcomet")
    cache = CometCache(out / CACHE)
    fill = {}
    for number, record in enumerate(read_jsonl(out / model / "generations.jsonl")):
        if failure_code(record) is None:
            _, ref = matching_reference(record)
            for reference in (ref, record["ref_g"]):
                key = item_key(identity, record["source"], record["translation"], reference)
                fill[key] = {"cache_key": key, "model": identity, "score": 0.5 + (number % 4) / 10, "error_spans": []}
    cache.put_many(list(fill.values()))
    summary = score_folder(ResultsFolder(out, (model,)), settings)[model]
    assert summary["scoring"]["scored"] == 0  # every item came from the cache
    assert metrics_of(out, model)["overall"]["xcomet"] == summary["overall"]["xcomet"]  # composed by the reader
    return summary


def _preference_block(out: Path, model: str) -> dict:
    """The preference_accuracy block and preference.jsonl as the sweep writes them (scores made up, not the shape)."""
    from gnt.evaluation.preference import PREFERENCE, preference_metrics

    records = [{"id": f"p{i}", "lang": "it", "set": "Set-N", "origin": "mgente", "kind": kind, "cell": None,
                "source_key": f"s{i}", "chosen": -1.0, "rejected": -1.5 if i % 3 else -0.5,
                "margin": 0.5 if i % 3 else -0.5, "won": bool(i % 3), "error": None}
               for i, kind in enumerate(["neutralise", "regender"] * 6)]
    block = preference_metrics(records, BootstrapSettings(BOOT, 0, 0.05))
    block["split"] = "test"
    folder = ModelFolder(out, model)
    metrics = {**folder.grid_metrics(), "preference_accuracy": block}
    record = {k: v for k, v in folder.record().items() if k != "files"}
    folder.write(GRID, {PREFERENCE: records, "metrics.json": metrics}, record, keep=["generations.jsonl"])
    return block


def _templated(out: Path, model: str) -> dict:
    """templated/metrics.json and outputs.jsonl through the suite's metrics module."""
    from gnt.templated_suite.metrics import compute_metrics

    items = []
    for pair in range(8):
        for variant, label in (("determined", "M"), ("ambiguous", "N" if pair % 2 else "M")):
            items.append({"pair_id": f"p{pair}", "lang": "it", "style": "plain", "variant": variant,
                          "kind": ("omission_i", "active_they")[pair % 2], "label": label,
                          "strategy": "N1" if label == "N" else None, "expected_gender": "M" if variant == "determined" else None,
                          "cue_stereotype": None, "adjective_stereotype": None, "reason": None, "gender_marked": True})
    metrics = compute_metrics(items, bootstrap=BootstrapSettings(BOOT))
    write_part(out / model / "templated", {"outputs.jsonl": items, "metrics.json": metrics}, {"status": "ok"},
               record_name="record.json")
    return metrics


@pytest.fixture(scope="module")
def produced(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> Path:
    from gnt.cli.evaluate import load_eval_config
    from gnt.data.mgente import load_mgente
    from gnt.evaluation.sweep import run_sweep
    from gnt.judge.apply import judge_results
    from gnt.judge.lexical import LexicalJudge
    from gnt.results.folder import ResultsFolder

    out = tmp_path_factory.mktemp("produced") / "eval"
    config = load_eval_config(
        None, [("langs", "it"), ("configs", "G+S,None"), ("shots", "0"), ("rows_per_lang", "6"), ("progress", "false"),
               ("bootstrap_samples", str(BOOT))],
        model=str(tiny_model_dir), mgente=str(SAMPLE_DIR), out_dir=str(out),
    )
    run_sweep(config, backend_factory=lambda c, b, a: _backend())
    folder = ResultsFolder.on_disk(out)
    judge_results(folder, folder.models, lexical=LexicalJudge(), entries=load_mgente(SAMPLE_DIR, ["it"]))
    _score_xcomet(out, "base")
    _preference_block(out, "base")
    _templated(out, "base")
    return out


def test_every_block_of_a_produced_folder_is_read(produced: Path) -> None:
    from gnt.report.collect import collect
    from gnt.report.document import judge_blocks
    from gnt.report.tables import templated_rows

    results = collect(produced)
    [model] = results.models
    metrics = metrics_of(produced, "base")
    assert model.name == "base" and model.is_base and model.global_step == 0 and not model.failed
    assert model.leakage["status"] == "not_applicable"
    assert results.missing["base"] == ["attribution"]  # everything else was produced and found

    def row(scope: str, metric: str, group: str | None, *, lang: str | None = None, cell: str | None = None):
        [found] = [r for r in results.metrics if (r.scope, r.metric, r.group) == (scope, metric, group)
                   and (lang is None or r.lang == lang) and (cell is None or r.cell == cell)]
        return found

    for cell, block in metrics["cells"].items():  # grid blocks, per cell
        stat = block["label_accuracy"]["Set-N"]
        assert (row("cell", "label_accuracy", "Set-N", cell=cell).value, row("cell", "label_accuracy", "Set-N", cell=cell).lo) \
            == (stat["value"], stat["ci"][0])
    overall = metrics["overall"]
    assert row("overall", "gnt_accuracy", "Set-N").value == overall["gnt_accuracy"]["Set-N"]["value"]  # judge
    assert row("overall", "coherence", "NEUTRAL").hi == overall["coherence"]["NEUTRAL"]["ci"][1]
    assert row("language", "xcomet", "matching", lang="it").value == metrics["languages"]["it"]["xcomet"]["matching"]["value"]
    assert row("overall", "extraction_errors", "rate").value == overall["extraction_errors"]["rate"]["value"]
    preference = metrics["preference_accuracy"]
    assert row("overall", "preference_accuracy", "all").value == preference["all"]["value"]
    assert row("overall", "preference_accuracy", "kind:regender").value == preference["by_kind"]["regender"]["value"]
    assert row("language", "preference_accuracy", "all", lang="it").n == preference["by_lang"]["it"]["n"]

    generations = {g["key"] for g in model.generations}
    assert len(generations) == len(model.generations) == overall["n"]
    assert set(model.xcomet_index()) == generations  # every generation joined with its xCOMET row ...
    judged = {j["key"] for j in read_json_lines(produced / "base" / "judgments.jsonl")}
    assert judged and set(model.judgment_index()) == judged  # ... and with its judgment
    assert model.xcomet_summary is not None and model.xcomet_summary["format"] == "gnt-align/xcomet-summary/2"
    assert judge_blocks(results)["base"]["kind"] == "lexical"
    assert len(model.preference) == 12 and all(p["won"] is not None for p in model.preference)

    [templated] = templated_rows(model.templated_metrics)
    suite = read_json(produced / "base" / "templated" / "metrics.json")["styles"]["plain"]["it"]["subsets"]
    assert templated["ΔN"][0] == suite["all"]["delta"]["N"]["value"] and templated["N_det"][0] == suite["all"]["N_det"]["value"]
    counts = suite["all"]["counts"]
    unknown = counts["determined"]["unknown"] + counts["ambiguous"]["unknown"]
    total = sum(counts["determined"].values()) + sum(counts["ambiguous"].values())
    assert templated["unclassified"].startswith(f"{100 * unknown / total:.0f}%")  # the share no class was read from
    assert len(model.templated_items) == 16 and {i["variant"] for i in model.templated_items} == {"determined", "ambiguous"}
    assert results.alpha == metrics["bootstrap"]["alpha"]


def test_the_built_report_shows_the_produced_numbers(produced: Path, tmp_path: Path) -> None:
    from gnt.report import build_report

    report = build_report(produced, ReportConfig(out_dir=str(tmp_path / "report"), bootstrap_samples=BOOT))
    text = report.read_text(encoding="utf-8")
    xcomet = metrics_of(produced, "base")["languages"]["it"]["xcomet"]["matching"]
    assert f"{xcomet['value']:.3f} [{xcomet['ci'][0]:.3f}, {xcomet['ci'][1]:.3f}]" in text
    assert "judge not run" not in text and "xCOMET: not run" not in text


def read_json_lines(path: Path) -> list[dict]:
    from gnt.io import read_jsonl

    return read_jsonl(path)
