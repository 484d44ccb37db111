"""Does the alignment bench's reading hold under a judge trained with another seed? The same outputs, judged anew.

Why: every GNT figure of ``bench/alignment_cpu.py`` (the dev choice between variants and the aligned − SFT test
deltas) comes from one learned judge, trained once with seed 42. Its held-out accuracy moves by more than a point
between training seeds (``bench/judge_dtype.py``), and on short templated outputs it errs more often still. A gain
that a judge of seed 1 or 2 does not see is the instrument's, not the policy's. This re-judges the outputs the
alignment bench generated, nothing regenerated:

1. each of the alignment bench's results folders (``dev/seed-S``: SFT and every variant; ``test/seed-S``: SFT and
   the chosen variant) is copied without its judgments, and the models the record compares are judged, through one
   judgment cache per judge, by every judge of
   ``bench/judge_dtype.py``'s float32 runs (``judge-fp32-J``, the recipe as it trains, seeds 42, 1, 2), which refills
   its GNT figures (``eval/judge.py RESULTS``); label, chrF++ and adequacy do not depend on the judge;
2. per judge, on dev: each variant's mean aligned − SFT delta over the seeds and the variant the alignment bench's
   rule would choose (stage rule passed, best mean Set-N GNT gain); on test, per seed: aligned − SFT in Set-N and
   Set-G GNT accuracy (inadequate = wrong), paired bootstrap, as the alignment bench records them;
3. per judge against the first one: the share of the test outputs (SFT and the chosen variant) whose GNT value
   (right or wrong) is the same.

The judge of seed 42 here is a retraining of the alignment bench's judge (same recipe, build and seed, a later
commit): its figures must equal the alignment record's (the check that both read the same outputs the same way).

    python bench/alignment_judge_seeds.py align_dir=outputs/bench-align judges_dir=outputs/bench-judge-dtype
"""

from __future__ import annotations

import shutil
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from alignment_cpu import JUDGE, TESTS, last_round, paired, python, run_command, sft_of
from record import bench_command, conclude

from gnt.alignment.stage_choice import StageRule, delta, model_figures
from gnt.cli.command import Call
from gnt.evaluation.discovery import adapter_name
from gnt.io import read_json
from gnt.report.collect import collect
from gnt.report.significance import row_values

ROOT = Path(__file__).resolve().parent.parent
GNT = ("gnt_n_adequate", "gnt_g_adequate")
"""The figures a judge decides; the other tested ones (label, chrF++) are the same under every judge."""


@dataclass
class AlignmentJudgeSeedsOptions:
    """Where the alignment bench's folders and the judges are, which seeds."""

    align_dir: str = field(default="outputs/bench-align", metadata={
        "help": "bench/alignment_cpu.py's work folder (its dev/seed-S and test/seed-S results folders)"})
    judges_dir: str = field(default="outputs/bench-judge-dtype", metadata={
        "help": "bench/judge_dtype.py's work folder (its judge-fp32-J runs)"})
    judge_seeds: list[int] = field(default_factory=lambda: [42, 1, 2], metadata={"help": "judge training seeds"})
    record: str = field(default="bench/results/alignment_cpu.json", metadata={
        "help": "the alignment record whose variants, seeds and chosen variant are re-judged"})
    out_dir: str = field(default="outputs/bench-align-judges", metadata={
        "help": "the re-judged copies (one per judge, split and seed; kept, so a rerun judges nothing twice)"})


def rejudged(source: Path, target: Path, judge: Path, models: list[str], cache: Path) -> Path:
    """``source`` copied to ``target`` without its judgments, its ``models`` judged by ``judge`` through ``cache``
    (one per judge: the references and the outputs two folders share are judged once; a rerun judges nothing)."""
    if not target.is_dir():
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("judgments.jsonl", "judge_validation.json", "*.lock"))
    run_command(python("eval/judge.py", str(target), JUDGE, f"judge_adapter={judge}", f"models={','.join(models)}",
                       f"cache={cache}"))
    return target


def aligned_name(align: Path, variant: str, seed: int) -> str:
    """The results folder's name for a variant's aligned adapter (its last finished round)."""
    return adapter_name(last_round(align / "runs" / f"{variant}-{seed}"))


def verdicts(results: Path, names: list[str]) -> dict[str, float]:
    """Every output's GNT value (1 right, 0 wrong; inadequate = wrong) of ``names``, keyed by model and output."""
    models = {m.name: m for m in collect(results).models}
    found = {}
    for name in names:
        for key in GNT:
            for row, value in row_values(models[name], TESTS[key], None).items():
                found[f"{name}|{key}|{row}"] = value
    return found


