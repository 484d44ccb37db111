"""Does alignment beat SFT on what GNT is about? On-policy DPO against its SFT start, chosen on dev, over seeds.

Why: an alignment stage earns its place only if it improves on the SFT model it starts from, on neutral
*translation* (not only the label), without losing the decision or the translation, and not by the luck of one
seed. This runs, on 2 CPU cores with Gemma 3 270M (the demo's model and data):

1. the demo's data build and its learned judge (trained once, validated on the held-out references of every
   language: the instrument, never trained or tuned on the rows it scores);
2. per seed, the demo's SFT (``recipes/gemma270m.yaml seed=S``), and for variants on another build (``BUILDS``:
   one with an align side, sources kept out of SFT for on-policy sampling) the same SFT on that build;
3. per alignment variant and seed, ``train/onpolicy.py`` from its build's SFT adapter (the variants of a seed and
   build share its samples and verdicts), then every SFT and variant scored in one folder on the
   **dev** rows (mGeNTE dev of it and es, and the templated dev rows: the dev split alone is small): Set-N and
   Set-G GNT accuracy judged by the learned judge with inadequate translations counted as failures, label
   balanced accuracy, chrF++;
4. the variant with the best mean dev gain in Set-N GNT accuracy among those whose mean dev deltas pass the
   stage rule (gnt.alignment.stage_choice: the demo's own) is the chosen one; none passing, the best is still
   confirmed on test and the record says alignment did not earn its place on dev;
5. only the chosen variant, per seed, against its SFT start on the held-out **test** rows of it and es, the
   same two origins as on dev (mGeNTE test rows and templated test rows): paired bootstrap (rows resampled) of each
   difference over both origins, with the goals below, and over each origin apart (``paired_by_origin``; the goal
   on the mGeNTE rows alone, the only reading of the records up to de4e3b3, stays as ``gnt_n_adequate_mgente``).
   The templated test rows joined the comparison before this bench scored any model on them: the 59 mGeNTE Set-N
   test rows alone could not tell a gain of two rows from noise. A variant on another build is also
   compared with the demo's SFT (``paired_vs_demo_sft``): its SFT start learnt from fewer sources, and the
   demo would adopt it only if the pair beats the SFT it trains now. The templated test rows with a gender-marked
   adjective are also read without the judge (``adjective_forms``, gnt.report.adjective_forms): the form the
   templated suite's classifier finds, per stage, with a paired bootstrap of the right form's share; the dev rows
   of every variant too (``dev_adjective_forms_mean_delta``), beside the judge's figures the choice reads. The judge
   is a 270M model with known blind spots on those rows; the lexicon forms are not in doubt.

Every variant tried is kept in the record with its settings, seeds and dev figures, and the commit.

    python bench/alignment_cpu.py                               # everything, 2 to 2.5 hours on 2 cores
    python bench/alignment_cpu.py seeds=42 variants=k4          # one seed, one variant (a smoke run)

From a clean clone on 2 cores (the 2a0dcfe run's own run records): the judge's training about 14 minutes, then per
seed its SFT about 11, sampling about 7, the two variants' DPO about 5 and their dev scoring about 4, and the test
scoring of the chosen variant about 7 per seed. At 56877e5 (one variant, 128 prompts) sampling took about 16
minutes per seed and DPO about 6; the whole run 2 h 23 min. At 807b872, with the judge, SFT and two variants' runs
found finished, the sampled-twins variant's rounds (about 100 more prompts sampled per seed, 30 DPO steps) and the
dev scoring took 61 minutes. A rerun reuses every finished run and cached generation.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from record import bench_command, conclude, module_at

from gnt.alignment.stage_choice import (
    ORIGINS,
    StageRule,
    delta,
    model_figures,
    origin_delta,
    origin_figures,
    origin_of,
    setn_misses,
)
from gnt.cli.command import Call
from gnt.evaluation.discovery import adapter_name
from gnt.io import read_json
from gnt.report.adjective_forms import RIGHT_FORM, paired_forms, read_entries, readings, summary

ROOT = Path(__file__).resolve().parent.parent
BUILD = module_at(ROOT / "scripts" / "demo.py", "gnt_demo").MODELS["gemma"].build
"""The demo's build flags (scripts/demo.py, profile gemma): its translation rows and the judge rows of it, es, de, el."""
JUDGE, SFT, ONPOLICY, EVAL = ("recipes/judge-gemma270m.yaml", "recipes/gemma270m.yaml", "recipes/gemma270m-onpolicy.yaml",
                              "recipes/eval-gemma270m.yaml")
