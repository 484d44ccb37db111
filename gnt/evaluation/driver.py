"""The one driver behind every run that evaluates a list of models: grid sweep, templated suite, WMT24 suite.

Each of those runs does the same things around its own prompts and scoring, and this module does them once:

- find the models (:func:`discover`): the base model and every checkpoint of the runs, explicit adapters;
- load each base model once and switch adapters on it (:func:`for_each_model`): the models are grouped by base
  model in discovery order, one backend per group, closed even when a model fails;
- put the shared generation cache of the results folder in front of that backend, so a rerun generates nothing;
- send each model's requests in the task's fixed chunks (:func:`generate_model`): a chunk is the unit the cache
  stores in one append, so a killed run resumes with exactly the batches an uninterrupted one sends;
- count, per model, the requests, cache hits, generations and failures from the backend's counters;
- stop early when the backend fails every request of :data:`MAX_FAILED_CHUNKS` chunks in a row (a dead server or a
  wrong path costs a minute, not a full grid of recorded failures), and treat a model whose every request failed
  as a run error (:func:`raise_if_failed`), after every other model has been written.

A run over an existing results folder (the judge, xCOMET, attribution) has no models to load: it plugs in through
:class:`FolderTask` (the items of each model folder, one batch over all of them, each folder's part) and
:func:`run_folders`, which hands each part to the folder's one writer (:class:`gnt.results.model_folder.ModelFolder`).

A generation task plugs in through :class:`GenerationTask`: the chunks of work items for a model, the request of
an item, the record made from an item and its generation, and how to write the model's folder from the outcome.
Writing a folder is the task's, with one rule for all of them (:func:`gnt.results.part.write_part`): the record is
written last and vouches for the size and hash of every file, so a folder whose record checks out is complete. What stays with each task: which items it evaluates and so which source
keys the leakage guard (:func:`gnt.evaluation.leakage.guard_leakage`) checks, its metrics, and its results-folder
summary. Sharding a run over workers (:mod:`gnt.evaluation.shard`) needs only the task's chunks and requests.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from tqdm.auto import tqdm

from gnt.evaluation.cache import CachedBackend, GenerationCache
from gnt.evaluation.config import EvalConfig, system_role_for
from gnt.evaluation.discovery import ModelUnderTest, discover_models
from gnt.filenames import RECORD
from gnt.generation.base import Generation, GenerationBackend, GenerationRequest
from gnt.results.folder import ResultsFolder
from gnt.results.model_folder import ModelFolder
from gnt.results.part import Payload, write_part
from gnt.results_schema import SummaryEntry

log = logging.getLogger("gnt.evaluation")

BackendFactory = Callable[[EvalConfig, str, Sequence[str]], GenerationBackend]
Item = TypeVar("Item")
T = TypeVar("T")

MAX_FAILED_CHUNKS = 3
"""Consecutive chunks whose every request failed before a run stops: a wrong model path or a dead server
should cost a minute, not 72,000 recorded failures."""


class GenerationFailure(RuntimeError):
    """The backend failed every request of several consecutive chunks, or of a whole model (exit status 1)."""

    exit_code = 1


def default_backend_factory(config: EvalConfig, base_model: str, adapter_paths: Sequence[str]) -> GenerationBackend:
    """The recipe's backend for one base model with all adapters of its group, through the one builder
    (:func:`gnt.generation.factory.build_backend`), with what the evaluation decides beyond the backend keys: the
    grid seed and whether prompts keep a system turn."""
    from gnt.generation.factory import build_backend

    return build_backend(config, base_model, adapter_paths=adapter_paths, seed=config.grid_seed,
                         system_role=config.system_role != "merge")


def discover(config: EvalConfig) -> list[ModelUnderTest]:
    """The models a recipe names: base model(s) first, then each run's checkpoints, then explicit adapters."""
    return discover_models(config.runs, config.adapters, config.model, config.include_base)


def group_by_base(models: Iterable[ModelUnderTest]) -> dict[str, list[ModelUnderTest]]:
    """Models per base model, both in discovery order (sharded runs number their chunks in this order)."""
    groups: dict[str, list[ModelUnderTest]] = {}
    for model in models:
        groups.setdefault(model.base_model, []).append(model)
    return groups


