"""The learned judge's labels scored in bfloat16, in float32, or in bfloat16 with near ties scored again in float32:
accuracy, speed, and whether a verdict depends on the batch it was scored in.

    python bench/judge_scoring_dtype.py         # the float32 judges of bench/judge_dtype.py (seeds 42, 1, 2), ~13 min
    python bench/judge_scoring_dtype.py judges=outputs/demo-gemma/runs/judge data=outputs/demo-gemma/data

Why: label scoring reads P(NEUTRAL) from one forward pass per translation, batched with other translations, padded
on the left to the longest of them. In bfloat16 a matrix product's rounding depends on the shape it runs in, so
the same translation scored beside other translations can get another probability; where it is near 0.5 the
label flips. The alignment records saw it: judgments of the same outputs, cached in two folders, moved a paired
GNT delta by half a point (bench/results/alignment_judge_seeds_ecb3841.json against alignment_judge_seeds.json).
A figure that changes with the batch a cache happened to hold is not one to report. Float32 leaves rounding
differences far below any probability a label could turn on, at a cost in speed; the recipe's recheck
(``recheck_dtype: float32``) pays it only for verdicts within ``recheck_margin`` of a tie.

For each judge adapter and each mode, the judge recipe (recipes/judge-gemma270m.yaml, its adapter, dtype and recheck
overridden) scores the build's dev and held-out references (``eval/judge_dev_references.jsonl``,
``eval/judge_references.jsonl``) twice from an empty cache, at two batch sizes (different neighbours and padding
for almost every row):

- accuracy: binary accuracy against the labels known by construction, per split, as ``eval/judge.py validate``
  counts it (the same references, the first batch size);
- batch invariance: the largest change of a reference's P(NEUTRAL) between the two batch sizes, and how many
  labels changed;
- against float32 (the reference mode): labels that differ from its labels, and the largest change of P(NEUTRAL)
  on the dev references (what a recheck margin has to exceed; the margin is not chosen on the held-out split);
- speed: references judged per second at the first batch size (model loads excluded; each judge timed alone).

The judges are trained by ``bench/judge_dtype.py variants=fp32`` (its work folder is the default here); a missing
one is one error naming that command.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge_runs import mean_sd
from record import bench_command, conclude

from gnt.cli.command import Call

RECIPE = "recipes/judge-gemma270m.yaml"
SPLITS = {"dev": "judge_dev_references.jsonl", "test": "judge_references.jsonl"}
DEFAULT_JUDGES = [f"outputs/bench-judge-dtype/judge-fp32-{seed}" for seed in (42, 1, 2)]


MODES: dict[str, list[tuple[str, Any]]] = {
    "bfloat16": [("dtype", "bfloat16"), ("recheck_dtype", None)],
    "float32": [("dtype", "float32"), ("recheck_dtype", None)],
    "bfloat16+recheck": [("dtype", "bfloat16"), ("recheck_dtype", "float32")],
}
"""How the labels are scored: one dtype throughout, or bfloat16 with near ties scored again in float32 (the
recipe's ``recheck_dtype``, at its ``recheck_margin``). float32 is the reference the others are compared with."""


@dataclass
class JudgeScoringDtypeOptions:
    """Which judges, which build, which scoring modes and batch sizes."""

    judges: list[str] = field(default_factory=lambda: list(DEFAULT_JUDGES), metadata={
        "help": "trained judge adapters (bench/judge_dtype.py variants=fp32 trains the default ones)"})
    data: str = field(default="outputs/bench-judge-dtype/data", metadata={
        "help": "the data build whose eval/ references are judged (the one the judges were trained on)"})
    modes: list[str] = field(default_factory=lambda: list(MODES), metadata={
        "choices": tuple(MODES), "help": "how labels are scored (float32 is the reference of the comparison)"})
    batch_sizes: list[int] = field(default_factory=lambda: [32, 5], metadata={
        "help": "two batch sizes: the references are scored at each, the first also timed and counted"})


def _references(data: Path) -> dict[str, list]:
    """Each split's references with their known labels, less the judge exemplars' sources, as validation reads them."""
    from gnt.data.entry import LANGUAGES
    from gnt.judge.apply import load_rows
    from gnt.judge.prompts import exemplar_source_keys
    from gnt.judge.validation import reference_items

    excluded = exemplar_source_keys(LANGUAGES, None)
    return {split: reference_items(load_rows(data / "eval" / name, LANGUAGES), excluded)
            for split, name in SPLITS.items()}


def _scored(judge_dir: str, mode: str, batch_size: int, items: list) -> tuple[float, list, int]:
    """Seconds to judge ``items`` from an empty cache with the recipe's judge scoring as ``mode`` says, the
    judgments, and how many were scored again (a recheck model is loaded in the warm-up, not in the timing)."""
    from gnt.judge.config import load_judge_recipe
    from gnt.judge.llm_judge import JudgeCache
    from gnt.judge.run import _llm_judge

    overrides = [("judge_adapter", judge_dir), *MODES[mode], ("batch_size", batch_size)]
    judge, backend = _llm_judge(load_judge_recipe(RECIPE, overrides))
    try:
        judge.config.recheck_margin, margin = 0.5, judge.config.recheck_margin
        judge.judge(items[:8])  # warm-up: model load and kernels (the recheck model's too), not timed
        judge.config.recheck_margin = margin
        judge.cache = JudgeCache()  # every reference judged, none read back
        started = time.perf_counter()
        judgments = judge.judge(items)
        return time.perf_counter() - started, judgments, judge.stats.rechecked
    finally:
        judge.close()
        backend.close()


def _neutral(judgment: Any) -> float | None:
    return (judgment.label_probabilities or {}).get("NEUTRAL") if judgment.ok else None


def _changes(first: list, second: list) -> tuple[float, int]:
    """The largest change of P(NEUTRAL) between two judgments of the same references, and the labels changed."""
    deltas = [abs(a - b) for a, b in ((_neutral(x), _neutral(y)) for x, y in zip(first, second, strict=True))
              if a is not None and b is not None]
    labels = sum(x.ok and y.ok and x.label != y.label for x, y in zip(first, second, strict=True))
    return float(f"{max(deltas, default=0.0):.3g}"), labels


def _one(judge_dir: str, mode: str, batch_sizes: list[int], references: dict[str, list]) -> dict[str, Any]:
    from gnt.judge.schema import is_neutral

    refs = [ref for split in SPLITS for ref in references[split]]
    items = [ref.item for ref in refs]
    runs = {size: _scored(judge_dir, mode, size, items) for size in batch_sizes}
    seconds, first, rechecked = runs[batch_sizes[0]]
    change, changed = _changes(first, runs[batch_sizes[1]][1])
    accuracy, start = {}, 0
    for split in SPLITS:
        n = len(references[split])
        right = sum(j.ok and j.neutral == is_neutral(ref.gold)
                    for ref, j in zip(references[split], first[start : start + n], strict=True))
        accuracy[split] = round(100 * right / n, 2)
        start += n
    return {
        "accuracy": accuracy,
        "judged_per_s": round(len(items) / seconds, 2),
        "max_probability_change": change,
        "labels_changed": changed,
        "rechecked": rechecked,
        "near_tie": sum(abs(p - 0.5) < 0.05 for p in map(_neutral, first) if p is not None),
        "errors": sum(not j.ok for size in batch_sizes for j in runs[size][1]),
        "references": len(items),
        "judgments": first,
    }


def _run(call: Call) -> None:
    args = call.build(JudgeScoringDtypeOptions)
    if len(args.batch_sizes) != 2 or len(set(args.batch_sizes)) != 2:
        raise SystemExit(f"batch_sizes={args.batch_sizes}: give two different batch sizes")
    missing = [j for j in args.judges if not (Path(j) / "adapter_config.json").is_file()]
    data = Path(args.data)
    if missing or not (data / "eval" / SPLITS["test"]).is_file():
        raise SystemExit(f"{', '.join(missing) or data}: not there; train the judges first "
                         "(python bench/judge_dtype.py variants=fp32), or name yours with judges=... data=...")
    references = _references(data)
    n_dev = len(references["dev"])
    runs: dict[str, dict[str, Any]] = {mode: {} for mode in args.modes}
    for judge_dir in args.judges:
        for mode in args.modes:
            runs[mode][judge_dir] = _one(judge_dir, mode, args.batch_sizes, references)
        reference = runs.get("float32", {}).get(judge_dir)
        for mode in args.modes:
            run = runs[mode][judge_dir]
            if reference is not None:
                judged = run["judgments"]
                run["vs_float32"] = dict(zip(("max_probability_change", "labels_changed"),
                                             _changes(judged, reference["judgments"]), strict=True))
                run["vs_float32_dev"] = dict(zip(("max_probability_change", "labels_changed"),
                                                 _changes(judged[:n_dev], reference["judgments"][:n_dev]), strict=True))
            print(f"  {mode} {judge_dir}: {({k: v for k, v in run.items() if k != 'judgments'})}", flush=True)
    for by_judge in runs.values():
        for run in by_judge.values():
            del run["judgments"]
    summary = {mode: {
        "dev_accuracy": mean_sd([r["accuracy"]["dev"] for r in by_judge.values()]),
        "test_accuracy": mean_sd([r["accuracy"]["test"] for r in by_judge.values()]),
        "judged_per_s": mean_sd([r["judged_per_s"] for r in by_judge.values()]),
        "max_probability_change": max(r["max_probability_change"] for r in by_judge.values()),
        "labels_changed": sum(r["labels_changed"] for r in by_judge.values()),
        "rechecked": sum(r["rechecked"] for r in by_judge.values()),
        **({"labels_unlike_float32": sum(r["vs_float32"]["labels_changed"] for r in by_judge.values()),
            "max_change_vs_float32_dev": max(r["vs_float32_dev"]["max_probability_change"]
                                             for r in by_judge.values())}
           if "float32" in runs else {}),
    } for mode, by_judge in runs.items()}
    rows = []
    for mode, s in summary.items():
        rows += [(f"{mode}: dev / held-out accuracy % (mean over judges)",
                  f"{s['dev_accuracy']['mean']:.1f} / {s['test_accuracy']['mean']:.1f}", ""),
                 (f"{mode}: references judged per second", f"{s['judged_per_s']['mean']:.1f}", ">= 20"),
                 (f"{mode}: largest P(NEUTRAL) change between batch sizes", s["max_probability_change"], ""),
                 (f"{mode}: labels changed between batch sizes", s["labels_changed"], "0")]
        if "labels_unlike_float32" in s:
            rows.append((f"{mode}: labels unlike float32's / largest dev P change from it",
                         f"{s['labels_unlike_float32']} / {s['max_change_vs_float32_dev']}", ""))
    figures = {"recipe": RECIPE, "data": args.data, "judges": args.judges, "batch_sizes": args.batch_sizes,
               "modes": {mode: dict(MODES[mode]) for mode in args.modes}, "references": {
                   split: len(refs) for split, refs in references.items()}, "runs": runs, "summary": summary}
    goals = {"batch invariance": "no label changes with the batch a reference is scored in",
             "speed": "label scoring judges >= 20 translations per second (2 CPU cores)"}
    missed = [f"{mode}: {s['labels_changed']} labels changed with the batch size"
              for mode, s in summary.items() if s["labels_changed"]]
    missed += [f"{mode}: {s['judged_per_s']['mean']} references per second < 20"
               for mode, s in summary.items() if s["judged_per_s"]["mean"] < 20]
    conclude("judge_scoring_dtype", "learned judge: labels scored in bfloat16, float32, or bfloat16 with a recheck",
             rows, figures, goals, missed)


COMMAND = bench_command(
    __name__, __file__, "benchmark: the learned judge's label scoring in bfloat16, float32, or bfloat16 with near "
    "ties rescored in float32 (accuracy, speed, batch invariance)", JudgeScoringDtypeOptions, _run, __doc__
)
