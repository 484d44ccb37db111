"""Training rows from a data directory built by ``data/build.py``: validated, adapted to the chat template, filtered.

The rows are TRL's conversational formats (prompt–completion for SFT, prompt/chosen/rejected for DPO). Here they
are checked field by field (a wrong file names the missing field and line), the system turn is merged into the
first user turn for templates without a system role, and rows longer than ``max_length`` are dropped: truncating
them would cut the completion before its end-of-turn token and teach the model not to stop.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gnt.data.errors import DataError, DataErrors, json_object_lines
from gnt.filenames import MANIFEST
from gnt.io import DamagedFile, read_json, sha256_file
from gnt.training.config import TrainingError

FIELDS = {"sft": ("prompt", "completion"), "dpo": ("prompt", "chosen", "rejected"), "grpo": ("prompt",)}
"""The columns each stage trains on; metadata columns (id, lang, ...) stay in the files."""
ROWS = {"sft": "sft", "dpo": "dpo", "grpo": "sft"}
"""The build's folder a stage reads by default (GRPO samples its own answers to the SFT rows' prompts)."""
ENTRY_FIELDS = ("id", "lang")
"""Kept for GRPO: which entry a prompt is of, so its rewards can read the entry's references."""

GROUP_FIELD = "cell"
"""The one metadata column kept: the grid cell a row's prompt was drawn from, by which batches can share their
prompt prefix (gnt.training.lean_forward). Optional: rows of other origins simply lack it."""

UNIT_FIELD = "source_key"
"""Kept where rows carry it: the English source a row translates, what ``batch_units`` can batch together."""

MAX_REPORTED_ERRORS = 20


@dataclass
class TrainingData:
    """The rows a stage trains and evaluates on, with the provenance its run record needs."""

    stage: str
    data_dir: Path
    train: list[dict]
    dev: list[dict]
    manifest: dict
    manifest_sha256: str
    source_keys: list[str]
    entry_ids: list[str]
    counts: dict[str, Any] = field(default_factory=dict)
    rows: str = ""
    """The folder of ``data_dir`` the rows came from (``sft``, ``dpo``, ``judge``)."""
    rows_manifest: dict = field(default_factory=dict)
    """What the build recorded about those rows when they are not the stage's own (the judge's format, labels and
    prompt fingerprints): kept in the run record, so a judge adapter says how it must be prompted."""


def stage_files(data_dir: Path, rows: str) -> dict[str, Path]:
    return {split: data_dir / rows / f"{split}.jsonl" for split in ("train", "dev")}


def check_data_dir(data_dir: str | Path, stage: str, rows: str | None = None) -> Path:
    """The data directory, or a TrainingError saying what is missing and the command that builds it."""
    path = Path(data_dir)
    build = f"python data/build.py out_dir={data_dir}"
    if not path.is_dir():
        raise TrainingError(f"data_dir: {data_dir} does not exist. Build it with `{build}`.")
    if not (path / MANIFEST).is_file():
        raise TrainingError(f"data_dir: {data_dir} has no {MANIFEST}: not a directory built by `{build}`.")
    train = stage_files(path, rows or ROWS[stage])["train"]
    if not train.is_file():
        what = f"the {(rows or ROWS[stage]).upper()} rows" + (f" that data_rows={rows} names" if rows else "")
        raise TrainingError(f"data_dir: {train} is missing ({what}). Rebuild with `{build}`.")
    return path


def _check_messages(value: Any, name: str, path: Path, line: int) -> DataError | None:
    """A TRL conversational field is a non-empty list of {role, content} string messages."""
    if not isinstance(value, list) or not value:
        return DataError(f"field '{name}' must be a non-empty list of {{role, content}} messages", path, line, name)
    for number, message in enumerate(value):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return DataError(f"field '{name}' message {number} has no 'role'", path, line, name)
        if not isinstance(message.get("content"), str):
            return DataError(f"field '{name}' message {number} has no string 'content'", path, line, name)
    return None


