"""CPU generation: the transformers backend (shared-prefix reuse, constrained or not) vs plain ``model.generate``.

Why: every CPU user, test and demo generates through the transformers backend, and on a grid cell most of the
cost is prefill of a prompt prefix that every row shares (system prompt, preamble, guidelines, shots). The backend
prefills that prefix once per (adapter, prefix) and starts every batch from a copy of its key/value cache. This
measures, on SmolLM2-135M-Instruct and the same en-it requests of a 4-shot G+S cell and of a 0-shot cell
(``None``, no system prompt), side by side in one process:

(a) plain ``model.generate`` with the same batching (sorted by prompt length, left-padded batches of 8, greedy,
    unconstrained), on the backend's own model object;
(b) the project's backend, unconstrained;
(c) the project's backend with the grid's output regex (xgrammar).

Reported per run: seconds per generation, prefill tokens/s (the requests' prompt tokens over the time up to each
batch's first token, prefix passes included: with reuse, most prompt tokens are never recomputed) and decode
tokens/s (generated tokens, stop token included, over the rest), and whether (a) and (b) gave the same greedy
tokens for every request they share. Every run starts with an empty prefix store (the prefix pass is paid in each
run); the grammar is compiled before timing (a sweep compiles it once per language).

The plain baseline on the 4-shot cell is slow (~1,000-token prompts prefilled in full for every row), so it runs
on the first ``--plain-requests`` requests of that cell (16 by default) to keep the benchmark under 10 minutes on
two cores; its seconds per generation are comparable because batches are full either way.

    python bench/cpu_generation.py [--requests 32] [--plain-requests 16] [--max-new-tokens 48] [--repeats 1]
                                   [--threads N]
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from record import bench_command, print_table, save_record

from gnt.cli.command import Call
from gnt.data.entry import Language

LANG: Language = "it"
CELLS = (("G+S", 4), ("None", 0))
BATCH_SIZE = 8
GOALS = {
    "speedup_4shot": "(b) backend unconstrained >= 3x faster than (a) plain generate per generation, 4-shot cell",
    "constrained_overhead": "(c) constrained at most 15% slower than (b) per generation, each cell",
    "identical": "(a) and (b) give identical greedy tokens for every shared request",
}


def sources(count: int) -> list[str]:
    """The first ``count`` en-it sample sources that are not prompt demonstrations (as the sweep excludes them)."""
    from gnt.data.mgente import load_mgente
    from gnt.paths import SAMPLE_DIR
    from gnt.prompts.grid import PromptGrid

    demos = PromptGrid((LANG,)).demonstration_keys()
    entries = [e for e in load_mgente(SAMPLE_DIR, (LANG,)) if e.source_key not in demos]
    if len(entries) < count:
        raise SystemExit(f"the sample has {len(entries)} usable en-{LANG} rows; asked for {count}")
    return [e.source for e in entries[:count]]


def cell_requests(texts: list[str], config: str, shots: int, constrained: bool, max_new_tokens: int,
                  system_role: bool) -> list:
    """The sweep's requests of one cell (same rendering, constraint and decoding parameters)."""
    from gnt.generation.base import Constraint, DecodingParams, GenerationRequest
    from gnt.output_format import output_regex
    from gnt.prompts.grid import Cell, PromptGrid

    grid = PromptGrid((LANG,))
    cell = Cell(LANG, config, shots)
    constraint = Constraint("regex", output_regex(LANG)) if constrained else None
    params = DecodingParams(max_new_tokens=max_new_tokens)
    return [GenerationRequest.from_messages(grid.render(text, cell, system_role).messages, None, constraint, params)
            for text in texts]


