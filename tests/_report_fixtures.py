"""Synthetic evaluation results for the report, W&B and watcher tests: the layout the evaluator writes.

Generation records carry the evaluator's fields; every part of a model folder is computed by the evaluator's own
functions and written by the folder's one writer (:class:`gnt.results.model_folder.ModelFolder`), so the report is
tested against the real formats. A
model's quality grows with its step (checkpoints "learn" neutrality), so significance tests have something to
find; rows are deterministic (seeded).
"""

from __future__ import annotations

import hashlib
import json
import random
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

from gnt.io import write_json
from gnt.results.model_folder import GRID, JUDGE, XCOMET, ModelFolder
from gnt.results.part import Record, write_part

LANGS = ("it", "es", "de")
CELLS = ("G+S/4", "None/4", "G+S/0")


def _key(*parts: object) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:24]


def write_png(path: Path, width: int = 4, height: int = 3) -> Path:
    """A tiny valid PNG (grey), as another step's figure would be."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + b"\x80" * (width * 3) for _ in range(height))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)
    return path


def make_run(root: Path, stage: str, steps: list[int], *, run_id: str = "fixrun01", wandb_dir: Path | None = None) -> Path:
    """A training run folder with gnt_run.json and checkpoint-<step>/ records (no weights)."""
    run = root / stage
    record = {
        "stage": stage, "base_model": "tiny-qwen2", "recipe": {"learning_rate": 1e-4},
        "recipe_path": f"recipes/tiny{'-dpo' if stage == 'dpo' else ''}.yaml",
        "data_dir": str(root / "data"), "data_manifest_sha256": "ab" * 32, "train_source_keys": ["k1", "k2"],
        "seed": 42, "wandb": {"project": "gnt-test", "run_id": run_id, "mode": "offline",
                              "dir": str(wandb_dir or run)},
        "environment": {"git": {"commit": "0123456789abcdef", "dirty": False}},
    }
    write_json(run / "gnt_run.json", record)
    for step in steps:
        write_json(run / f"checkpoint-{step}" / "gnt_run.json", {**record, "global_step": step})
    return run


def _json_or_empty(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def make_results(
    out: Path,
    *,
    run_dir: Path | None = None,
    steps: tuple[int, ...] = (4, 8),
    stage: str = "sft",
    rows_per_set: int = 12,
    judge: bool = True,
    validation: bool = True,
    extras: bool = True,
    langs: tuple[str, ...] = LANGS,
    xcomet: bool = False,
    rewrite: Callable[[dict], dict] | None = None,
    rows: dict | None = None,
) -> Path:
    """Write ``summary.json`` and base + checkpoint folders under ``out``; returns ``out``.

    ``rewrite`` changes each generation record before it is written (through the folder's writer, so the folder
    stays whole: a test that edited the file afterwards would see the model left out as damaged).

    With ``judge`` the folders hold a judge part (judgments and the judge's metrics); with ``xcomet`` an xCOMET
    part computed by the xCOMET module's own functions. ``rows`` is what every evaluation record says of the rows
    it scored (the sweep's ``rows``: data build, files and their hashes).
    """
    from gnt.bootstrap import BootstrapSettings
    from gnt.evaluation.metrics import compute_sections, grid_metrics

    models = [("base", None)] + [(f"{stage}/checkpoint-{s}", s) for s in steps]
    summary = []
    for index, (name, step) in enumerate(models):
        skill = 0.2 + 0.3 * index  # later checkpoints are more often neutral on Set-N
        rng = random.Random(f"{name}")
        records, judgments = [], {}
        for lang in langs:
            for cell_suffix in CELLS:
                cell = f"{lang}/{cell_suffix}"
                for set_name in ("Set-G", "Set-N"):
                    for r in range(rows_per_set):
                        row_id = f"{lang}-{set_name[-1]}{r:03d}"
                        gender = ("F" if r % 2 else "M") if set_name == "Set-G" else None
                        neutral_label = (rng.random() < skill + 0.2) if set_name == "Set-N" else rng.random() < 0.1
                        label = "NEUTRAL" if neutral_label else "GENDERED"
                        error = "no_label" if rng.random() < 0.03 else None
                        translation = f"traduzione {row_id} {'neutra' if neutral_label else 'genere'}"
                        key = _key(name, row_id, cell)
                        records.append({
                            "model": name, "id": row_id, "lang": lang, "set": set_name, "gender": gender,
                            "source_key": _key("src", row_id), "cell": cell, "config": cell.split("/")[1],
                            "shots": int(cell.split("/")[2]), "prompt_hash": _key("p", cell, row_id), "key": key,
                            "source": f"The member {r} | said [x] something.",
                            "raw": None if error else f"<{lang}> **{label}** [{translation}]",
                            "label": None if error else label, "translation": None if error else translation,
                            "error": error, "generation_error": None,
                            "gold_label": "GENDERED" if set_name == "Set-G" else "NEUTRAL",
                            "ref_g": "il membro", "ref_n": ["la persona"],
                        })
                        if judge and not error:
                            neutral = neutral_label if rng.random() < skill + 0.3 else not neutral_label
                            judgments[key] = {
                                "key": key, "judge": "lexical", "format": "CROSS-P+L",
                                "phrases": [{"phrase": "membro", "gender": "N" if neutral else "M",
                                             "gender_correctness": "correct"}],
                                "label": "NEUTRAL" if neutral else "CORRECTLY GENDERED", "neutral": neutral,
                                "judge_error": None,
                            }
        leakage = {"status": "not_applicable"} if step is None else {"status": "clean", "overlap": 0,
                                                                      "source": "gnt_run.json train_source_keys"}
        folder = ModelFolder(out, name)
        adapter = None if step is None or run_dir is None else {
            "name": name, "path": str(run_dir / f"checkpoint-{step}"), "weights_hash": _key("w", name)}
        record = {
            "status": "ok", "step": "grid", "kind": "base" if step is None else "checkpoint",
            "stage": "base" if step is None else stage,
            "model": {"name": name, "kind": "base" if step is None else "checkpoint", "base_model": "tiny-qwen2",
                      "adapter": adapter, "run_dir": str(run_dir) if run_dir and step else None, "global_step": step},
            "model_id": "tiny-qwen2@abc", "global_step": step, "backend": {"backend": "FakeBackend"},
            "decoding": {"max_new_tokens": 256, "temperature": 0.0}, "leakage": leakage,
            "eval_recipe": {"bootstrap_samples": 200, "bootstrap_seed": 0},
            "run_record": {} if step is None or run_dir is None else {  # as the sweep embeds the checkpoint's
                **_json_or_empty(run_dir / f"checkpoint-{step}" / "gnt_run.json"), "stage": stage, "seed": 42},
        }
        if rows is not None:
            record["rows"] = rows
        bootstrap = BootstrapSettings(200, 0)
        if rewrite is not None:
            records = [rewrite(dict(r)) for r in records]
        folder.write(GRID, {"generations.jsonl": records, "metrics.json": grid_metrics(
            records, model=name, global_step=step, leakage=leakage, bootstrap=bootstrap)}, record)
        if judge:
            block = {"kind": "lexical", "format": "MONO-L", "judge_model": "lexical", "n_judged": len(judgments),
                     "n_judge_errors": 0, "agreement_lexical": {"n": 10, "agreement": 0.9, "kappa": 0.8}}
            folder.write(JUDGE, {"judgments.jsonl": list(judgments.values())}, {
                "judge": block, **compute_sections(records, "judge", judgments=judgments, bootstrap=bootstrap)})
        if xcomet:
            from gnt.comet.summary import summarize

            scored = [{"key": r["key"], "lang": r["lang"], "id": r["id"], "cell": r["cell"], "set": r["set"],
                       "score_matching": 0.0 if r["error"] else 0.5 + 0.1 * index + (0.05 if r["set"] == "Set-N" else 0),
                       "score_ref_g": 0.0 if r["error"] else 0.6, "failure": r["error"]} for r in records]
            folder.write(XCOMET, {"xcomet.jsonl": scored}, dict(summarize(scored, BootstrapSettings(bootstrap_samples=100))))
        if extras and step == steps[-1]:
            def stat(value: float) -> dict:
                return {"value": value, "ci": [round(value - 0.05, 6), round(value + 0.05, 6)], "n": 40}

            templated = {  # the suite's format (gnt.templated_suite.metrics)
                "format": "gnt-align/templated-metrics/1",
                "styles": {"plain": {lang: {"subsets": {
                    "all": {"delta": {"M": stat(0.1), "F": stat(-0.05), "N": stat(0.2 + i / 10)}, "N_det": stat(0.05)},
                    "omission": {"delta": {"M": stat(0.0), "F": stat(0.0), "N": stat(0.1)}, "N_det": stat(0.0)},
                    "active": {"delta": {"M": stat(0.0), "F": stat(0.0), "N": stat(0.3)}, "N_det": stat(0.0)},
                }} for i, lang in enumerate(langs)}},
            }
            write_part(folder.path / "templated", {"metrics.json": templated}, {"status": "ok"}, record_name="record.json")
            write_png(out / "templated_suite" / "plots" / "deltas_plain.png")
            write_part(folder.path / "attribution" / "it_G+S_4" / "gradxinput", {  # attribution's part of one cell
                "parts_top10.png": write_png, "parts.jsonl": [{"part": "source", "top10_rate": 0.5}],
                "record.json": Record({"kind": "gnt-align/attribution/1"})}, record_name=None)
        summary.append({"name": name, "kind": record["model"]["kind"], "global_step": step,
                        "record": f"{name}/record.json"})
    write_json(out / "summary.json", {"format": "gnt-align/eval-summary/1", "models": summary})
    if validation:
        write_json(out / "judge_validation.json", {"kind": "references", "judge": "lexical", "format": "CROSS-P+L",
                                                   "accuracy": 0.83, "macro_f1": None, "kappa": 0.71, "n": 96})
    return out


def metrics_of(out: Path, name: str) -> dict:
    """A model's metrics as every reader sees them: the folder's parts composed by its one reader."""
    metrics, _ = ModelFolder(out, name).metrics()
    assert metrics is not None, f"{out / name}: no whole grid part"
    return dict(metrics)