def for_each_model(
    config: EvalConfig,
    models: Sequence[ModelUnderTest],
    factory: BackendFactory,
    cache: GenerationCache,
    visit: Callable[[ModelUnderTest, CachedBackend, bool], T],
) -> list[T]:
    """Call ``visit(model, backend, system_role)`` for every model, loading each base model once.

    The backend of a group gets every adapter of the group up front (vLLM needs them at load time) and is closed
    when the group is done, also when ``visit`` raises, so a failed run leaves no server process behind.
    """
    results: list[T] = []
    for base_model, group in group_by_base(models).items():
        adapters = [m.adapter.path for m in group if m.adapter]
        backend = CachedBackend(factory(config, base_model, adapters), cache)
        try:
            system_role = system_role_for(config, backend)
            for model in group:
                results.append(visit(model, backend, system_role))
        finally:
            backend.close()
    return results


@dataclass(frozen=True)
class Counts:
    """What one model cost, read off the backend's counters between the start and the end of the model.

    ``requests`` counts the model's items; the other three count what the cache served, what the backend
    generated and how many of those came back with an error (a failure is never cached).
    """

    requests: int
    cache_hits: int
    generated: int
    failed: int

    def to_json(self) -> dict[str, int]:
        """In this key order: the records and summaries have always listed them so."""
        return asdict(self)


class CounterWindow:
    """The backend's hit/miss/failure counters since construction (they are cumulative over a group's models)."""

    def __init__(self, backend: CachedBackend) -> None:
        self.backend = backend
        self.start = (backend.hits, backend.misses, backend.failures)

    def counts(self, requests: int) -> Counts:
        hits, misses, failures = self.start
        b = self.backend
        return Counts(requests, b.hits - hits, b.misses - misses, b.failures - failures)


@dataclass
class Outcome:
    """One model's records (in the task's order), its counts and seconds, and the error when every request failed."""

    model: ModelUnderTest
    records: list[dict]
    counts: Counts
    seconds: float
    error: str | None = None

    @property
    def failed(self) -> bool:
        """Every request of the model failed: no metrics, a run error (all-zero metrics would look like a result)."""
        return self.error is not None


class GenerationTask(Protocol[Item]):
    """What a run plugs into the driver: its items, their requests, their records, and the model folder."""

    @property
    def label(self) -> str:
        """Names the task in logs and progress bars (``grid``, ``templated``, ``wmt24``)."""
        ...

    def chunks(self, model: ModelUnderTest, system_role: bool) -> Iterator[list[Item]]:
        """The model's work items in the fixed chunks one backend call receives (the same on every run)."""
        ...

    def size(self, model: ModelUnderTest) -> int:
        """Work items of ``model`` (for the progress bar)."""
        ...

    def request(self, item: Item) -> GenerationRequest:
        """The generation request of an item (its cache key follows from it)."""
        ...

    def order(self, item: Item) -> Hashable:
        """Where the item's record goes in the model's records (chunks are sorted by length, records are not)."""
        ...

    def record(self, model: ModelUnderTest, item: Item, generation: Generation, model_id: str) -> dict:
        """The record of one item and its generation."""
        ...

    def write(self, outcome: Outcome, backend: CachedBackend, system_role: bool) -> SummaryEntry:
        """Score the outcome and write the model folder (record last); return the model's summary entry."""
        ...


@dataclass
class FailureWatch:
    """Counts consecutive chunks in which every request failed and stops the run at :data:`MAX_FAILED_CHUNKS`."""

    where: str
    failed_chunks: int = field(default=0)

    def see(self, generations: Sequence[Generation]) -> None:
        if not generations:
            return
        if all(g.error is not None for g in generations):
            self.failed_chunks += 1
            if self.failed_chunks >= MAX_FAILED_CHUNKS:
                raise GenerationFailure(
                    f"{self.where}: every request of {MAX_FAILED_CHUNKS} consecutive chunks failed; first error: "
                    f"{generations[0].error}"
                )
        else:
            self.failed_chunks = 0