SAME_LABEL = ("pairing=same_label", "prompts_per_round=192", "dpo.max_steps=16", "dpo.save_steps=16")
MGENTE_SAME_LABEL = ("templated=false", "pairing=same_label", "prompts_per_round=128", "dpo.max_steps=16",
                     "dpo.save_steps=16", "dpo.learning_rate=5e-5")
BUILDS: dict[str, tuple[str, ...]] = {"demo": (), "align15": ("align_fraction=0.15",)}
"""Data builds a variant may start from, as flags over the demo's. ``align15`` moves 15% of all English sources
(about a fifth of the training ones; test and dev stay) to the align side: SFT never sees them, and on-policy
sampling with ``prompt_split=align`` draws its prompts from them."""
VARIANT_BUILD = {"align15_k4": "align15"}
"""The build of each variant not on the demo's."""
VARIANTS: dict[str, tuple[str, ...]] = {
    "k4": (),
    "k4_dpo16": ("dpo.max_steps=16", "dpo.save_steps=16"),
    "k8": ("samples_per_prompt=8",),
    "k8_r2": ("samples_per_prompt=8", "rounds=2"),
    "setn_k8": ("samples_per_prompt=8", "prompt_sets=Set-N"),
    "setn_k8_anchor": ("samples_per_prompt=8", "prompt_sets=Set-N", "anchor_pairs=16", "dpo.max_steps=12",
                       "dpo.save_steps=12"),
    "setn_k8_p128_anchor24": ("samples_per_prompt=8", "prompt_sets=Set-N", "prompts_per_round=128", "anchor_pairs=24",
                              "dpo.max_steps=22", "dpo.save_steps=22"),
    "setn_k8_p128_anchor24_form": ("samples_per_prompt=8", "prompt_sets=Set-N", "prompts_per_round=128",
                                   "anchor_pairs=24", "dpo.max_steps=22", "dpo.save_steps=22",
                                   "rewards.adjective_form=1.0"),
    "setn_k8_p128_anchor48_form": ("samples_per_prompt=8", "prompt_sets=Set-N", "prompts_per_round=128",
                                   "anchor_pairs=48", "dpo.max_steps=30", "dpo.save_steps=30",
                                   "rewards.adjective_form=1.0"),
    "setn_k8_p128_twins24_form": ("samples_per_prompt=8", "prompt_sets=Set-N", "prompts_per_round=128",
                                  "anchor_pairs=24", "anchor_twins=true", "dpo.max_steps=22", "dpo.save_steps=22",
                                  "rewards.adjective_form=1.0"),
    "setn_k8_p128_anchor24_form_sampled_twins": ("samples_per_prompt=8", "prompt_sets=Set-N", "prompts_per_round=128",
                                                 "anchor_pairs=24", "sample_twins=true", "dpo.max_steps=30",
                                                 "dpo.save_steps=30", "rewards.adjective_form=1.0"),
    "align15_k4": ("prompt_split=align",),
    "mgente_k8": ("templated=false", "samples_per_prompt=8"),
    "mgente_k8_r2": ("templated=false", "samples_per_prompt=8", "rounds=2"),
    "mgente_k8_p128": ("templated=false", "samples_per_prompt=8", "prompts_per_round=128", "dpo.max_steps=16",
                       "dpo.save_steps=16"),
    "mgente_k8_chrf": ("templated=false", "samples_per_prompt=8", "rewards.chrf=1.0", "dpo.max_steps=16",
                       "dpo.save_steps=16"),
    "mgente_k8_target_chrf": ("templated=false", "samples_per_prompt=8", "rewards.target_chrf=1.0",
                              "dpo.max_steps=16", "dpo.save_steps=16"),
    "same_label_lr1e-4": (*SAME_LABEL, "dpo.learning_rate=1e-4"),
    "same_label_lr5e-5": (*SAME_LABEL, "dpo.learning_rate=5e-5"),
    "mgente_same_label": MGENTE_SAME_LABEL,
    "mgente_sft": (*MGENTE_SAME_LABEL, "dpo.loss_type=[sigmoid,sft]", "dpo.loss_weights=[1.0,1.0]"),
    "mgente_verdict": ("templated=false", "pairing=verdict", "prompts_per_round=128", "dpo.max_steps=8",
                       "dpo.save_steps=8", "dpo.learning_rate=5e-5", "dpo.loss_type=[sigmoid,sft]",
                       "dpo.loss_weights=[1.0,1.0]"),
}
"""On-policy settings tried, as overrides of recipes/gemma270m-onpolicy.yaml (its own: 64 prompts x 4 samples at
temperature 0.8, the three rewards, best against worst of all samples, 8 DPO steps of 8 pairs at 5e-5). ``k8``
samples 8 per prompt on the same prompts (its first 4 are k4's, served from the cache): from the 150-step SFT
every sample has the right label, so a pair needs two samples the judge or the adequacy bar tell apart, and in the
demo's round at f2c8d4f 51 of 64 prompts were ties. ``align15_k4`` is the demo's round on the ``align15`` build,
sampling the sources its SFT never saw: on its own training sources the 150-step SFT's samples had the right
label every time and passed the adequacy bar 98% of the time (k4's counts at bd99f57; three quarters of them
templated), so pairs came mostly from the judge's verdict. The
``same_label`` ones pair samples of the right label only (the translation is all a pair differs in), from 192
prompts, over 16 steps. ``mgente_same_label`` samples mGeNTE training entries only (no templated ones): in the
same_label run at 08f87cd, one seed's pairs were mostly templated Set-G ones whose preferred gendered forms pulled
its Set-N neutral rewrites back (read from its pair files). ``mgente_sft`` adds a supervised term on the chosen
translation to the DPO loss (TRL's ``sft`` loss beside ``sigmoid``, equal weights): in the mgente_same_label run at
3d08d6a one seed's aligned model, trained four epochs over its 34 pairs, stopped ending its answers, and the
likelihood of the chosen samples (each one ends its answer) is what that term holds up. It shares
mgente_same_label's samples and verdicts. ``mgente_verdict`` pairs those same samples by the judge's verdict
(``pairing: verdict``: both sides adequate with the right label, one the judge accepts against one it rejects) with
the same supervised term, 8 steps: in the mgente_same_label run at 3d08d6a most pairs set a good translation
against a broken one, and only 8 to 22 prompts per seed gave a Set-N neutral rewrite beside an adequate gendered
one. ``mgente_k8`` is ``k8`` on mGeNTE training prompts only: from the 150-step SFT three quarters of k8's prompts
and half its pairs were templated, its dev gain was on the templated rows alone, and the test rows are all real
sentences (bd99f57 record, read per origin). ``mgente_k8_r2`` adds a second round from the first round's adapter, on
64 other prompts: ``mgente_k8`` gained on the real dev rows and lowered no seed on test, by one or two rows
(91d8086 record). ``mgente_k8_p128`` samples twice the prompts in its one round (128; most of ``mgente_k8``'s
64 are among them, 58 in seed 42, and their samples come from the cache) and trains twice the steps, the same epochs over
about twice the pairs: its 38 or so pairs per seed moved one or two test rows. ``mgente_k8_chrf`` adds the graded
``chrf`` reward to ``mgente_k8``'s samples and verdicts (nothing sampled or judged again): of the 150-step SFT's wrong
Set-N test rows, most are below the adequacy bar, not gendered (``setn_misses`` in the record), and 25 or 26 of
``mgente_k8``'s 64 prompts per seed were ties the binary rewards could not rank. 16 steps, for its
pairs from nearly every prompt. ``mgente_k8_target_chrf`` grades against the target form's references only
(``target_chrf``): in the 5edb3fa record ``chrf`` raised chrF++ on the real dev rows but not their right rows, and
a chosen Set-N sample can owe its grade to Ref-G's wording (docs/alignment.md). ``k8_r2`` is ``k8`` (templated and
mGeNTE prompts) with ``mgente_k8_r2``'s second round: once the test comparison held the templated test rows too,
``mgente_k8_r2`` (real prompts only) left every templated test row of seed 42 as SFT had it, while ``k8``'s dev gain
was on the templated rows (bd99f57 record). ``setn_k8`` is ``k8`` on Set-N prompts alone (mGeNTE and templated):
in k8's rounds of the three seeds (a54d1a2 record, read from their samples), 14 to 17 of about 32 Set-N prompts
gave a pair but only 9 to 11 of about 32 Set-G prompts, and a Set-G pair does not teach a neutral rewrite; the same
sampling then yields about twice the Set-N pairs. A run tries :data:`TRIED_NOW`; the record keeps what earlier runs tried
(``earlier``). ``setn_k8_anchor`` adds 16 Set-G reference pairs per round to ``setn_k8``'s own pairs (its samples
and verdicts, nothing sampled again): Ref-G over Ref-N, both under the GENDERED label, so they move the wording and
not the decision. At ade982f ``setn_k8`` lowered Set-G GNT accuracy on test in every seed (read from the seeds'
reports: stated genders written away, "sono una persona nervosa" for a woman), and no Set-G prompt is sampled to
hold it. 12 DPO steps instead of 8: the same epochs over its own pairs (about 34 per seed) as ``setn_k8``.
``setn_k8_p128_anchor24`` samples twice the Set-N prompts (128) with 24 anchors and 22 steps, the same two epochs
over about twice the rows: at 2a0dcfe ``setn_k8_anchor`` held Set-G on test but its Set-N gain was significant in
two seeds of three (+3.3 points, p 0.088, in seed 2, whose dev gain was 0), and ``setn_k8``'s larger Set-N gain came
from the same 31 to 34 pairs per seed without anchors; more sampled pairs per anchor is the lever left.
``setn_k8_p128_anchor24_form`` is the same with the ``adjective_form`` reward beside the three (its samples and
verdicts are the other's: only the pairs differ). At 56877e5 seed 42 lost Set-G on test where the policy rewrote
the noun and kept a gendered adjective ("Nel mio lavoro in ambito infermieristico, sono aggressiva"), which the
judge calls neutral; on Set-N the same rewrite was rewarded as neutral. Added to :data:`TRIED_NOW` after that
record. ``setn_k8_p128_anchor48_form`` doubles its anchors (48, 30 steps: the same two epochs over the larger
round): at d8ca842 the form reward was chosen on dev and raised Set-N GNT on test in every seed (significantly in
two), but seed 42 lost Set-G by 9 points, read from its outputs as the neutral adjective form ("soy una persona
nerviosa") written for speakers the source genders ("she confessed"). The anchors are that contrast (Ref-G "soy
nerviosa" over Ref-N), and 24 of them stood against 65 to 76 sampled Set-N pairs. At 8174853 they held Set-G on
dev and gave back most of the Set-N gain (seed 2's Set-N adjectives went back to the masculine): the policy moved
along one line between the neutral and the gendered form. ``setn_k8_p128_twins24_form`` draws its 24 anchors from the Set-G twins of the
round's own templated Set-N pairs instead (``anchor_twins``): "she said" beside "they said", the same sentence
otherwise, so the source's gender cue is all the sampled pair and its anchor differ in. At e9a61dc (run, not
recorded: its record would have dropped the 48-anchor variant's dev readings the docs cite) it lowered Set-N on dev
in one seed and gave no Set-N or classifier gain (recorded at 807b872).
``setn_k8_p128_anchor24_form_sampled_twins`` is the chosen variant plus the policy's own samples of those twins
(``sample_twins``: about 100 Set-G prompts per seed beside the 128 Set-N ones, ranked by the same rewards, where
``adjective_form`` now rules out the neutral form for a stated gender too), 30 steps for the larger round: the
spill shows in the policy's own "she said" outputs, where an anchor only shows the reference. At 807b872 both twin
variants gave Set-G more and Set-N less than the form reward alone, on dev, by the judge and the classifier alike;
the form variant stays chosen."""
TRIED_NOW = ["setn_k8_p128_anchor24_form", "setn_k8_p128_twins24_form", "setn_k8_p128_anchor24_form_sampled_twins"]
TESTS = {"gnt_n_adequate": ("gnt_accuracy_adequate", "Set-N"), "gnt_g_adequate": ("gnt_accuracy_adequate", "Set-G"),
         "label_bal": ("label_balanced_accuracy", None),
         "chrf": ("chrf", None), "label_g": ("label_accuracy", "Set-G"), "label_n": ("label_accuracy", "Set-N")}
