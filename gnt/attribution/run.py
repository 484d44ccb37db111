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

Contrastive runs write ``.../<cell-safe-name>/contrastive/`` (contrastive.jsonl, contrastive_inputs.csv/json,
contrastive_targets.csv/json, fig_contrastive.png, record.json).
"""

from __future__ import annotations

import contextlib
import random
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gnt.attribution.aggregate import aggregate, write_table
from gnt.attribution.contrastive import LABEL_MODES, contrast_aggregate, contrast_row
from gnt.attribution.gradxinput import PassCounter, explain_batch, length_batches
from gnt.attribution.loading import METHODS, load_model
from gnt.attribution.ranking import part_stats, rank, top_tokens
from gnt.attribution.results import (
    EvalRow,
    ResultError,
    read_result,
    recorded_adapter,
    recorded_grid,
    recorded_model,
)
from gnt.attribution.spans import TARGETS, AttributionInput, build_input
from gnt.filenames import RECORD
from gnt.io import write_json, write_jsonl
from gnt.prompts.grid import Cell, PromptGrid

OUTCOME_KINDS: tuple[str, ...] = ("label", "judged", "gnt")
DEFAULT_CONFIG, DEFAULT_SHOTS = "G+S", 4


def cell_dir_name(cell: str) -> str:
    """File-system name of a cell: ``it/G+S/4`` → ``it_G+S_4``."""
    return Cell.parse(cell).name.replace("/", "_")


def _key(default, meaning: str, choices: Sequence[str] | None = None):
    """A config field that is also a command-line key of ``eval/attribute.py``: its default and its meaning."""
    metadata = {"help": meaning, **({"choices": tuple(choices)} if choices else {})}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata=metadata)
    return field(default=default, metadata=metadata)


_MODEL = "model path or hub id (null: the result's record.json)"
_ADAPTER = "LoRA adapter folder (null: the result's record.json); merged before attribution"
_PROMPTS = "prompt texts folder (null: the result's record, else data/prompts)"
_GRID_SEED = "shot-order seed of the prompt grid (null: the result's record, else 0)"
_DTYPE = "auto (bf16 on GPU, fp32 on CPU), bf16 or fp32"


@dataclass
class AttributionConfig:
    """Everything an attribution run depends on; saved in its record. The fields are the keys of
    ``eval/attribute.py`` (each default and meaning written here once)."""

    result_dir: str
    cells: tuple[str, ...] = _key((), "grid cells such as it/G+S/4 (empty: <lang>/G+S/4 of every language)")
    sets: tuple[str, ...] = _key(("Set-G", "Set-N"), "mGeNTE sets whose rows are explained")
    max_rows: int | None = _key(50, "rows per (set, outcome) sampled for attribution (null: every row)")
    balance_by: str = _key("label", "outcome the row sample is balanced over (judged/gnt need judgments.jsonl)",
                           ("label", "judged", "gnt", "none"))
    method: str = _key("gradxinput", "attribution method (attnlrp needs lxt 2.1 and a Qwen2/Qwen3/Llama model)", METHODS)
    targets: tuple[str, ...] = _key(TARGETS, "what is explained: S_L (the label) and/or S_T (the translation)")
    batch_size: int = _key(8, "rows per backward pass")
    max_batch_tokens: int = _key(32768, "cap on padded tokens per batch")
    device: str = _key("auto", "auto, cpu, cuda or cuda:N")
    dtype: str = _key("auto", _DTYPE)
    model: str | None = _key(None, _MODEL)
    adapter: str | None = _key(None, _ADAPTER)
    data: str | None = _key(None, "evaluation rows (Entry .jsonl or mGeNTE TSV/folder) when generations hold no sources")
    prompts_dir: str | None = _key(None, _PROMPTS)
    grid_seed: int | None = _key(None, _GRID_SEED)
    sample_seed: int = _key(0, "seed of the row sample")
    out_dir: str | None = _key(None, "output root (null: <result>/attribution)")
    top_tokens: int = _key(20, "top tokens kept per row for inspection")
    keep_token_scores: bool = _key(False, "also save every ranked token's score")
    plots: bool = _key(True, "draw the PNG figures")


@dataclass
class ContrastiveConfig:
    """A contrastive run: rows with Ref-G and Ref-N from an evaluation result or straight from the data. The fields
    are the keys of ``eval/attribute.py contrastive=true``."""

    model: str | None = _key(None, _MODEL)
    result_dir: str | None = None
    data: str | None = _key(None, "rows with Ref-G and Ref-N (Entry .jsonl or mGeNTE TSV/folder) instead of a result")
    cells: tuple[str, ...] = _key((), "grid cells such as it/G+S/4 (empty: <lang>/G+S/4 of each language)")
    langs: tuple[str, ...] = _key((), "languages when no cells are given (empty: every language of the rows)")
    sets: tuple[str, ...] = _key(("Set-G", "Set-N"), "mGeNTE sets whose rows are contrasted")
    common_only: bool = _key(True, "only rows of the common set (false: every row with both references)")
    min_refs: int = _key(1, "only rows with at least this many neutral references")
    max_rows: int | None = _key(20, "rows per cell (null: every row)")
    labels: str = _key("matching", "answer labels: matching (NEUTRAL for Ref-N, GENDERED for Ref-G) or one for both",
                       LABEL_MODES)
    adapter: str | None = _key(None, _ADAPTER)
    device: str = _key("auto", "auto, cpu, cuda or cuda:N")
    dtype: str = _key("auto", _DTYPE)
    prompts_dir: str | None = _key(None, _PROMPTS)
    grid_seed: int | None = _key(None, _GRID_SEED)
    sample_seed: int = _key(0, "seed of the row sample")
    out_dir: str | None = _key(None, "output root (null: <result>/attribution, else required)")
    plots: bool = _key(True, "draw the PNG figure")
    extra: dict = field(default_factory=dict)


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


def _provenance(model_path: str, adapter: str | None, model, cell: str, seed: int, prompts: str | None) -> dict:
    """What both kinds of attribution record say about where they ran: the weights, the device and precision they
    were computed on, and the prompt grid (cell, shot seed, texts) that rendered the inputs, so two records can be
    compared only when these agree."""
    parameter = next(model.parameters())
    return {
        "model": model_path,
        "adapter": adapter,
        "device": str(parameter.device),
        "dtype": str(parameter.dtype).replace("torch.", ""),
        "cell": cell,
        "grid": {"seed": seed, "prompts_dir": prompts},
    }


def run_attribution(config: AttributionConfig) -> dict:
    """Run attribution for each requested cell of one evaluation result; returns a summary with output paths."""
    from gnt.attribution.plots import plot_parts, plot_shots
    from gnt.records import environment_record

    if config.method not in METHODS:
        raise ValueError(f"unknown method {config.method!r}; expected one of {METHODS}")
    if config.balance_by not in (*OUTCOME_KINDS, "none"):
        raise ValueError(f"balance_by must be one of {(*OUTCOME_KINDS, 'none')}")
    result = read_result(config.result_dir, config.data)
    cells = list(config.cells) or sorted({f"{Cell.parse(c).lang}/{DEFAULT_CONFIG}/{DEFAULT_SHOTS}" for c in result.cells()})
    missing = [c for c in cells if c not in result.cells()]
    if missing:
        raise ResultError(f"cell(s) {missing} not in {result.directory} (available: {', '.join(result.cells()) or 'none'})")
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
    out_root = Path(config.out_dir) if config.out_dir else result.directory / "attribution"
    model_name = Path(str(adapter or model_path)).name
    summary: dict = {"cells": {}}
    for cell in cells:
        grid = PromptGrid((Cell.parse(cell).lang,), prompts, seed=seed)
        selected, skipped = select_rows(result.rows, cell, config.sets, config.max_rows, config.balance_by, config.sample_seed)
        started = time.perf_counter()
        records, more_skipped, counter = attribute_rows(
            model, tokenizer, grid, selected, method=config.method, targets=config.targets, batch_size=config.batch_size,
            max_batch_tokens=config.max_batch_tokens, top_n=config.top_tokens, keep_token_scores=config.keep_token_scores,
            system_role=result.system_role(),
        )
        seconds = time.perf_counter() - started
        skipped += more_skipped
        out = out_root / cell_dir_name(cell) / config.method
        out.mkdir(parents=True, exist_ok=True)
        write_jsonl(out / "scores.jsonl", records)
        table = aggregate(records, OUTCOME_KINDS)
        write_table(table, out / "aggregate.csv", out / "aggregate.json")
        figures = []
        if config.plots:
            title = f"{model_name} · {cell} · {config.method}"
            figures.append(plot_parts(table, out / "fig_top10.png", metric="top10_rate", title=title))
            figures.append(plot_parts(table, out / "fig_mean.png", metric="mean_score", title=title))
            for kind in OUTCOME_KINDS:
                if any(r["outcome_by"] == kind for r in table):
                    figures.append(plot_parts(table, out / f"fig_top10_{kind}.png", metric="top10_rate", outcome_by=kind, title=title))
            shot_types = {p.name: p.shot_type for p in grid.render("x", Cell.parse(cell)).parts if p.shot_type}
            figures.append(plot_shots(table, out / "fig_shots.png", shot_types=shot_types, title=title))
        n_rows = len({r["id"] for r in records})
        record = {
            "kind": "gnt-align/attribution/1",
            **method_record(config.method),
            **_provenance(model_path, adapter, model, cell, seed, prompts),
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
            "figures": [str(Path(f).name) for f in figures],
            "config": asdict(config),
            "environment": environment_record(),
        }
        write_json(out / RECORD, record)
        summary["cells"][cell] = {"dir": str(out), "rows": n_rows, "skipped": len(skipped), "seconds": round(seconds, 3),
                                  "figures": [str(f) for f in figures]}
    return summary


# ------------------------------------------------------------------------------------------------------------------
# Contrastive
# ------------------------------------------------------------------------------------------------------------------


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

    if config.labels not in LABEL_MODES:
        raise ValueError(f"labels must be one of {LABEL_MODES}")
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
            **_provenance(model_path, adapter, model, cell_name, seed, prompts),
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
