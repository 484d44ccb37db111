"""Shared-prompt-prefix reuse for the transformers backend: find the common prefix, keep its key/value cache.

Every row of a grid cell carries the same system prompt, preamble, guidelines and shots, and every judge request of
one language and format the same exemplars; only the last few dozen tokens differ. Prefilling that shared prefix
once and starting each batch from a copy of its key/value cache leaves only each row's own suffix to prefill,
which is most of the cost of generating on a CPU (prefill of a ~1,000-token prompt costs more than decoding 48
tokens).

This module holds the parts that know nothing about models: splitting tokenized prompts into clusters that share a
long prefix (:func:`prefix_clusters`), and a small LRU of prefix caches keyed by (adapter, prefix tokens)
(:class:`PrefixStore`). Keys and values depend on the adapter's weights, so a cache is never shared between
adapters. The transformers backend builds the caches and runs ``generate`` from them.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

MIN_PREFIX_TOKENS = 16
"""A shorter shared prefix is not worth a separate forward pass (and a copy of its cache per batch)."""


def common_prefix_len(a: Sequence[int], b: Sequence[int], limit: int | None = None) -> int:
    """Length of the longest common prefix of two token sequences (at most ``limit``)."""
    end = min(len(a), len(b), limit if limit is not None else len(a))
    n = 0
    while n < end and a[n] == b[n]:
        n += 1
    return n


@dataclass
class PrefixCluster:
    """Requests (by index) whose prompts all start with the same ``prefix_len`` tokens; ``prefix_len`` leaves
    every prompt at least one token of its own, so each row's last prompt token is prefilled with the row."""

    indices: list[int]
    prefix_len: int


def prefix_clusters(prompts: Sequence[Sequence[int]], indices: Sequence[int],
                    min_prefix: int = MIN_PREFIX_TOKENS) -> list[PrefixCluster]:
    """Split ``indices`` into clusters of prompts that share a long prefix.

    Prompts are visited in lexicographic token order, so prompts of one cell are neighbours and a cluster's shared
    prefix is the common prefix of its first and latest member. A prompt joins the current cluster while the shared
    prefix stays at least ``min_prefix`` tokens and at least half of what the cluster shared before; otherwise it
    opens a new cluster (another cell, language or format). Prompts that share nothing long end up alone
    (``prefix_len`` 0 for a single prompt).
    """
    order = sorted(indices, key=lambda i: tuple(prompts[i]))
    clusters: list[PrefixCluster] = []
    current: list[int] = []
    shared = 0
    for index in order:
        if current:
            first = prompts[current[0]]
            lcp = common_prefix_len(first, prompts[index], shared)
            if lcp >= min_prefix and lcp * 2 >= shared:
                current.append(index)
                shared = lcp
                continue
            clusters.append(_close(current, shared, prompts, min_prefix))
        current, shared = [index], len(prompts[index])
    if current:
        clusters.append(_close(current, shared, prompts, min_prefix))
    return clusters


def _close(members: list[int], shared: int, prompts: Sequence[Sequence[int]], min_prefix: int) -> PrefixCluster:
    if len(members) == 1:
        return PrefixCluster(members, 0)
    prefix_len = min(shared, min(len(prompts[i]) for i in members) - 1)
    return PrefixCluster(members, prefix_len if prefix_len >= min_prefix else 0)


class PrefixStore:
    """The key/value caches of recent prompt prefixes, least recently used evicted first.

    Keys are (adapter key, prefix tokens). :meth:`best` finds the longest stored prefix of a token sequence for one
    adapter, so a later backend call whose rows share a slightly longer prefix (a subset of the same cell) reuses
    the stored one and prefills the few extra tokens with each row.
    """

    def __init__(self, capacity: int = 8) -> None:
        self.capacity = max(1, capacity)
        self._items: OrderedDict[tuple[Hashable, tuple[int, ...]], Any] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def best(self, adapter: Hashable, tokens: Sequence[int], min_len: int) -> tuple[tuple[int, ...], Any] | None:
        """The longest stored prefix of ``tokens`` for ``adapter`` with at least ``min_len`` tokens, if any."""
        found: tuple[tuple[Hashable, tuple[int, ...]], Any] | None = None
        for key, cache in self._items.items():
            stored_adapter, prefix = key
            if stored_adapter != adapter or len(prefix) < min_len or len(prefix) > len(tokens):
                continue
            if (found is None or len(prefix) > len(found[0][1])) and tuple(tokens[: len(prefix)]) == prefix:
                found = (key, cache)
        if found is None:
            return None
        self._items.move_to_end(found[0])
        return found[0][1], found[1]

    def put(self, adapter: Hashable, prefix: Sequence[int], cache: Any) -> None:
        self._items[(adapter, tuple(prefix))] = cache
        self._items.move_to_end((adapter, tuple(prefix)))
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def drop_adapter(self, adapter: Hashable) -> None:
        """Forget every prefix of one adapter (its weights changed or it was unloaded)."""
        for key in [k for k in self._items if k[0] == adapter]:
            del self._items[key]

    def clear(self) -> None:
        self._items.clear()


def batch_copy(cache: Any, rows: int) -> Any:
    """A fresh copy of a one-row prefix cache with ``rows`` rows; ``generate`` appends to it, the stored one stays."""
    copied = copy.deepcopy(cache)
    if rows > 1:
        copied.batch_repeat_interleave(rows)
    return copied
