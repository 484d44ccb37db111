"""A part of a model folder: the files one step writes there, and its record, written last, that vouches for them.

Each step that writes into a model folder (the grid sweep, the judge, xCOMET, the templated suite, attribution per
cell) writes a *part*: some files, then one record. The record lists every file of the part with its size and
SHA-256 (``files``) and, for a part computed from another part's files, the hashes of those inputs (``inputs``).
A part counts as complete only when its record reads back, has the expected format, and every file it lists is
there with that size and hash: a file cut in half, emptied, replaced or deleted is seen as damage, and the step
that owns it runs again instead of being skipped as complete. Writing the record last keeps a killed write
visible too: a part without its record was not finished.

:func:`write_part` is the one function that writes a part; :func:`check_part` the one that vouches for it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from gnt.io import write_json, write_jsonl
from gnt.results_schema import FileDigest

Writer = Callable[[Path], object]
"""Writes one file at the path it is given (atomically): figures, tables, anything not plain JSON."""


@dataclass(frozen=True)
class Record:
    """Among a part's files, the record of the files written before it in the same folder (attribution writes one
    part per cell, each with its own record): written with their sizes and hashes added."""

    data: Mapping[str, Any]


Payload = Writer | Mapping[str, Any] | list[Any] | Record
"""What a part's file holds: a JSON document (a mapping), JSON lines (a list of mappings), a writer, a record."""

_DIGESTS: dict[tuple[str, int, int, int], str] = {}
"""SHA-256 of files already hashed in this process, by (path, size, mtime, inode): a check after a write, or a
second step's check of the same generations, reads a large file once."""


def digest(path: Path) -> FileDigest:
    """Size and SHA-256 of one file (memoised while its size, mtime and inode stay the same)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ino)
    sha = _DIGESTS.get(key)
    if sha is None:
        hasher = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                hasher.update(block)
        sha = _DIGESTS[key] = hasher.hexdigest()
    return {"bytes": stat.st_size, "sha256": sha}


def _write(path: Path, payload: Payload, siblings: Mapping[str, FileDigest]) -> None:
    """Write one file; a :class:`Record` lists ``siblings`` (the files of its folder written before it)."""
    if isinstance(payload, Record):
        here = {Path(name).name: d for name, d in siblings.items()}
        write_json(path, {**payload.data, "files": dict(sorted(here.items()))})
    elif isinstance(payload, Mapping):
        write_json(path, payload)
    elif isinstance(payload, list):
        write_jsonl(path, payload)
    else:
        payload(path)


def write_part(folder: Path, files: Mapping[str, Payload], record: Mapping[str, Any] | None = None, *,
               record_name: str | None, keep: Iterable[str] = (), remove: Iterable[str] = (),
               inputs: Mapping[str, str] | None = None) -> None:
    """Write a part of ``folder``: each file in order (atomically), drop ``remove``, then the record with the
    size and hash of every file written and of each ``keep`` file left as it was.

    The record goes last because a part with a record is complete; a write killed half-way leaves none. A part
    whose files carry their own records (attribution: one per cell, given among ``files`` after that cell's other
    files) passes ``record_name=None``.
    """
    written: dict[str, FileDigest] = {}
    pending: dict[str, FileDigest] = {}  # files of the current sub-folder part (attribution) since its last record
    for name, payload in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        _write(path, payload, {n: d for n, d in pending.items() if Path(n).parent == Path(name).parent})
        written[name] = pending[name] = digest(path)
        if isinstance(payload, Record):
            pending = {n: d for n, d in pending.items() if Path(n).parent != Path(name).parent}
    for name in remove:
        (folder / name).unlink(missing_ok=True)
    for name in keep:
        if name not in written and (folder / name).is_file():
            written[name] = digest(folder / name)
    if record is not None and record_name is not None:
        full = {**record, "files": dict(sorted(written.items()))}
        if inputs is not None:
            full["inputs"] = dict(inputs)
        write_json(folder / record_name, full)


State = Literal["absent", "ok", "damaged", "old", "unknown"]


@dataclass(frozen=True)
class PartCheck:
    """What :func:`check_part` found: ``ok`` with the record, or why the part cannot be trusted (``problem``)."""

    state: State
    record: dict[str, Any] = field(default_factory=dict)
    problem: str = ""

    @property
    def ok(self) -> bool:
        return self.state == "ok"


def _version(tag: str) -> tuple[str, int | None]:
    family, _, number = tag.rpartition("/")
    return family, int(number) if number.isdigit() else None


def format_state(written: Any, expected: str) -> State:
    """``ok`` for the expected format tag, ``old`` for an earlier version of it, ``unknown`` for anything else
    (a later version, another file's tag, no tag): a reader never reads one version as another."""
    if written == expected:
        return "ok"
    if isinstance(written, str):
        (family, number), (want_family, want) = _version(written), _version(expected)
        if family == want_family and number is not None and want is not None and number < want:
            return "old"
    return "unknown"


def check_part(folder: Path, record_name: str, fmt: str | None = None) -> PartCheck:
    """Whether the part whose record is ``folder/record_name`` is whole: the record reads back as an object of
    format ``fmt`` (when given) listing its files, and each file has the recorded size and hash."""
    path = folder / record_name
    if not path.is_file():
        return PartCheck("absent", problem=f"{path} is missing")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return PartCheck("damaged", problem=f"{path} is unreadable ({str(exc)[:80]})")
    if not isinstance(record, dict):
        return PartCheck("damaged", problem=f"{path} is not a JSON object")
    if fmt is not None:
        state = format_state(record.get("format"), fmt)
        if state != "ok":
            problem = (f"{path} is of format {record.get('format')!r}, "
                       + ("written by an older gnt-align" if state == "old" else f"not {fmt!r}"))
            return PartCheck(state, record, problem)
    files = record.get("files")
    if not isinstance(files, dict):
        return PartCheck("old", record, f"{path} records no file sizes and hashes (written by an older gnt-align)")
    for name, recorded in sorted(files.items()):
        file = folder / name
        if not file.is_file():
            return PartCheck("damaged", record, f"{file} is missing (its part's record {record_name} lists it)")
        if digest(file) != recorded:
            size = os.path.getsize(file)
            want = recorded.get("bytes") if isinstance(recorded, dict) else None
            return PartCheck("damaged", record, f"{file} was changed after it was written ({size} bytes, "
                                                f"{want} recorded in {record_name}): cut short or edited")
    return PartCheck("ok", record)
