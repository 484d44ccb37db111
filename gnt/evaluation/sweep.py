"""The checkpoint sweep: every model × every selected grid cell × every evaluated row, resumable, never twice.

Flow: discover models (base + ``checkpoint-*`` of the runs + explicit adapters) → load the rows → leakage guard
(refuse before generating anything) → per base model, one backend; per model, per cell, requests sorted by prompt
length and cut into fixed chunks → generation cache in front of the backend → the grid's part of each model folder
(generations, metrics, record) through its one writer (:class:`gnt.results.model_folder.ModelFolder`).
Everything but the grid's own requests, records and model folder is :mod:`gnt.evaluation.driver`'s, which the
templated and WMT24 suites share; :class:`GridTask` is the grid plugged into it.

The requests of a model form one stream, cell after cell, each cell's requests sorted by prompt length (all
prompts of a cell share their long prefix, which vLLM's prefix cache and padding both like), cut into chunks of
``chunk_size``. Chunks are cut from the full stream, not from the cache misses: a chunk is written to the cache
in one append, so after a kill every chunk is either fully cached or fully missing, and a resumed sweep sends
exactly the same batches to the model as an uninterrupted one. Batched generation with padding is only
reproducible for identical batches, so this is what makes a resumed sweep's metrics identical. Only about one
chunk and one cell of prompts are held in memory at a time (a full-grid model is 72,000 prompts of a few KB each).

``shard=i/n`` runs worker i's share of those chunks and ``shard=merge`` builds the results from the cache
(:mod:`gnt.evaluation.shard`); the last worker to finish merges by itself.
"""

from __future__ import annotations

import hashlib
import json
import logging
import socket
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from gnt.bootstrap import BootstrapSettings
from gnt.data.entry import Entry
from gnt.evaluation.cache import CachedBackend, GenerationCache
from gnt.evaluation.catalog import headline
from gnt.evaluation.config import MERGE, EvalConfig, Shard, parse_shard
from gnt.evaluation.discovery import ModelUnderTest
from gnt.evaluation.driver import (
    MAX_FAILED_CHUNKS,
    BackendFactory,
    GenerationFailure,
    Outcome,
    default_backend_factory,
    discover,
    for_each_model,
    raise_if_failed,
    run_models,
)
from gnt.evaluation.generation_records import RECORD_FORMAT, generation_record
from gnt.evaluation.leakage import LeakageStatus, guard_leakage
from gnt.evaluation.metrics import grid_metrics
from gnt.evaluation.preference import (
    PREFERENCE,
    SCORE_CACHE,
    ScoreCache,
    preference_metrics,
    preference_records,
)
from gnt.evaluation.results import cache_path, update_summary
from gnt.evaluation.rows import load_rows
from gnt.evaluation.shard import (
    SHARD_FORMAT,
    ChunkStream,
    ShardsIncomplete,
    generate_share,
    merge_lock,
    missing_chunks,
    owners,
    shard_record_path,
    shard_records,
)
from gnt.filenames import GENERATIONS, METRICS, RECORD
from gnt.generation.base import Constraint, DecodingParams, Generation, GenerationRequest
from gnt.generation.identity import model_identity
from gnt.io import hash_json, write_json
from gnt.output_format import output_regex
from gnt.prompts.grid import Cell, GridPrompt, PromptGrid
from gnt.records import environment_record
from gnt.results.model_folder import GRID, DamagedResults, ModelFolder
from gnt.results.part import Payload
from gnt.results_schema import EVAL_RECORD_FORMAT, EvalRecord, GridMetrics, PreferenceBlock, SummaryEntry

log = logging.getLogger("gnt.evaluation")

T = TypeVar("T")
WorkItem = tuple[tuple[int, int], Entry, Cell, GridPrompt, GenerationRequest]
__all__ = ["MAX_FAILED_CHUNKS", "BackendFactory", "GenerationFailure", "run_sweep"]


@dataclass(frozen=True)
class GridPass:
    """What one pass of the sweep adds to every model's record: the environment, and the shards' counts when the
    pass merges a sharded sweep."""

    environment: dict[str, Any]
    sharded: dict[str, dict[str, Any]] | None = None


