"""Atomic files and directories, JSON lines, and content hashes.

Long jobs must never leave a half-written result that a later run mistakes for a finished one: files are written
to a temporary name and renamed, directories are built beside their target and swapped in at the end.

This module imports only the standard library: the xCOMET runner (gnt/comet/runner.py) loads it by path inside
the xCOMET environment, where the ``gnt`` package is not installed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write a whole file so that readers see either the old content or the new one, never a prefix."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: str | Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False) + "\n")


def read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def read_json_or_none(path: str | Path) -> Any:
    """A JSON file's content, or None when it is missing or unreadable (a check of whether a step is complete)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_jsonl(path: str | Path, records: Iterable[dict]) -> int:
    """Write JSON lines atomically; returns the number of records."""
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    write_text_atomic(path, "".join(line + "\n" for line in lines))
    return len(lines)


def read_jsonl(path: str | Path, *, skip_bad: bool = False, shared_lock: bool = False) -> list[dict]:
    """Read JSON lines. With ``skip_bad`` a truncated or corrupt line (a killed writer) is skipped, not fatal.

    ``shared_lock`` reads under a shared ``flock``, so a file that other processes append to through
    :func:`append_jsonl` is read between appends, never halfway through one.
    """
    records = []
    with open(path, encoding="utf-8") as handle, locked(handle, exclusive=False) if shared_lock else contextlib.nullcontext():
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                if not skip_bad:
                    raise ValueError(f"{path}:{number}: not valid JSON") from None
    return records


def append_jsonl(path: str | Path, records: Iterable[dict]) -> None:
    """Append records as one locked write + fsync; safe for several processes appending to one file.

    An exclusive ``flock`` on the file is held for the whole append, so records of concurrent writers (sharded
    sweep workers sharing one generation cache) never interleave, and the truncated-line check below cannot race
    another writer. A crash can at worst leave one truncated last line, which readers skip and the next append
    closes with a newline. (``flock`` is advisory and per open file: every writer must go through here.)
    """
    payload = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    if not payload:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as handle, locked(handle, exclusive=True):
        if handle.seek(0, os.SEEK_END) > 0:
            with open(path, "rb") as check:
                check.seek(-1, os.SEEK_END)
                if check.read(1) != b"\n":
                    payload = b"\n" + payload  # close a truncated line so the new records start clean
        view = memoryview(payload)
        while view:  # os.write may write less than asked (signals, large payloads)
            view = view[os.write(handle.fileno(), view):]
        os.fsync(handle.fileno())


@contextlib.contextmanager
def locked(handle: Any, *, exclusive: bool) -> Iterator[None]:
    """Hold an advisory ``flock`` on an open file for the block (shared for readers, exclusive for writers)."""
    import fcntl

    fcntl.flock(handle.fileno(), fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    try:
        yield
    finally:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def atomic_directory(target: str | Path) -> Iterator[Path]:
    """Yield a fresh temporary directory that replaces ``target`` only if the block finishes without error.

    Writers into one parent folder take turns (an exclusive ``flock`` on that folder, released by the kernel if the
    holder dies; no lock file is left behind), so whatever an earlier, killed writer left beside the target is
    known stale when the lock is taken: its ``.NAME.tmp-*`` folder is removed, and a ``.NAME.old-*`` folder is put back as ``target`` when the
    writer died between its two renames (else removed).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _folder_lock(target.parent):
        _remove_stale_siblings(target)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        try:
            yield tmp
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        old = None
        if target.exists():
            old = target.parent / f".{target.name}.old-{os.getpid()}"
            os.replace(target, old)
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive ``flock`` on a folder itself for the block."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _remove_stale_siblings(target: Path) -> None:
    """Clean what a killed :func:`atomic_directory` left beside ``target`` (called with its lock held)."""
    for stale in sorted(target.parent.glob(f".{target.name}.old-*")):
        if stale.is_dir() and not target.exists():
            os.replace(stale, target)  # killed between moving the old folder away and moving the new one in
        else:
            shutil.rmtree(stale, ignore_errors=True)
    for stale in target.parent.glob(f".{target.name}.tmp-*"):
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)


@contextlib.contextmanager
def file_lock(path: str | Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``path`` (a sidecar ``*.lock`` file, created if missing) for the block.

    A read-modify-write of a shared file (several sweeps on one results folder) is only safe when each writer
    holds the lock from its read to its rename; ``flock`` is released by the kernel if the holder dies, so a
    killed process never leaves the lock taken.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def sha256_file(path: str | Path, length: int = 16) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:length]


def sha256_text(text: str, length: int = 16) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def hash_json(data: Any, length: int = 24) -> str:
    """Stable hash of a JSON-serialisable value (sorted keys): the content key of caches."""
    return sha256_text(json.dumps(data, sort_keys=True, ensure_ascii=False), length)
