"""The checkpoint sweep: every model × every selected grid cell × every evaluated row, resumable, never twice.

Flow: discover models (base + ``checkpoint-*`` of the runs + explicit adapters) → load the rows → leakage guard
(refuse before generating anything) → per base model, one backend; per model, per cell, requests sorted by prompt
length and cut into fixed chunks → generation cache in front of the backend → records, metrics, run record.

The requests of a model form one stream, cell after cell, each cell's requests sorted by prompt length (all
prompts of a cell share their long prefix, which vLLM's prefix cache and padding both like), cut into chunks of
``chunk_size``. Chunks are cut from the full stream, not from the cache misses: a chunk is written to the cache
in one append, so after a kill every chunk is either fully cached or fully missing, and a resumed sweep sends
exactly the same batches to the model as an uninterrupted one. Batched generation with padding is only
reproducible for identical batches, so this is what makes a resumed sweep's metrics identical. Only about one
chunk and one cell of prompts are held in memory at a time (a full-grid model is 72,000 prompts of a few KB each).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from tqdm.auto import tqdm

from gnt.data.entry import Entry
from gnt.evaluation.cache import CachedBackend, GenerationCache
from gnt.evaluation.config import EvalConfig, system_role_for
from gnt.evaluation.discovery import ModelUnderTest, discover_models
from gnt.evaluation.generation_records import RECORD_FORMAT, generation_record
from gnt.evaluation.leakage import LeakageStatus, guard_leakage
from gnt.evaluation.metrics import compute_metrics
from gnt.evaluation.results import (
    GENERATIONS,
    METRICS,
    RECORD,
    cache_path,
    headline,
    model_dir,
    update_summary,
)
from gnt.evaluation.rows import load_rows
from gnt.generation.base import Constraint, DecodingParams, GenerationBackend, GenerationRequest
from gnt.io import read_json, write_json, write_jsonl
from gnt.output_format import output_regex
from gnt.prompts.grid import Cell, GridPrompt, PromptGrid
from gnt.records import environment_record

log = logging.getLogger("gnt.evaluation")

BackendFactory = Callable[[EvalConfig, str, Sequence[str]], GenerationBackend]
MAX_FAILED_CHUNKS = 3
"""Consecutive chunks whose every request failed before the sweep stops: a wrong model path or a dead server
should cost a minute, not 72,000 recorded failures."""


class GenerationFailure(RuntimeError):
    """The backend failed every request of several consecutive chunks."""


def _default_factory(config: EvalConfig, base_model: str, adapter_paths: Sequence[str]) -> GenerationBackend:
    from gnt.generation.factory import make_backend

    return make_backend(config, base_model, adapter_paths)


class _ModelEvaluation:
    """Renders the grid requests of one model and turns its generations into records (metrics are computed after)."""

    def __init__(self, config: EvalConfig, grid: PromptGrid, entries: list[Entry], cells: list[Cell]) -> None:
        self.config = config
        self.grid = grid
        self.entries = entries
        self.cells = cells
        self.params = DecodingParams(max_new_tokens=config.max_new_tokens)

    def requests_for(self, model: ModelUnderTest, cell: Cell, system_role: bool):
        constraint = Constraint("regex", output_regex(cell.lang)) if self.config.constrained else None
        for entry in self.entries:
            if entry.lang != cell.lang:
                continue
            prompt = self.grid.render(entry.source, cell, system_role)
            yield entry, prompt, GenerationRequest.from_messages(prompt.messages, model.adapter, constraint, self.params)

    def run(self, model: ModelUnderTest, backend: CachedBackend, system_role: bool) -> list[dict]:
        """Generate the model's requests as one stream of fixed chunks; records in (cell, row) order."""
        total = sum(1 for cell in self.cells for e in self.entries if e.lang == cell.lang)
        records: dict[tuple[int, int], dict] = {}
        pending: list[tuple[tuple[int, int], Entry, Cell, GridPrompt, GenerationRequest]] = []
        bar = tqdm(total=total, desc=model.name, unit="gen", disable=not self.config.progress, leave=False)
        failed_chunks = [0]

        def flush(chunk: list) -> None:
            generations = backend.generate([item[4] for item in chunk])
            if all(g.error is not None for g in generations):
                failed_chunks[0] += 1
                if failed_chunks[0] >= MAX_FAILED_CHUNKS:
                    bar.close()
                    raise GenerationFailure(
                        f"{model.name}: every request of {MAX_FAILED_CHUNKS} consecutive chunks failed; first error: "
                        f"{generations[0].error}"
                    )
            else:
                failed_chunks[0] = 0
            for (order, entry, cell, prompt, request), generation in zip(chunk, generations, strict=True):
                key = request.key(backend.model_id)
                records[order] = generation_record(entry, cell, prompt, key, generation, model.name)
            bar.update(len(chunk))
            bar.set_postfix(cached=backend.hits, generated=backend.misses, refresh=False)

        for cell_index, cell in enumerate(self.cells):
            items = [
                ((cell_index, row), entry, cell, prompt, request)
                for row, (entry, prompt, request) in enumerate(self.requests_for(model, cell, system_role))
            ]
            items.sort(key=lambda item: (sum(len(text) for _, text in item[4].messages), item[0]))
            pending.extend(items)
            while len(pending) >= self.config.chunk_size:
                flush(pending[: self.config.chunk_size])
                del pending[: self.config.chunk_size]
        if pending:
            flush(pending)
        bar.close()
        return [records[order] for order in sorted(records)]