KIND_FIELD = "kind"
"""The column naming a preference pair's kind (gnt.data.training_rows.DPO_KINDS), read when ``pair_kinds`` is set."""


LABEL_FIELD = "label"
"""The column naming a judge row's target label, checked against the labels the build recorded."""
TARGET_LABEL = "target_label"
"""The label as the training rows carry it, for balanced batches (not ``label``: transformers' Trainer hands a
column of that name to the model as its labels)."""


def read_rows(path: Path, stage: str, kinds: Sequence[str] | None = None,
              labels: Sequence[str] | None = None) -> list[dict]:
    """All rows of a JSONL file (of the given pair ``kinds`` only, when set), reduced to the stage's fields;
    with ``labels``, each row's ``label`` must be one of them. DataErrors name the file, line and field."""
    fields = FIELDS[stage] if kinds is None else (*FIELDS[stage], KIND_FIELD)
    rows, errors = [], []
    seen: set[tuple[str, str]] = set()
    for line, record in json_object_lines(path):
        if len(errors) >= MAX_REPORTED_ERRORS:
            break
        if isinstance(record, DataError):
            errors.append(record)
            continue
        missing = [f for f in fields if f not in record]
        if missing:
            errors.append(
                DataError(
                    f"missing field '{missing[0]}' ({stage.upper()} rows need {', '.join(fields)}; "
                    f"this row has {', '.join(sorted(record)) or 'no fields'})",
                    path, line, missing[0],
                )
            )
            continue
        problem = next((p for f in FIELDS[stage] if (p := _check_messages(record[f], f, path, line))), None)
        if problem:
            errors.append(problem)
            continue
        if kinds is not None and record[KIND_FIELD] not in kinds:
            continue
        if labels is not None and record.get(LABEL_FIELD) not in labels:
            errors.append(DataError(f"unknown label {record.get(LABEL_FIELD)!r}; the build wrote these rows with the "
                                    f"labels {', '.join(labels)}", path, line, LABEL_FIELD))
            continue
        row = {f: record[f] for f in FIELDS[stage]}
        if isinstance(record.get(GROUP_FIELD), str):
            row[GROUP_FIELD] = record[GROUP_FIELD]
        if labels is not None:
            row[TARGET_LABEL] = record[LABEL_FIELD]
        if isinstance(record.get(UNIT_FIELD), str):
            row[UNIT_FIELD] = record[UNIT_FIELD]
        if stage == "grpo":
            if any(not isinstance(record.get(f), str) for f in ENTRY_FIELDS):
                errors.append(DataError(f"a GRPO prompt row needs its entry's {' and '.join(ENTRY_FIELDS)}", path, line))
                continue
            if (record["lang"], record["id"]) in seen:
                continue  # a Set-N entry has a row per neutral reference, all with its one prompt
            seen.add((record["lang"], record["id"]))
            row.update({f: record[f] for f in ENTRY_FIELDS})
        rows.append(row)
    if errors:
        raise errors[0] if len(errors) == 1 else DataErrors(errors)
    if not rows:
        raise DataError("no rows" if kinds is None else f"no rows of the kinds {', '.join(kinds)}", path)
    return rows


def sample_order(count: int, limit: int | None, seed: int) -> list[int]:
    """Row indices to consider: all in file order, or a seeded shuffle when only ``limit`` rows are wanted."""
    order = list(range(count))
    if limit is not None and limit < count:
        random.Random(f"gnt-sample|{seed}").shuffle(order)
    return order


def fit_rows(rows: list[dict], system_role: bool) -> list[dict]:
    """Rows adapted to the chat template (system turn merged into the first user turn when it has no system role)."""
    if system_role:
        return rows
    from gnt.prompts.grid import fit_messages

    return [{**row, "prompt": fit_messages(row["prompt"], system_role=False)} for row in rows]


def token_length(tokenizer: Any, messages: list[dict]) -> int:
    ids = tokenizer.apply_chat_template(messages, tokenize=True)
    return len(ids["input_ids"] if hasattr(ids, "keys") else ids)


