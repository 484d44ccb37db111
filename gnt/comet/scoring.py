"""Scoring items with the comet environment, behind a content-addressed cache (docs/metrics.md).

For each generation record (one row × cell of a model folder, :mod:`gnt.evaluation`) two scoring items are made:
the **set-matching** reference (Ref-N for Set-N, Ref-G for Set-G; the first of ``ref_n``, mGeNTE's own REF-N, when
a row carries extra common references) and, separately, **Ref-G for every row** (the paper reports both). Each
``(model, src, mt, ref)`` is looked up in the cache (``<results>/cache/xcomet.jsonl``, shared by every checkpoint
of the sweep: the same translation is scored once, across cells, checkpoints and reruns; a Set-G record's two
inputs are the same item). What is missing goes to :mod:`gnt.comet.runner`, run with the comet environment's
python, in chunks; each chunk's scores are appended to the cache as soon as it finishes, so a killed run keeps
its work.

**Failures are scored, not dropped.** A record whose translation could not be extracted (``translation`` null:
an extraction error or a failed generation) or is blank gets ``score_matching = score_ref_g = 0.0`` and
``failure`` set to its error code (``empty_translation`` for a blank one). Why 0.0: it is xCOMET's worst score, and
dropping these rows would reward a model for producing unparseable output.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gnt.comet.config import CometConfig
from gnt.comet.env import ensure_comet_env, subprocess_env
from gnt.io import hash_json, read_jsonl, write_jsonl
from gnt.jsonl_cache import JsonlCache

RUNNER = Path(__file__).resolve().parent / "runner.py"
EMPTY_TRANSLATION = "empty_translation"


class CometScoringError(RuntimeError):
    """The comet subprocess failed; the message carries the end of its log."""

    exit_code = 1


def model_identity(model: str) -> str:
    """What the cache keys on for ``model``: the hub id, or a local checkpoint's path, size and mtime.

    Why not a content hash of a local checkpoint: XCOMET-XL's is 14 GB. Size + mtime change when it is rebuilt.
    """
    path = Path(model).expanduser()
    if path.is_dir():
        path = path / "checkpoints" / "model.ckpt"
    if path.is_file():
        stat = path.stat()
        return f"file:{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    return model


def item_key(model_id: str, src: str, mt: str, ref: str) -> str:
    """Cache key of one scoring item."""
    return hash_json({"model": model_id, "src": src, "mt": mt, "ref": ref})


class CometCache(JsonlCache[dict]):
    """Scores by item key (``cache_key``), appended per finished chunk; without a path it lives in memory only."""

    key_field = "cache_key"

    def put_many(self, records: Sequence[dict]) -> None:
        self.append(records)


def matching_reference(record: Mapping) -> tuple[str, str]:
    """(which, text) of the set-matching reference: Ref-G for Set-G, the first Ref-N for Set-N."""
    if record["set"] == "Set-G":
        return "ref_g", record["ref_g"]
    refs = record["ref_n"]
    ref = (refs[0] if refs else None) if isinstance(refs, (list, tuple)) else refs
    if not ref:
        raise ValueError(f"generation {record.get('key')}: a Set-N row without a neutral reference")
    return "ref_n", ref


def failure_code(record: Mapping) -> str | None:
    """Why a record is scored 0.0 without the model (None: it is scored)."""
    translation = record.get("translation")
    if translation is None:
        return record.get("error") or "extraction_error"
    if not str(translation).strip():
        return EMPTY_TRANSLATION
    return None


def _check_record(record: Mapping, where: str) -> None:
    missing = [f for f in ("key", "lang", "set", "cell", "source", "ref_g", "ref_n") if f not in record]
    if missing:
        raise ValueError(f"{where}: generation record lacks {missing}")


def run_runner(
    items: Sequence[dict], cfg: CometConfig, python: Path, log_path: Path | None = None
) -> tuple[list[dict], dict]:
    """Score ``items`` ({key, src, mt, ref}) with one runner subprocess; return (records, runner summary)."""
    with tempfile.TemporaryDirectory(prefix="gnt-xcomet-") as tmp:
        tmp_dir = Path(tmp)
        inp, out, summ = tmp_dir / "in.jsonl", tmp_dir / "out.jsonl", tmp_dir / "summary.json"
        write_jsonl(inp, items)
        job = {"input": str(inp), "output": str(out), "summary": str(summ), "model": cfg.xcomet_model,
               "batch_size": cfg.xcomet_batch_size, "gpus": -1 if cfg.xcomet_gpus is None else cfg.xcomet_gpus,
               "progress": bool(cfg.xcomet_progress)}
        job_file = tmp_dir / "job.json"
        job_file.write_text(json.dumps(job, ensure_ascii=False), encoding="utf-8")
        cmd = [str(python), str(RUNNER), str(job_file)]
        log_file = log_path if log_path is not None else tmp_dir / "runner.log"
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(log_file, "a", encoding="utf-8") as log:
            log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {len(items)} items: {' '.join(cmd)}\n"
                      f"job: {json.dumps(job, ensure_ascii=False)}\n")
            log.flush()
            try:
                # cwd = the temporary folder: comet/Lightning may write scratch files into the working directory
                done = subprocess.run(
                    cmd, cwd=tmp_dir, env=subprocess_env(), stdout=log, stderr=subprocess.STDOUT,
                    timeout=cfg.xcomet_timeout_s,
                )
                returncode = done.returncode
            except subprocess.TimeoutExpired:
                returncode = None
        if returncode != 0 or not summ.is_file():
            tail = log_file.read_text(encoding="utf-8", errors="replace")[-4000:]
            why = "timed out" if returncode is None else f"exit {returncode}"
            raise CometScoringError(f"xCOMET runner {why} (log: {log_file}):\n{tail}")
        records = read_jsonl(out)
        summary = json.loads(summ.read_text(encoding="utf-8"))
    if [r["key"] for r in records] != [i["key"] for i in items]:
        raise CometScoringError("xCOMET runner output does not match its input keys")
    return records, summary


def score_items(
    items: Mapping[str, tuple[str, str, str]],
    cfg: CometConfig,
    cache: CometCache,
    *,
    log_path: Path | None = None,
    python: Path | None = None,
) -> dict[str, Any]:
    """Make sure every item (cache key → (src, mt, ref)) is in ``cache``; return counts of what was done."""
    pending = [{"key": k, "src": s, "mt": m, "ref": r} for k, (s, m, r) in items.items() if k not in cache]
    stats: dict[str, Any] = {"items": len(items), "cached": len(items) - len(pending), "scored": 0, "runner": []}
    if not pending:
        return stats
    if python is None:
        python = ensure_comet_env(auto_install=cfg.xcomet_auto_install)
    model_id = model_identity(cfg.xcomet_model)
    for start in range(0, len(pending), cfg.xcomet_chunk_size):
        chunk = pending[start : start + cfg.xcomet_chunk_size]
        records, summary = run_runner(chunk, cfg, Path(python), log_path)
        cache.put_many(
            [
                {"cache_key": r["key"], "model": model_id, "score": r["score"], "error_spans": r["error_spans"]}
                for r in records
            ]
        )
        stats["scored"] += len(records)
        stats["runner"].append({k: summary.get(k) for k in ("n", "gpus", "load_seconds", "predict_seconds")})
        stats["versions"] = summary.get("versions")
    return stats


@dataclass(frozen=True)
class Planned:
    """One generation record and what scores it: its set-matching reference, and either a failure code (scored
    0.0 without the model) or the cache keys of its two items."""

    record: Mapping
    which: str
    failure: str | None = None
    k_match: str | None = None
    k_refg: str | None = None


def plan(generations: Sequence[Mapping], model_id: str, where: str = "generation record") -> tuple[list[Planned], dict]:
    """Every record's plan, and the items they need scored (cache key → (src, mt, ref)), each item once."""
    items: dict[str, tuple[str, str, str]] = {}
    planned = []
    for number, record in enumerate(generations, start=1):
        _check_record(record, f"{where} {number}")
        which, ref = matching_reference(record)
        failure = failure_code(record)
        if failure is not None:
            planned.append(Planned(record, which, failure))
            continue
        mt = record["translation"]
        k_match = item_key(model_id, record["source"], mt, ref)
        k_refg = item_key(model_id, record["source"], mt, record["ref_g"])
        items[k_match] = (record["source"], mt, ref)
        items[k_refg] = (record["source"], mt, record["ref_g"])
        planned.append(Planned(record, which, None, k_match, k_refg))
    return planned, items


def scored_rows(planned: Sequence[Planned], cache: CometCache) -> list[dict]:
    """The xCOMET row of each planned record (``xcomet.jsonl``), its scores from ``cache``."""
    rows = []
    for item in planned:
        record = item.record
        if item.failure is not None:
            match = refg = {"score": 0.0, "error_spans": None}
        else:
            match, refg = cache.get(item.k_match), cache.get(item.k_refg)
        rows.append(
            {
                "key": record["key"],
                "id": record.get("id"),
                "lang": record["lang"],
                "set": record["set"],
                "cell": record["cell"],
                "ref_matching": item.which,
                "score_matching": match["score"],
                "score_ref_g": refg["score"],
                "error_spans_matching": match["error_spans"],
                "error_spans_ref_g": refg["error_spans"],
                "failure": item.failure,
            }
        )
    return rows
