"""Leakage guard: a checkpoint must never be scored on a sentence it was trained on.

The run record of a checkpoint lists its training source keys (``train_source_keys``; the English source's content
hash, equal in every language). If it has none, the data build's manifest named by the record is read instead
(its train and dev source keys). A checkpoint whose training sources intersect the evaluated rows is reported
loudly and the sweep refuses to run unless ``allow_leakage`` is set; the status is written into its metrics and
record either way. A base model has nothing to leak (``not_applicable``); an adapter without any record of its
training data is ``unknown`` (warned about, not refused).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gnt.evaluation.discovery import ModelUnderTest
from gnt.filenames import MANIFEST


class LeakageError(RuntimeError):
    """Evaluated rows overlap a checkpoint's training sources."""

    exit_code = 3


@dataclass
class LeakageStatus:
    status: str  # clean | leak | unknown | not_applicable
    overlap: int = 0
    examples: list[str] = field(default_factory=list)
    source: str | None = None  # where the training keys came from
    allowed: bool = False

    def to_json(self) -> dict:
        return asdict(self)


def training_source_keys(model: ModelUnderTest) -> tuple[set[str] | None, str | None]:
    """The training source keys of a checkpoint and where they were read; (None, None) when unknown."""
    record = model.run_record
    keys = record.get("train_source_keys")
    if isinstance(keys, list):
        return set(map(str, keys)), "gnt_run.json train_source_keys"
    data_dir = record.get("data_dir")
    manifest = Path(data_dir) / MANIFEST if data_dir else None
    if manifest is not None and manifest.is_file():
        data = json.loads(manifest.read_text(encoding="utf-8"))
        by_split = data.get("source_keys", {})
        return set(by_split.get("train", [])) | set(by_split.get("dev", [])), f"{manifest} (train+dev)"
    return None, None


def check_leakage(model: ModelUnderTest, evaluated_keys: set[str], allow: bool = False) -> LeakageStatus:
    if model.adapter is None:
        return LeakageStatus("not_applicable")
    keys, source = training_source_keys(model)
    if keys is None:
        return LeakageStatus("unknown", allowed=allow)
    overlap = sorted(keys & evaluated_keys)
    if not overlap:
        return LeakageStatus("clean", source=source)
    return LeakageStatus("leak", len(overlap), overlap[:5], source, allowed=allow)


def leakage_message(name: str, status: LeakageStatus, n_rows: int) -> str:
    return (
        f"LEAKAGE: {name} was trained on {status.overlap} English source(s) that are among the {n_rows} evaluated "
        f"rows (e.g. source keys {', '.join(status.examples)}; training keys from {status.source}). Its scores "
        "would be inflated. Evaluate it on its own data build's held-out rows, or pass --allow-leakage to score "
        "it anyway (the metrics will carry the leakage status)."
    )


def guard_leakage(
    models: Sequence[ModelUnderTest],
    evaluated_keys: set[str],
    n_rows: int,
    *,
    allow: bool = False,
    logger: logging.Logger | None = None,
    scope: str = "",
    leaking: str = "leaking model(s)",
    advice: str = "see the messages above",
) -> dict[str, LeakageStatus]:
    """Check every model against the evaluated source keys; log leaks and unknowns, refuse leaks unless ``allow``.

    ``scope`` qualifies the "cannot be checked" warning (e.g. " on the suite"); ``leaking`` and ``advice`` word the
    refusal. Returns each model's status by name.
    """
    log = logger or logging.getLogger(__name__)
    statuses = {m.name: check_leakage(m, evaluated_keys, allow) for m in models}
    leaks = [name for name, s in statuses.items() if s.status == "leak"]
    for name in leaks:
        log.error(leakage_message(name, statuses[name], n_rows))
    for name, status in statuses.items():
        if status.status == "unknown":
            log.warning("%s: no record of its training data; leakage%s cannot be checked", name, scope)
    if leaks and not allow:
        raise LeakageError(
            f"refusing to evaluate {len(leaks)} {leaking} ({', '.join(leaks)}); {advice}, or pass --allow-leakage"
        )
    return statuses
