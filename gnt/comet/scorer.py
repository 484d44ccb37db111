"""xCOMET scoring of an evaluation results folder, driven from the main environment (docs/metrics.md).

What it does for ``<out>/<model>/generations.jsonl`` (one record per row × cell, :mod:`gnt.evaluation`):

1. Builds two scoring inputs per record: the **set-matching** reference (Ref-N for Set-N, Ref-G for Set-G; the
   first of ``ref_n``, mGeNTE's own REF-N, when a row carries extra common references) and, separately, **Ref-G
   for every row** (the paper reports both).
2. Looks each ``(model, src, mt, ref)`` up in the content-addressed cache ``<out>/cache/xcomet.jsonl`` (shared by
   every checkpoint of the sweep: the same translation is scored once, across cells, checkpoints and reruns; a
   Set-G record's two inputs are the same item).
3. Runs :mod:`gnt.comet.runner` with the comet environment's python on what is missing, in chunks (each chunk's
   scores are appended to the cache as soon as it finishes, so a killed run keeps its work), and writes
   ``<out>/<model>/xcomet.jsonl`` (per generation ``key``) and ``xcomet_summary.json`` atomically.

**Failures are scored, not dropped.** A record whose translation could not be extracted (``translation`` null:
an extraction error or a failed generation) or is blank gets ``score_matching = score_ref_g = 0.0`` and
``failure`` set to its error code (``empty_translation`` for a blank one). Why 0.0: it is xCOMET's worst score, and
dropping these rows would reward a model for producing unparseable output. System and per-cell means include the
failures; the ``*_scored_only`` means (extracted translations only) are reported beside them so both readings are
available, and ``n_failures`` says how many zeros went in.

The summary has the shape of :func:`gnt.evaluation.metrics.compute_metrics` (``cells`` / ``languages`` /
``overall`` blocks with a value, a 95% bootstrap CI resampled by row, and ``n``), so
:func:`merge_into_metrics` can drop each block into the metrics' ``xcomet`` slot.
"""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gnt.comet.env import ensure_comet_env, subprocess_env
from gnt.evaluation.bootstrap import (
    DEFAULT_ALPHA,
    DEFAULT_SAMPLES,
    DEFAULT_SEED,
    block_seed,
    mean_ci,
)
from gnt.filenames import CACHE_DIR, GENERATIONS, METRICS
from gnt.filenames import XCOMET_CACHE as CACHE
from gnt.filenames import XCOMET_LOG as LOG
from gnt.filenames import XCOMET_ROWS as OUTPUT
from gnt.filenames import XCOMET_SUMMARY as SUMMARY
from gnt.io import hash_json, read_json, read_jsonl, write_json, write_jsonl
from gnt.jsonl_cache import JsonlCache
from gnt.results_schema import XCOMET_SUMMARY_FORMAT as SUMMARY_FORMAT
from gnt.settings import BootstrapSettings

RUNNER = Path(__file__).resolve().parent / "runner.py"
EMPTY_TRANSLATION = "empty_translation"
DEFAULT_MODEL = "Unbabel/XCOMET-XL"


class CometScoringError(RuntimeError):
    """The comet subprocess failed; the message carries the end of its log."""