GOALS = {
    "gnt_n_adequate": "Set-N GNT accuracy (learned judge, inadequate = wrong) on the test rows of both origins: "
                      "higher, paired bootstrap p < 0.05, in every seed",
    "gnt_n_adequate_mgente": "the same on the mGeNTE test rows alone",
    "gnt_g_adequate": "Set-G GNT accuracy (learned judge, inadequate = wrong) on the test rows of both origins: not "
                      "significantly lower in any seed (a Set-N gain bought by writing stated genders away is none)",
    "label_bal": "label balanced accuracy: not significantly lower in any seed",
    "chrf": "chrF++ within 1 point of SFT's in every seed",
}


def run_command(command: list[str]) -> None:
    """Run one of the project's commands from the checkout's root, printed first; a failure stops the bench."""
    print("$ " + " ".join(command), flush=True)
    subprocess.run(command, cwd=ROOT, check=True)


def python(*words: str) -> list[str]:
    return [sys.executable, *words]


def data_and_judge(out: Path) -> tuple[Path, Path, Path]:
    """The demo's data build and its learned judge in the work folder ``out`` (each kept when already there:
    ``train/sft.py`` resumes a finished run as done), the judge validated on the held-out references of every
    language; returns the data folder, the judge's run folder and its validation JSON."""
    data, judge, validation = out / "data", out / "runs" / "judge", out / "judge" / "validation.json"
    if not (data / "manifest.json").is_file():
        run_command(python("data/build.py", f"out_dir={data}", *BUILD))
    run_command(python("train/sft.py", JUDGE, f"data_dir={data}", f"output_dir={judge}"))
    run_command(python("eval/judge.py", "validate", JUDGE, f"judge_adapter={judge}",
                       f"data={data / 'eval' / 'judge_references.jsonl'}", f"validation={validation}"))
    return data, judge, validation


