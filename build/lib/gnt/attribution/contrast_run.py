"""Contrastive attribution runs: log p(Ref-N answer) − log p(Ref-G answer) under the same prompt, on rows with
both references (the common set by default), from an evaluation result or straight from the data.

Output of one cell (``<out>/<model>/attribution/<cell-safe-name>/contrastive/``): contrastive.jsonl,
contrastive_inputs.csv/json, contrastive_targets.csv/json, fig_contrastive.png and record.json.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from gnt.attribution.aggregate import write_table
from gnt.attribution.config import DEFAULT_CONFIG, DEFAULT_SHOTS, ContrastiveConfig, cell_dir_name
from gnt.attribution.contrastive import contrast_aggregate, contrast_row
from gnt.attribution.gradxinput import PassCounter
from gnt.attribution.loading import load_model, provenance
from gnt.attribution.results import ResultError, read_result, recorded_adapter, recorded_grid, recorded_model
from gnt.filenames import RECORD
from gnt.io import write_json, write_jsonl
from gnt.prompts.grid import Cell, PromptGrid


@dataclass(frozen=True)
class ContrastRow:
    id: str
    lang: str
    set: str
    source: str
    ref_g: str
    ref_n: tuple[str, ...]
    in_common: bool


def contrast_rows(config: ContrastiveConfig) -> tuple[list[ContrastRow], dict]:
    """Rows with both references, from the evaluation result (its rows) or from the data; plus the result record."""
    record: dict = {}
    rows: list[ContrastRow] = []
    if config.result_dir:
        result = read_result(config.result_dir, config.data)
        record = result.record
        seen = set()
        for r in result.rows:
            if (r.id, r.lang) in seen or not r.ref_g or not r.ref_n:
                continue
            seen.add((r.id, r.lang))
            rows.append(ContrastRow(r.id, r.lang, r.set, r.source or "", r.ref_g, r.ref_n, len(r.ref_n) > 1))
    elif config.data:
        from gnt.attribution.results import source_lookup

        for entry in source_lookup(config.data).values():
            rows.append(ContrastRow(entry.id, entry.lang, entry.set, entry.source, entry.ref_g, tuple(entry.ref_n), entry.in_common))
    else:
        raise ResultError("contrastive mode needs rows: pass an evaluation result or --data")
    return rows, record


def run_contrastive(config: ContrastiveConfig) -> dict:
    """Contrastive attribution on rows with Ref-G and Ref-N (common-set rows by default); saves tidy data + figure."""
    from gnt.attribution.plots import plot_contrastive
    from gnt.records import environment_record

    config.validate()
    rows, result_record = contrast_rows(config)

    model_path = config.model or recorded_model(result_record)
    if not model_path:
        raise ResultError("no model: pass --model (or an evaluation result whose record names it)")
    adapter = config.adapter or recorded_adapter(result_record)
    recorded_seed, recorded_prompts = recorded_grid(result_record)
    seed = config.grid_seed if config.grid_seed is not None else recorded_seed
    prompts = config.prompts_dir or recorded_prompts
    if config.cells:
        cells = list(config.cells)
    else:
        langs = config.langs or tuple(sorted({r.lang for r in rows}))
        cells = [f"{lang}/{DEFAULT_CONFIG}/{DEFAULT_SHOTS}" for lang in langs]
    if config.out_dir:
        out_root = Path(config.out_dir)
    elif config.result_dir:
        out_root = Path(config.result_dir) / "attribution"
    else:
        raise ResultError("give out_dir=FOLDER when running contrastive mode on data without an evaluation result")
    model, tokenizer = load_model(model_path, adapter, method="gradxinput", device=config.device, dtype=config.dtype)
    from gnt.prompts.chat import supports_system_role

    recorded_role = result_record.get("system_role")
    system_role = recorded_role if isinstance(recorded_role, bool) else supports_system_role(tokenizer)
    model_name = Path(str(adapter or model_path)).name
    summary: dict = {"cells": {}}
    for cell_name in cells:
        cell = Cell.parse(cell_name)
        grid = PromptGrid((cell.lang,), prompts, seed=seed)
        excluded = grid.demonstration_keys()
        from gnt.data.entry import source_key

        chosen = [
            r for r in rows
            if r.lang == cell.lang and r.set in config.sets and (r.in_common or not config.common_only)
            and len(r.ref_n) >= config.min_refs and source_key(r.source) not in excluded
        ]
        chosen.sort(key=lambda r: r.id)
        if config.max_rows is not None and len(chosen) > config.max_rows:
            rng = random.Random(f"gnt-contrastive|{config.sample_seed}|{cell_name}")
            chosen = sorted(rng.sample(chosen, config.max_rows), key=lambda r: r.id)
        counter = PassCounter()
        started = time.perf_counter()
        records = []
        for row in chosen:
            prompt = grid.render(row.source, cell, system_role=system_role)
            result = contrast_row(model, tokenizer, prompt, cell.lang, row.ref_g, row.ref_n, labels=config.labels, counter=counter)
            records.append({"id": row.id, "lang": row.lang, "set": row.set, "cell": cell_name, "source": row.source, **result})
        seconds = time.perf_counter() - started
        out = out_root / cell_dir_name(cell_name) / "contrastive"
        out.mkdir(parents=True, exist_ok=True)
        write_jsonl(out / "contrastive.jsonl", records)
        inputs, targets = contrast_aggregate(records)
        write_table(inputs, out / "contrastive_inputs.csv", out / "contrastive_inputs.json",
                    columns=("level", "part", "lang", "set", "mean_signed_share", "mean_score", "top10_rate", "n"))
        write_table(targets, out / "contrastive_targets.csv", out / "contrastive_targets.json",
                    columns=("lang", "set", "component", "mean_delta", "sem", "n"))
        figures = []
        if config.plots:
            figures.append(plot_contrastive(inputs, targets, out / "fig_contrastive.png", title=f"{model_name} · {cell_name}"))
        record = {
            "kind": "gnt-align/attribution-contrastive/1",
            "method": "gradxinput",
            "description": "d_k = log p(A_N,k) − log p(A_G) under the same prompt (answer tokens only, no end-of-turn); "
            "input side: e·∇d on prompt embeddings; target side: per-token log-probs, aligned blocks, segment deltas",
            "labels": config.labels,
            **provenance(model_path, adapter, model, cell_name, seed, prompts),
            "rows": [r["id"] for r in records],
            "pairs": sum(len(r["pairs"]) for r in records),
            "passes": {"forwards": counter.forwards, "backwards": counter.backwards},
            "seconds": round(seconds, 3),
            "figures": [str(Path(f).name) for f in figures],
            "config": asdict(config),
            "environment": environment_record(),
        }
        write_json(out / RECORD, record)
        summary["cells"][cell_name] = {"dir": str(out), "rows": len(records), "seconds": round(seconds, 3),
                                       "figures": [str(f) for f in figures]}
    return summary
