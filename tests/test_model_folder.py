"""A model folder has one writer and one reader: each step writes its own part, the reader composes them, so the
order the steps ran in cannot change what a reader sees, and every file written has its declared shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_report_producers import BOOT, _backend, _preference_block, _score_xcomet

from gnt.cli.evaluate import load_eval_config
from gnt.evaluation.catalog import block_errors
from gnt.filenames import SUMMARY
from gnt.paths import SAMPLE_DIR
from gnt.results.model_folder import SCHEMAS, ModelFolder
from gnt.results.shape import shape_errors
from gnt.results_schema import Summary

GRID = [("steps", "grid"), ("langs", "it"), ("configs", "G+S,None"), ("shots", "0"), ("rows_per_lang", "6"),
        ("progress", "false"), ("bootstrap_samples", str(BOOT))]


def sweep(out: Path, tiny_model_dir: Path) -> None:
    from gnt.evaluation.sweep import run_sweep

    config = load_eval_config(None, GRID, model=str(tiny_model_dir), mgente=str(SAMPLE_DIR), out_dir=str(out))
    run_sweep(config, backend_factory=lambda c, b, a: _backend())


def judge(out: Path) -> None:
    from gnt.data.mgente import load_mgente
    from gnt.judge.apply import judge_results
    from gnt.judge.lexical import LexicalJudge
    from gnt.results.folder import ResultsFolder

    folder = ResultsFolder.on_disk(out)
    judge_results(folder, folder.models, lexical=LexicalJudge(), entries=load_mgente(SAMPLE_DIR, ["it"]))


STEPS = {"grid": None, "judge": judge, "xcomet": lambda out: _score_xcomet(out, "base")}


def composed(out: Path) -> bytes:
    metrics, warnings = ModelFolder(out, "base").metrics()
    assert metrics is not None and not warnings, warnings
    return json.dumps(metrics, ensure_ascii=False, indent=2).encode()


def test_any_order_of_the_steps_composes_byte_identical_metrics(tmp_path: Path, tiny_model_dir: Path) -> None:
    orders = [("judge", "xcomet"), ("xcomet", "judge"), ("judge", "grid", "xcomet"), ("xcomet", "grid", "judge")]
    seen = {}
    for order in orders:
        out = tmp_path / "-".join(order) / "eval"
        sweep(out, tiny_model_dir)
        grid_file = (out / "base" / "metrics.json").read_bytes()
        for step in order:
            if step == "grid":
                sweep(out, tiny_model_dir)  # a rerun of the grid between the later steps (from the cache)
            else:
                STEPS[step](out)
        assert (out / "base" / "metrics.json").read_bytes() == grid_file, "only the grid writes metrics.json"
        seen[order] = composed(out)
    first = seen[orders[0]]
    assert all(view == first for view in seen.values())
    view = json.loads(first)
    assert view["judged"] and {"gnt_accuracy", "coherence", "xcomet", "label_accuracy"} <= set(view["overall"])


def test_every_file_a_step_writes_has_its_declared_shape(tmp_path: Path, tiny_model_dir: Path) -> None:
    out = tmp_path / "eval"
    sweep(out, tiny_model_dir)
    judge(out)
    _score_xcomet(out, "base")
    _preference_block(out, "base")
    folder = ModelFolder(out, "base")
    checked = []
    for name, schema in SCHEMAS.items():
        path = folder.path / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        values = [json.loads(line) for line in text.splitlines() if line.strip()] if name.endswith(".jsonl") else [
            json.loads(text)]
        for index, value in enumerate(values):
            assert shape_errors(value, schema, f"{name}[{index}]") == []
        checked.append(name)
    # every file of a model folder (the lexical cross-check beside an LLM judge's has judgments.jsonl's shape)
    assert sorted(checked) == sorted(set(SCHEMAS) - {"judgments-lexical.jsonl"})
    assert shape_errors(json.loads((out / SUMMARY).read_text()), Summary, SUMMARY) == []
    for name, owners in (("metrics.json", ("grid",)), ("judge_summary.json", ("judge",)),
                         ("xcomet_summary.json", ("xcomet",))):
        part = json.loads((folder.path / name).read_text())
        blocks = [part["overall"], *part["cells"].values(), *part["languages"].values()]
        assert [e for b in blocks for e in block_errors(b, owners, name)] == []
    metrics, _ = folder.metrics()
    assert metrics is not None and block_errors(metrics["overall"]) == []


def test_the_shape_check_finds_what_departs_from_the_declaration() -> None:
    """The check the test above relies on fails where it must (it is not a check that cannot fail)."""
    from gnt.results_schema import EvalRecord, Stat

    assert shape_errors({"value": 0.5, "ci": [0.4, 0.6], "n": 3}, Stat) == []
    assert shape_errors({"value": "0.5", "ci": None, "n": 3}, Stat) == ["$.value: '0.5' matches none of float | None"]
    assert shape_errors({"value": 0.5, "ci": None}, Stat) == ["$: missing key 'n' (Stat)"]
    assert shape_errors({"status": "ok", "colour": 1}, EvalRecord)[0].startswith("$: unexpected key 'colour'")
    assert block_errors({"n": 3, "label_accuracy": {"Set-G": 1}}) != []
    assert block_errors({"n": 3, "made_up": {}}) == ["$: 'made_up' is not a metric of grid, judge, xcomet "
                                                    "(gnt.evaluation.catalog)"]


@pytest.mark.parametrize("part", ["judge", "xcomet"])
def test_a_part_computed_from_other_generations_is_left_out_of_the_composed_metrics(
        tmp_path: Path, tiny_model_dir: Path, part: str) -> None:
    out = tmp_path / "eval"
    sweep(out, tiny_model_dir)
    STEPS[part](out)
    folder = ModelFolder(out, "base")
    assert folder.check(part).ok
    records = folder.generations()
    record = {k: v for k, v in folder.record().items() if k != "files"}
    folder.write("grid", {"generations.jsonl": records[:-1], "metrics.json": folder.grid_metrics()}, record)
    metrics, warnings = folder.metrics()
    assert metrics is not None and not folder.check(part).ok
    assert any(f"{part} left out" in w and "computed from another generations.jsonl" in w for w in warnings)
    assert ("gnt_accuracy" if part == "judge" else "xcomet") not in metrics["overall"]
