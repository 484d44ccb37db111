"""One training run per output folder at a time: ``<output_dir>/.gnt-run.lock``.

Two runs writing into one ``output_dir`` would interleave their checkpoints and the second's adapter would
replace the first's: the first run's results would be gone. So rank 0 of a run holds an exclusive ``flock`` on the
lock file from before its first write to its end, and a second run refuses at once, naming the holder (host,
pid, start time, command line) that the file records. The kernel releases the lock when the holder dies, so a
killed run never leaves its folder locked; the file itself stays (removing it would let two runs lock two
different files of one name).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

from gnt.training.config import TrainingError
from gnt.training.run_record import now

LOCK_NAME = ".gnt-run.lock"


class RunLock:
    """The held lock of one run folder; :meth:`release` (or the process's end) frees it."""

    def __init__(self, path: Path, handle: Any) -> None:
        self.path, self._handle = path, handle

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing the file releases the flock
            self._handle = None


def hold_run_folder(output_dir: str | Path, stage: str) -> RunLock:
    """Take ``output_dir`` for this run, or raise :class:`TrainingError` naming the run that holds it."""
    folder = Path(output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held open for the run, closed by release()
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = _describe(handle.read())
        handle.close()
        raise TrainingError(f"output_dir {folder} is in use by another training run ({holder}): wait for it to end, "
                            "or give this run another output_dir") from None
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps({"stage": stage, "host": socket.gethostname(), "pid": os.getpid(), "started": now(),
                             "argv": sys.argv}) + "\n")
    handle.flush()
    return RunLock(path, handle)


def _describe(text: str) -> str:
    try:
        info = json.loads(text)
    except ValueError:
        return "holder unknown"
    command = " ".join(str(a) for a in info.get("argv") or [])
    return (f"{str(info.get('stage', '')).upper()} run, pid {info.get('pid')} on {info.get('host')} since "
            f"{info.get('started')}" + (f": {command}" if command else ""))
