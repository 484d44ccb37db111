"""Evaluate queued checkpoints as they appear, while training runs (on this or another machine sharing the disk).

The queue is written by :class:`gnt.checkpoint_queue.callback.QueueCheckpointCallback` (layout in that module). A watcher
polls it, *claims* each new checkpoint by creating ``checkpoint-N.claim`` with ``O_EXCL`` (so two watchers on two
GPUs or machines never evaluate the same checkpoint twice), evaluates it with a function it is given, and writes
``checkpoint-N.done.json`` (status, seconds, result or error). A failed evaluation is marked done with its error
and the watcher goes on: one bad checkpoint must not stop the evaluation of the others.

It stops when every run in the queue has ended (the callback's ``TRAINING_DONE.json``, or the run's own
``gnt_run.json`` with ``status: complete``) and nothing is left to evaluate, or after ``timeout`` seconds, or after one pass with ``once``. A claim older than ``stale_claim_s``
(a watcher that died) may be taken over.

The evaluation itself is pluggable, which is what "any backend" means here:

- :func:`command_evaluator` runs a command template per checkpoint, without a shell (``{checkpoint}``,
  ``{run_dir}``, ``{step}``, ``{name}``, ``{queue}`` are filled into its arguments), e.g. ``eval/evaluate.py`` with a vLLM recipe in another
  environment, or a SLURM ``srun``;
- ``eval/watch.py QUEUE RECIPE`` runs ``gnt eval``'s pipeline in-process from an evaluation recipe: the steps it
  names (grid, judge, xCOMET, attribution, templated suite, report) on any backend it names (gnt/cli/watch.py);
- tests pass a plain function.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import shutil
import socket
import string
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gnt.checkpoint_queue.layout import CLAIM_SUFFIX, DONE_SUFFIX, END_MARKER, QUEUE_ENTRY
from gnt.filenames import RUN_RECORD

log = logging.getLogger(__name__)

_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


@dataclass(frozen=True)
class QueueItem:
    """One queued checkpoint."""

    run: str  # run name (the folder under the queue)
    step: int
    path: Path  # <queue>/<run>/checkpoint-<step>

    @property
    def name(self) -> str:
        """The results name the evaluator gives it: ``<run>/checkpoint-<step>``."""
        return f"{self.run}/{self.path.name}"

    @property
    def claim_path(self) -> Path:
        return self.path.with_name(self.path.name + CLAIM_SUFFIX)

    @property
    def done_path(self) -> Path:
        return self.path.with_name(self.path.name + DONE_SUFFIX)

    def entry(self) -> dict:
        """The queue entry written by the callback (source checkpoint, run folder, step)."""
        path = self.path / QUEUE_ENTRY
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


Evaluator = Callable[[QueueItem], Any]


def queued_items(queue_dir: str | Path) -> list[QueueItem]:
    """Every queued checkpoint (done or not), by run and step."""
    queue = Path(queue_dir)
    items = []
    if not queue.is_dir():
        return items
    for run in sorted(p for p in queue.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for folder in run.iterdir():
            match = _CHECKPOINT.match(folder.name)
            if match and folder.is_dir():
                items.append(QueueItem(run.name, int(match.group(1)), folder))
    return sorted(items, key=lambda i: (i.run, i.step))


def pending_items(queue_dir: str | Path, stale_claim_s: float | None = None) -> list[QueueItem]:
    """Queued checkpoints not yet done and not claimed by a live watcher."""
    now = time.time()
    out = []
    for item in queued_items(queue_dir):
        if done_record(item) is not None:
            continue
        if item.claim_path.exists():
            try:
                age = now - item.claim_path.stat().st_mtime
            except FileNotFoundError:
                age = 0.0
            if stale_claim_s is None or age < stale_claim_s:
                continue
        out.append(item)
    return out


def claim(item: QueueItem, stale_claim_s: float | None = None) -> bool:
    """Take a checkpoint for this process; False when another watcher holds it."""
    info = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "claimed_at": time.time()})
    if stale_claim_s is not None and item.claim_path.exists():
        try:
            if time.time() - item.claim_path.stat().st_mtime >= stale_claim_s:
                item.claim_path.unlink()
                log.warning("watch: taking over the stale claim on %s", item.name)
        except FileNotFoundError:
            pass
    try:
        fd = os.open(item.claim_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(info + "\n")
    return True


def mark_done(item: QueueItem, record: dict) -> None:
    """Write the done marker atomically (readers see all of it or nothing)."""
    tmp = item.done_path.with_name(f".{item.done_path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, item.done_path)


def done_record(item: QueueItem) -> dict | None:
    """The done marker's record, or None when the checkpoint is not done.

    A marker that does not read as a record with a status (cut short, garbled) is not taken as done: it is moved
    aside to ``checkpoint-N.damaged.json`` with a warning, and the checkpoint is evaluated again.
    """
    try:
        text = item.done_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if isinstance(record, dict) and isinstance(record.get("status"), str):
        return record
    aside = item.path.with_name(item.path.name + ".damaged.json")
    try:
        os.replace(item.done_path, aside)
    except FileNotFoundError:
        return None  # another watcher moved it first
    item.claim_path.unlink(missing_ok=True)
    log.warning("watch: %s is damaged (not a done record): %s is evaluated again (the damaged file is kept as %s)",
                item.done_path, item.name, aside.name)
    return None


def failed_items(queue_dir: str | Path) -> list[QueueItem]:
    """Queued checkpoints whose done marker records a failed evaluation."""
    out = []
    for item in queued_items(queue_dir):
        record = done_record(item)
        if record is not None and record["status"] != "ok":
            out.append(item)
    return out


def requeue(item: QueueItem) -> bool:
    """Make a failed checkpoint pending again: its done marker moves to ``checkpoint-N.failed.json`` (kept for the
    record), then its claim goes. False when another watcher requeued it first."""
    try:
        os.replace(item.done_path, item.path.with_name(item.path.name + ".failed.json"))
    except FileNotFoundError:
        return False
    item.claim_path.unlink(missing_ok=True)
    return True


def run_finished(queue_run: Path) -> bool:
    """Whether the training run behind ``<queue>/<run>`` has ended: the callback's end marker, or the run's own
    record (``gnt_run.json`` of the source run folder) saying ``status: complete``."""
    if (queue_run / END_MARKER).is_file():
        return True
    for entry_path in queue_run.glob(f"checkpoint-*/{QUEUE_ENTRY}"):
        try:
            source = json.loads(entry_path.read_text(encoding="utf-8")).get("run_dir")
            record = json.loads((Path(source) / RUN_RECORD).read_text(encoding="utf-8")) if source else {}
        except (OSError, ValueError):
            continue
        return record.get("status") == "complete"
    return False


def training_finished(queue_dir: str | Path) -> bool:
    """True when the queue has at least one run and every run has ended."""
    queue = Path(queue_dir)
    runs = [p for p in queue.iterdir() if p.is_dir() and not p.name.startswith(".")] if queue.is_dir() else []
    return bool(runs) and all(run_finished(run) for run in runs)


def evaluate_item(item: QueueItem, evaluate: Evaluator) -> dict:
    """Run one evaluation and return its done record (never raises for an evaluation failure)."""
    started = time.time()
    record: dict[str, Any] = {"name": item.name, "step": item.step, "path": str(item.path),
                              "host": socket.gethostname(), "started_at": started}
    try:
        result = evaluate(item)
        record.update(status="ok", result=result)
    except Exception as exc:  # noqa: BLE001 - one failed checkpoint is recorded, the watcher goes on
        log.error("watch: evaluating %s failed: %s", item.name, exc)
        record.update(status="failed", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())
    record["seconds"] = round(time.time() - started, 3)
    mark_done(item, record)
    return record


def watch(
    queue_dir: str | Path,
    evaluate: Evaluator,
    *,
    poll_s: float = 10.0,
    timeout_s: float | None = None,
    once: bool = False,
    stale_claim_s: float | None = None,
    after_each: Callable[[QueueItem, dict], None] | None = None,
    on_finish: Callable[[list[dict]], None] | None = None,
    retry_failed: bool = False,
) -> list[dict]:
    """Evaluate queued checkpoints until training has ended and the queue is drained (or timeout / once).

    Checkpoints whose evaluation failed before this call are evaluated again with ``retry_failed`` (their failed
    record is kept as ``checkpoint-N.failed.json``), and named in a warning without it.

    ``after_each(item, done_record)`` runs after every evaluation (e.g. rebuild the report);
    ``on_finish(records)`` once at the end when training finished (e.g. log everything to W&B). Returns the done
    records of the checkpoints this watcher evaluated.
    """
    queue = Path(queue_dir)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    done: list[dict] = []
    log.info("watch: %s (poll %.1fs, timeout %s)", queue, poll_s, "none" if timeout_s is None else f"{timeout_s}s")
    failed = failed_items(queue)
    if failed and retry_failed:
        retried = [item.name for item in failed if requeue(item)]
        if retried:
            log.warning("watch: evaluating again %d checkpoint(s) whose evaluation failed before: %s",
                        len(retried), ", ".join(retried))
    elif failed:
        log.warning("watch: %d checkpoint(s) failed before and are not evaluated again (retry_failed=true does): %s",
                    len(failed), ", ".join(item.name for item in failed))
    while True:
        finished = training_finished(queue)  # read before the scan: a checkpoint queued before the marker is seen
        progressed = False
        for item in pending_items(queue, stale_claim_s):
            if not claim(item, stale_claim_s):
                continue
            log.info("watch: evaluating %s", item.name)
            record = evaluate_item(item, evaluate)
            done.append(record)
            progressed = True
            if after_each is not None:
                try:
                    after_each(item, record)
                except Exception as exc:  # noqa: BLE001 - a report/W&B failure must not stop evaluation
                    log.error("watch: after-evaluation step for %s failed: %s", item.name, exc)
        if once:
            break
        if finished and not pending_items(queue, stale_claim_s) and not progressed:
            log.info("watch: training finished and the queue is drained")
            if on_finish is not None:
                on_finish(done)
            break
        if deadline is not None and time.monotonic() >= deadline:
            log.warning("watch: timeout after %ss; %d checkpoint(s) left", timeout_s, len(pending_items(queue)))
            break
        if not progressed:
            time.sleep(poll_s if deadline is None else max(0.0, min(poll_s, deadline - time.monotonic())))
    return done


# ----------------------------------------------------------------------------------------------------------------
# Evaluators
# ----------------------------------------------------------------------------------------------------------------


PLACEHOLDERS = ("checkpoint", "run_dir", "step", "name", "queue", "out", "python")
"""What a ``--command`` template may name; each is also in the command's environment as ``GNT_<NAME>``."""