@dataclass(frozen=True)
class GridTask:
    """The grid plugged into the driver: renders one model's requests cell by cell and writes its folder.

    Records are made in (cell, row) order; metrics are computed when the model is written. Immutable: what one
    pass adds (:class:`GridPass`) is given to it with :meth:`for_pass`, never set on it.
    """

    config: EvalConfig
    grid: PromptGrid
    entries: tuple[Entry, ...]
    cells: tuple[Cell, ...]
    statuses: Mapping[str, LeakageStatus]
    rows_info: Mapping[str, Any]
    pairs: tuple[dict[str, Any], ...] = ()  # held-out preference pairs (``preference: true``)
    score_cache: ScoreCache | None = None
    run: GridPass | None = None
    label: ClassVar[str] = "grid"

    @property
    def params(self) -> DecodingParams:
        return DecodingParams(max_new_tokens=self.config.max_new_tokens)

    def for_pass(self, run: GridPass) -> GridTask:
        return replace(self, run=run)

    def cells_of(self, model: ModelUnderTest | None) -> tuple[Cell, ...]:
        """The cells ``model`` is scored in: the base model's own (``base_shots``) where the recipe sets them."""
        if model is not None and model.kind == "base" and self.config.base_shots:
            return tuple(self.config.cells(base=True))
        return self.cells

    def requests_for(self, model: ModelUnderTest, cell: Cell, system_role: bool
                     ) -> Iterator[tuple[Entry, GridPrompt, GenerationRequest]]:
        constraint = Constraint("regex", output_regex(cell.lang)) if self.config.constrained else None
        params = self.params
        for entry in self.entries:
            if entry.lang != cell.lang:
                continue
            prompt = self.grid.render(entry.source, cell, system_role)
            yield entry, prompt, GenerationRequest.from_messages(prompt.messages, model.adapter, constraint, params)

    def size(self, model: ModelUnderTest | None = None) -> int:
        """Requests per model (each row in every cell of its language the model is scored in)."""
        return sum(1 for cell in self.cells_of(model) for e in self.entries if e.lang == cell.lang)

    @staticmethod
    def request(item: WorkItem) -> GenerationRequest:
        return item[4]

    @staticmethod
    def order(item: WorkItem) -> tuple[int, int]:
        return item[0]

    @staticmethod
    def record(model: ModelUnderTest, item: WorkItem, generation: Generation, model_id: str) -> dict:
        _, entry, cell, prompt, request = item
        return dict(generation_record(entry, cell, prompt, request.key(model_id), generation, model.name))

    def chunks(self, model: ModelUnderTest, system_role: bool) -> Iterator[list[WorkItem]]:
        """The model's request stream cut into ``chunk_size`` chunks: what one backend call receives."""
        pending: list[WorkItem] = []
        for cell_index, cell in enumerate(self.cells_of(model)):
            items = [
                ((cell_index, row), entry, cell, prompt, request)
                for row, (entry, prompt, request) in enumerate(self.requests_for(model, cell, system_role))
            ]
            items.sort(key=lambda item: (sum(len(text) for _, text in item[4].messages), item[0]))
            pending.extend(items)
            while len(pending) >= self.config.chunk_size:
                yield pending[: self.config.chunk_size]
                del pending[: self.config.chunk_size]
        if pending:
            yield pending

    def write(self, outcome: Outcome, backend: CachedBackend, system_role: bool) -> SummaryEntry:
        """Score one model and write the grid's part of its folder; metrics are None when every generation failed
        (a run error: all-zero metrics would look like a result, so only the record)."""
        model, config = outcome.model, self.config
        leakage = self.statuses[model.name]
        folder = ModelFolder(Path(config.out_dir), model.name)
        files: dict[str, Payload] = {}
        keep: list[str] = []
        metrics: GridMetrics | None = None
        if not outcome.failed:
            metrics = _kept_metrics(folder, outcome.records, config, leakage)
            if metrics is None:
                metrics = grid_metrics(outcome.records, model=model.name, global_step=model.global_step,
                                       leakage=leakage.to_json(), bootstrap=BootstrapSettings.of(config))
                files[GENERATIONS] = outcome.records
                files[METRICS] = metrics
            else:
                log.info("%s: generations unchanged; metrics kept", model.name)
                keep += [GENERATIONS, METRICS]
            preference = _preference(config, model, backend, self) if self.pairs else None
            if preference is not None:
                records, block = preference
                files[PREFERENCE] = records
                if metrics.get("preference_accuracy") != block:
                    metrics["preference_accuracy"] = block
                    files[METRICS] = metrics
        folder.write(GRID, files, self._model_record(outcome, backend, system_role, leakage), keep=keep,
                     remove=(GENERATIONS, METRICS, PREFERENCE) if outcome.failed else ())
        status = {"status": "failed", "error": outcome.error} if outcome.failed else {"status": "ok"}
        return {
            "name": model.name,
            "kind": model.kind,
            "base_model": model.base_model,
            "global_step": model.global_step,
            "adapter_weights_hash": model.adapter.weights_hash if model.adapter else None,
            "leakage": leakage.status,
            "generations": f"{model.name}/{GENERATIONS}",
            "metrics": f"{model.name}/{METRICS}",
            "record": f"{model.name}/{RECORD}",
            "counts": outcome.counts.to_json(),
            **status,  # type: ignore[typeddict-item]
            "headline": None if metrics is None else headline(metrics),
        }

    def _model_record(self, outcome: Outcome, backend: CachedBackend, system_role: bool,
                      leakage: LeakageStatus) -> EvalRecord:
        """record.json: everything the model's results depend on (the grid's part record)."""
        model, config, grid = outcome.model, self.config, self.grid
        cells = self.cells_of(model)
        run = self.run or GridPass(environment_record())
        record: EvalRecord = {
            "format": EVAL_RECORD_FORMAT,
            "status": "failed" if outcome.failed else "ok",
            "step": "grid",
            "kind": model.kind,
            "stage": model.stage,
            "generation_format": RECORD_FORMAT,
            "model": model.describe(),
            "model_id": backend.model_id,
            "base_identity": model_identity(model.base_model),
            "global_step": model.global_step,
            "backend": backend.describe(),
            "decoding": asdict(self.params),
            "constraint": {c.lang: output_regex(c.lang) for c in cells} if config.constrained else None,
            "system_role": system_role,
            "grid": {
                "cells": [c.name for c in cells],
                "seed": config.grid_seed,
                "prompts_dir": config.prompts_dir,
                "prompt_texts_hash": {lang: grid.texts[lang].content_hash for lang in grid.langs},
            },
            "shot_orders": grid.shot_orders(list(cells)),
            "rows": dict(self.rows_info),
            "leakage": leakage.to_json(),
            "run_record": _run_record_summary(model),
            "eval_recipe": config.to_json(),
            "counts": outcome.counts.to_json(),
            "seconds": round(outcome.seconds, 3),
            "environment": run.environment,
        }
        if outcome.failed:
            record["error"] = str(outcome.error)
        sharded = run.sharded.get(model.name) if run.sharded is not None else None
        if sharded is not None:
            record["sharded"] = sharded  # counts of generation happened in the shards; this merge read the cache
        return record


