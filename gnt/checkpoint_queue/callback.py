"""A TrainerCallback that queues every saved checkpoint for evaluation while training goes on.

Why copy: ``save_total_limit`` deletes old ``checkpoint-*`` folders as new ones are saved, so an evaluator reading
them in place (on another GPU or machine, minutes later) can find its checkpoint gone half-way through loading.
On each save the adapter (weights, config, tokenizer, trainer state and run record — not the optimizer, scheduler
or RNG states, which evaluation never needs and which are most of the bytes) is copied into the queue folder.

Layout: :mod:`gnt.checkpoint_queue.layout`. ``<queue>/<run name>/`` looks like a training run, so
``eval/evaluate.py runs=<queue>/<run name>`` or ``adapters=<queue>/<run name>/checkpoint-N`` evaluate it and name
results exactly as for the run itself.

Each checkpoint is copied into a hidden temporary folder and renamed into place, so a watcher never sees a
half-copied adapter. ``on_save`` runs on every rank; only the world process zero copies (``state.
is_world_process_zero``), which is also the process that wrote the checkpoint on a shared disk.

Enabled from a recipe key (``eval_queue_dir``) by the training entry point::

    trainer.add_callback(QueueCheckpointCallback(queue_dir))
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from gnt.checkpoint_queue.layout import END_MARKER, QUEUE_ENTRY
from gnt.filenames import RUN_RECORD

log = logging.getLogger(__name__)

__all__ = ["END_MARKER", "QUEUE_ENTRY", "QueueCheckpointCallback", "mark_training_done", "queue_checkpoint"]
#: Files of a Trainer checkpoint that evaluation never reads (optimizer/scheduler/RNG/scaler state, DeepSpeed shards).
SKIP_PREFIXES = ("optimizer", "scheduler", "rng_state", "scaler", "global_step")


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _ignore(directory: str, names: list[str]) -> list[str]:
    return [n for n in names if n.startswith(SKIP_PREFIXES)]


def queue_checkpoint(checkpoint: str | Path, queue_dir: str | Path, *, run_name: str | None = None,
                     global_step: int | None = None) -> Path | None:
    """Copy one checkpoint folder into ``<queue>/<run name>/`` atomically; returns the queued folder.

    Returns None when the checkpoint is missing or was already queued (a resumed run saving the same step again).
    Usable without a Trainer (e.g. to queue the checkpoints of a finished run by hand).
    """
    checkpoint = Path(checkpoint)
    if not checkpoint.is_dir():
        log.warning("eval queue: %s does not exist; nothing queued", checkpoint)
        return None
    run_dir = checkpoint.parent
    run_name = run_name or run_dir.name
    target_run = Path(queue_dir) / run_name
    target_run.mkdir(parents=True, exist_ok=True)
    target = target_run / checkpoint.name
    if target.exists():
        log.info("eval queue: %s already queued", target)
        return None
    tmp = Path(tempfile.mkdtemp(prefix=f".{checkpoint.name}.tmp-", dir=target_run))
    try:
        shutil.copytree(checkpoint, tmp, ignore=_ignore, dirs_exist_ok=True)
        run_record_path = run_dir / RUN_RECORD
        run_record = json.loads(run_record_path.read_text(encoding="utf-8")) if run_record_path.is_file() else None
        if run_record is not None and not (tmp / RUN_RECORD).is_file():
            # the checkpoint's own record may be written by a later callback: keep the run's, with this step
            _write_json(tmp / RUN_RECORD, {**run_record, "global_step": global_step})
        if run_record is not None and not (target_run / RUN_RECORD).is_file():
            _write_json(target_run / RUN_RECORD, run_record)
        _write_json(tmp / QUEUE_ENTRY, {
            "global_step": global_step, "source": str(checkpoint.resolve()), "run_dir": str(run_dir.resolve()),
            "run_name": run_name, "queued_at": time.time(), "host": socket.gethostname(), "pid": os.getpid(),
        })
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("eval queue: queued %s → %s", checkpoint, target)
    return target


def mark_training_done(queue_dir: str | Path, run_name: str, global_step: int | None) -> Path:
    """Write the end marker that tells watchers no more checkpoints will come for this run."""
    target_run = Path(queue_dir) / run_name
    target_run.mkdir(parents=True, exist_ok=True)
    marker = target_run / END_MARKER
    _write_json(marker, {"global_step": global_step, "finished_at": time.time(), "host": socket.gethostname()})
    return marker


class QueueCheckpointCallback(TrainerCallback):
    """Queue each saved checkpoint for evaluation (rank 0 only) and mark the end of training."""

    def __init__(self, queue_dir: str | Path, run_name: str | None = None) -> None:
        self.queue_dir = Path(queue_dir)
        self.run_name = run_name
        self.queued: list[Path] = []

    def _run_name(self, args: TrainingArguments) -> str:
        return self.run_name or Path(args.output_dir).resolve().name

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        queued = queue_checkpoint(checkpoint, self.queue_dir, run_name=self._run_name(args),
                                  global_step=state.global_step)
        if queued is not None:
            self.queued.append(queued)

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                     **kwargs: Any) -> None:
        if state.is_world_process_zero:
            mark_training_done(self.queue_dir, self._run_name(args), state.global_step)