def _run_record_summary(model: ModelUnderTest) -> dict:
    """The checkpoint's run record without its (long) list of training source keys."""
    record = {k: v for k, v in model.run_record.items() if k != "train_source_keys"}
    if "train_source_keys" in model.run_record:
        record["n_train_source_keys"] = len(model.run_record["train_source_keys"])
    return record


def run_sweep(config: EvalConfig, *, backend_factory: BackendFactory | None = None) -> Path:
    """Evaluate every discovered model over the selected grid; return the output folder.

    ``backend_factory(config, base_model, adapter_paths)`` builds the backend of one base model (default: the
    recipe's backend); tests inject fakes through it.
    """
    started = time.perf_counter()
    out = Path(config.out_dir)
    models = discover_models(config.runs, config.adapters, config.model, config.include_base)
    grid = PromptGrid(config.langs, config.prompts_dir, seed=config.grid_seed)
    entries, rows_info = load_rows(config, models, grid)
    cells = config.cells()
    statuses = guard_leakage(
        models, {e.source_key for e in entries}, len(entries), allow=config.allow_leakage, logger=log
    )
    log.info("sweep: %d model(s) × %d cell(s) × %d row(s) → %s", len(models), len(cells), len(entries), out)

    cache = GenerationCache(cache_path(out))
    evaluation = _ModelEvaluation(config, grid, entries, cells)
    environment = environment_record()  # once per sweep: package metadata and a git call are not free
    factory = backend_factory or _default_factory
    summary_entries, table = [], []
    by_base: dict[str, list[ModelUnderTest]] = {}
    for model in models:
        by_base.setdefault(model.base_model, []).append(model)
    for base_model, group in by_base.items():
        backend = CachedBackend(factory(config, base_model, [m.adapter.path for m in group if m.adapter]), cache)
        try:
            system_role = system_role_for(config, backend)
            for model in group:
                metrics, entry = _evaluate_model(
                    config, model, backend, evaluation, system_role, statuses[model.name], rows_info, grid, cells,
                    environment,
                )
                summary_entries.append(entry)
                if metrics is not None:
                    table.append((model.name, metrics))
        finally:
            backend.close()
    update_summary(out, summary_entries)
    log.info("sweep done in %.1fs", time.perf_counter() - started)
    if config.progress and table:
        from gnt.evaluation.table import print_metrics_table

        print_metrics_table(table)
    failed = [e for e in summary_entries if e.get("status") == "failed"]
    if failed:
        raise GenerationFailure(
            f"{len(failed)} of {len(summary_entries)} model(s) failed, every generation in error: "
            + "; ".join(f"{e['name']} ({e['error']})" for e in failed)
            + ". Nothing of theirs was cached: rerun the same command to retry them"
        )
    return out


