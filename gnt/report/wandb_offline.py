"""Read an offline W&B run (``run-<id>.wandb``) back into Python: history rows, summary, config, metric definitions.

wandb 0.31 writes offline runs only as a binary transaction log and ships no reader (the old
``wandb.sdk.internal.datastore`` is gone), yet the project must *check* what it logged offline: that evaluation
metrics landed in the training run at the checkpoint steps, before anyone syncs anything. The file is a LevelDB-style
log: a 7-byte header (``:W&B``, magic ``0xBEE1``, version 0), then 32 KiB blocks of chunks
``crc32 (uint32 LE) · length (uint16 LE) · type (uint8: FULL, FIRST, MIDDLE, LAST) · data``; the chunks of a record
concatenate into one serialized ``wandb.proto.wandb_internal_pb2.Record``. The checksum is zlib's CRC-32 of the type
byte followed by the data. The header counts against the first block; a variant writer that does not count it is
detected by trying both layouts and keeping the one whose chunks all verify.

A truncated tail (a writer killed mid-record) ends the read cleanly; corrupt chunks are counted, never raised.
"""

from __future__ import annotations

import json
import struct
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BLOCK_SIZE = 32768
HEADER_LEN = 7
FILE_MAGIC = b":W&B"
FILE_MAGIC_SHORT = 0xBEE1
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


@dataclass
class OfflineRun:
    """What an offline run file holds, decoded into plain Python values."""

    path: Path
    run_id: str | None = None
    project: str | None = None
    resumed: bool = False
    starting_step: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    metrics: list[dict[str, Any]] = field(default_factory=list)
    record_types: dict[str, int] = field(default_factory=dict)
    corrupt_chunks: int = 0

    def values(self, key: str) -> list[tuple[Any, Any]]:
        """``(_step, value)`` for every history row that logged ``key``, in log order."""
        return [(row.get("_step"), row[key]) for row in self.history if key in row]

    def by(self, x_key: str, key: str) -> dict[Any, Any]:
        """Map ``x_key`` (e.g. ``train/global_step``) to ``key`` over rows that logged both: a custom x-axis view."""
        return {row[x_key]: row[key] for row in self.history if x_key in row and key in row}

    @property
    def complete(self) -> bool:
        """Whether the run's exit record is on disk (the writer finished)."""
        return "exit" in self.record_types

    @property
    def last_step(self) -> int | None:
        """The largest ``_step`` in the history (None for an empty history)."""
        steps = [row["_step"] for row in self.history if isinstance(row.get("_step"), int)]
        return max(steps) if steps else None


def _chunks(data: bytes, first_block_has_header: bool) -> Iterator[tuple[int, bytes] | None]:
    """Yield ``(type, payload)`` per verified chunk and ``None`` per corrupt one (the rest of its block is skipped)."""
    position = HEADER_LEN
    block_end = BLOCK_SIZE if first_block_has_header else HEADER_LEN + BLOCK_SIZE
    while position < len(data):
        while position + HEADER_LEN <= min(block_end, len(data)):
            checksum, length, kind = struct.unpack_from("<IHB", data, position)
            if kind == 0 and length == 0 and checksum == 0:
                break  # zero padding: the writer flushed and the block ends here
            start = position + HEADER_LEN
            payload = data[start:start + length]
            if kind not in (FULL, FIRST, MIDDLE, LAST) or start + length > block_end:
                yield None
                break
            if len(payload) < length:
                return  # a truncated last record: the writer is still running or was killed
            if zlib.crc32(payload, zlib.crc32(bytes([kind]))) & 0xFFFFFFFF != checksum:
                yield None
                break
            yield kind, payload
            position = start + length
        position = block_end
        block_end += BLOCK_SIZE


def _records(data: bytes, first_block_has_header: bool) -> tuple[list[bytes], int]:
    """Reassemble records from chunks; returns (serialized records, number of corrupt chunks or broken sequences)."""
    records: list[bytes] = []
    pending: list[bytes] | None = None
    corrupt = 0
    for chunk in _chunks(data, first_block_has_header):
        if chunk is None:
            corrupt += 1
            pending = None
            continue
        kind, payload = chunk
        if kind == FULL:
            corrupt += pending is not None
            pending = None
            records.append(payload)
        elif kind == FIRST:
            corrupt += pending is not None
            pending = [payload]
        elif pending is None:
            corrupt += 1  # MIDDLE/LAST without a FIRST
        elif kind == MIDDLE:
            pending.append(payload)
        else:
            pending.append(payload)
            records.append(b"".join(pending))
            pending = None
    return records, corrupt