def _run_record_summary(model: ModelUnderTest) -> dict:
    """The checkpoint's run record without its (long) list of training source keys."""
    record = {k: v for k, v in model.run_record.items() if k != "train_source_keys"}
    if "train_source_keys" in model.run_record:
        record["n_train_source_keys"] = len(model.run_record["train_source_keys"])
    return record


def run_sweep(config: EvalConfig, *, backend_factory: BackendFactory | None = None) -> Path:
    """Evaluate every discovered model over the selected grid; return the output folder.

    ``backend_factory(config, base_model, adapter_paths)`` builds the backend of one base model (default: the
    recipe's backend); tests inject fakes through it. With ``shard=i/n`` this process generates worker i's share
    into the cache and merges only if it finds the whole sweep there; ``shard=merge`` builds the results from the
    cache and raises :class:`ShardsIncomplete` (writing nothing) if any generation is missing.
    """
    started = time.perf_counter()
    mode = parse_shard(config.shard)
    sweep = _Sweep(config, backend_factory or default_backend_factory)
    if isinstance(mode, Shard):
        sweep.run_share(mode)
        log.info("shard %s done in %.1fs", mode.name, time.perf_counter() - started)
        with merge_lock(sweep.out):
            if sweep.complete(strict=False):
                log.info("shard %s: every generation of the sweep is in the cache; merging", mode.name)
                sweep.evaluate(merged=True)
            else:
                log.info("shard %s: other shards are still missing; the last one to finish merges", mode.name)
    else:
        if mode == MERGE:
            sweep.complete(strict=True)
        sweep.evaluate(merged=mode == MERGE)
    log.info("sweep done in %.1fs", time.perf_counter() - started)
    return sweep.out