def generate_model(
    task: GenerationTask[Any], model: ModelUnderTest, backend: CachedBackend, system_role: bool, *,
    progress: bool = False,
) -> Outcome:
    """Send the model's chunks through the cached backend and collect its records, counts and failure."""
    started = time.perf_counter()
    window = CounterWindow(backend)
    records: dict[Hashable, dict] = {}
    watch = FailureWatch(model.name)
    bar = tqdm(total=task.size(model), desc=f"{model.name} ({task.label})", unit="gen", disable=not progress, leave=False)
    errors: dict[Hashable, str] = {}
    try:
        for chunk in task.chunks(model, system_role):
            generations = backend.generate([task.request(item) for item in chunk])
            watch.see(generations)
            for item, generation in zip(chunk, generations, strict=True):
                order = task.order(item)
                records[order] = task.record(model, item, generation, backend.model_id)
                if generation.error is not None:
                    errors[order] = generation.error
            bar.update(len(chunk))
            bar.set_postfix(cached=backend.hits, generated=backend.misses, refresh=False)
    finally:
        bar.close()
    ordered = [records[key] for key in sorted(records)]  # type: ignore[type-var]
    counts = window.counts(len(ordered))
    seconds = time.perf_counter() - started
    log.info("%s (%s): %d generations (%d from cache, %d generated, %d failed) in %.1fs", model.name, task.label,
             counts.requests, counts.cache_hits, counts.generated, counts.failed, seconds)
    # the first error in the records' order (not the chunks'), so the message does not depend on prompt lengths
    error = errors[min(errors)] if ordered and len(errors) == len(ordered) else None  # type: ignore[type-var]
    if error is not None:
        log.error("%s (%s): every one of %d generations failed (first error: %s)", model.name, task.label,
                  len(ordered), error)
    return Outcome(model, ordered, counts, seconds, error)


def run_models(
    task: GenerationTask[Any],
    config: EvalConfig,
    models: Sequence[ModelUnderTest],
    factory: BackendFactory,
    cache: GenerationCache,
) -> list[SummaryEntry]:
    """Generate and write every model with ``task``; return the summary entries in discovery order."""

    def visit(model: ModelUnderTest, backend: CachedBackend, system_role: bool) -> SummaryEntry:
        outcome = generate_model(task, model, backend, system_role, progress=config.progress)
        entry = task.write(outcome, backend, system_role)
        entry.setdefault("status", "failed" if outcome.failed else "ok")
        if outcome.failed:
            entry.setdefault("error", str(outcome.error))
        return entry

    return for_each_model(config, models, factory, cache, visit)


def raise_if_failed(entries: Sequence[Mapping[str, Any]]) -> None:
    """A run error naming every model whose every generation failed (their folders hold only a record)."""
    failed = [e for e in entries if e.get("status") == "failed"]
    if failed:
        raise GenerationFailure(
            f"{len(failed)} of {len(entries)} model(s) failed, every generation in error: "
            + "; ".join(f"{e['name']} ({e['error']})" for e in failed)
            + ". Nothing of theirs was cached: rerun the same command to retry them"
        )


def write_folder(folder: Path, files: Mapping[str, Payload], record: Mapping[str, Any] | None = None,
                 *, remove: Iterable[str] = (), record_name: str | None = RECORD) -> None:
    """Write a generation task's part of a model folder (the templated suite's ``templated/``): its files, then its
    record with their sizes and hashes (:func:`gnt.results.part.write_part`, the one writer of a part)."""
    write_part(folder, files, record, record_name=record_name, remove=remove)


Batch = TypeVar("Batch")


class FolderTask(Protocol[Batch]):
    """A step over the model folders of a results folder: its items, one batch over all of them, each folder."""

    @property
    def part(self) -> str | None:
        """The model folder's part the step writes (:data:`gnt.results.model_folder.PARTS`); None: parts in
        sub-folders, each file list carrying its own records (:class:`gnt.results.part.Record`)."""
        ...

    def load(self, folder: ModelFolder) -> list[dict]:
        """The folder's items (its generation records)."""
        ...

    def run_batch(self, items: list[dict]) -> Batch:
        """Work on every folder's items at once: identical items of two folders then cost one call."""
        ...

    def score(self, folder: ModelFolder, items: list[dict], batch: Batch) -> tuple[dict[str, Payload], dict, dict]:
        """The folder's files (name → payload), its record and its summary entry."""
        ...


def run_folders(task: FolderTask[Any], folder: ResultsFolder, names: Sequence[str]) -> dict[str, dict]:
    """Run ``task`` over the model folders ``names``; each folder's part written with its record last; returns
    the summaries by name."""
    models = [folder.model(name) for name in names]
    loaded: dict[str, list[dict[str, Any]]] = {model.name: task.load(model) for model in models}
    batch = task.run_batch([item for items in loaded.values() for item in items])
    summaries: dict[str, dict] = {}
    for model in models:
        files, record, summary = task.score(model, loaded[model.name], batch)
        if task.part is None:
            write_part(model.path, files, record_name=None)
        else:
            model.write(task.part, files, record)
        summaries[model.name] = summary
    return summaries
