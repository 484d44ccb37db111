"""Attribution: backward passes per row and rows/s of gradient × input on the tiny model, batched vs per row.

Why: attribution explains two target spans per row (the label S_L and the translation S_T). A naive
implementation runs one forward and one backward per span per row, or worse, one backward per target token. The
engine (:func:`gnt.attribution.gradxinput.explain_batch`) runs one forward per batch and one backward per span
per batch, since rows of a batch are independent: per row that is at most 2 backward passes (goal: <= 2 for
S_L + S_T), and fewer when amortised over a batch. Both the per-row cost (batch size 1) and the batched
engine (batch size 4: one batch per cell) are measured side by side over the same rows, through the real entry point
(:func:`gnt.attribution.run.attribute_rows`), counting the passes the engine actually ran.

Rows are bundled mGeNTE sample entries in the 4-shot G+S cell of each language (the longest prompts, ~1,500
tokens on the tiny tokenizer) with their reference as the forced output. One intra-op thread, as the attribution
tests use: on a shared two-core machine more threads made the tiny model slower (see tests/test_attribution.py).

    python bench/attribution.py [--rows-per-lang 4] [--repeats 3]
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from record import bench_command, conclude

from gnt.cli.command import Call
from gnt.data.entry import Language

LANGS: tuple[Language, ...] = ("it", "es", "de", "el")
CELL = "{lang}/G+S/4"
BATCH_SIZES = (1, 4)
"""Per row, and batched: one batch per cell (4 rows per language by default; the engine's default cap is 8)."""
GOALS = {"backwards_per_row": "<= 2 (S_L + S_T)"}


def sample_rows(rows_per_lang: int) -> list:
    """EvalRows from the bundled sample: Set-G and Set-N alternately, the reference of the set as the output."""
    from gnt.attribution.results import EvalRow
    from gnt.data.mgente import load_mgente
    from gnt.output_format import format_output
    from gnt.paths import SAMPLE_DIR

    entries = load_mgente(SAMPLE_DIR, LANGS)
    rows = []
    for lang in LANGS:
        by_set = {name: [e for e in entries if e.lang == lang and e.set == name] for name in ("Set-G", "Set-N")}
        for index in range(rows_per_lang):
            entry = by_set["Set-G" if index % 2 == 0 else "Set-N"][index // 2]
            translation = entry.ref_g if entry.set == "Set-G" else entry.ref_n[0]
            raw = format_output(lang, entry.label, translation)
            rows.append(EvalRow(id=entry.id, lang=lang, set=entry.set, cell=CELL.format(lang=lang), raw=raw,
                                source=entry.source, gender=entry.gender, label=entry.label, translation=translation))
    return rows


def run_once(model: Any, tokenizer: Any, rows: list, batch_size: int) -> dict[str, Any]:
    """Attribute every row (cell by cell, as an attribution run does) and count passes."""
    from gnt.attribution.run import attribute_rows
    from gnt.prompts.grid import PromptGrid

    forwards = backwards = explained = 0
    started = time.perf_counter()
    for lang in LANGS:
        grid = PromptGrid((lang,))
        subset = [r for r in rows if r.lang == lang]
        records, skipped, counter = attribute_rows(model, tokenizer, grid, subset, batch_size=batch_size)
        if skipped:
            raise RuntimeError(f"rows skipped: {skipped}")
        forwards += counter.forwards
        backwards += counter.backwards
        explained += len({r["id"] for r in records})
    seconds = time.perf_counter() - started
    return {"batch_size": batch_size, "rows": explained, "forwards": forwards, "backwards": backwards,
            "seconds": seconds, "rows_per_s": explained / seconds}


@dataclass
class AttributionBenchOptions:
    """How many rows, how many times."""

    rows_per_lang: int = field(default=4, metadata={
        "help": "sample rows per language (Set-G and Set-N alternately)"})
    repeats: int = field(default=3, metadata={
        "help": "repeats of the per-row and batched runs (medians over them)"})


def _run(call: Call) -> None:
    """Per-row and batched runs alternating, medians, the table and the record."""
    args = call.build(AttributionBenchOptions)

    import torch

    from gnt.attribution.run import load_model
    from gnt.models.tiny import ensure_tiny_model

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model, tokenizer = load_model(str(ensure_tiny_model()), device="cpu", dtype="float32")
        rows = sample_rows(args.rows_per_lang)
        run_once(model, tokenizer, rows[:2], 2)  # warm-up: first-use costs of autograd and the kernels
        runs: dict[int, list[dict]] = {b: [] for b in BATCH_SIZES}
        for repeat in range(args.repeats):
            for batch_size in (BATCH_SIZES if repeat % 2 == 0 else tuple(reversed(BATCH_SIZES))):
                runs[batch_size].append(run_once(model, tokenizer, rows, batch_size))
            print(f"  repeat {repeat + 1}: " + ", ".join(
                f"batch {b}: {runs[b][-1]['rows_per_s']:.2f} rows/s" for b in BATCH_SIZES), flush=True)
    finally:
        torch.set_num_threads(threads)

    per: dict[str, dict[str, Any]] = {}
    for batch_size in BATCH_SIZES:
        first = runs[batch_size][0]
        per[str(batch_size)] = {
            "rows": first["rows"],
            "forwards": first["forwards"],
            "backwards": first["backwards"],
            "backwards_per_row": round(first["backwards"] / first["rows"], 3),
            "forwards_per_row": round(first["forwards"] / first["rows"], 3),
            "rows_per_s": round(statistics.median(r["rows_per_s"] for r in runs[batch_size]), 3),
        }
    figures: dict[str, Any] = {
        "model": "gnt:tiny (fp32, cpu, 1 thread)",
        "method": "gradxinput",
        "targets": ["S_L", "S_T"],
        "cells": [CELL.format(lang=lang) for lang in LANGS],
        "rows": len(rows),
        "repeats": args.repeats,
        "by_batch_size": per,
        "backwards_per_row": per["1"]["backwards_per_row"],
        "backwards_per_row_batched": per["4"]["backwards_per_row"],
        "rows_per_s": per["4"]["rows_per_s"],
        "rows_per_s_per_row": per["1"]["rows_per_s"],
        "batched_speedup": round(per["4"]["rows_per_s"] / per["1"]["rows_per_s"], 3),
    }
    met = {"backwards_per_row": max(p["backwards_per_row"] for p in per.values()) <= 2}
    figures["goals_met"] = met
    status = "met" if met["backwards_per_row"] else "MISSED"
    table = [
        ("backward passes / row, batch 1", per["1"]["backwards_per_row"], f"{GOALS['backwards_per_row']}  {status}"),
        ("backward passes / row, batch 4", per["4"]["backwards_per_row"], "amortised over the batch"),
        ("forward passes / row, batch 1 / 4", f"{per['1']['forwards_per_row']} / {per['4']['forwards_per_row']}", ""),
        ("rows/s, batch 1", per["1"]["rows_per_s"], "per-row baseline"),
        ("rows/s, batch 4", per["4"]["rows_per_s"], f"x{figures['batched_speedup']} vs batch 1"),
    ]
    missed = [] if met["backwards_per_row"] else ["more than 2 backward passes per row"]
    title = f"attribution (grad×input, tiny model, {len(rows)} rows, 4-shot G+S cells)"
    conclude("attribution", title, table, figures, GOALS, missed)


COMMAND = bench_command(
    __name__, __file__, "benchmark: backward passes per row and rows/s of grad×input, batched vs per row",
    AttributionBenchOptions, _run, __doc__
)
