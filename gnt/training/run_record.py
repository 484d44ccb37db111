"""``gnt_run.json``: what produced a training run and each of its checkpoints (the evaluator's contract).

Written by rank 0 into the output directory when training starts, updated when it ends, and copied (with the
``global_step``) into every ``checkpoint-N/`` after the checkpoint's files are saved. Format ``gnt-align/run/1``::

    format, stage ("sft"|"dpo"), status ("running"|"complete"), base_model (path or hub id the adapter is over),
    base_model_spec (as the recipe wrote it, e.g. gnt:tiny), recipe (resolved key -> value), recipe_path,
    overrides, data_dir, data_manifest_sha256 (full sha256 of manifest.json), data_counts,
    train_source_keys (sorted source keys of the manifest's train+dev splits; for DPO also the SFT run's),
    train_ids (the manifest's mGeNTE entry ids of train+dev),
    sft_adapter (path or null), seed, wandb {project, run_id, mode, dir, run_dir, entity, group, name},
    launch {world_size, backend, ...}, trainer_config (every SFTConfig/DPOConfig field as used), model_config
    (ModelConfig as used: attention, LoRA, quantization), notes (adjustments made for this machine), environment,
    started, finished, global_step, resumed_from [checkpoints], output_dir, final_adapter, merged_dir
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gnt.filenames import RUN_RECORD
from gnt.io import read_json, write_json

FORMAT = "gnt-align/run/1"


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def json_safe(value: Any) -> Any:
    """A JSON-serialisable copy (enums, paths, dtypes and other objects become strings)."""
    return json.loads(json.dumps(value, default=str))


def trainer_config(training_args: Any) -> dict[str, Any]:
    """Every field of the trainer config, without secrets (hub tokens)."""
    config = json_safe(training_args.to_dict())
    for key in list(config):
        if "token" in key and key not in ("eos_token", "pad_token", "include_num_input_tokens_seen"):
            config.pop(key)
    return config


def build_run_record(
    *,
    setup: Any,
    base_model: str,
    data: Any,
    sft_adapter: Any,
    wandb_info: dict,
    launch: dict,
    resumed_from: str | None,
    previous: dict | None,
) -> dict[str, Any]:
    """The record written at the start of a run (``status: running``)."""
    from gnt.records import environment_record

    source_keys = set(data.source_keys)
    sft_summary = None
    if sft_adapter is not None and sft_adapter.run_record:
        sft = sft_adapter.run_record
        source_keys |= set(sft.get("train_source_keys", []))  # DPO's policy has also seen the SFT data
        sft_summary = {
            key: sft.get(key)
            for key in ("output_dir", "base_model", "data_dir", "data_manifest_sha256", "recipe_path", "seed")
        } | {"wandb_run_id": (sft.get("wandb") or {}).get("run_id")}
    history = list((previous or {}).get("resumed_from", []))
    if resumed_from:
        history.append({"checkpoint": str(resumed_from), "at": now()})
    return {
        "format": FORMAT,
        "stage": setup.stage,
        "status": "running",
        "base_model": base_model,
        "base_model_spec": setup.model_args.model_name_or_path or base_model,
        "recipe": json_safe(setup.recipe.values),
        "recipe_path": setup.recipe.path,
        "overrides": setup.recipe.overrides,
        "notes": setup.notes,
        "data_dir": str(Path(data.data_dir).resolve()),
        "data_manifest_sha256": data.manifest_sha256,
        "data_counts": data.counts,
        "data_rows": data.rows,
        "rows_manifest": data.rows_manifest,
        "train_source_keys": sorted(source_keys),
        "train_ids": data.entry_ids,
        "sft_adapter": str(Path(sft_adapter.path).resolve()) if sft_adapter is not None else None,
        "sft_run": sft_summary,
        "seed": setup.training_args.seed,
        "wandb": wandb_info,
        "launch": launch,
        "trainer_config": trainer_config(setup.training_args),
        "model_config": json_safe(dataclasses.asdict(setup.model_args)),
        "environment": environment_record(),
        "output_dir": str(setup.output_dir.resolve()),
        "started": (previous or {}).get("started") or now(),
        "finished": None,
        "global_step": None,
        "resumed_from": history,
        "final_adapter": None,
        "merged_dir": None,
    }


def write_run_record(directory: str | Path, record: dict) -> Path:
    """Write ``gnt_run.json`` atomically into ``directory``; return its path."""
    path = Path(directory) / RUN_RECORD
    write_json(path, record)
    return path


def read_run_record(directory: str | Path) -> dict | None:
    path = Path(directory) / RUN_RECORD
    return read_json(path) if path.is_file() else None


def checkpoint_record(record: dict, global_step: int) -> dict:
    """The copy that goes into ``checkpoint-<global_step>/``."""
    return {**record, "global_step": global_step, "checkpoint": f"checkpoint-{global_step}"}