def validate_on_templated(out: Path, judge: Path) -> Path:
    """The judge validated apart on the held-out templated Set-N references (it, es): most Set-N dev rows the
    stage choice reads are templated, and the mGeNTE references do not measure the judge there."""
    validation = out / "judge" / "validation_templated.json"
    run_command(python("eval/judge.py", "validate", JUDGE, f"judge_adapter={judge}",
                       f"data={out / 'data' / 'eval' / 'templated_test.jsonl'}", f"validation={validation}"))
    return validation


def build_of(variant: str) -> str:
    return VARIANT_BUILD.get(variant, "demo")


def data_of(out: Path, build: str) -> Path:
    """The data folder of a build (the demo's is ``data_and_judge``'s), built when not there yet."""
    if build == "demo":
        return out / "data"
    data = out / f"data-{build}"
    if not (data / "manifest.json").is_file():
        run_command(python("data/build.py", f"out_dir={data}", *BUILD, *BUILDS[build]))
    return data


def sft_of(out: Path, build: str, seed: int) -> Path:
    return out / "runs" / (f"sft-{seed}" if build == "demo" else f"sft-{build}-{seed}")


@dataclass
class AlignmentCpuOptions:
    """Which seeds and variants, where."""

    seeds: list[int] = field(default_factory=lambda: [42, 1, 2], metadata={"help": "training seeds (>= 3 to compare)"})
    variants: list[str] = field(default_factory=lambda: list(TRIED_NOW), metadata={
        "choices": tuple(VARIANTS), "help": "alignment variants tried on dev"})
    out_dir: str | None = field(default=None, metadata={"help": "work folder (default outputs/bench-alignment)"})


