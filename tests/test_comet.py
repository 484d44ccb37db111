"""xCOMET scoring: the driver's bookkeeping (fast) and the real path end to end through the comet environment.

The end-to-end tests need ``.venv-comet`` (built by ``make comet-env``, a prerequisite of ``make test``); without
it they FAIL with the command to run, never skip: a green suite must mean the real scoring path ran.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from gnt.bootstrap import BootstrapSettings
from gnt.comet import env as comet_env
from gnt.comet.config import CometConfig
from gnt.comet.folder import score_folder
from gnt.comet.scoring import (
    EMPTY_TRANSLATION,
    CometCache,
    CometScoringError,
    failure_code,
    matching_reference,
)
from gnt.comet.summary import summarize
from gnt.filenames import XCOMET_CACHE as CACHE
from gnt.io import read_jsonl
from gnt.recipe import RecipeError
from gnt.results.folder import ResultsFolder
from gnt.results.model_folder import ModelFolder

COMET_DIR = Path(__file__).resolve().parent.parent / "gnt" / "comet"

# ----------------------------------------------------------------------------------------------------------------
# A hand-written generations.jsonl in the evaluation's record format (gnt.evaluation.generation_records)
# ----------------------------------------------------------------------------------------------------------------

ROWS = [
    {
        "id": "it-1", "lang": "it", "set": "Set-N", "gender": None,
        "source": "The citizens are tired after the long meeting.",
        "ref_g": "I cittadini sono stanchi dopo la lunga riunione.",
        "ref_n": ["La cittadinanza è stanca dopo la lunga riunione.", "Chi abita qui è stanco."],
    },
    {
        "id": "it-2", "lang": "it", "set": "Set-G", "gender": "F",
        "source": "The doctor told the patient to rest, she said.",
        "ref_g": "La medica ha detto alla paziente di riposare.",
        "ref_n": ["Il personale medico ha detto di riposare."],
    },
    {
        "id": "es-1", "lang": "es", "set": "Set-N", "gender": None,
        "source": "All the teachers agreed to postpone the exam.",
        "ref_g": "Todos los profesores acordaron aplazar el examen.",
        "ref_n": ["Todo el profesorado acordó aplazar el examen."],
    },
]
OUTPUTS = {  # (cell, row id) -> translation; None = extraction error
    ("it/G+S/4", "it-1"): "I cittadini sono stanchi dopo la lunga riunione.",
    ("it/G+S/4", "it-2"): "La medica ha detto alla paziente di riposare.",
    ("it/None/0", "it-1"): "I cittadini sono stanchi dopo la lunga riunione.",  # same as in it/G+S/4
    ("it/None/0", "it-2"): None,
    ("es/G+S/4", "es-1"): "Todo el profesorado acordó aplazar el examen.",
    ("es/None/0", "es-1"): "   ",  # extracted, but blank
}


def generation_records(outputs: dict = OUTPUTS, tag: str = "base") -> list[dict]:
    rows = {r["id"]: r for r in ROWS}
    records = []
    for (cell, row_id), translation in outputs.items():
        row = rows[row_id]
        lang, config, shots = cell.split("/")
        if row["lang"] != lang:
            continue
        error = "no_brackets" if translation is None else None
        records.append(
            {
                "model": tag, "id": row_id, "lang": lang, "set": row["set"], "gender": row["gender"],
                "cell": cell, "config": config, "shots": int(shots), "key": f"{tag}|{cell}|{row_id}",
                "source": row["source"], "raw": "...", "label": None, "translation": translation, "error": error,
                "gold_label": "GENDERED" if row["set"] == "Set-G" else "NEUTRAL",
                "ref_g": row["ref_g"], "ref_n": row["ref_n"],
            }
        )
    return records


def write_results(out: Path, name: str, records: list[dict]) -> None:
    """A model folder's grid part, written by the folder's one writer as the sweep writes it."""
    ModelFolder(out, name).write("grid", {"generations.jsonl": records}, {"status": "ok", "model": {"name": name}})


def score_results(out: Path, name: str, config: CometConfig) -> dict:
    """One model folder scored through the folder driver (what eval/comet.py and the xcomet step run)."""
    return score_folder(ResultsFolder(out, (name,)), config)[name]


# ----------------------------------------------------------------------------------------------------------------
# Fast: no comet environment needed
# ----------------------------------------------------------------------------------------------------------------


def test_set_matching_reference_and_failures() -> None:
    records = {(r["cell"], r["id"]): r for r in generation_records()}
    assert matching_reference(records[("it/G+S/4", "it-1")]) == ("ref_n", ROWS[0]["ref_n"][0])
    assert matching_reference(records[("it/G+S/4", "it-2")]) == ("ref_g", ROWS[1]["ref_g"])
    assert failure_code(records[("it/G+S/4", "it-1")]) is None
    assert failure_code(records[("it/None/0", "it-2")]) == "no_brackets"
    assert failure_code(records[("es/None/0", "es-1")]) == EMPTY_TRANSLATION
    assert failure_code({"translation": None, "error": None}) == "extraction_error"


def test_config_from_the_command_line_the_recipe_and_typos(tmp_path: Path) -> None:
    from gnt.cli.comet import COMMAND
    from gnt.comet.step import STEP

    assert CometConfig().xcomet_model == "Unbabel/XCOMET-XL"
    call = COMMAND.call([str(tmp_path), "xcomet_batch_size=4", "xcomet_gpus=2", "bootstrap_samples=10"])
    cfg = call.build(CometConfig).validate()
    assert (cfg.xcomet_batch_size, cfg.xcomet_gpus, cfg.bootstrap_samples) == (4, 2, 10)

    class Recipe:  # an evaluation recipe: its bootstrap keys are the step's defaults, its batch_size is not xCOMET's
        bootstrap_samples, bootstrap_seed, alpha = 77, 3, 0.1
        batch_size = 999

    stepped = STEP.config({"xcomet_model": "some/model"}, Recipe())
    assert stepped.xcomet_model == "some/model" and stepped.xcomet_batch_size == 16
    assert (stepped.bootstrap_samples, stepped.bootstrap_seed, stepped.alpha) == (77, 3, 0.1)
    with pytest.raises(RecipeError, match="unknown key 'batch_sise'.*xcomet_batch_size"):
        COMMAND.call([str(tmp_path), "batch_sise=4"])
    with pytest.raises(RecipeError, match="xcomet_gpus"):
        CometConfig(xcomet_gpus=-1).validate()


def test_summary_counts_failures_as_zero() -> None:
    rows = [
        {"key": "a", "id": "1", "lang": "it", "set": "Set-N", "cell": "c1", "score_matching": 0.8,
         "score_ref_g": 0.6, "failure": None},
        {"key": "b", "id": "2", "lang": "it", "set": "Set-G", "cell": "c1", "score_matching": 0.4,
         "score_ref_g": 0.4, "failure": None},
        {"key": "c", "id": "1", "lang": "it", "set": "Set-N", "cell": "c2", "score_matching": 0.0,
         "score_ref_g": 0.0, "failure": "no_brackets"},
    ]
    s = summarize(rows, BootstrapSettings(bootstrap_samples=200))
    assert s["n"] == 3 and s["n_failures"] == 1 and s["failures_by_code"] == {"no_brackets": 1}
    assert s["system_matching"] == pytest.approx(1.2 / 3)
    assert s["system_ref_g"] == pytest.approx(1.0 / 3)
    assert s["system_matching_scored_only"] == pytest.approx(0.6)
    assert s["per_cell"]["c1"]["matching"] == pytest.approx(0.6)
    assert s["per_cell"]["c2"] == {"matching": 0.0, "ref_g": 0.0, "n": 1, "n_failures": 1}
    overall = s["overall"]["xcomet"]
    assert overall["matching"]["value"] == pytest.approx(0.4) and overall["matching"]["n"] == 3
    low, high = overall["matching"]["ci"]
    assert low <= 0.4 <= high
    assert overall["by_set"]["Set-N"]["matching"]["value"] == pytest.approx(0.4)
    assert s["cells"]["c2"]["xcomet"]["n_failures"] == 1 and s["languages"]["it"]["xcomet"]["n"] == 3


def test_cache_survives_a_truncated_last_line(tmp_path: Path) -> None:
    path = tmp_path / "xcomet.jsonl"
    cache = CometCache(path)
    cache.put_many([{"cache_key": "k1", "model": "m", "score": 0.5, "error_spans": []}])
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"cache_key": "k2", "sco')  # a killed writer
    reloaded = CometCache(path)
    assert "k1" in reloaded and "k2" not in reloaded
    reloaded.put_many([{"cache_key": "k3", "model": "m", "score": 0.1, "error_spans": None}])
    assert {"k1", "k3"} <= {r["cache_key"] for r in read_jsonl(path, skip_bad=True)}


@pytest.mark.parametrize("name", ["runner.py", "tiny.py"])
def test_comet_side_scripts_never_import_gnt_at_module_level(name: str) -> None:
    """They run under transformers 4 in .venv-comet: a module-level ``gnt`` import would pull transformers 5 code."""
    tree = ast.parse((COMET_DIR / name).read_text(encoding="utf-8"))
    allowed = set(sys.stdlib_module_names) | {"__future__", "comet", "torch"}
    for node in tree.body:
        if isinstance(node, ast.Import):
            roots = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            roots = [(node.module or "").split(".")[0]]
        else:
            continue
        assert set(roots) <= allowed, f"{name} imports {roots} at module level"
    if name == "runner.py":  # and nothing from gnt anywhere in the runner
        assert "gnt" not in {
            (n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
        }


def test_missing_environment_names_the_build_command(tmp_path: Path) -> None:
    with pytest.raises(comet_env.CometEnvMissing, match="make comet-env"):
        comet_env.ensure_comet_env(auto_install=False, venv=tmp_path / "no-such-venv")


# ----------------------------------------------------------------------------------------------------------------
# End to end: driver -> runner subprocess in .venv-comet -> tiny XCOMET checkpoint
# ----------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def comet_python() -> Path:
    if not comet_env.is_built():
        pytest.fail(
            f"the xCOMET environment {comet_env.venv_dir()} is not built. Build it once with "
            f"`{comet_env.BUILD_COMMAND}` (`make test` does this before pytest)."
        )
    return comet_env.comet_python()


@pytest.fixture(scope="module")
def tiny_xcomet(comet_python: Path, model_cache_dir: Path) -> Path:
    from gnt.comet.tiny import ensure_tiny_xcomet

    return ensure_tiny_xcomet(model_cache_dir, python=comet_python)


@pytest.mark.slow
def test_score_results_end_to_end_with_cache(tiny_xcomet: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval"
    base = generation_records()
    write_results(out, "base", base)
    cfg = CometConfig(xcomet_model=str(tiny_xcomet), xcomet_batch_size=2, xcomet_gpus=0, xcomet_auto_install=False,
                      bootstrap_samples=100)

    summary = score_results(out, "base", cfg)

    rows = read_jsonl(out / "base" / "xcomet.jsonl")
    assert [r["key"] for r in rows] == [r["key"] for r in base]  # every generation, in order, none dropped
    by_key = {r["key"]: r for r in rows}
    scored = [r for r in rows if r["failure"] is None]
    assert len(scored) == 4
    for row in scored:
        assert 0.0 <= row["score_matching"] <= 1.0 and 0.0 <= row["score_ref_g"] <= 1.0
        for spans in (row["error_spans_matching"], row["error_spans_ref_g"]):
            assert isinstance(spans, list)
            for span in spans:
                assert set(span) == {"text", "start", "end", "severity", "confidence"}
                assert span["severity"] in {"minor", "major", "critical"} and span["start"] <= span["end"]
    assert any(r["error_spans_matching"] for r in scored)  # the random word head marks some tokens
    # Set-G: the set-matching reference is Ref-G, so both scores are the same item
    set_g = by_key["base|it/G+S/4|it-2"]
    assert set_g["ref_matching"] == "ref_g" and set_g["score_matching"] == set_g["score_ref_g"]
    assert by_key["base|it/G+S/4|it-1"]["ref_matching"] == "ref_n"
    # the same translation in two cells gets the same score (scored once)
    assert by_key["base|it/G+S/4|it-1"]["score_matching"] == by_key["base|it/None/0|it-1"]["score_matching"]
    # failures: scored 0.0, flagged, counted
    for key, code in (("base|it/None/0|it-2", "no_brackets"), ("base|es/None/0|es-1", EMPTY_TRANSLATION)):
        assert by_key[key]["failure"] == code
        assert by_key[key]["score_matching"] == 0.0 == by_key[key]["score_ref_g"]
    assert summary["n"] == 6 and summary["n_failures"] == 2
    assert summary["failures_by_code"] == {EMPTY_TRANSLATION: 1, "no_brackets": 1}
    assert 0.0 < summary["system_matching"] < 1.0 and 0.0 < summary["system_ref_g"] < 1.0
    assert summary["system_matching"] == pytest.approx(sum(r["score_matching"] for r in rows) / 6)
    assert summary["per_cell"]["it/None/0"]["n_failures"] == 1
    assert set(summary["cells"]) == {"it/G+S/4", "it/None/0", "es/G+S/4", "es/None/0"}
    # unique items: it-1 (ref_n, ref_g), it-2 (ref_g), es-1 (ref_n, ref_g) = 5
    assert summary["scoring"]["scored"] == 5 and summary["scoring"]["cached"] == 0
    assert json.loads((out / "base" / "xcomet_summary.json").read_text())["n_failures"] == 2
    assert (out / CACHE).is_file()

    # a rerun scores nothing and gives the same rows
    again = score_results(out, "base", cfg)
    assert again["scoring"]["scored"] == 0 and again["scoring"]["cached"] == 5
    assert read_jsonl(out / "base" / "xcomet.jsonl") == rows

    # a checkpoint with one new translation: only that one's two items are scored
    outputs = dict(OUTPUTS)
    outputs[("es/G+S/4", "es-1")] = "Los profesores acordaron aplazar el examen."
    write_results(out, "run/checkpoint-8", generation_records(outputs, tag="ckpt"))
    ckpt = score_results(out, "run/checkpoint-8", cfg)
    assert ckpt["scoring"]["scored"] == 2 and ckpt["scoring"]["cached"] == 3


@pytest.mark.slow
def test_runner_failure_is_reported_and_caches_nothing(comet_python: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval"
    write_results(out, "base", generation_records())
    cfg = CometConfig(xcomet_model=str(tmp_path / "missing-model"), xcomet_gpus=0, xcomet_auto_install=False)
    with pytest.raises(CometScoringError, match="exit"):
        score_results(out, "base", cfg)
    assert "missing-model" in (out / "cache" / "xcomet.log").read_text()  # one runner log per results folder
    assert not (out / CACHE).exists() and not (out / "base" / "xcomet.jsonl").exists()


def test_the_file_helpers_the_runner_borrows_import_only_the_standard_library() -> None:
    """gnt/comet/runner.py runs in the xCOMET environment without gnt and loads gnt/io.py by path."""
    import gnt.io

    tree = ast.parse(Path(gnt.io.__file__).read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in tree.body if isinstance(node, ast.ImportFrom) and node.module}
    assert imported - {"__future__"} <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)
