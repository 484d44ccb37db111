"""Sharded sweeps: ``shard=i/n`` splits a sweep's generations over n workers; ``shard=merge`` builds the results.

The work of a sweep is the stream of fixed chunks the single-process sweep sends to the backend: model after model
(in discovery order), each model's requests cell after cell, sorted by prompt length and cut into ``chunk_size``
chunks (see :mod:`gnt.evaluation.sweep`). Numbering those chunks across all models, worker ``i`` of ``n`` owns
chunk ``k`` when ``k % n == i``: a deterministic split of models × cells × rows that every worker computes by
itself (no coordinator), with adjacent chunks on different workers so each worker gets a share of every model.

A worker sends each of its chunks exactly as the single-process sweep would (the chunk minus requests already in
the cache or already in an earlier chunk of the stream), because batched generation with padding is reproducible
only for identical batches; that is what makes merged metrics identical to a single-process sweep's. Workers write
only to the shared generation cache (appends are locked, see :mod:`gnt.evaluation.cache`) and to their own
``shards/<i>-of-<n>.json`` record. The merge is the ordinary sweep reading everything from the cache, refusing to
generate: any missing generation (a shard that has not finished, or a failed request) is reported, with the
shards that own it, and nothing is written. The last worker to finish runs the merge itself.

Only the task's chunks and requests are used here (:class:`gnt.evaluation.driver.GenerationTask`), so any task of
the driver could be split the same way; today the grid sweep is the one that is.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from gnt.evaluation.cache import CachedBackend, GenerationCache
from gnt.evaluation.config import Shard
from gnt.evaluation.discovery import ModelUnderTest
from gnt.evaluation.driver import CounterWindow, FailureWatch, GenerationTask
from gnt.io import read_json

SHARDS_DIR = "shards"
SHARD_FORMAT = "gnt-align/eval-shard/1"


@dataclass
class ChunkStream:
    """Numbers the chunks of a sweep's stream (across models) and remembers the request keys seen so far."""

    shard: Shard
    next_chunk: int = 0
    seen: set[str] = field(default_factory=set)

    def take(self) -> bool:
        """Whether this worker owns the next chunk of the stream (and advance)."""
        owned = self.shard.owns(self.next_chunk)
        self.next_chunk += 1
        return owned


def generate_share(
    task: GenerationTask[Any], model: ModelUnderTest, backend: CachedBackend, system_role: bool,
    stream: ChunkStream, *, progress: bool = False,
) -> dict[str, int]:
    """Generate this worker's chunks of the model (into the cache); return its counts.

    An owned chunk is sent as the single-process run sends it: without the requests an earlier chunk of the
    stream already holds (generated there, by whichever worker owns it) and, through the cache, without the
    ones already generated.
    """
    chunks = requests = 0
    window = CounterWindow(backend)
    watch = FailureWatch(f"{model.name} [shard {stream.shard.name}]")
    bar = tqdm(total=task.size(model), desc=f"{model.name} [{stream.shard.name}]", unit="req", disable=not progress,
               leave=False)
    try:
        for chunk in task.chunks(model, system_role):
            requests_of_chunk = [task.request(item) for item in chunk]
            keys = [r.key(backend.model_id) for r in requests_of_chunk]
            if stream.take():
                todo = [r for r, key in zip(requests_of_chunk, keys, strict=True) if key not in stream.seen]
                chunks += 1
                requests += len(chunk)
                watch.see(backend.generate(todo) if todo else [])
            stream.seen.update(keys)
            bar.update(len(chunk))
    finally:
        bar.close()
    return {"chunks": chunks, **window.counts(requests).to_json()}


def missing_chunks(
    task: GenerationTask[Any], model: ModelUnderTest, model_id: str, system_role: bool, cache: GenerationCache,
    first_chunk: int,
) -> tuple[int, set[int], int]:
    """Requests of the model absent from the cache, the stream numbers of their chunks, and the next number."""
    n_missing, numbers, number = 0, set(), first_chunk
    for chunk in task.chunks(model, system_role):
        absent = sum(task.request(item).key(model_id) not in cache for item in chunk)
        if absent:
            n_missing += absent
            numbers.add(number)
        number += 1
    return n_missing, numbers, number


def shard_record_path(out_dir: str | Path, shard: Shard) -> Path:
    return Path(out_dir) / SHARDS_DIR / f"{shard.index}-of-{shard.count}.json"


def shard_records(out_dir: str | Path, work: str) -> list[dict]:
    """The shard records of this sweep's work (same ``work`` fingerprint), in shard order."""
    folder = Path(out_dir) / SHARDS_DIR
    records = []
    for path in sorted(folder.glob("*-of-*.json")) if folder.is_dir() else []:
        with contextlib.suppress(OSError, ValueError):
            record = read_json(path)
            if isinstance(record, dict) and record.get("format") == SHARD_FORMAT and record.get("work") == work:
                records.append(record)
    return sorted(records, key=lambda r: (r["count"], r["index"]))


def owners(missing_chunks: set[int], records: list[dict]) -> list[str]:
    """The shards (``i/n``) that own the missing chunks, for the shard count the records were run with."""
    counts = {r["count"] for r in records}
    if len(counts) != 1:
        return []
    count = counts.pop()
    return [f"{i}/{count}" for i in sorted({chunk % count for chunk in missing_chunks})]


@contextlib.contextmanager
def merge_lock(out_dir: str | Path) -> Iterator[None]:
    """An exclusive lock on ``shards/merge.lock`` around a worker's "is everything there? then merge" step.

    Blocking on purpose: a worker that finishes while another is still checking must check again after it, or the
    last worker could skip the merge on the strength of a check made before its own generations were written.
    Two workers may then both merge; the second finds the metrics unchanged and keeps them.
    """
    import fcntl

    path = Path(out_dir) / SHARDS_DIR / "merge.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class ShardsIncomplete(RuntimeError):
    """The merge found generations missing from the cache."""

    exit_code = 1