class _Sweep:
    """One sweep's models, rows, grid and backends; runs the whole sweep, one worker's share, or the merge."""

    def __init__(self, config: EvalConfig, factory: BackendFactory) -> None:
        self.config = config
        self.factory = factory
        self.out = Path(config.out_dir)
        self.cache = GenerationCache(cache_path(self.out))
        self.models = discover(config)  # this order numbers the chunks of the stream: every worker must share it
        held_out = load_rows(config, self.models)
        self.entries = held_out.entries
        self.statuses = guard_leakage(self.models, set(held_out.guarded_keys), len(self.entries),
                                      allow=config.allow_leakage, logger=log)
        self.cells = config.cells()
        self.grid = PromptGrid(config.langs, config.prompts_dir, seed=config.grid_seed)
        log.info(
            "sweep: %d model(s) × %d cell(s) × %d row(s) → %s", len(self.models), len(self.cells), len(self.entries),
            self.out,
        )
        self.task = GridTask(config, self.grid, self.entries, tuple(self.cells), self.statuses, held_out.info,
                             held_out.pairs, ScoreCache(self.out / SCORE_CACHE))

    def each_model(self, visit: Callable[[ModelUnderTest, CachedBackend, bool], T]) -> list[T]:
        return for_each_model(self.config, self.models, self.factory, self.cache, visit)

    @property
    def work(self) -> str:
        """Fingerprint of the sweep's work (models, rows, cells, decoding, chunking): shard records name it."""
        recipe = {k: v for k, v in self.config.to_json().items() if k not in ("shard", "progress", "recipe")}
        models = [(m.name, m.base_model, m.adapter.weights_hash if m.adapter else None) for m in self.models]
        return hash_json({"recipe": recipe, "models": models, "rows": [e.id for e in self.entries]})

    def run_share(self, shard: Shard) -> None:
        """Generate this worker's chunks of every model into the cache and write ``shards/<i>-of-<n>.json``."""
        started = time.perf_counter()
        record_path = shard_record_path(self.out, shard)
        stream = ChunkStream(shard)
        counts: dict[str, dict[str, int]] = {}

        def share(model: ModelUnderTest, backend: CachedBackend, system_role: bool) -> None:
            counts[model.name] = generate_share(self.task, model, backend, system_role, stream, progress=self.config.progress)
            log.info("%s [shard %s]: %s", model.name, shard.name, counts[model.name])

        self.each_model(share)
        write_json(record_path, {
            "format": SHARD_FORMAT,
            "shard": shard.name,
            "index": shard.index,
            "count": shard.count,
            "work": self.work,
            "chunks_in_sweep": stream.next_chunk,
            "models": counts,
            "seconds": round(time.perf_counter() - started, 3),
            "host": socket.gethostname(),
            "environment": environment_record(),
        })

    def complete(self, *, strict: bool) -> bool:
        """Whether the cache (reloaded: other workers appended to it) holds every generation of the sweep.

        ``strict`` raises :class:`ShardsIncomplete` naming the models with missing generations and the shards
        that own them; otherwise a worker just learns that others are still running. The backends are lazy, so
        this loads a tokenizer at most.
        """
        self.cache = GenerationCache(cache_path(self.out))
        missing: dict[str, int] = {}
        owed_chunks: set[int] = set()
        number = 0

        def check(model: ModelUnderTest, backend: CachedBackend, system_role: bool) -> None:
            nonlocal number
            absent, chunks, number = missing_chunks(self.task, model, backend.model_id, system_role, self.cache, number)
            if absent:
                missing[model.name] = absent
                owed_chunks.update(chunks)

        self.each_model(check)
        if not missing:
            return True
        if strict:
            records = shard_records(self.out, self.work)
            done = ", ".join(r["shard"] for r in records) or "none"
            run = owners(owed_chunks, records)
            per_model = ", ".join(f"{name}: {n}" for name, n in missing.items())
            raise ShardsIncomplete(
                f"cannot merge {self.out}: {sum(missing.values())} generation(s) are not in the cache ({per_model}); "
                f"shards finished: {done}; "
                + (f"rerun shard(s) {', '.join(run)} (a rerun only generates what is missing)" if run else
                   "rerun the shards that did not finish")
                + ", or run the sweep without shard= to record the failures"
            )
        return False

    def evaluate(self, *, merged: bool = False) -> None:
        """The whole sweep (generating what the cache lacks), writing model folders and the summary."""
        run = GridPass(environment_record(),  # once per pass: package metadata and a git call are not free
                       _shard_counts(shard_records(self.out, self.work)) if merged else None)
        summary_entries = run_models(self.task.for_pass(run), self.config, self.models, self.factory, self.cache)
        update_summary(self.out, summary_entries)
        if self.config.progress:
            from gnt.evaluation.table import print_metrics_table

            composed = [(e["name"], ModelFolder(self.out, e["name"]).metrics()[0]) for e in summary_entries]
            print_metrics_table([(name, metrics) for name, metrics in composed if metrics is not None])
        raise_if_failed(summary_entries)