class WatchError(ValueError):
    """A watcher that cannot start as asked (a bad command template, a missing queue): nothing was claimed."""

    exit_code = 2


def command_arguments(template: str) -> list[str]:
    """The template as an argument list (shell-like quoting), checked: only known placeholders, a command to run.

    Checked before any checkpoint is claimed: a typo in a placeholder must not mark every queued item failed.
    """
    try:
        arguments = shlex.split(template)
    except ValueError as exc:
        raise WatchError(f"--command: {exc}") from None
    if not arguments:
        raise WatchError("--command is empty")
    for argument in arguments:
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(argument) if f is not None]
        except ValueError as exc:
            raise WatchError(f"--command: {exc} in {argument!r} (write a literal brace as {{{{ or }}}})") from None
        unknown = [f for f in fields if f.split(".")[0].split("[")[0] not in PLACEHOLDERS]
        if unknown:
            raise WatchError(f"--command: unknown placeholder {{{unknown[0]}}}; valid: "
                             + " ".join(f"{{{name}}}" for name in PLACEHOLDERS))
    program = arguments[0].format(**{**dict.fromkeys(PLACEHOLDERS, "x"), "python": sys.executable})
    if shutil.which(program) is None:
        raise WatchError(f"--command: {program!r} is not an executable on PATH (the command runs without a "
                         "shell; for pipes or redirections use: bash -c '... \"$GNT_CHECKPOINT\" ...')")
    return arguments