def plain_generate(backend: Any, requests: list, max_new_tokens: int) -> dict[str, Any]:
    """(a): what a user writes with transformers alone, batched like the backend would without prefix reuse."""
    import torch
    from transformers import GenerationConfig

    from gnt.generation.transformers_backend import _StepClock

    model = backend._ensure_model()
    tokenizer = backend.tokenizer
    prompts = [tokenizer(backend.prompt_text(r), add_special_tokens=False)["input_ids"] for r in requests]
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    stops = set(backend._stop_ids)
    config = GenerationConfig(max_new_tokens=max_new_tokens, do_sample=False, top_k=None, temperature=None,
                              top_p=None, eos_token_id=sorted(stops), pad_token_id=tokenizer.pad_token_id)
    tokens: list[list[int]] = [[] for _ in prompts]
    prefill_s = decode_s = 0.0
    generated = 0
    started = time.perf_counter()
    for start in range(0, len(order), BATCH_SIZE):
        batch = order[start : start + BATCH_SIZE]
        width = max(len(prompts[i]) for i in batch)
        pad = tokenizer.pad_token_id
        ids = torch.tensor([[pad] * (width - len(prompts[i])) + prompts[i] for i in batch])
        mask = torch.tensor([[0] * (width - len(prompts[i])) + [1] * len(prompts[i]) for i in batch])
        clock = _StepClock()
        began = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(input_ids=ids, attention_mask=mask, generation_config=config, logits_processor=[clock])
        ended = time.perf_counter()
        prefill_s += clock.times[0] - began
        decode_s += ended - clock.times[0]
        for i, row in zip(batch, out[:, width:].tolist(), strict=True):
            stop_at = next((k for k, t in enumerate(row) if t in stops), None)
            tokens[i] = row if stop_at is None else row[:stop_at]
            generated += len(tokens[i]) + (stop_at is not None)
    seconds = time.perf_counter() - started
    prompt_tokens = sum(len(p) for p in prompts)
    return {"requests": len(requests), "seconds": seconds, "s_per_generation": seconds / len(requests),
            "prompt_tokens": prompt_tokens, "prefill_tokens_per_s": prompt_tokens / prefill_s,
            "generated_tokens": generated, "decode_tokens_per_s": generated / decode_s,
            "prefill_s": prefill_s, "decode_s": decode_s, "tokens": tokens}


def backend_generate(backend: Any, requests: list) -> dict[str, Any]:
    """(b)/(c): the backend from an empty prefix store; its own prefill/decode counters."""
    from gnt.generation.transformers_backend import GenerationStats

    backend._prefixes.clear()
    backend.stats = GenerationStats()
    started = time.perf_counter()
    generations = backend.generate(requests)
    seconds = time.perf_counter() - started
    errors = [g.error for g in generations if g.error]
    if errors:
        raise RuntimeError(f"backend errors: {errors[:3]}")
    stats = backend.stats
    return {"requests": len(requests), "seconds": seconds, "s_per_generation": seconds / len(requests),
            "prompt_tokens": stats.prompt_tokens, "prefilled_tokens": stats.prefilled_tokens,
            "prefill_tokens_per_s": stats.prompt_tokens / stats.prefill_s,
            "generated_tokens": stats.generated_tokens, "decode_tokens_per_s": stats.generated_tokens / stats.decode_s,
            "prefill_s": stats.prefill_s, "decode_s": stats.decode_s, "prefix_builds": stats.prefix_builds,
            "wasted_steps": stats.wasted_steps,
            "stopped": sum(g.finish_reason == "stop" for g in generations),
            "tokens": [list(t) for t in backend.last_token_ids]}


@dataclass
class CpuGenerationOptions:
    """How many requests, how long, how many times, on how many threads."""

    requests: int = field(default=32, metadata={"help": "en-it requests per cell for (b) and (c)"})
    plain_requests: int = field(default=16, metadata={"help": "plain baseline on the 4-shot cell"})
    max_new_tokens: int = field(default=48, metadata={"help": "generation cap of every request"})
    repeats: int = field(default=1, metadata={
        "help": "repeats of (a), (b), (c) per cell (medians over them)"})
    threads: int | None = field(default=None, metadata={
        "help": "torch threads (default: the backend's, i.e. the CPUs this process may use)"})


