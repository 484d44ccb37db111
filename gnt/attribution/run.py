"""Attribution runs: select rows of an evaluation result, load the model, explain, save tidy data and figures.

Output of one cell (``<out>/<model>/attribution/<cell-safe-name>/<method>/``; ``it/G+S/4`` → ``it_G+S_4``)::

    scores.jsonl        one record per row and target: outcomes, target tokens, explained logit, per-part and
                        per-group statistics, the top tokens with their part (and all ranked scores on request)
    aggregate.csv/json  tidy per-part table (see gnt.attribution.aggregate)
    fig_top10.png       Fig. 6 analogue: how often each part is in the top-10, S_L and S_T, per set
    fig_mean.png        Fig. 7 analogue: mean normalised score per part
    fig_top10_<kind>.png  the same split by outcome (label / judged / gnt) when the rows carry it
    fig_shots.png       per-demonstration relevance
    record.json         method, model, adapter, device/dtype, rows used and skipped (with reasons), passes, time

The contrastive run (``contrastive=true``) is :mod:`gnt.attribution.contrast_run`.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from gnt.attribution.aggregate import aggregate, write_table
from gnt.attribution.config import (
    DEFAULT_CONFIG,
    DEFAULT_SHOTS,
    OUTCOME_KINDS,
    AttributionConfig,
    cell_dir_name,
)
from gnt.attribution.gradxinput import PassCounter, explain_batch, length_batches
from gnt.attribution.loading import load_model, provenance
from gnt.attribution.ranking import part_stats, rank, top_tokens
from gnt.attribution.results import EvalRow, ResultError, read_result
from gnt.attribution.spans import TARGETS, AttributionInput, build_input
from gnt.evaluation.driver import write_folder
from gnt.filenames import ATTRIBUTION_DIR, RECORD
from gnt.io import write_jsonl
from gnt.prompts.grid import Cell, PromptGrid
from gnt.results.part import Payload, Record

log = logging.getLogger(__name__)

# ------------------------------------------------------------------------------------------------------------------
# Row selection
# ------------------------------------------------------------------------------------------------------------------


def select_rows(
    rows: Sequence[EvalRow], cell: str, sets: Sequence[str], max_rows: int | None, balance_by: str, seed: int = 0
) -> tuple[list[EvalRow], list[dict]]:
    """Rows of ``cell`` in ``sets`` that have a label span, sampled (seeded) up to ``max_rows`` per (set, outcome).

    ``balance_by`` names the outcome kind the sample is balanced over (``label``, ``judged``, ``gnt`` or ``none``),
    so a rare outcome (a wrong label) is not drowned by the common one. Returns (selected, skipped) where skipped
    rows carry a reason.
    """
    from gnt.attribution.spans import output_spans

    skipped: list[dict] = []
    groups: dict[tuple[str, str], list[EvalRow]] = defaultdict(list)
    for row in rows:
        if row.cell != cell or row.set not in sets:
            continue
        spans = output_spans(row.raw, row.lang)
        if spans.label is None:
            skipped.append({"id": row.id, "reason": f"no label in the output ({row.error or 'unreadable'})"})
            continue
        outcome = "all" if balance_by == "none" else (row.outcomes().get(balance_by) or "unknown")
        groups[(row.set, outcome)].append(row)
    rng = random.Random(f"gnt-attribution|{seed}|{cell}")
    selected: list[EvalRow] = []
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda r: r.id)
        if max_rows is not None and len(members) > max_rows:
            members = sorted(rng.sample(members, max_rows), key=lambda r: r.id)
        selected.extend(members)
    return selected, skipped


# ------------------------------------------------------------------------------------------------------------------
# Attribution of rows
# ------------------------------------------------------------------------------------------------------------------


def row_records(
    inp: AttributionInput, relevances: dict, row: EvalRow, *, method: str, top_n: int = 20, keep_token_scores: bool = False
) -> list[dict]:
    """The saved records of one row: one per target it has."""
    records = []
    for target, rel in relevances.items():
        positions = inp.ranked(target)
        ranked = rank(inp, rel.relevance, positions)
        relevance_sum = float(rel.relevance.sum())
        record = {
            "id": row.id,
            "key": row.key,
            "lang": row.lang,
            "set": row.set,
            "gender": row.gender,
            "cell": row.cell,
            "method": method,
            "target": target,
            "outcomes": row.outcomes(),
            "output": row.raw,
            "target_tokens": [inp.token_text(j) for j in inp.targets[target]],
            "target_logit": round(rel.target_logit, 6),
            "relevance_sum": round(relevance_sum, 6),
            "conservation": round(relevance_sum / rel.target_logit, 6) if method == "attnlrp" and rel.target_logit else None,
            "raw_max": ranked.raw_max,
            "n_tokens": len(inp),
            "prompt_tokens": inp.prompt_len,
            "n_ranked": len(positions),
            "straddles": inp.straddles,
            "parts": {n: s.to_json() for n, s in part_stats(ranked, "part").items()},
            "groups": {n: s.to_json() for n, s in part_stats(ranked, "group").items()},
            "top_tokens": top_tokens(ranked, top_n),
        }
        if keep_token_scores:
            record["token_scores"] = [
                [int(p), t, n, round(float(s), 5)] for p, t, n, s in zip(ranked.positions, ranked.tokens, ranked.parts, ranked.scores, strict=True)
            ]
        records.append(record)
    return records


def attribute_rows(
    model, tokenizer, grid: PromptGrid, rows: Sequence[EvalRow], *, method: str = "gradxinput", targets: Sequence[str] = TARGETS,
    batch_size: int = 8, max_batch_tokens: int | None = 32768, top_n: int = 20, keep_token_scores: bool = False,
    system_role: bool | None = None,
) -> tuple[list[dict], list[dict], PassCounter]:
    """Explain every row (batched by length); returns (records, skipped rows with reasons, pass counter).

    ``system_role`` is how the evaluator rendered the prompts (recorded); ``None`` detects it from the template.
    A row whose re-rendered prompt hash differs from the recorded one is skipped: its spans would be wrong.
    """
    from gnt.prompts.chat import supports_system_role

    if system_role is None:
        system_role = supports_system_role(tokenizer)
    inputs: list[AttributionInput] = []
    kept: list[EvalRow] = []
    skipped: list[dict] = []
    for row in rows:
        prompt = grid.render(row.source or "", Cell.parse(row.cell), system_role=system_role)
        if row.prompt_hash and row.prompt_hash != prompt.hash():
            skipped.append({"id": row.id, "reason": "re-rendered prompt differs from the evaluated one (prompts or seed changed)"})
            continue
        inp = build_input(tokenizer, prompt, row.raw, row_id=row.id, lang=row.lang)
        if not any(inp.targets.get(t) for t in targets):
            skipped.append({"id": row.id, "reason": "no target tokens in the output"})
            continue
        inputs.append(inp)
        kept.append(row)
    counter = PassCounter()
    records: list[dict] = []
    with _method_context(method, model) as state:
        for batch in length_batches([len(x) for x in inputs], batch_size, max_batch_tokens):
            relevances = explain_batch(model, [inputs[i] for i in batch], targets, counter)
            if state is not None:
                state.require_attention()
            for i, rel in zip(batch, relevances, strict=True):
                records.extend(row_records(inputs[i], rel, kept[i], method=method, top_n=top_n, keep_token_scores=keep_token_scores))
    order = {row.id: n for n, row in enumerate(kept)}
    records.sort(key=lambda r: (order[r["id"]], r["target"]))
    return records, skipped, counter


def _method_context(method: str, model) -> contextlib.AbstractContextManager:
    """AttnLRP patches for ``attnlrp`` (yields its PatchState), nothing for gradient × input (yields None)."""
    if method == "attnlrp":
        from gnt.attribution.attnlrp import attnlrp_patched

        return attnlrp_patched(model)
    return contextlib.nullcontext()


def method_record(method: str) -> dict:
    """What was computed, in words and versions (saved in every record)."""
    from gnt.records import package_versions

    versions = package_versions(("torch", "transformers", "lxt", "peft"))
    if method == "attnlrp":
        from gnt.attribution.attnlrp import SUPPORTED_LXT_VERSIONS, TESTED_TRANSFORMERS

        return {
            "method": "attnlrp",
            "description": "AttnLRP (lxt rules: identity on RMSNorm and activations, uniform on gate×up and attention "
            "matmuls), relevance read as e·grad on input embeddings; score |relevance|, max-normalised over ranked tokens",
            "lxt_supported": list(SUPPORTED_LXT_VERSIONS),
            "transformers_tested": list(TESTED_TRANSFORMERS),
            "versions": versions,
        }
    return {
        "method": "gradxinput",
        "description": "s(i) = |e_i · d(sum of span logits)/d e_i| on input embeddings, teacher-forced own output; "
        "max-normalised over ranked tokens",
        "versions": versions,
    }


Writer = Callable[[Path], object]


def attribution_files(config: AttributionConfig) -> tuple[Path, dict[str, Payload], dict]:
    """Every requested cell of one evaluation result explained: the output root, the files to write there (by path
    under it, each cell's ``record.json`` after that cell's other files) and a summary of the run."""
    from gnt.attribution.plots import plot_parts, plot_shots
    from gnt.records import environment_record

    config.validate()
    result = read_result(config.result_dir, config.data)
    cells = list(config.cells) or sorted({f"{Cell.parse(c).lang}/{DEFAULT_CONFIG}/{DEFAULT_SHOTS}" for c in result.cells()})
    missing = [c for c in cells if c not in result.cells()]
    if missing:
        raise ResultError(f"cell(s) {missing} not in {result.directory} (available: {', '.join(result.cells()) or 'none'})")
    if config.balance_by in ("judged", "gnt") and not any(row.outcomes()[config.balance_by] for row in result.rows):
        raise ResultError(f"balance_by={config.balance_by} needs the judge's judgments, and {result.directory} has "
                          "none (judgments.jsonl): run eval/judge.py on the results first, or balance_by=label")
    model_path = config.model or result.model_path()
    if not model_path:
        raise ResultError(f"{result.directory}/record.json names no model: pass --model")
    adapter = config.adapter or result.adapter_path()
    seed, prompts = result.grid_settings()
    seed = config.grid_seed if config.grid_seed is not None else seed
    prompts = config.prompts_dir or prompts
    model, tokenizer = load_model(model_path, adapter, method=config.method, device=config.device, dtype=config.dtype)
    if config.method == "attnlrp":
        from gnt.attribution.attnlrp import check_support, load_lxt_patches

        load_lxt_patches()
        check_support(model)  # fail before any work, with the supported list
    out_root = Path(config.out_dir) if config.out_dir else result.directory / ATTRIBUTION_DIR
    model_name = Path(str(adapter or model_path)).name
    files: dict[str, Payload] = {}
    summary: dict = {"cells": {}}
    for cell in cells:
        grid = PromptGrid((Cell.parse(cell).lang,), prompts, seed=seed)
        selected, skipped = select_rows(result.rows, cell, config.sets, config.max_rows, config.balance_by, config.sample_seed)
        if not selected:
            log.warning("attribution: %s of %s selects no row of %s (%d without a label in the output): its files "
                        "record 0 rows", cell, result.directory, "/".join(config.sets), len(skipped))
        started = time.perf_counter()
        records, more_skipped, counter = attribute_rows(
            model, tokenizer, grid, selected, method=config.method, targets=config.targets, batch_size=config.batch_size,
            max_batch_tokens=config.max_batch_tokens, top_n=config.top_tokens, keep_token_scores=config.keep_token_scores,
            system_role=result.system_role(),
        )
        seconds = time.perf_counter() - started
        skipped += more_skipped
        folder = f"{cell_dir_name(cell)}/{config.method}"
        table = aggregate(records, OUTCOME_KINDS)
        files[f"{folder}/scores.jsonl"] = lambda path, records=records: write_jsonl(path, records)
        files[f"{folder}/aggregate.csv"] = lambda path, table=table: write_table(table, path, path.with_suffix(".json"))
        figures: dict[str, Writer] = {}
        if config.plots:
            title = f"{model_name} · {cell} · {config.method}"
            figures["fig_top10.png"] = lambda path, t=table, title=title: plot_parts(t, path, metric="top10_rate", title=title)
            figures["fig_mean.png"] = lambda path, t=table, title=title: plot_parts(t, path, metric="mean_score", title=title)
            for kind in OUTCOME_KINDS:
                if any(r["outcome_by"] == kind for r in table):
                    figures[f"fig_top10_{kind}.png"] = lambda path, t=table, title=title, kind=kind: plot_parts(
                        t, path, metric="top10_rate", outcome_by=kind, title=title)
            shot_types = {p.name: p.shot_type for p in grid.render("x", Cell.parse(cell)).parts if p.shot_type}
            figures["fig_shots.png"] = lambda path, t=table, title=title, types=shot_types: plot_shots(
                t, path, shot_types=types, title=title)
        files.update({f"{folder}/{name}": write for name, write in figures.items()})
        n_rows = len({r["id"] for r in records})
        record = {
            "kind": "gnt-align/attribution/1",
            **method_record(config.method),
            **provenance(model_path, adapter, model, cell, seed, prompts),
            "targets": list(config.targets),
            "rows": sorted({r["id"] for r in records}),
            "n_rows": n_rows,
            "skipped": skipped,
            # One forward per batch and one backward per target span present in the batch; every row of the batch
            # gets its own gradient from that backward (rows are independent): per row, 1 forward + 1 backward/span.
            "passes": {"forwards": counter.forwards, "backwards": counter.backwards, "row_targets": len(records),
                       "rule": "one forward per batch, one backward per target span per batch"},
            "seconds": round(seconds, 3),
            "rows_per_second": round(n_rows / seconds, 3) if seconds > 0 and n_rows else None,
            "figures": list(figures),
            "config": asdict(config),
            "environment": environment_record(),
        }
        files[f"{folder}/{RECORD}"] = Record(record)  # written after the cell's files, with their sizes and hashes
        summary["cells"][cell] = {"dir": str(out_root / folder), "rows": n_rows, "skipped": len(skipped),
                                  "seconds": round(seconds, 3), "figures": [str(out_root / folder / f) for f in figures]}
    return out_root, files, summary


def run_attribution(config: AttributionConfig) -> dict:
    """Run attribution for each requested cell of one evaluation result; returns a summary with output paths."""
    out_root, files, summary = attribution_files(config)
    write_folder(out_root, files)
    return summary
