"""Atomic files and directories, JSON lines, and content hashes.

Long jobs must never leave a half-written result that a later run mistakes for a finished one: files are written
to a temporary name and renamed, directories are built beside their target and swapped in at the end.

Every file written here goes through :func:`gnt.redact.scrub` (registered secrets and URL passwords never reach
a disk), and gets the permissions the user's umask gives a new file (a temporary file is made private; the renamed
result must be readable by a group that shares a results folder, as a plainly written file would be).

This module imports only the standard library (and :mod:`gnt.redact`, which does too): the xCOMET runner
(gnt/comet/runner.py) loads it by path inside the xCOMET environment, where the ``gnt`` package is not installed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

try:
    from gnt.redact import scrub
except ImportError:  # loaded by path (the xCOMET environment): its sibling redact.py, by path too
    import importlib.util

    _spec = importlib.util.spec_from_file_location("gnt_stdlib_redact", Path(__file__).with_name("redact.py"))
    _redact = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_redact)
    scrub = _redact.scrub


def umask() -> int:
    """The process's umask, read without changing it where the system tells it (Linux), else set and restored."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


def plain_mode(path: str | Path, *, folder: bool = False) -> None:
    """Give ``path`` the mode a plainly created file (0666) or folder (0777) gets under the umask: ``mkstemp`` and
    ``mkdtemp`` make theirs private (0600/0700), which a renamed result must not keep."""
    os.chmod(path, (0o777 if folder else 0o666) & ~umask())


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write a whole file so that readers see either the old content or the new one, never a prefix."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(scrub(text))
            handle.flush()
            os.fsync(handle.fileno())
        plain_mode(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: str | Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False) + "\n")


DAMAGED_ADVICE = "delete it to have it made again by the command that wrote it, or restore it from a copy"


class DamagedFile(json.JSONDecodeError):
    """A file that exists but cannot be read as what it should be (cut short, garbled, not UTF-8): one line that
    names it and says what to do (exit status 2). A ``json.JSONDecodeError``, so readers that treat an unreadable
    file as missing keep doing so."""

    exit_code = 2

    def __init__(self, path: str | Path, why: str, advice: str = DAMAGED_ADVICE) -> None:
        super().__init__(why, "", 0)
        self.path, self.why, self.advice = str(path), why, advice

    def __str__(self) -> str:
        return f"{self.path} is damaged ({self.why}): {self.advice}"

    def __reduce__(self) -> tuple:
        return type(self), (self.path, self.why, self.advice)


def read_json(path: str | Path, advice: str = DAMAGED_ADVICE) -> Any:
    """A JSON file's content; :class:`DamagedFile` (saying ``advice``) when it is not valid JSON or not UTF-8."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise DamagedFile(path, f"not UTF-8 text at byte {exc.start}", advice) from None
    except json.JSONDecodeError as exc:
        raise DamagedFile(path, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", advice) from None
    except RecursionError:
        raise DamagedFile(path, "nested too deeply to read", advice) from None


DISK_FULL_TEXTS = ("No space left on device", "StorageFull", "Disk quota exceeded", "file write failed")
"""How libraries that do not raise OSError say that a write failed for want of space (safetensors' Rust error,
torch's stream writer)."""


def is_disk_full(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or an error it was raised from) is a write that failed for want of disk space."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if any(text in str(exc) for text in DISK_FULL_TEXTS):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def disk_full_error(exc: BaseException, where: str | Path, doing: str) -> OSError:
    """An ``OSError(ENOSPC)`` naming ``where`` and what was being written, to raise from a library's own error."""
    error = OSError(errno.ENOSPC, f"No space left on device while {doing}", str(where))
    error.__cause__ = exc
    return error


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
    with open(path, encoding="utf-8", errors="strict" if not skip_bad else "replace") as handle, \
            locked(handle, exclusive=False) if shared_lock else contextlib.nullcontext():
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    if not skip_bad:
                        cut = " (cut short?)" if not line.endswith("\n") else ""
                        raise DamagedFile(path, f"line {number} is not valid JSON: {exc.msg}{cut}") from None
        except UnicodeDecodeError as exc:
            raise DamagedFile(path, f"not UTF-8 text at byte {exc.start} of a block") from None
    return records


def append_jsonl(path: str | Path, records: Iterable[dict]) -> None:
    """Append records as one locked write + fsync; safe for several processes appending to one file.

    An exclusive ``flock`` on the file is held for the whole append, so records of concurrent writers (sharded
    sweep workers sharing one generation cache) never interleave, and the truncated-line check below cannot race
    another writer. A crash can at worst leave one truncated last line, which readers skip and the next append
    closes with a newline. (``flock`` is advisory and per open file: every writer must go through here.)
    """
    payload = scrub("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)).encode("utf-8")
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
    target = Path(target).resolve()  # `.` or `out/..` have no name of their own to swap
    target.parent.mkdir(parents=True, exist_ok=True)
    with _folder_lock(target.parent):
        _remove_stale_siblings(target)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        plain_mode(tmp, folder=True)
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


def folder_damage(folder: str | Path) -> str | None:
    """What is wrong with a saved folder's files (``file: reason``: the first one found), or None when they read
    whole. A checkpoint or a cached model can be damaged after it was finished (a copy that stopped halfway, a disk
    that filled during a rewrite); this reads what can be read cheaply and without torch: every JSON file parses,
    every ``.safetensors`` file is as long as its header says, every torch file (``optimizer.pt``,
    ``rng_state.pth``, ``training_args.bin``: zip archives) has its central directory."""
    for path in sorted(Path(folder).iterdir()):
        reason = _file_damage(path) if path.is_file() else None
        if reason:
            return f"{path.name}: {reason}"
    return None


def _file_damage(path: Path) -> str | None:
    import struct
    import zipfile

    try:
        if path.suffix == ".json":
            json.loads(path.read_text(encoding="utf-8"))
        elif path.suffix == ".safetensors":
            return _safetensors_damage(path, struct)
        elif path.suffix in (".pt", ".pth", ".bin"):
            with zipfile.ZipFile(path) as archive:
                archive.infolist()
    except (ValueError, UnicodeDecodeError) as exc:
        return f"not valid JSON ({str(exc).splitlines()[0][:80]})"
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        return f"cut short or garbled ({exc})"
    return None


def _safetensors_damage(path: Path, struct: Any) -> str | None:
    """A safetensors file is an 8-byte header length, a JSON header, then the tensors' bytes up to the largest end
    offset the header names: anything shorter was cut."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(8)
        if len(head) < 8:
            return f"cut short ({size} bytes)"
        (length,) = struct.unpack("<Q", head)
        if 8 + length > size:
            return f"cut short (a {length}-byte header in a {size}-byte file)"
        try:
            header = json.loads(handle.read(length))
        except ValueError:
            return "garbled header"
    ends = [info["data_offsets"][1] for key, info in header.items()
            if key != "__metadata__" and isinstance(info, dict) and len(info.get("data_offsets") or ()) == 2]
    if ends and 8 + length + max(ends) > size:
        return f"cut short ({size} of {8 + length + max(ends)} bytes)"
    return None


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