def _shard_counts(records: list[dict]) -> dict[str, dict]:
    """Per model: what each shard generated (for the merged model's record.json)."""
    per_model: dict[str, dict] = {}
    for record in records:
        for name, counts in record.get("models", {}).items():
            entry = per_model.setdefault(name, {"shards": record["count"], "by_shard": {}})
            entry["by_shard"][record["shard"]] = counts
    return per_model


def _preference(config: EvalConfig, model: ModelUnderTest, backend: CachedBackend, task: GridTask
                ) -> tuple[list[dict], PreferenceBlock] | None:
    """Score the held-out pairs under this model (cached): the rows of ``preference.jsonl`` and the
    ``preference_accuracy`` block."""
    from gnt.generation.scoring import ScoringUnsupported

    assert task.score_cache is not None
    try:
        records, counts = preference_records(
            list(task.pairs), model.adapter, backend, task.score_cache, batch_size=config.batch_size
        )
    except ScoringUnsupported as exc:
        log.warning("preference: %s", exc)
        return None
    log.info("%s: preference pairs %d (%d sides scored, %d from cache, %d errors)", model.name,
             counts["pairs"], counts["scored"], counts["from_cache"], counts["errors"])
    block = preference_metrics(records, BootstrapSettings.of(config))
    block["split"] = config.split
    return records, block  # type: ignore[return-value]


def _jsonl_bytes(records: Sequence[Mapping[str, Any]]) -> bytes:
    """The bytes ``generations.jsonl`` holds for ``records`` (as :func:`gnt.io.write_jsonl` writes them)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")


def _kept_metrics(folder: ModelFolder, records: Sequence[Mapping[str, Any]], config: EvalConfig,
                  leakage: LeakageStatus) -> GridMetrics | None:
    """The stored metrics of a model whose grid part is whole and whose generations, bootstrap settings and
    leakage status are unchanged: a cached rerun then does not repeat the bootstrap. Anything else (a damaged
    file, other generations, an older format) recomputes from scratch."""
    found = folder.check(GRID)
    if not found.ok or found.record.get("status") != "ok":
        if found.state not in ("ok", "absent"):
            log.warning("%s: %s: its generations and metrics are written again", folder.name, found.problem)
        return None
    recorded = found.record["files"].get(GENERATIONS, {}).get("sha256")
    if recorded != hashlib.sha256(_jsonl_bytes(records)).hexdigest():
        return None
    try:
        metrics = folder.grid_metrics()
    except (DamagedResults, OSError, ValueError):
        return None
    if BootstrapSettings.of(found.record.get("eval_recipe", {})) != BootstrapSettings.of(config):
        return None
    if metrics.get("leakage") != json.loads(json.dumps(leakage.to_json())):
        return None
    return metrics