def _item_value(item: Any) -> Any:
    """Decode one HistoryItem/SummaryItem/ConfigItem value (typed oneof in newer writers, JSON text in all)."""
    kind = item.WhichOneof("value") if "value" in {o.name for o in item.DESCRIPTOR.oneofs} else None
    if kind == "none":
        return None
    if kind in ("boolean", "integer", "number", "text"):
        return getattr(item, kind)
    if kind == "json":
        return json.loads(item.json)
    if item.value_json:
        return json.loads(item.value_json)
    return None


def _item_key(item: Any) -> str:
    return item.nested_key[0] if item.nested_key else item.key


def _assign(target: dict[str, Any], item: Any) -> None:
    """Set one item into ``target``; a ``nested_key`` (how media and tables are stored) builds nested dicts."""
    keys = list(item.nested_key) or [item.key]
    for key in keys[:-1]:
        node = target.get(key)
        if not isinstance(node, dict):
            node = target[key] = {}
        target = node
    target[keys[-1]] = _item_value(item)


def read_offline_run(path: str | Path, *, wait_complete_s: float = 0.0) -> OfflineRun:
    """Decode a ``run-<id>.wandb`` file (or the ``offline-run-*`` folder holding one).

    ``run.finish()`` can return before W&B's writer process has flushed the last records (measured with wandb
    0.31: the exit record and the last history rows appear a moment later). ``wait_complete_s`` re-reads until
    the exit record is there or the time is up.
    """
    deadline = time.monotonic() + wait_complete_s
    while True:
        run = _read_once(Path(path))
        if run.complete or time.monotonic() >= deadline:
            return run
        time.sleep(0.1)


def _read_once(path: Path) -> OfflineRun:
    from wandb.proto import wandb_internal_pb2  # imported late: wandb is an optional extra

    pb: Any = wandb_internal_pb2  # generated protobuf classes: no types to check against

    if path.is_dir():
        files = sorted(path.glob("*.wandb"))
        if not files:
            raise FileNotFoundError(f"{path}: no .wandb file in this folder")
        path = files[0]
    data = path.read_bytes()
    if len(data) < HEADER_LEN:
        raise ValueError(f"{path}: too short to be a W&B run file ({len(data)} bytes)")
    magic, short, version = struct.unpack_from("<4sHB", data, 0)
    if magic != FILE_MAGIC or short != FILE_MAGIC_SHORT or version != 0:
        raise ValueError(f"{path}: not a W&B run file (header {data[:HEADER_LEN]!r})")
    layouts = [_records(data, True), _records(data, False)]
    raw, corrupt = min(layouts, key=lambda pair: (pair[1], -len(pair[0])))

    run = OfflineRun(path=path, corrupt_chunks=corrupt)
    for blob in raw:
        record = pb.Record()
        try:
            record.ParseFromString(blob)
        except Exception:  # noqa: BLE001 - protobuf raises DecodeError subclasses; a bad record is counted
            run.corrupt_chunks += 1
            continue
        kind = record.WhichOneof("record_type")
        if kind is None:
            continue
        run.record_types[kind] = run.record_types.get(kind, 0) + 1
        if kind == "history":
            row: dict[str, Any] = {}
            for item in record.history.item:
                _assign(row, item)
            if record.history.HasField("step") and "_step" not in row:
                row["_step"] = record.history.step.num
            run.history.append(row)
        elif kind == "summary":
            for item in record.summary.update:
                _assign(run.summary, item)
            for item in record.summary.remove:
                run.summary.pop(_item_key(item), None)
        elif kind == "config":
            for item in record.config.update:
                _assign(run.config, item)
        elif kind == "run":
            run.run_id = record.run.run_id or run.run_id
            run.project = record.run.project or run.project
            run.resumed = bool(record.run.resumed)
            run.starting_step = int(record.run.starting_step)
            for item in record.run.config.update:
                _assign(run.config, item)
        elif kind == "metric":
            metric = record.metric
            run.metrics.append(
                {"name": metric.name, "glob_name": metric.glob_name, "step_metric": metric.step_metric}
            )
    return run


def offline_run_dirs(wandb_dir: str | Path, run_id: str) -> list[Path]:
    """Every ``offline-run-<timestamp>-<run_id>`` folder under a W&B directory, oldest first.

    Accepts the folder that holds ``wandb/`` or the ``wandb/`` folder itself. An offline run cannot resume in
    place: each ``wandb.init(id=..., resume="allow")`` offline opens a new folder with the same id, and
    ``wandb sync --append`` later joins them in this order.
    """
    root = Path(wandb_dir)
    candidates = [root / "wandb", root] if (root / "wandb").is_dir() else [root]
    found: list[Path] = []
    for base in candidates:
        found.extend(p for p in base.glob(f"offline-run-*-{run_id}") if p.is_dir())
    return sorted(set(found), key=lambda p: p.name)