def _run(call: Call) -> int:
    args = call.build(AlignmentJudgeSeedsOptions)
    align, judges, out = Path(args.align_dir), Path(args.judges_dir), Path(args.out_dir)
    alignment = read_json(ROOT / args.record)["figures"]
    seeds, variants, chosen = alignment["seeds"], list(alignment["variants"]), alignment["chosen"]
    rule = StageRule()
    per_judge: dict[str, Any] = {}
    outputs: dict[str, dict[str, float]] = {}
    for judge_seed in args.judge_seeds:
        judge = judges / f"judge-fp32-{judge_seed}"
        dev: dict[str, dict[str, Any]] = {variant: {} for variant in variants}
        test: dict[str, Any] = {}
        seen: dict[str, float] = {}
        target = out / f"judge-{judge_seed}"
        cache = target / "judgments.jsonl"  # one per judge: what two folders share is judged once
        for seed in seeds:
            sfts = {v: adapter_name(sft_of(align, alignment["variant_builds"][v], seed)) for v in variants}
            names = {v: aligned_name(align, v, seed) for v in variants}
            folder = rejudged(align / "dev" / f"seed-{seed}", target / "dev" / f"seed-{seed}", judge,
                              sorted({*sfts.values(), *names.values()}), cache)
            found = model_figures(folder)
            for variant in variants:
                dev[variant][str(seed)] = delta(found[names[variant]], found[sfts[variant]])
            compared = [sfts[chosen], names[chosen]]
            folder = rejudged(align / "test" / f"seed-{seed}", target / "test" / f"seed-{seed}", judge, compared, cache)
            result = paired(folder, *compared)
            test[str(seed)] = {key: result[key] for key in GNT}
            seen |= {f"{seed}|{k}": v for k, v in verdicts(folder, compared).items()}
        outputs[str(judge_seed)] = seen
        mean = {v: {key: None if None in (values := [dev[v][str(s)][key] for s in seeds]) else statistics.mean(values)
                    for key in TESTS} for v in variants}
        earned = [v for v in variants if not rule.failures(mean[v])]
        per_judge[str(judge_seed)] = {
            "dev_mean_delta": mean, "passes_rule": earned,
            "would_choose": max(earned or variants, key=lambda v: mean[v]["gnt_n_adequate"] or -1.0),
            "test": test,
            "test_significant_setn_gain": [s for s, t in test.items()
                                           if t["gnt_n_adequate"]["delta"] > 0 and t["gnt_n_adequate"]["p"] < 0.05],
            "test_significant_setg_loss": [s for s, t in test.items()
                                           if t["gnt_g_adequate"]["delta"] < 0 and t["gnt_g_adequate"]["p"] < 0.05],
        }
    first = str(args.judge_seeds[0])
    for judge_seed, seen in outputs.items():  # the test outputs of SFT and the chosen variant, verdict by verdict
        keys = sorted(set(outputs[first]) & set(seen))
        per_judge[judge_seed][f"same_test_verdicts_as_judge_{first}"] = {
            "share": round(sum(outputs[first][k] == seen[k] for k in keys) / len(keys), 4), "outputs": len(keys)}
    reproduced = {s: {key: alignment["test"][s]["paired"][key]["delta"] for key in GNT} for s in map(str, seeds)}
    check = all(abs(per_judge[first]["test"][s][key]["delta"] - reproduced[s][key]) < 1e-9
                for s in reproduced for key in GNT)
    rows = []
    for judge_seed, found in per_judge.items():
        deltas = ", ".join(f"{100 * found['test'][str(s)]['gnt_n_adequate']['delta']:+.1f}" for s in seeds)
        rows.append((f"judge {judge_seed}: dev choice; test Set-N GNT aligned - SFT per seed (significant)",
                     f"{found['would_choose']}; {deltas} ({', '.join(found['test_significant_setn_gain']) or 'none'})",
                     ""))
    figures = {"alignment_record": args.record, "alignment_commit": read_json(ROOT / args.record)["environment"]["git"],
               "judges": {str(j): str(judges / f"judge-fp32-{j}") for j in args.judge_seeds},
               "judge_runs": {str(j): read_json(judges / f"judge-fp32-{j}" / "gnt_run.json")["environment"]["git"]
                              for j in args.judge_seeds},
               "seeds": seeds, "variants": variants, "chosen": chosen, "per_judge": per_judge,
               "judge_42_reproduces_the_record": check}
    goals = {"same reading": "the variant chosen on dev and the seeds with a significant test Set-N gain do not depend "
                             "on the judge's training seed",
             "reproduced": "the judge of the alignment bench's seed reproduces its record's test deltas exactly"}
    missed = []
    if len({found["would_choose"] for found in per_judge.values()}) > 1:
        missed.append("the dev choice depends on the judge's seed")
    if len({tuple(found["test_significant_setn_gain"]) for found in per_judge.values()}) > 1:
        missed.append("the seeds with a significant test Set-N gain depend on the judge's seed")
    if not check:
        missed.append("the seed-42 judge does not reproduce the alignment record's test deltas")
    conclude("alignment_judge_seeds", "alignment figures re-judged by judges of other training seeds", rows, figures,
             goals, missed)
    return 0


COMMAND = bench_command(
    __name__, __file__, "benchmark: the alignment bench's outputs re-judged by judges of three training seeds",
    AlignmentJudgeSeedsOptions, _run, __doc__
)
