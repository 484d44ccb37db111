"""A content-addressed, append-only generation cache shared by every model of a sweep (and by reruns).

Each line is one finished generation keyed by :meth:`GenerationRequest.key` (model identity, adapter weights hash,
prompt turns, constraint, decoding params). Lines are appended one batch per locked write + fsync, so a killed sweep
loses at most the batch in flight and leaves at worst one truncated last line, which the reader skips. Failed
generations (a backend error) are not cached: a rerun retries them.

Several processes may share one cache file (the workers of a sharded sweep, on one machine or on nodes sharing a
filesystem): the file is a :class:`gnt.jsonl_cache.JsonlCache`, whose appends and loads are locked, so no
record is lost or torn. Each process sees the entries present when it loaded the file plus its own; the merge step
of a sharded sweep loads the file again to see everyone's.

:class:`CachedBackend` puts the cache in front of any backend, so callers (the sweep, the judge) keep speaking
the one :class:`GenerationBackend` interface and count hits and misses for their records.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gnt.generation.base import Generation, GenerationBackend, GenerationRequest
from gnt.jsonl_cache import JsonlCache


class GenerationCache(JsonlCache[Generation]):
    """``key -> Generation`` backed by one JSONL file; safe to share between threads and between processes."""

    def decode(self, record: dict[str, Any]) -> Generation | None:
        """A cached generation; None (the line is ignored, counted and warned about) when its text is not a string
        or its token count not an integer: a damaged line is generated again, never scored."""
        text, n_tokens, finish = record.get("text"), record.get("n_tokens"), record.get("finish_reason")
        if not isinstance(text, str) or not (n_tokens is None or type(n_tokens) is int):
            return None
        return Generation(text, None, n_tokens, finish if isinstance(finish, str) else None)

    def put_many(self, items: Sequence[tuple[str, Generation]], model_id: str | None = None) -> None:
        """Append the successful generations of one batch in a single write."""
        self.append(
            {"key": k, "model_id": model_id, "text": g.text, "n_tokens": g.n_tokens, "finish_reason": g.finish_reason}
            for k, g in items
            if g.error is None and k not in self
        )


class CachedBackend(GenerationBackend):
    """Serves requests from a :class:`GenerationCache` and sends only the misses to the wrapped backend."""

    def __init__(self, backend: GenerationBackend, cache: GenerationCache) -> None:
        self.backend = backend
        self.cache = cache
        self.model_id = backend.model_id
        self.hits = 0
        self.misses = 0
        self.failures = 0

    def supports_system_role(self) -> bool:
        return self.backend.supports_system_role()

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        keys = [r.key(self.model_id) for r in requests]
        results: list[Generation | None] = [self.cache.get(k) for k in keys]
        todo: dict[str, int] = {}
        for index, (key, result) in enumerate(zip(keys, results, strict=True)):
            if result is None and key not in todo:
                todo[key] = index  # identical requests in one batch are generated once
        self.hits += len(requests) - len(todo)
        if todo:
            generated = self.backend.generate([requests[i] for i in todo.values()])
            if len(generated) != len(todo):
                generated = [Generation("", error="backend returned a wrong number of results")] * len(todo)
            fresh = dict(zip(todo, generated, strict=True))
            self.cache.put_many(list(fresh.items()), self.model_id)
            self.misses += len(todo)
            self.failures += sum(g.error is not None for g in generated)
            results = [r if r is not None else fresh[k] for k, r in zip(keys, results, strict=True)]
        return results  # type: ignore[return-value]

    def describe(self) -> dict:
        return self.backend.describe()

    def close(self) -> None:
        self.backend.close()