def command_evaluator(template: str, *, out_dir: str | Path | None = None, timeout_s: float | None = None) -> Evaluator:
    """Run ``template`` per checkpoint, without a shell: it is split into arguments once, then placeholders
    ``{checkpoint} {run_dir} {step} {name} {queue} {out} {python}`` are filled into each argument as plain text.

    A folder name is therefore never parsed as shell syntax, quoted or not (``r$(touch x)`` stays one argument).
    The same values are in the environment as ``GNT_CHECKPOINT``, ``GNT_RUN_DIR``, ... for a ``bash -c`` script
    that needs a pipe (``"$GNT_CHECKPOINT"`` there is expanded safely). A non-zero exit raises (item marked failed).
    """
    arguments = command_arguments(template)

    def evaluate(item: QueueItem) -> dict:
        values = {
            "checkpoint": str(item.path), "run_dir": str(item.path.parent), "step": str(item.step),
            "name": item.name, "queue": str(item.path.parent.parent), "out": str(out_dir or ""),
            "python": sys.executable,
        }
        argv = [argument.format(**values) for argument in arguments]
        env = {**os.environ, **{f"GNT_{key.upper()}": value for key, value in values.items()}}
        completed = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=env)
        command = shlex.join(argv)
        if completed.returncode != 0:
            raise RuntimeError(f"command exited with {completed.returncode}: {command}\n{completed.stderr[-2000:]}")
        return {"command": command, "stdout_tail": completed.stdout[-1000:]}

    return evaluate


def source_run_dir(item: QueueItem) -> Path | None:
    """The training run folder a queued checkpoint came from (for W&B logging into that run)."""
    entry = item.entry()
    run_dir = entry.get("run_dir")
    if run_dir and (Path(run_dir) / RUN_RECORD).is_file():
        return Path(run_dir)
    if (item.path.parent / RUN_RECORD).is_file():
        return item.path.parent
    return None
