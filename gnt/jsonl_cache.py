"""One append-only, keyed JSON-lines cache: the generation, preference-score, xCOMET and judge caches are all this.

Every expensive step of the project (generating, scoring a completion, xCOMET, an LLM judgment) keeps its results
in a file of JSON lines keyed by a content hash, so a rerun, a second sweep over the same checkpoints or another
shard never pays twice. The four caches differ only in what a value is; how the file is read and written is here,
once:

- **append-only**: each batch is one locked write + fsync (:func:`gnt.io.append_jsonl`), so a killed process
  loses at most the batch in flight;
- **shared between processes**: appends hold an exclusive ``flock`` and loads a shared one, so the workers of a
  sharded sweep (on one machine, or on nodes sharing a filesystem) never read half an append;
- **tolerant of a torn last line**: a killed writer can leave one truncated line; it is skipped, counted
  (:attr:`JsonlCache.skipped`) and reported in one warning, and the next append starts on a fresh line. More than
  one unreadable line means the file was damaged some other way, and the warning says so;
- **last record wins**: a key written twice (a retried judge error that now succeeded) keeps its latest value.

A process sees the records present when it loaded the file plus its own; :meth:`JsonlCache.reload` reads the file
again to see what other processes appended since. Without a path the cache lives in memory only.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

from gnt.io import append_jsonl, locked

log = logging.getLogger("gnt.cache")

V = TypeVar("V")


def iter_jsonl(path: str | Path) -> Iterator[dict[str, Any] | None]:
    """Each line of a JSON-lines file as a dict, None for an unreadable one (nothing for a missing file).

    The file is read whole under a shared ``flock``, so a reader never sees half of a locked append; a line that
    still does not parse (a writer killed mid-line) is the caller's to count or skip.
    """
    path = Path(path)
    if not path.is_file():
        return
    with open(path, encoding="utf-8", errors="replace") as handle, locked(handle, exclusive=False):
        lines = handle.readlines()
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            yield None
            continue
        yield record if isinstance(record, dict) else None


class JsonlCache(Generic[V]):
    """``key -> value`` backed by one JSON-lines file; safe to share between threads and between processes.

    Subclasses say how a line becomes a value (:meth:`decode`, None to ignore the line) and which field holds the
    key (:attr:`key_field`); the base class stores records as given.
    """

    key_field = "key"

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._entries: dict[str, V] = {}
        self._lock = threading.Lock()
        self.skipped = 0
        """Unreadable lines skipped by the last load (a torn last line of a killed writer is the expected one)."""
        self.reload()

    # --- reading ---
    def decode(self, record: dict[str, Any]) -> V | None:
        """The value of one cache line; None drops it (a line of another shape)."""
        return record  # type: ignore[return-value]

    def reload(self) -> int:
        """Read the file again (what other processes appended since); returns the number of entries."""
        entries: dict[str, V] = {}
        skipped = rejected = 0
        for record in self._read_lines():
            if record is None:
                skipped += 1
                continue
            key = record.get(self.key_field)
            value = self.decode(record) if isinstance(key, str) else None
            if value is not None:
                entries[key] = value  # type: ignore[index]
            else:
                rejected += 1
        with self._lock:
            self._entries.update(entries)
            self.skipped = skipped
        if rejected:
            log.warning("%s: ignored %d line(s) whose fields are not what this cache holds (a damaged or hand-edited "
                        "line): their work is done again", self.path, rejected)
        if skipped:
            why = ("a killed writer's torn last line" if skipped == 1
                   else "more than a torn last line: the file was damaged, its other records are used")
            log.warning("%s: skipped %d unreadable line(s) (%s)", self.path, skipped, why)
        return len(self._entries)

    def _read_lines(self) -> Iterator[dict[str, Any] | None]:
        return iter_jsonl(self.path) if self.path is not None else iter(())

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: str) -> V | None:
        return self._entries.get(key)

    # --- writing ---
    def append(self, records: Iterable[dict[str, Any]]) -> None:
        """Append records (each carrying :attr:`key_field`) in one write, and serve them from now on."""
        records = list(records)
        if not records:
            return
        values = [(r[self.key_field], self.decode(r)) for r in records]
        with self._lock:
            if self.path is not None:
                append_jsonl(self.path, records)
            self._entries.update((k, v) for k, v in values if v is not None)