def earlier_runs(path: Path) -> list[dict[str, Any]]:
    """What the record at ``path`` and the runs it kept tried: commit, seeds, variants and their mean dev deltas,
    the choice and its test deltas (every variant ever tried stays in the record)."""
    if not path.is_file():
        return []
    old = read_json(path)
    figures = old.get("figures", {})
    run = {"commit": old.get("environment", {}).get("git", {}).get("commit"), "date": old.get("date"),
           "seeds": figures.get("seeds"), "variants": figures.get("variants"),
           "dev_mean_delta": figures.get("dev_mean_delta"),
           "dev_mean_delta_by_origin": figures.get("dev_mean_delta_by_origin"), "chosen": figures.get("chosen"),
           "alignment_earned_on_dev": figures.get("alignment_earned_on_dev"),
           "test_delta_mean_sd": figures.get("test_delta_mean_sd"), "goals_met": figures.get("goals_met"),
           "dev_adjective_forms_mean_delta": figures.get("dev_adjective_forms_mean_delta"),
           "test_adjective_forms_delta_mean_sd": figures.get("test_adjective_forms_delta_mean_sd")}
    return [*figures.get("earlier", []), run]


def reused(folder: Path) -> dict[str, Any] | None:
    """A training run this bench found finished in its work folder (resumed at its last step, so not retrained):
    its commit and when it finished, for the record."""
    record = folder / "gnt_run.json"
    if not record.is_file():
        return None
    run = read_json(record)
    return {"commit": run.get("environment", {}).get("git", {}).get("commit"), "finished": run.get("finished")}