@dataclass
class CometConfig:
    """xCOMET settings. Flat ``xcomet_*`` names so the evaluation recipe can carry them as ordinary keys."""

    xcomet_model: str = DEFAULT_MODEL
    """Hub id (gated XCOMET models need an accepted licence + HF token), checkpoint file, or model folder."""
    xcomet_batch_size: int = 16
    """Items per forward pass of the xCOMET model."""
    xcomet_gpus: int | None = None
    """CUDA devices for comet; None = every visible one (0 on a CPU machine); > 1 runs Lightning DDP."""
    xcomet_chunk_size: int = 50_000
    """Items per runner call: each call reloads the model (~1 min for XCOMET-XL); each finished chunk is cached."""
    xcomet_cache: str | None = None
    """Cache file; default ``<results_dir>/cache/xcomet.jsonl``."""
    xcomet_auto_install: bool = True
    """Build the comet environment when it is missing (a few minutes, once); False fails with the command."""
    xcomet_timeout_s: float | None = None
    """Seconds one runner call may take before it is stopped and reported (None: no limit)."""
    xcomet_progress: bool = False
    """Show comet's own progress bars (off: one line per chunk)."""

    @classmethod
    def from_any(cls, config: Any = None) -> CometConfig:
        """From None, a CometConfig, a mapping (``xcomet_*`` or short names) or any object with ``xcomet_*`` fields.

        A mapping is checked: an unknown key raises, naming the valid ones, so a typo is never silently ignored
        (the bootstrap keys :func:`score_results` reads are allowed beside the xCOMET ones). A recipe object (e.g.
        the evaluation config) contributes whichever ``xcomet_*`` attributes it has.
        """
        if config is None:
            return cls()
        if isinstance(config, cls):
            return config
        names = {f.name for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        if isinstance(config, Mapping):
            unknown = []
            for key, value in config.items():
                full = key if key.startswith("xcomet_") else f"xcomet_{key}"
                if full in names:
                    values[full] = value
                elif key not in _PASSTHROUGH:
                    unknown.append(key)
            if unknown:
                raise ValueError(f"unknown xCOMET settings {sorted(unknown)}; valid: {sorted(names)}")
        else:
            values = {name: getattr(config, name) for name in names if hasattr(config, name)}
        return cls(**values).validate()

    def validate(self) -> CometConfig:
        if self.xcomet_batch_size < 1 or self.xcomet_chunk_size < 1:
            raise ValueError("xcomet_batch_size and xcomet_chunk_size must be positive")
        if self.xcomet_gpus is not None and self.xcomet_gpus < 0:
            raise ValueError("xcomet_gpus must be >= 0 (or null for every visible GPU)")
        return self


_PASSTHROUGH = frozenset(f.name for f in dataclasses.fields(BootstrapSettings))
"""The bootstrap keys travel with the xCOMET settings (the summary's intervals) under their shared names."""


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


# ----------------------------------------------------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------------------------------
# Running the comet environment
# ----------------------------------------------------------------------------------------------------------------


def run_runner(
    items: Sequence[dict], cfg: CometConfig, python: Path, log_path: Path | None = None
) -> tuple[list[dict], dict]:
    """Score ``items`` ({key, src, mt, ref}) with one runner subprocess; return (records, runner summary)."""
    with tempfile.TemporaryDirectory(prefix="gnt-xcomet-") as tmp:
        tmp_dir = Path(tmp)
        inp, out, summ = tmp_dir / "in.jsonl", tmp_dir / "out.jsonl", tmp_dir / "summary.json"
        write_jsonl(inp, items)
        gpus = -1 if cfg.xcomet_gpus is None else cfg.xcomet_gpus
        cmd = [
            str(python), str(RUNNER), "--input", str(inp), "--output", str(out), "--summary", str(summ),
            "--model", cfg.xcomet_model, "--batch-size", str(cfg.xcomet_batch_size), "--gpus", str(gpus),
        ]
        if cfg.xcomet_progress:
            cmd.append("--progress")
        log_file = log_path if log_path is not None else tmp_dir / "runner.log"
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(log_file, "a", encoding="utf-8") as log:
            log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {len(items)} items: {' '.join(cmd)}\n")
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


# ----------------------------------------------------------------------------------------------------------------
# Aggregation
# ----------------------------------------------------------------------------------------------------------------


def _mean_ci(rows: Sequence[dict], field: str, name: str, n_boot: int, seed: int, alpha: float) -> dict:
    """Mean of ``field`` with a percentile bootstrap CI, rows resampled by (lang, id) as in the grid metrics."""
    scored = [r for r in rows if r[field] is not None]
    return mean_ci([r[field] for r in scored], [(r["lang"], r["id"]) for r in scored], n_boot,
                   block_seed(seed, name, "xcomet"), alpha)


def _block(rows: Sequence[dict], name: str, n_boot: int, seed: int, alpha: float) -> dict:
    """One block: means over every record (failures = 0.0), over scored records only, and per set."""
    scored = [r for r in rows if r["failure"] is None]
    block = {
        "n": len(rows),
        "n_failures": len(rows) - len(scored),
        "matching": _mean_ci(rows, "score_matching", f"{name}|m", n_boot, seed, alpha),
        "ref_g": _mean_ci(rows, "score_ref_g", f"{name}|g", n_boot, seed, alpha),
        "matching_scored_only": _mean_ci(scored, "score_matching", f"{name}|ms", n_boot, seed, alpha),
        "ref_g_scored_only": _mean_ci(scored, "score_ref_g", f"{name}|gs", n_boot, seed, alpha),
        "by_set": {},
    }
    for set_name in ("Set-G", "Set-N"):
        subset = [r for r in rows if r["set"] == set_name]
        if subset:
            block["by_set"][set_name] = {
                "n": len(subset),
                "n_failures": sum(r["failure"] is not None for r in subset),
                "matching": _mean_ci(subset, "score_matching", f"{name}|{set_name}|m", n_boot, seed, alpha),
                "ref_g": _mean_ci(subset, "score_ref_g", f"{name}|{set_name}|g", n_boot, seed, alpha),
            }
    return block


def _plain_mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return math.fsum(values) / len(values) if values else None


def summarize(
    rows: Sequence[dict], *, n_boot: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED, alpha: float = DEFAULT_ALPHA
) -> dict:
    """The summary of per-generation xCOMET rows (see the module docstring)."""
    by_cell: dict[str, list] = defaultdict(list)
    by_lang: dict[str, list] = defaultdict(list)
    for row in rows:
        by_cell[row["cell"]].append(row)
        by_lang[row["lang"]].append(row)
    scored = [r for r in rows if r["failure"] is None]
    return {
        "format": SUMMARY_FORMAT,
        "n": len(rows),
        "n_failures": len(rows) - len(scored),
        "failures_by_code": dict(sorted(Counter(r["failure"] for r in rows if r["failure"]).items())),
        "system_matching": _plain_mean(r["score_matching"] for r in rows),
        "system_ref_g": _plain_mean(r["score_ref_g"] for r in rows),
        "system_matching_scored_only": _plain_mean(r["score_matching"] for r in scored),
        "system_ref_g_scored_only": _plain_mean(r["score_ref_g"] for r in scored),
        "per_cell": {
            cell: {
                "matching": _plain_mean(r["score_matching"] for r in rs),
                "ref_g": _plain_mean(r["score_ref_g"] for r in rs),
                "n": len(rs),
                "n_failures": sum(r["failure"] is not None for r in rs),
            }
            for cell, rs in sorted(by_cell.items())
        },
        "cells": {cell: _block(rs, f"cell:{cell}", n_boot, seed, alpha) for cell, rs in sorted(by_cell.items())},
        "languages": {lang: _block(rs, f"lang:{lang}", n_boot, seed, alpha) for lang, rs in sorted(by_lang.items())},
        "overall": _block(rows, "overall", n_boot, seed, alpha),
        "bootstrap": {"samples": n_boot, "seed": seed, "alpha": alpha, "method": "percentile, rows resampled"},
    }


def update_metrics(model_dir: Path, summary: dict) -> bool:
    """Fill the ``xcomet`` blocks of ``<model_dir>/metrics.json`` if it exists (atomic rewrite); True if updated.

    The judge's metric refill keeps filled ``xcomet`` blocks, so the two steps can run in either order.
    """
    path = Path(model_dir) / METRICS
    if not path.is_file():
        return False
    write_json(path, merge_into_metrics(read_json(path), summary))
    return True


def merge_into_metrics(metrics: dict, summary: dict) -> dict:
    """Fill the ``xcomet`` slot of every block of a ``metrics.json`` dict from an xCOMET summary (in place)."""
    for section in ("cells", "languages"):
        for name, block in metrics.get(section, {}).items():
            block["xcomet"] = summary.get(section, {}).get(name)
    if "overall" in metrics:
        metrics["overall"]["xcomet"] = summary.get("overall")
    return metrics


# ----------------------------------------------------------------------------------------------------------------
# The entry point the evaluator calls
# ----------------------------------------------------------------------------------------------------------------


def score_generations(
    generations: Sequence[Mapping],
    cfg: CometConfig,
    cache: CometCache,
    *,
    log_path: Path | None = None,
    python: Path | None = None,
) -> tuple[list[dict], dict]:
    """Per-generation xCOMET rows for ``generations`` (scoring what the cache lacks) and the scoring counts."""
    model_id = model_identity(cfg.xcomet_model)
    items: dict[str, tuple[str, str, str]] = {}
    plan = []
    for number, record in enumerate(generations, start=1):
        _check_record(record, f"generation record {number}")
        which, ref = matching_reference(record)
        failure = failure_code(record)
        if failure is not None:
            plan.append((record, which, failure, None, None))
            continue
        mt = record["translation"]
        k_match = item_key(model_id, record["source"], mt, ref)
        k_refg = item_key(model_id, record["source"], mt, record["ref_g"])
        items[k_match] = (record["source"], mt, ref)
        items[k_refg] = (record["source"], mt, record["ref_g"])
        plan.append((record, which, None, k_match, k_refg))

    stats = score_items(items, cfg, cache, log_path=log_path, python=python)
    rows = []
    for record, which, failure, k_match, k_refg in plan:
        if failure is not None:
            match = refg = {"score": 0.0, "error_spans": None}
        else:
            match, refg = cache.get(k_match), cache.get(k_refg)
        rows.append(
            {
                "key": record["key"],
                "id": record.get("id"),
                "lang": record["lang"],
                "set": record["set"],
                "cell": record["cell"],
                "ref_matching": which,
                "score_matching": match["score"],
                "score_ref_g": refg["score"],
                "error_spans_matching": match["error_spans"],
                "error_spans_ref_g": refg["error_spans"],
                "failure": failure,
            }
        )
    return rows, stats


def find_model_dirs(results_dir: str | Path, models: Sequence[str] = ()) -> list[str]:
    """Names (paths relative to ``results_dir``) of the model folders holding ``generations.jsonl``.

    The sweep's own ``cache/`` folder is not a model; ``models`` keeps only the named ones (unknown names raise).
    """
    root = Path(results_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"results folder {root} not found")
    found = [
        p.parent.relative_to(root).as_posix()
        for p in sorted(root.rglob(GENERATIONS))
        if p.parent.relative_to(root).parts[:1] != (CACHE_DIR,)
    ]
    if models:
        missing = sorted(set(models) - set(found))
        if missing:
            raise FileNotFoundError(f"no {GENERATIONS} for {missing} under {root} (found: {found})")
        found = [name for name in found if name in set(models)]
    if not found:
        raise FileNotFoundError(f"no {GENERATIONS} under {root}: run the evaluation first")
    return found


def score_results(results_dir: str | Path, model_dir_name: str, config: Any = None) -> dict:
    """Score ``<results_dir>/<model_dir_name>/generations.jsonl``; write ``xcomet.jsonl`` + ``xcomet_summary.json``.

    ``config``: a :class:`CometConfig`, a mapping of xCOMET settings, or a recipe object carrying ``xcomet_*``
    fields (and optionally ``bootstrap_samples`` / ``bootstrap_seed`` / ``alpha``). Returns the summary dict
    (``system_matching``, ``system_ref_g``, ``per_cell``, ``n_failures``, metric-shaped blocks, and ``scoring``
    counts: items served from cache vs newly scored).
    """
    started = time.time()
    cfg = CometConfig.from_any(config)
    results_dir = Path(results_dir)
    folder = results_dir / model_dir_name
    generations_path = folder / GENERATIONS
    if not generations_path.is_file():
        raise FileNotFoundError(f"{generations_path} not found: run the evaluation first")
    cache_path = Path(cfg.xcomet_cache) if cfg.xcomet_cache else results_dir / CACHE
    cache = CometCache(cache_path)
    rows, stats = score_generations(read_jsonl(generations_path), cfg, cache, log_path=folder / LOG)
    summary = summarize(
        rows,
        n_boot=int(_get(config, "bootstrap_samples", DEFAULT_SAMPLES)),
        seed=int(_get(config, "bootstrap_seed", DEFAULT_SEED)),
        alpha=float(_get(config, "alpha", DEFAULT_ALPHA)),
    )
    summary.update(
        model=cfg.xcomet_model,
        model_identity=model_identity(cfg.xcomet_model),
        results=str(folder),
        cache=str(cache_path),
        scoring={**stats, "seconds": round(time.time() - started, 3)},
        config=dataclasses.asdict(cfg),
    )
    write_jsonl(folder / OUTPUT, rows)
    write_json(folder / SUMMARY, summary)
    return summary


def _get(config: Any, name: str, default: Any) -> Any:
    if isinstance(config, Mapping):
        return config.get(name, default)
    return getattr(config, name, default) if config is not None else default


__all__ = [
    "CometCache",
    "CometConfig",
    "CometScoringError",
    "find_model_dirs",
    "merge_into_metrics",
    "score_generations",
    "score_items",
    "score_results",
    "summarize",
    "update_metrics",
]