def _run(call: Call) -> None:
    """Each cell: (a), (b), (c) in alternating order per repeat; medians, the table and the record."""
    args = call.build(CpuGenerationOptions)

    from gnt.generation.base import Constraint
    from gnt.generation.transformers_backend import TransformersBackend, available_cpus
    from gnt.models.smollm import ensure_smollm
    from gnt.output_format import output_regex

    load_before = os.getloadavg()
    total = time.perf_counter()
    backend = TransformersBackend(str(ensure_smollm()), batch_size=BATCH_SIZE, device="cpu", dtype="float32",
                                  cpu_threads=args.threads)
    system_role = backend.supports_system_role()
    texts = sources(args.requests)
    backend.generate(cell_requests(texts[:1], "None", 0, True, 4, system_role))  # load; untimed
    grammars = backend._grammars  # built with the model, which the call above loaded
    if grammars is None:
        raise RuntimeError("the transformers backend has no grammar cache after loading its model")
    compile_started = time.perf_counter()
    grammars.compiled(Constraint("regex", output_regex(LANG)))
    compile_s = time.perf_counter() - compile_started

    cells: dict[str, Any] = {}
    for config, shots in CELLS:
        name = f"{LANG}/{config}/{shots}"
        n_plain = min(args.plain_requests, args.requests) if shots else args.requests
        plain_reqs = cell_requests(texts[:n_plain], config, shots, False, args.max_new_tokens, system_role)
        free = cell_requests(texts, config, shots, False, args.max_new_tokens, system_role)
        constrained = cell_requests(texts, config, shots, True, args.max_new_tokens, system_role)
        runs: dict[str, list[dict]] = {"a_plain": [], "b_backend": [], "c_constrained": []}
        inputs = {"a_plain": plain_reqs, "b_backend": free, "c_constrained": constrained}
        for repeat in range(args.repeats):
            for key in (list(inputs) if repeat % 2 == 0 else list(reversed(inputs))):
                runs[key].append(plain_generate(backend, inputs[key], args.max_new_tokens) if key == "a_plain"
                                 else backend_generate(backend, inputs[key]))
                print(f"  {name} {key}: {runs[key][-1]['s_per_generation']:.3f} s/generation", flush=True)
        identical = all(runs["a_plain"][r]["tokens"] == runs["b_backend"][r]["tokens"][:n_plain]
                        for r in range(args.repeats))
        summary: dict[str, Any] = {}
        for key, results in runs.items():
            summary[key] = {field: round(statistics.median(r[field] for r in results), 4)
                            for field in results[0] if field != "tokens"}
        a, b, c = (summary[k]["s_per_generation"] for k in ("a_plain", "b_backend", "c_constrained"))
        summary["speedup_b_vs_a"] = round(a / b, 2)
        summary["constrained_overhead_c_vs_b"] = round(c / b - 1, 3)
        summary["identical_a_b"] = identical
        summary["identical_requests"] = n_plain
        summary["prompt_tokens_per_request"] = round(summary["b_backend"]["prompt_tokens"] / args.requests, 1)
        cells[name] = summary

    four, zero = (cells[f"{LANG}/{c}/{s}"] for c, s in CELLS)
    met = {
        "speedup_4shot": four["speedup_b_vs_a"] >= 3,
        "constrained_overhead": all(cell["constrained_overhead_c_vs_b"] <= 0.15 for cell in cells.values()),
        "identical": all(cell["identical_a_b"] for cell in cells.values()),
    }
    figures: dict[str, Any] = {
        "model": "SmolLM2-135M-Instruct (float32, CPU)",
        "settings": {"batch_size": BATCH_SIZE, "requests": args.requests, "plain_requests_4shot": args.plain_requests,
                     "max_new_tokens": args.max_new_tokens, "repeats": args.repeats, "greedy": True,
                     "torch_threads": __import__("torch").get_num_threads(), "available_cpus": available_cpus(),
                     "system_role": system_role, "prefix_reuse": backend.prefix_reuse},
        "grammar_compile_s": round(compile_s, 3),
        "cells": cells,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "benchmark_seconds": round(time.perf_counter() - total, 1),
        "goals_met": met,
    }
    if max(figures["load_average_before"][0], figures["load_average_after"][0]) > available_cpus():
        figures["note"] = "cores were busy with other jobs during this run (load average above the CPU count)"
    backend.close()
    rows: list[tuple[str, Any, str]] = []
    for name, cell in cells.items():
        for key, label in (("a_plain", "(a) plain generate"), ("b_backend", "(b) backend"),
                           ("c_constrained", "(c) backend constrained")):
            entry = cell[key]
            rows.append((f"{name} {label} s/gen", entry["s_per_generation"],
                         f"prefill {entry['prefill_tokens_per_s']:.0f} tok/s, decode {entry['decode_tokens_per_s']:.1f}"
                         f" tok/s, {entry['requests']} requests"))
        goal = ">= 3" if name == f"{LANG}/G+S/4" else "info"
        ok = "met" if cell["speedup_b_vs_a"] >= 3 else ("MISSED" if goal != "info" else "")
        rows.append((f"{name} speedup (a)/(b)", cell["speedup_b_vs_a"], f"{goal}  {ok}"))
        ok = "met" if cell["constrained_overhead_c_vs_b"] <= 0.15 else "MISSED"
        rows.append((f"{name} constrained overhead (c)/(b)-1", cell["constrained_overhead_c_vs_b"], f"<= 0.15  {ok}"))
        rows.append((f"{name} identical (a)/(b)", str(cell["identical_a_b"]), f"{cell['identical_requests']} requests"))
    print_table(f"CPU generation (SmolLM2-135M, en-{LANG}, batch {BATCH_SIZE}, {args.max_new_tokens} new tokens)", rows)
    if figures.get("note"):
        print(f"  note: {figures['note']}")
    print(f"record: {save_record('cpu_generation', figures, GOALS)}")


COMMAND = bench_command(
    __name__, __file__, "benchmark: the transformers backend (prefix reuse, constrained or not) vs plain model.generate",
    CpuGenerationOptions, _run, __doc__
)