def evaluate(adapters: list[Path], judge: Path, results: Path, split: str) -> None:
    """The grid and the learned judge over the final adapters of training runs (no base), on the mGeNTE and the
    templated rows of ``split``."""
    run_command(python("eval/evaluate.py", EVAL, f"adapters={','.join(map(str, adapters))}", f"out_dir={results}", f"split={split}",
             "include_base=false", "preference=false", "steps=grid,judge", f"judge.judge_adapter={judge}",
             "templated_rows=true", "progress=false"))


def paired(results: Path, sft: str, aligned: str, origin: str | None = None) -> dict[str, dict[str, Any] | None]:
    """Aligned minus SFT on the same rows (those of one origin, or all), per tested figure: difference, 95% CI,
    p-value, pairs."""
    from gnt.report.collect import collect
    from gnt.report.significance import paired_bootstrap, row_values

    def of_origin(values: dict[str, float]) -> dict[str, float]:  # keys are lang|row id|cell
        return {k: v for k, v in values.items() if origin is None or origin_of(k.split("|")[1]) == origin}

    models = {m.name: m for m in collect(results).models}
    out: dict[str, dict[str, Any] | None] = {}
    for key, metric in TESTS.items():
        result = paired_bootstrap(of_origin(row_values(models[sft], metric, None)),
                                  of_origin(row_values(models[aligned], metric, None)))
        out[key] = bootstrap_record(result)
    return out


def bootstrap_record(result: Any) -> dict[str, Any] | None:
    """A paired bootstrap's result as the record keeps it (None: no pairs)."""
    return None if result is None else result.record()


def adjective_forms(results: Path, entries: dict[str, Any], sft: str, aligned: str) -> dict[str, Any]:
    """The judge-free reading of the templated test rows with a gender-marked adjective
    (gnt.report.adjective_forms): per stage, the adjective's forms per set, and aligned minus SFT in the share
    of rows whose adjective takes the right form (Set-N: neutral; Set-G: the stated gender), paired bootstrap."""
    found = readings(results, entries)
    return {"sft": summary(found[sft]), "aligned": summary(found[aligned]),
            "paired": {set_name: bootstrap_record(result)
                       for set_name, result in paired_forms(found[sft], found[aligned]).items()}}


def mean_form_delta(by_seed: dict[str, Any]) -> dict[str, float | None]:
    """Aligned minus SFT in the right adjective form's share, per set, averaged over the seeds of one variant."""
    out: dict[str, float | None] = {}
    for set_name in RIGHT_FORM:
        values = [(seed["adjective_forms"]["paired"][set_name] or {}).get("delta") for seed in by_seed.values()]
        found = [v for v in values if v is not None]
        out[set_name] = statistics.mean(found) if found and len(found) == len(values) else None
    return out


def last_round(folder: Path) -> Path:
    """The aligned adapter of an on-policy run: its last finished round (a variant may ask for more than one)."""
    state = read_json(folder / "onpolicy.json")
    done = [int(n) for n, r in state["rounds"].items() if r.get("status") == "complete"]
    return folder / f"round-{max(done)}"