def fits(row: dict, stage: str, tokenizer: Any, max_length: int | None) -> bool:
    """Whether every rendered sequence of the row (prompt + each answer) fits ``max_length`` tokens."""
    if not max_length:
        return True
    return all(token_length(tokenizer, row["prompt"] + row[answer]) <= max_length for answer in FIELDS[stage][1:])


def select_rows(rows: list[dict], stage: str, tokenizer: Any, max_length: int | None, limit: int | None,
                seed: int) -> tuple[list[dict], int]:
    """Rows that fit ``max_length`` (at most ``limit``, a seeded sample kept in file order), and how many of the
    rows examined were dropped as too long. With a limit, rows are examined only until enough fit."""
    kept, dropped = [], 0
    for index in sample_order(len(rows), limit, seed):
        if limit is not None and len(kept) >= limit:
            break
        if fits(rows[index], stage, tokenizer, max_length):
            kept.append(index)
        else:
            dropped += 1
    return [rows[i] for i in sorted(kept)], dropped


def load_training_data(
    data_dir: str | Path,
    stage: str,
    *,
    tokenizer: Any,
    system_role: bool,
    max_length: int | None,
    max_train_samples: int | None = None,
    max_eval_samples: int | None = None,
    seed: int = 0,
    with_dev: bool = True,
    pair_kinds: Sequence[str] | None = None,
    rows_name: str | None = None,
) -> TrainingData:
    """Read, validate, adapt and filter a stage's rows (``rows_name``: another folder of the build, such as the
    judge's); raise TrainingError/DataError(s) with the fix to apply."""
    path = check_data_dir(data_dir, stage, rows_name)
    rows_name = rows_name or ROWS[stage]
    files = stage_files(path, rows_name)
    manifest_path = path / MANIFEST
    manifest = read_json(manifest_path, advice=f"rebuild the data with `python data/build.py out_dir={data_dir}`")
    if not isinstance(manifest, dict):
        raise DamagedFile(manifest_path, f"a {type(manifest).__name__}, not a mapping",
                          f"rebuild the data with `python data/build.py out_dir={data_dir}`")
    section = manifest.get(rows_name) if rows_name not in ROWS.values() else None
    section = section if isinstance(section, dict) else {}
    keys = section.get("source_keys") or manifest.get("source_keys", {})
    source_keys = sorted(set(keys.get("train", [])) | set(keys.get("dev", [])))
    labels = section.get("labels")

    counts: dict[str, Any] = {}
    splits: dict[str, list[dict]] = {}
    for split, limit in (("train", max_train_samples), ("dev", max_eval_samples)):
        if split == "dev" and (not with_dev or not files["dev"].is_file()):
            splits[split] = []
            continue
        rows = read_rows(files[split], stage, pair_kinds, labels)
        total = len(rows)
        rows, dropped = select_rows(fit_rows(rows, system_role), stage, tokenizer, max_length, limit, seed)
        counts[split] = {"file_rows": total, "dropped_too_long": dropped, "used": len(rows)}
        if split == "train" and not rows:
            raise TrainingError(
                f"all {total} {stage.upper()} training rows are longer than max_length={max_length} tokens; "
                "raise max_length in the recipe"
            )
        splits[split] = rows
    ids = manifest.get("ids", {})
    entry_ids = sorted(set(ids.get("train", [])) | set(ids.get("dev", [])))
    if section:  # another consumer's rows: their own sources, not the build's translation entries
        entry_ids = []
    recorded = {k: v for k, v in section.items() if k != "source_keys"}
    return TrainingData(stage, path, splits["train"], splits["dev"], manifest, sha256_file(manifest_path, length=64),
                        source_keys, entry_ids, counts, rows_name, recorded)


def to_dataset(rows: list[dict]) -> Any:
    """A datasets.Dataset of the rows (None for no rows)."""
    if not rows:
        return None
    from datasets import Dataset

    return Dataset.from_list(rows)
