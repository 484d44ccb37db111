"""Learned-judge throughput: label scoring against schema-constrained generation, same model, format and items.

Why: a judge cheap enough to score every checkpoint must not generate. With label scoring the verdict is
the most probable of the format's label replies (one prompt pass per item plus a few reply tokens), where generation
decodes the JSON reply token by token under the schema. Both run here on the same backend (the model loaded once,
the judge adapter merged into it when one is given), the same prompts (the learned judge's compact prompt of the format,
no exemplars) and the same items: the Ref-G and Ref-N references of the bundled sample, every language, as long
as real translations. Each timed run starts from an empty judgment cache; generation is timed on a subset (it is
the slow side) and both are reported as judgments per second. A third timing bounds the speedup any one-pass
scorer can reach: the same generation requests stopped after their first token (the prompt pass and one
constrained step). Label scoring costs at least that prompt pass, so generation's time over it is the most scoring
could gain over this generation; ``decoded_tokens_per_item`` says what the rest of generation's time decodes. The
verdicts of the two are compared as a check that they judge the same thing (with a trained adapter they should
mostly agree; with the bare base model they are noise, and only the speed means something).

    python bench/learned_judge_throughput.py [adapter=runs/judge-gemma270m] [items=192] [generated=48]
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from record import bench_command, conclude

from gnt.cli.command import Call

GOALS = {
    "judgments_per_s": "label scoring judges >= 20 translations per second (Gemma 3 270M, 2 CPU cores)",
    "speedup": "label scoring >= 10x the judgments per second of schema-constrained generation",
}


@dataclass
class LearnedJudgeThroughputOptions:
    """Which model and adapter, how many items, how many times."""

    model: str = field(default="gnt:gemma", metadata={"help": "the judge's base model (hub id, folder or alias)"})
    adapter: str | None = field(default=None, metadata={
        "help": "a trained judge adapter (merged into the base; null: the base model alone, speed only)"})
    dtype: str = field(default="bfloat16", metadata={"help": "model dtype, as the judge recipe runs it"})
    format: str = field(default="MONO-L", metadata={"help": "the judge format (an L format: MONO-L or CROSS-L)"})
    items: int = field(default=192, metadata={"help": "items judged by label scoring per repeat"})
    generated: int = field(default=48, metadata={"help": "items judged by generation per repeat (a subset)"})
    batch_size: int = field(default=32, metadata={"help": "rows per forward pass (both ways)"})
    repeats: int = field(default=2, metadata={"help": "repeats (medians over them)"})


def sample_items(count: int) -> list:
    """``count`` (source, reference) items of the bundled sample, the four languages in turn."""
    from gnt.data.entry import LANGUAGES
    from gnt.data.mgente import load_mgente
    from gnt.judge.llm_judge import JudgeItem
    from gnt.paths import SAMPLE_DIR

    entries = load_mgente(SAMPLE_DIR, LANGUAGES)
    pool: dict[str, list] = {lang: [] for lang in LANGUAGES}
    for entry in entries:
        pool[entry.lang] += [JudgeItem(entry.lang, entry.source, entry.ref_g),
                             JudgeItem(entry.lang, entry.source, entry.ref_n[0])]
    return [pool[LANGUAGES[i % 4]][i // 4] for i in range(count)]


def judged(backend: Any, scoring: bool, items: list, fmt: str) -> tuple[float, list]:
    """Seconds to judge ``items`` with a fresh cache, and the judgments."""
    from gnt.judge.llm_judge import JudgeCache, JudgeSettings, LLMJudge
    from gnt.judge.training_rows import LEARNED_PROMPTS_DIR

    settings = JudgeSettings(format=fmt, label_scoring=scoring, n_exemplars=0, max_new_tokens=24,
                             prompts_dir=str(LEARNED_PROMPTS_DIR), chunk_size=len(items))
    judge = LLMJudge(backend, settings, JudgeCache())
    for lang in {i.lang for i in items}:
        judge.prompt(lang)  # prompt files are read once per judge: not part of the judging time
    started = time.perf_counter()
    results = judge.judge(items)
    return time.perf_counter() - started, results


def prompt_pass(backend: Any, items: list, fmt: str) -> tuple[float, float]:
    """Seconds to run the generation requests of ``items`` stopped after one new token (their prompt pass and
    one constrained step), and the mean number of tokens full generation decodes per item."""
    from dataclasses import replace

    from gnt.judge.llm_judge import JudgeCache, JudgeSettings, LLMJudge
    from gnt.judge.training_rows import LEARNED_PROMPTS_DIR

    settings = JudgeSettings(format=fmt, label_scoring=False, n_exemplars=0, max_new_tokens=24,
                             prompts_dir=str(LEARNED_PROMPTS_DIR), chunk_size=len(items))
    judge = LLMJudge(backend, settings, JudgeCache())
    full = [judge.request(item, 0) for item in items]
    decoded = [g.n_tokens or 0 for g in backend.generate(full)]
    first = [replace(r, params=replace(r.params, max_new_tokens=1)) for r in full]
    started = time.perf_counter()
    backend.generate(first)
    return time.perf_counter() - started, sum(decoded) / max(1, len(decoded))


def _run(call: Call) -> None:
    args = call.build(LearnedJudgeThroughputOptions)
    from gnt.generation.transformers_backend import TransformersBackend
    from gnt.models.aliases import resolve_model

    backend = TransformersBackend(resolve_model(args.model), dtype=args.dtype, batch_size=args.batch_size,
                                  merged_adapter=args.adapter)
    items = sample_items(args.items)
    subset = items[: args.generated]
    judged(backend, True, items[:8], args.format)  # warm-up: model load, kernels, grammar compiler
    judged(backend, False, items[:4], args.format)
    scoring_rates, generation_rates, prompt_rates, agreements, errors = [], [], [], [], 0
    decoded = 0.0
    for repeat in range(args.repeats):
        seconds, scored = judged(backend, True, items, args.format)
        scoring_rates.append(len(items) / seconds)
        seconds, generated = judged(backend, False, subset, args.format)
        generation_rates.append(len(subset) / seconds)
        seconds, decoded = prompt_pass(backend, subset, args.format)
        prompt_rates.append(len(subset) / seconds)
        errors += sum(not j.ok for j in scored) + sum(not j.ok for j in generated)
        pairs = [(a.label, b.label) for a, b in zip(scored, generated, strict=False) if a.ok and b.ok]
        agreements.append(sum(a == b for a, b in pairs) / max(1, len(pairs)))
        print(f"  repeat {repeat + 1}: scoring {scoring_rates[-1]:.1f}/s, generation {generation_rates[-1]:.2f}/s, "
              f"generation's prompt pass {prompt_rates[-1]:.1f}/s", flush=True)
    scoring, generation = statistics.median(scoring_rates), statistics.median(generation_rates)
    prompt_only = statistics.median(prompt_rates)
    labels = sorted({j.label for j in scored if j.ok})
    figures: dict[str, Any] = {
        "model": args.model,
        "adapter": args.adapter,
        "dtype": args.dtype,
        "format": args.format,
        "items": args.items,
        "generated_items": args.generated,
        "repeats": args.repeats,
        "scoring_judgments_per_s": round(scoring, 2),
        "generation_judgments_per_s": round(generation, 3),
        "speedup": round(scoring / generation, 1),
        "generation_prompt_pass_judgments_per_s": round(prompt_only, 2),
        "speedup_bound_one_pass": round(prompt_only / generation, 1),
        "decoded_tokens_per_item": round(decoded, 1),
        "agreement_scoring_vs_generation": round(statistics.median(agreements), 3),
        "labels_scored": labels,
        "judge_errors": errors,
        "threads": backend.settings()["cpu_threads"],
        "device": backend.device,
    }
    met = {"judgments_per_s": scoring >= 20, "speedup": scoring / generation >= 10}
    figures["goals_met"] = met
    rows = [
        ("label scoring: judgments/s", figures["scoring_judgments_per_s"], ">= 20"),
        ("generation (JSON schema): judgments/s", figures["generation_judgments_per_s"], "baseline"),
        ("speedup", figures["speedup"], ">= 10"),
        ("generation stopped after its first token: judgments/s", figures["generation_prompt_pass_judgments_per_s"],
         "the prompt pass"),
        ("most a one-pass scorer can gain over this generation", figures["speedup_bound_one_pass"], "a bound"),
        ("tokens full generation decodes per item", figures["decoded_tokens_per_item"], "JSON reply"),
        ("agreement of the two verdicts", figures["agreement_scoring_vs_generation"], "a check, no goal"),
        ("judge errors", errors, "0"),
    ]
    missed = [GOALS[name] for name, ok in met.items() if not ok]
    where = f"{Path(args.adapter).name} merged into " if args.adapter else ""
    conclude("learned_judge_throughput", f"learned judge throughput ({where}{args.model}, {args.dtype})", rows,
             figures, GOALS, missed)


COMMAND = bench_command(
    __name__, __file__, "benchmark: a learned judge's label scoring against schema-constrained generation",
    LearnedJudgeThroughputOptions, _run, __doc__
)