def _kept_metrics(folder: Path, records: list[dict], config: EvalConfig, leakage: LeakageStatus) -> dict | None:
    """The stored metrics of a model whose generations, bootstrap settings and leakage status are unchanged.

    A cached rerun then neither repeats the bootstrap nor overwrites what later steps filled into metrics.json
    (GNT accuracy and coherence from the judge, xCOMET scores); any difference recomputes from scratch.
    """
    try:
        stored = (folder / GENERATIONS).read_text(encoding="utf-8")
        metrics = read_json(folder / METRICS)
        recipe = read_json(folder / RECORD)["eval_recipe"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    fresh = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    settings = ("bootstrap_samples", "bootstrap_seed", "alpha")
    if stored != fresh or any(recipe.get(k) != getattr(config, k) for k in settings):
        return None
    if metrics.get("leakage") != json.loads(json.dumps(leakage.to_json())):
        return None
    return metrics


def _evaluate_model(
    config: EvalConfig,
    model: ModelUnderTest,
    backend: CachedBackend,
    evaluation: _ModelEvaluation,
    system_role: bool,
    leakage: LeakageStatus,
    rows_info: dict,
    grid: PromptGrid,
    cells: list[Cell],
    environment: dict,
) -> tuple[dict | None, dict]:
    """Generate, score and record one model; metrics are None when every generation failed (a run error)."""
    started = time.perf_counter()
    hits, misses, failures = backend.hits, backend.misses, backend.failures
    records = evaluation.run(model, backend, system_role)
    counts = {
        "requests": len(records),
        "cache_hits": backend.hits - hits,
        "generated": backend.misses - misses,
        "failed": backend.failures - failures,
    }
    seconds = time.perf_counter() - started
    log.info(
        "%s: %d generations (%d from cache, %d generated, %d failed) in %.1fs",
        model.name, counts["requests"], counts["cache_hits"], counts["generated"], counts["failed"], seconds,
    )
    folder = model_dir(config.out_dir, model.name)
    errors = [r["generation_error"] for r in records if r.get("generation_error") is not None]
    failed = bool(records) and len(errors) == len(records)
    metrics = None if failed else _kept_metrics(folder, records, config, leakage)
    if failed:  # all-zero metrics would look like a result (to the report, the judge, xCOMET): only the record
        log.error("%s: every one of %d generations failed (first error: %s)", model.name, len(records), errors[0])
        (folder / GENERATIONS).unlink(missing_ok=True)
        (folder / METRICS).unlink(missing_ok=True)
    elif metrics is None:
        metrics = compute_metrics(
            records, n_boot=config.bootstrap_samples, seed=config.bootstrap_seed, alpha=config.alpha
        )
        metrics.update(model=model.name, global_step=model.global_step, leakage=leakage.to_json())
        write_jsonl(folder / GENERATIONS, records)
        write_json(folder / METRICS, metrics)
    else:
        log.info("%s: generations unchanged; metrics kept (with any judge/xCOMET results filled in)", model.name)
    status = {"status": "failed", "error": errors[0]} if failed else {"status": "ok"}
    record = {
        "format": "gnt-align/eval-record/1",
        **status,
        "generation_format": RECORD_FORMAT,
        "model": model.describe(),
        "model_id": backend.model_id,
        "global_step": model.global_step,
        "backend": backend.describe(),
        "decoding": asdict(evaluation.params),
        "constraint": {c.lang: output_regex(c.lang) for c in cells} if config.constrained else None,
        "system_role": system_role,
        "grid": {
            "cells": [c.name for c in cells],
            "seed": config.grid_seed,
            "prompts_dir": config.prompts_dir,
            "prompt_texts_hash": {lang: grid.texts[lang].content_hash for lang in grid.langs},
        },
        "shot_orders": grid.shot_orders(cells),
        "rows": rows_info,
        "leakage": leakage.to_json(),
        "run_record": _run_record_summary(model),
        "eval_recipe": config.to_json(),
        "counts": counts,
        "seconds": round(seconds, 3),
        "environment": environment,
    }
    write_json(folder / RECORD, record)  # last: a folder with a record is complete
    entry = {
        "name": model.name,
        "kind": model.kind,
        "base_model": model.base_model,
        "global_step": model.global_step,
        "adapter_weights_hash": model.adapter.weights_hash if model.adapter else None,
        "leakage": leakage.status,
        "generations": f"{model.name}/{GENERATIONS}",
        "metrics": f"{model.name}/{METRICS}",
        "record": f"{model.name}/{RECORD}",
        "counts": counts,
        **status,
        "headline": None if metrics is None else headline(metrics),
    }
    return metrics, entry