def _bench(call: Call) -> int:
    args = call.build(AlignmentCpuOptions)
    out = Path(args.out_dir or ROOT / "outputs" / "bench-alignment")
    started = time.perf_counter()
    builds = [b for b in BUILDS if b == "demo" or any(build_of(v) == b for v in args.variants)]
    found_before = {str(p.relative_to(out)): reused(p)
                    for p in [out / "runs" / "judge", *(sft_of(out, b, s) for s in args.seeds for b in builds)]}
    _, judge, validation = data_and_judge(out)  # the judge learns from the demo's build: the align side is in it
    validation_templated = validate_on_templated(out, judge)
    data = {b: data_of(out, b) for b in builds}
    dev: dict[str, dict[str, Any]] = {}
    templated_dev = {b: read_entries(data[b] / "eval" / "templated_dev.jsonl") for b in builds}
    for seed in args.seeds:
        sfts = {b: sft_of(out, b, seed) for b in builds}
        for b, sft in sfts.items():
            run_command(python("train/sft.py", SFT, f"data_dir={data[b]}", f"output_dir={sft}", f"seed={seed}",
                               "report_to=none"))
        aligned = {variant: out / "runs" / f"{variant}-{seed}" for variant in args.variants}
        for variant, folder in aligned.items():  # the variants of a build share its SFT's samples and verdicts
            b = build_of(variant)
            cache = out / "cache" / sfts[b].name
            run_command(python("train/onpolicy.py", ONPOLICY, f"policy={sfts[b]}", f"data_dir={data[b]}",
                               f"output_dir={folder}", f"cache_dir={cache}", f"seed={seed}",
                               f"judge_keys.judge_adapter={judge}", "progress=false", *VARIANTS[variant]))
        results = out / "dev" / f"seed-{seed}"  # every SFT and variant in one folder: each is generated once
        evaluate([*sfts.values(), *(last_round(folder) for folder in aligned.values())], judge, results, "dev")
        found = model_figures(results)
        per_origin = origin_figures(results)
        demo_sft = found[adapter_name(sfts["demo"])]
        for variant, folder in aligned.items():
            sft_name, name = adapter_name(sfts[build_of(variant)]), adapter_name(last_round(folder))
            start, rounds = found[sft_name], read_json(folder / "onpolicy.json")["rounds"]
            dev.setdefault(variant, {})[str(seed)] = {
                "sft": start, "aligned": found[name], "delta": delta(found[name], start),
                "by_origin": {"sft": per_origin[sft_name], "aligned": per_origin[name],
                              "delta": origin_delta(per_origin[name], per_origin[sft_name])},
                "adjective_forms": adjective_forms(results, templated_dev[build_of(variant)], sft_name, name),
                "onpolicy": rounds["1"]["counts"],
                "onpolicy_by_round": {n: r["counts"] for n, r in rounds.items()},
                **({"demo_sft": demo_sft, "delta_vs_demo_sft": delta(found[name], demo_sft)}
                   if build_of(variant) != "demo" else {}),
            }

    def mean_delta(variant: str) -> dict[str, float | None]:
        values = {key: [dev[variant][str(s)]["delta"][key] for s in args.seeds] for key in TESTS}
        return {key: None if None in v else statistics.mean(v) for key, v in values.items()}

    def mean_origin_delta(variant: str) -> dict[str, dict[str, float | None]]:
        out: dict[str, dict[str, float | None]] = {}
        for origin in ORIGINS:
            values = {key: [dev[variant][str(s)]["by_origin"]["delta"][origin][key] for s in args.seeds] for key in TESTS}
            out[origin] = {key: None if None in v else statistics.mean(v) for key, v in values.items()}
        return out

    rule = StageRule()
    earned = [v for v in args.variants if not rule.failures(mean_delta(v))]
    chosen = max(earned or args.variants, key=lambda v: mean_delta(v)["gnt_n_adequate"] or -1.0)
    test: dict[str, Any] = {}
    templated_test = read_entries(data[build_of(chosen)] / "eval" / "templated_test.jsonl")
    for seed in args.seeds:
        sft_dir, aligned_dir = sft_of(out, build_of(chosen), seed), last_round(out / "runs" / f"{chosen}-{seed}")
        demo_sft_dir = sft_of(out, "demo", seed)
        results = out / "test" / f"seed-{seed}"  # one folder per seed, as on dev: SFT is generated once per seed
        evaluate(list(dict.fromkeys([sft_dir, aligned_dir, demo_sft_dir])), judge, results, "test")
        sft_name, aligned_name = adapter_name(sft_dir), adapter_name(aligned_dir)
        found, misses, per_origin = model_figures(results), setn_misses(results), origin_figures(results)
        test[str(seed)] = {"sft": found[sft_name], "aligned": found[aligned_name],
                           "paired": paired(results, sft_name, aligned_name),
                           "by_origin": {"sft": per_origin[sft_name], "aligned": per_origin[aligned_name]},
                           "paired_by_origin": {o: paired(results, sft_name, aligned_name, o) for o in ORIGINS},
                           "setn_misses": {"sft": misses[sft_name], "aligned": misses[aligned_name]},
                           "adjective_forms": adjective_forms(results, templated_test, sft_name, aligned_name)}
        if demo_sft_dir != sft_dir:
            test[str(seed)] |= {"demo_sft": found[adapter_name(demo_sft_dir)],
                                "paired_vs_demo_sft": paired(results, adapter_name(demo_sft_dir), aligned_name)}

    def significant_gain(test_of_seed: dict[str, dict[str, Any] | None]) -> bool:
        result = test_of_seed["gnt_n_adequate"] or {}
        return result.get("delta", 0) > 0 and result["p"] < 0.05

    def significant_loss(result: dict[str, Any] | None) -> bool:
        return (result or {}).get("delta", 0) < 0 and (result or {})["p"] < 0.05

    met = {
        "gnt_n_adequate": all(significant_gain(t["paired"]) for t in test.values()),
        "gnt_n_adequate_mgente": all(significant_gain(t["paired_by_origin"]["mgente"]) for t in test.values()),
        "gnt_g_adequate": all(not significant_loss(t["paired"]["gnt_g_adequate"]) for t in test.values()),
        "label_bal": all(not significant_loss(t["paired"]["label_bal"]) for t in test.values()),
        "chrf": all(abs((t["paired"]["chrf"] or {}).get("delta", 99)) <= 1.0 for t in test.values()),
    }
    def delta_spread(origin: str | None = None) -> dict[str, dict[str, float]]:
        tests = [t["paired"] if origin is None else t["paired_by_origin"][origin] for t in test.values()]
        return {key: {"mean": statistics.mean(p[key]["delta"] for p in tests),
                      "sd": statistics.pstdev(p[key]["delta"] for p in tests)}
                for key in TESTS if all(p[key] for p in tests)}

    spread = delta_spread()
    final = "aligned" if chosen in earned else "sft"  # where the demo's chain ends, by the same rule

    def over_seeds(stage: str, origin: str | None = None) -> dict[str, dict[str, float]]:
        figures = [t[stage] if origin is None else t["by_origin"][stage][origin] for t in test.values()]
        values = {key: [f[key] for f in figures] for key in TESTS}
        return {key: {"mean": statistics.mean(v), "sd": statistics.pstdev(v), "min": min(v), "max": max(v)}
                for key, v in values.items() if None not in v}

    record = {
        "seeds": args.seeds, "final_stage": final,
        "test_mean_sd": {"sft": over_seeds("sft"), "aligned": over_seeds("aligned")},
        "test_mean_sd_by_origin": {o: {"sft": over_seeds("sft", o), "aligned": over_seeds("aligned", o)}
                                   for o in ORIGINS},
        "variants": {v: list(VARIANTS[v]) for v in args.variants},
        "builds": {b: list(BUILDS[b]) for b in builds},
        "variant_builds": {v: build_of(v) for v in args.variants},
        "recipes": {"judge": JUDGE, "sft": SFT, "onpolicy": ONPOLICY, "eval": EVAL, "build": list(BUILD)},  # the demo's build flags
        "judge_validation": read_json(validation),
        "judge_validation_templated": read_json(validation_templated),
        "dev": dev, "dev_mean_delta": {v: mean_delta(v) for v in args.variants},
        "dev_mean_delta_by_origin": {v: mean_origin_delta(v) for v in args.variants}, "chosen": chosen,
        "dev_adjective_forms_mean_delta": {v: mean_form_delta(dev[v]) for v in args.variants},
        "alignment_earned_on_dev": chosen in earned, "choice_rule": {
            "rule": asdict(rule), "text": "best mean dev gain in Set-N GNT accuracy (inadequate = wrong) among the "
            "variants whose mean dev deltas pass the rule (gnt.alignment.stage_choice.StageRule); none passing: the "
            "best of all, reported as not earned"},
        "test": test, "test_delta_mean_sd": spread,
        "test_delta_mean_sd_by_origin": {o: delta_spread(o) for o in ORIGINS},
        "test_adjective_forms_delta_mean_sd": {
            set_name: {stat: fn([t["adjective_forms"]["paired"][set_name]["delta"] for t in test.values()])
                       for stat, fn in (("mean", statistics.mean), ("sd", statistics.pstdev))}
            for set_name in RIGHT_FORM if all(t["adjective_forms"]["paired"][set_name] for t in test.values())},
        "goals_met": met,
        "runs_found_finished": {k: v for k, v in found_before.items() if v is not None},
        "earlier": earlier_runs(ROOT / "bench" / "results" / "alignment_cpu.json"),
        "seconds": round(time.perf_counter() - started, 1),
    }
    rows = [(f"{key}: aligned - SFT (mean, sd over seeds)", f"{v['mean']:+.4f} ± {v['sd']:.4f}", "")
            for key, v in spread.items()]
    rows += [(f"goal: {GOALS[k]}", "met" if ok else "NOT met", "") for k, ok in met.items()]
    conclude("alignment_cpu", f"on-policy alignment vs SFT, chosen variant {chosen}, seeds {args.seeds}", rows,
             record, GOALS, [GOALS[k] for k, ok in met.items() if not ok])
    return 0


COMMAND = bench_command(
    __name__, __file__, "benchmark: on-policy alignment against its SFT start, chosen on dev, over seeds",
    AlignmentCpuOptions, _bench, __doc__
)
