"""On-policy preference optimisation: the policy's own samples, scored by GNT rewards, become its DPO pairs.

Off-policy pairs (a reference against a rewritten reference) teach a model text it would never write; the pairs
here are the model's own outputs. A round:

1. **samples** ``samples_per_prompt`` outputs per prompt of ``prompt_split`` (the SFT training sources, or the
   align side a build kept out of SFT; the entries of ``prompt_sets``) from the current policy (the SFT adapter in
   round 1, then each round's result; with ``sample_twins`` also the Set-G twins of its templated Set-N prompts,
   "she said" beside "they said"), at ``temperature``, constrained to the grid's output format, through the
   generation backends and the generation cache (a rerun samples nothing twice);
2. **scores** every sample with the GNT rewards (:mod:`gnt.alignment.rewards`: label, the judge's verdict,
   adequacy), the judge's verdicts through its cache;
3. **pairs** each prompt's best sample (chosen) with its worst (rejected). A group whose best and worst score the
   same (a tie) or whose best sample is no usable translation (an extraction error or below the adequacy
   threshold: nothing worth preferring) gives no pair; both are counted. With ``pairing: same_label`` only the
   samples whose label is right for the set compete, so chosen and rejected open with the same label token and
   differ in the translation alone: DPO's log-ratios of the shared label cancel, and the pairs teach the rewrite
   without moving the decision (which pairs across labels pull toward one label: docs/alignment.md). A group with
   fewer than two such samples gives no pair, counted too. With ``pairing: verdict`` only the samples with the
   right label and an adequate translation compete, and a pair is the best-scoring (chrF++) one the judge accepts
   against the best-scoring one it rejects: both adequate, same label, differing in what the judge sees (a Set-N
   neutral rewrite against a gendered one; a Set-G translation in the referent's gender against one in the
   other). Best against worst would mostly set a good translation against a broken one, which teaches adequacy;
   this teaches the rewrite. A group without both kinds gives no pair, counted. Pairs are written as DPO rows carrying
   each side's rewards and the round, in a data folder of their own (``pairs-round-N/``);
4. **trains** DPO on them (``round-N/``), the policy of the round as both starting point and frozen reference.

Every sample with its rewards is kept (``pairs-round-N/samples.jsonl``), so what a round preferred can be read.
``onpolicy.json`` in the output folder records the settings and each finished round: a rerun with the same
settings continues where it stopped; one with other settings would overwrite finished rounds and is refused.
"""

from __future__ import annotations

import json
import logging
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from gnt.alignment.rewards import RewardSpec, Scored, check_rewards, read_samples, with_verdicts
from gnt.data.entry import SETS, Entry
from gnt.data.training_rows import ONPOLICY
from gnt.filenames import DRAWN_FROM, MANIFEST
from gnt.io import atomic_directory, hash_json, read_json, read_jsonl, write_json
from gnt.output_folder import check_output_folder, claim_output_folder
from gnt.recipe import RecipeError
from gnt.settings import BackendSettings
from gnt.training.config import REWARD_WEIGHTS

log = logging.getLogger(__name__)

STATE = "onpolicy.json"
FORMAT = "gnt-align/onpolicy/1"
KIND = ONPOLICY
"""The ``kind`` of every on-policy pair (what a DPO recipe's ``pair_kinds`` selects)."""
PAIRINGS = ("total", "same_label", "verdict")
"""How a prompt's samples become a pair: best against worst of all of them (``total``), or of those whose label is
right only (``same_label``); or, of the adequate ones with the right label, one the judge accepts against one it
rejects (``verdict``)."""


PROMPT_FILES = {"train": "sft/train.jsonl", "align": "onpolicy/align.jsonl"}
"""Where a build keeps each prompt split's rendered prompts: the SFT training rows, or the align side's prompts
(sources kept out of SFT and the preference rows by ``data/build.py align_fraction=...``)."""


@dataclass
class OnPolicyConfig(BackendSettings):
    """The keys of ``train/onpolicy.py``: where the policy and data are, how to sample and score, how to train.

    The backend keys (``backend``, ``dtype``, ``batch_size`` ...) are the sampling backend's, as in an evaluation
    recipe; ``dpo`` holds the keys of ``train/dpo.py`` every round trains with (its ``sft_adapter``, ``data_dir``
    and ``output_dir`` are set per round).
    """

    policy: str | None = field(default=None, metadata={
        "help": "the adapter round 1 samples from and starts at: an SFT run folder or one of its checkpoints"})
    model: str | None = field(default=None, metadata={
        "help": "the base model (null: the one the policy adapter was trained on; given, it must be that one)"})
    data_dir: str | None = field(default=None, metadata={"help": "the data build (its training entries and prompts)"})
    output_dir: str | None = field(default=None, metadata={
        "help": "where each round's pairs (pairs-round-N/) and DPO run (round-N/) go"})
    cache_dir: str | None = field(default=None, metadata={
        "help": "the samples' and verdicts' caches (null: output_dir/cache); runs that differ only in their DPO "
                "keys can share one and sample nothing twice"})
    rounds: int = field(default=1, metadata={"help": "sample → score → pair → DPO rounds, each from the last"})
    samples_per_prompt: int = field(default=4, metadata={"help": "outputs sampled per prompt (k >= 2)"})
    prompts_per_round: int | None = field(default=None, metadata={
        "help": "training prompts sampled for each round (a seeded sample; null: all)"})
    temperature: float = field(default=0.8, metadata={"help": "sampling temperature"})
    top_p: float = field(default=0.95, metadata={"help": "nucleus sampling"})
    max_new_tokens: int = field(default=128, metadata={"help": "token cap per sample"})
    rewards: dict[str, float] = field(default_factory=lambda: dict(REWARD_WEIGHTS), metadata={
        "help": "reward name → weight of the sample score (label, judge, adequacy, chrf, target_chrf, adjective_form: docs/alignment.md)"})
    judge: str | None = field(default=None, metadata={
        "help": "the judge recipe of the judge reward (a judge adapter's training recipe, e.g. "
                "recipes/judge-gemma270m.yaml)"})
    judge_keys: dict = field(default_factory=dict, metadata={
        "help": "keys of that judge recipe to override (e.g. judge_adapter=...)"})
    dpo_recipe: str | None = field(default=None, metadata={
        "help": "a train/dpo.py recipe every round's DPO starts from (null: DPO's defaults and the dpo keys)"})
    dpo: dict = field(default_factory=dict, metadata={
        "help": "keys of train/dpo.py for every round's DPO, over dpo_recipe (beta, learning_rate, max_steps ...)"})
    pairing: str = field(default="total", metadata={
        "choices": PAIRINGS, "help": "total: best against worst of a prompt's samples; same_label: of those whose "
                                     "label is right only, so a pair differs in the translation alone; verdict: of "
                                     "the adequate ones with the right label, one the judge accepts against one it "
                                     "rejects"})
    templated: bool = field(default=True, metadata={"help": "also sample for the templated entries of the split"})
    prompt_sets: tuple[str, ...] = field(default=SETS, metadata={
        "help": "the sets whose entries are sampled (comma-separated): Set-N alone spends every sample where a "
                "neutral rewrite can be learnt (from SFT most Set-G prompts are ties)"})
    anchor_pairs: int = field(default=0, metadata={
        "help": "per round, this many Set-G entries of the split (a seeded draw) add a pair of their references "
                "under the same GENDERED label, Ref-G over Ref-N: they hold the stated gender's wording where a "
                "round's neutral rewrites would spread, without moving the label decision (0: none)"})
    anchor_twins: bool = field(default=False, metadata={
        "help": "draw the anchors from the Set-G twins (the same template pair) of the round's templated Set-N "
                "prompts that gave a pair: \"she said\" beside \"they said\", so the source's gender cue is "
                "all the sampled pair and its anchor differ in (at most anchor_pairs of them)"})
    sample_twins: bool = field(default=False, metadata={
        "help": "also sample the Set-G twins (the same template pair) of the round's templated Set-N prompts, "
                "ranked by the same rewards: the policy's own \"she said\" outputs beside its \"they said\" "
                "ones, so a neutral form written for a stated gender loses its pair where the sample shows it"})
    prompt_split: str = field(default="train", metadata={
        "choices": tuple(PROMPT_FILES), "help": "which sources to sample: train (those SFT was fitted to) or align "
                                                "(kept out of SFT by data/build.py align_fraction)"})
    pairs_only: bool = field(default=False, metadata={
        "help": "write the next round's pairs and stop (train them with `accelerate launch train/dpo.py`)"})
    seed: int = field(default=0, metadata={"help": "seed of the prompt sample and of sampling"})
    progress: bool = field(default=True, metadata={"help": "show progress"})

    def validate(self) -> OnPolicyConfig:
        for key in ("policy", "data_dir", "output_dir"):
            if not getattr(self, key):
                raise RecipeError(f"'{key}' is required (add `{key}: ...` to the recipe or give {key}=...)")
        if self.samples_per_prompt < 2:
            raise RecipeError(f"samples_per_prompt must be >= 2 to compare samples (got {self.samples_per_prompt})")
        if self.rounds < 1:
            raise RecipeError(f"rounds must be >= 1 (got {self.rounds})")
        unknown = [name for name in self.prompt_sets if name not in SETS]
        if unknown or not self.prompt_sets:
            raise RecipeError(f"prompt_sets: unknown or no set {unknown or list(self.prompt_sets)}; valid: "
                              f"{', '.join(SETS)}")
        if self.anchor_pairs < 0:
            raise RecipeError(f"anchor_pairs must be >= 0 (got {self.anchor_pairs})")
        if self.anchor_twins and not self.anchor_pairs:
            raise RecipeError("anchor_twins draws the anchors: set anchor_pairs to how many (got 0)")
        if self.sample_twins and not (self.templated and "Set-N" in self.prompt_sets):
            raise RecipeError("sample_twins samples the Set-G twins of the round's templated Set-N prompts: it needs "
                              f"templated: true and Set-N in prompt_sets (got templated={self.templated}, "
                              f"prompt_sets={','.join(self.prompt_sets)})")
        if self.prompts_per_round is not None and self.prompts_per_round < 1:
            raise RecipeError(f"prompts_per_round must be >= 1 or null (got {self.prompts_per_round})")
        if not 0 < self.temperature <= 2 or not 0 < self.top_p <= 1:
            raise RecipeError(f"temperature must be in (0, 2] and top_p in (0, 1] to sample (got {self.temperature}, "
                              f"{self.top_p})")
        check_rewards(self.rewards)
        if self.pairing == "same_label" and "label" not in self.rewards:
            raise RecipeError("pairing: same_label keeps the samples whose label reward is 1: add label to rewards "
                              "(its weight may be 0)")
        missing = sorted({"label", "judge", "adequacy"} - set(self.rewards)) if self.pairing == "verdict" else []
        if missing:
            raise RecipeError(f"pairing: verdict compares adequate samples of the right label by the judge's verdict: "
                              f"add {', '.join(missing)} to rewards (a weight may be 0)")
        if self.rewards.get("judge") and not self.judge:
            raise RecipeError("the judge reward needs judge: a judge recipe (e.g. recipes/judge-gemma270m.yaml)")
        self.validate_backend(needs_server=True)
        return self

    def settings_key(self) -> str:
        """What a finished round depends on (everything but the round count and how progress shows)."""
        values = {k: v for k, v in asdict(self).items() if k not in ("rounds", "progress", "pairs_only", "cache_dir")}
        if values["prompt_split"] == "train":  # the default keeps the key of rounds finished before the key existed
            del values["prompt_split"]
        if not values["anchor_pairs"]:  # no anchors (the default) keeps the key of rounds made before them
            del values["anchor_pairs"]
        for default_off in ("anchor_twins", "sample_twins"):  # and so do the options that are off by default
            if not values[default_off]:
                del values[default_off]
        sets = sorted(set(values.pop("prompt_sets")))
        if sets != sorted(SETS):  # both sets (in any order) is the default, and keeps the key as it was too
            values["prompt_sets"] = sets
        return hash_json(values)


@dataclass(frozen=True)
class Prompt:
    """A training entry and its training prompt (as SFT saw it)."""

    entry: Entry
    messages: tuple[tuple[str, str], ...]
    cell: str


def training_prompts(data_dir: Path, templated: bool, split: str = "train") -> list[Prompt]:
    """Every entry of the build's ``split`` side (train or align) with the prompt its SFT rows were, or would be,
    rendered with."""
    rendered = data_dir / PROMPT_FILES[split]
    if not rendered.is_file():
        fix = (f"rebuild it with `python data/build.py out_dir={data_dir} align_fraction=0.15` (a share of the "
               "training sources kept for on-policy sampling)" if split == "align" else
               f"rebuild the data with `python data/build.py out_dir={data_dir}`")
        raise RecipeError(f"prompt_split={split}: {rendered} is missing: {fix}")
    prompts: dict[tuple[str, str], tuple[tuple[tuple[str, str], ...], str]] = {}
    for row in read_jsonl(rendered):
        key = (row["lang"], str(row["id"]))
        prompts.setdefault(key, (tuple((m["role"], m["content"]) for m in row["prompt"]), row.get("cell", "")))
    files = [f"mgente_{split}.jsonl", *([f"templated_{split}.jsonl"] if templated else [])]
    found = []
    for name in files:
        path = data_dir / "eval" / name
        if not path.is_file():
            raise RecipeError(f"data_dir: {path} is missing: rebuild the data with `python data/build.py "
                              f"out_dir={data_dir}` (builds write the entries on-policy alignment samples for)")
        for record in read_jsonl(path):
            entry = Entry.from_record(record)
            if (entry.lang, entry.id) in prompts:
                messages, cell = prompts[(entry.lang, entry.id)]
                found.append(Prompt(entry, messages, cell))
    if not found:
        raise RecipeError(f"data_dir: {data_dir} has no {split} entry with a rendered prompt")
    return found


def sampled_prompts(config: OnPolicyConfig) -> list[Prompt]:
    """The prompts a round draws from: the split's entries of the asked sets."""
    prompts = training_prompts(Path(config.data_dir or ""), config.templated, config.prompt_split)
    kept = [p for p in prompts if p.entry.set in config.prompt_sets]
    if not kept:
        raise RecipeError(f"prompt_sets={','.join(config.prompt_sets)}: the {config.prompt_split} split of "
                          f"{config.data_dir} has no such entry with a rendered prompt")
    return kept


def set_g_prompts(config: OnPolicyConfig) -> list[Prompt]:
    """The Set-G entries of the split (whatever ``prompt_sets`` samples): where anchors and sampled twins come
    from."""
    prompts = training_prompts(Path(config.data_dir or ""), config.templated, config.prompt_split)
    return [p for p in prompts if p.entry.set == "Set-G"]


def anchor_prompts(config: OnPolicyConfig) -> list[Prompt]:
    """The Set-G entries of the split with a neutral reference differing from Ref-G: what anchor pairs are drawn
    from."""
    return [p for p in set_g_prompts(config) if p.entry.ref_n and p.entry.ref_n[0] != p.entry.ref_g]


def with_sampled_twins(config: OnPolicyConfig, chosen: list[Prompt]) -> list[Prompt]:
    """The round's prompts followed by the Set-G twins of its templated Set-N ones not already among them."""
    have = {(p.entry.lang, p.entry.id) for p in chosen}
    twins = [p for p in twins_of(set_g_prompts(config), [p for p in chosen if p.entry.set == "Set-N"])
             if (p.entry.lang, p.entry.id) not in have]
    return chosen + twins


def twins_of(pool: list[Prompt], prompts: list[Prompt]) -> list[Prompt]:
    """The prompts of ``pool`` built from the same template pair (language and ``pair_id``) as a templated prompt
    of ``prompts``: for an ambiguous input, its determined twin."""
    pairs = {(p.entry.lang, p.entry.meta.get("pair_id")) for p in prompts
             if p.entry.origin == "templated" and p.entry.meta.get("pair_id")}
    return [p for p in pool if (p.entry.lang, p.entry.meta.get("pair_id")) in pairs]


def anchor_row(prompt: Prompt, round_number: int) -> dict[str, Any]:
    """A pair of an entry's references under its right label (GENDERED): Ref-G chosen over Ref-N. Both sides open
    with the same label, so the pair moves the wording alone; it is a reference pair, not a sample, and says so."""
    from gnt.output_format import format_output

    entry = prompt.entry
    return preference_row(prompt, format_output(entry.lang, "GENDERED", entry.ref_g),
                          format_output(entry.lang, "GENDERED", entry.ref_n[0]), round_number,
                          anchor="setg_references")


def chosen_prompts(prompts: list[Prompt], limit: int | None, seed: int | str) -> list[Prompt]:
    if limit is None or limit >= len(prompts):
        return prompts
    picked = random.Random(f"gnt-onpolicy|{seed}").sample(range(len(prompts)), limit)
    return [prompts[i] for i in sorted(picked)]


@dataclass
class RoundCounts:
    """What one round's pairing kept and dropped."""

    prompts: int = 0
    samples: int = 0
    pairs: int = 0
    ties: int = 0
    all_bad: int = 0
    too_few_right_labels: int = 0
    no_verdict_contrast: int = 0
    extraction_errors: int = 0
    judge_errors: int = 0
    anchors: int = 0
    twin_prompts: int = 0
    rewards_mean: dict[str, float] = field(default_factory=dict)


def pair_groups(groups: Sequence[Sequence[Scored]], pairing: str = "total"
                ) -> tuple[list[tuple[int, Scored, Scored]], RoundCounts]:
    """``(group index, best, worst)`` of each prompt's samples; ties and all-bad groups dropped and counted (and,
    pairing ``same_label``, groups with fewer than two samples whose label is right; pairing ``verdict``, groups
    without an adequate right-label sample the judge accepts and one it rejects)."""
    counts = RoundCounts(prompts=len(groups))
    pairs = []
    sums: Counter = Counter()
    for index, group in enumerate(groups):
        counts.samples += len(group)
        for scored in group:
            sums.update(scored.rewards)
            counts.extraction_errors += scored.sample.extraction.error is not None
            counts.judge_errors += scored.sample.extraction.ok and scored.sample.verdict is None
        if pairing == "verdict":
            pair = verdict_pair(group)
            if pair is None:
                counts.no_verdict_contrast += 1
            else:
                pairs.append((index, *pair))
            continue
        if pairing == "same_label":
            group = [s for s in group if s.sample.extraction.ok and s.rewards.get("label") == 1.0]
            if len(group) < 2:
                counts.too_few_right_labels += 1
                continue
        best = max(group, key=lambda s: (s.total, s.sample.chrf))
        worst = min(group, key=lambda s: (s.total, s.sample.chrf))
        if best.total == worst.total or best.sample.text == worst.sample.text:
            counts.ties += 1
            continue
        if not best.sample.extraction.ok or best.rewards.get("adequacy", 1.0) == 0.0:
            counts.all_bad += 1
            continue
        pairs.append((index, best, worst))
    counts.pairs = len(pairs)
    counts.rewards_mean = {name: round(total / max(1, counts.samples), 4) for name, total in sorted(sums.items())}
    return pairs, counts


def verdict_pair(group: Sequence[Scored]) -> tuple[Scored, Scored] | None:
    """Of a prompt's adequate samples with the right label, the closest to the references (chrF++) that the judge
    accepts against the closest that it rejects; None where either kind is missing."""
    usable = [s for s in group if s.sample.extraction.ok and s.rewards.get("label") == 1.0
              and s.rewards.get("adequacy") == 1.0]
    accepted = [s for s in usable if s.rewards.get("judge") == 1.0]
    rejected = [s for s in usable if s.rewards.get("judge") == 0.0]
    if not accepted or not rejected:
        return None
    return max(accepted, key=lambda s: s.sample.chrf), max(rejected, key=lambda s: s.sample.chrf)


def preference_row(prompt: Prompt, chosen: str, rejected: str, round_number: int, **extra: Any) -> dict[str, Any]:
    """A TRL preference row of a round: the prompt as SFT saw it, the two assistant texts, the round and the entry's
    identity (what the round's DPO run records as trained on)."""
    entry = prompt.entry
    return {
        "prompt": [{"role": r, "content": c} for r, c in prompt.messages],
        "chosen": [{"role": "assistant", "content": chosen}],
        "rejected": [{"role": "assistant", "content": rejected}],
        "kind": KIND, "round": round_number, **extra,
        "id": entry.id, "lang": entry.lang, "set": entry.set, "origin": entry.origin, "cell": prompt.cell,
        "source_key": entry.source_key,
    }


def pair_row(prompt: Prompt, chosen: Scored, rejected: Scored, round_number: int) -> dict[str, Any]:
    """A preference row of the model's own outputs, with both sides' rewards."""
    return preference_row(prompt, chosen.sample.text, rejected.sample.text, round_number,
                          scores={"chosen": chosen.to_record(), "rejected": rejected.to_record()})


# ---------------------------------------------------------------------------------------------------------------
# A round
# ---------------------------------------------------------------------------------------------------------------


def policy_adapter(spec: str, model: str | None = None) -> tuple[Any, str]:
    """The policy's adapter (for requests) and the base model it was trained on (resolved); ``model``, when
    given, must be that base model: a LoRA adapter only works on the model it was trained on."""
    from gnt.generation.base import Adapter
    from gnt.generation.identity import adapter_weights_hash
    from gnt.models.aliases import resolve_model
    from gnt.training.base_model import resolve_sft_adapter, same_model
    from gnt.training.config import TrainingError

    try:
        found = resolve_sft_adapter(spec, ("sft", "dpo"))  # the SFT adapter first, then each round's result
    except TrainingError as exc:
        raise RecipeError(str(exc).replace("sft_adapter:", "policy:")) from None
    if model and not same_model(resolve_model(model), found.base_model):
        raise RecipeError(f"policy={spec} was trained on the base model {found.base_model}, not on model={model}: "
                          "a LoRA adapter only works on the model it was trained on")
    resolved = found.path.resolve()
    return (Adapter(name=f"policy/{resolved.parent.name}/{resolved.name}", path=str(resolved),
                    weights_hash=adapter_weights_hash(found.path)), found.base_model)


def sample_round(config: OnPolicyConfig, prompts: Sequence[Prompt], policy: str, round_number: int,
                 cache: Path) -> list[list[str]]:
    """``samples_per_prompt`` texts per prompt from the policy (constrained to the output format), generated once
    and cached: a rerun of a round samples nothing again."""
    from gnt.evaluation.cache import CachedBackend, GenerationCache
    from gnt.generation.base import Constraint, DecodingParams, GenerationRequest
    from gnt.generation.factory import build_backend
    from gnt.output_format import output_regex

    adapter, base = policy_adapter(policy, config.model)
    backend = CachedBackend(build_backend(self_backend(config), base, adapter_paths=[adapter.path], seed=config.seed),
                            GenerationCache(cache))
    k = config.samples_per_prompt
    requests = [
        GenerationRequest(prompt.messages, adapter, Constraint("regex", output_regex(prompt.entry.lang)),
                          DecodingParams(max_new_tokens=config.max_new_tokens, temperature=config.temperature,
                                         top_p=config.top_p, seed=config.seed * 100_003 + round_number * 101 + j))
        for j in range(k) for prompt in prompts  # one seed's samples together: the backend batches them
    ]
    generations = []
    chunk = max(1, config.batch_size) * 2  # cached as each chunk finishes: a killed round keeps its samples
    try:
        with tqdm(total=len(requests), desc=f"round {round_number}: sampling", unit="sample",
                  disable=not config.progress) as bar:
            for start in range(0, len(requests), chunk):
                generations += backend.generate(requests[start : start + chunk])
                bar.update(min(chunk, len(requests) - start))
    finally:
        backend.close()
    texts = [g.text if g.error is None else "" for g in generations]
    return [[texts[j * len(prompts) + i] for j in range(k)] for i in range(len(prompts))]


def self_backend(config: OnPolicyConfig) -> BackendSettings:
    """The sampling backend's settings group of the config (what every backend builder takes)."""
    from dataclasses import fields

    return BackendSettings(**{f.name: getattr(config, f.name) for f in fields(BackendSettings)})


def load_judge(config: OnPolicyConfig, cache: Path) -> tuple[Any, Any]:
    """The judge of the judge reward and its backend (checked before any sampling: a missing or mismatched
    adapter is one error)."""
    from gnt.judge.config import load_judge_recipe
    from gnt.judge.run import _llm_judge

    recipe = load_judge_recipe(config.judge, list(config.judge_keys.items()))
    if recipe.judge != "llm":
        raise RecipeError(f"judge: {config.judge} is a {recipe.judge} judge; the judge reward needs a validated "
                          "model judge (judge: llm, e.g. recipes/judge-gemma270m.yaml)")
    return _llm_judge(recipe, cache_path=cache)


def dpo_recipe(config: OnPolicyConfig, policy: str, pairs: Path, run: Path) -> Any:
    """The round's DPO recipe: the config's ``dpo`` keys with the policy, the pairs and the run folder set."""
    from gnt.training.config import as_recipe

    fixed = {"sft_adapter": policy, "data_dir": str(pairs), "output_dir": str(run), "pair_kinds": [KIND]}
    clash = sorted(set(config.dpo) & set(fixed))
    if clash:
        raise RecipeError(f"dpo: {', '.join(clash)} are set per round by train/onpolicy.py; remove them from dpo")
    return as_recipe("dpo", config.dpo_recipe, [*config.dpo.items(), *fixed.items()])


def write_pairs(out: Path, data_dir: Path, rows: list[dict], samples: list[dict], info: dict) -> None:
    """The round's data folder: the build's manifest (its sources and ids: what the policy has seen), the pairs as
    ``dpo/train.jsonl`` and every scored sample; swapped in whole."""
    from gnt.io import write_jsonl

    manifest = read_json(data_dir / MANIFEST)
    keys = manifest.setdefault("source_keys", {})  # what the round's DPO trains on: its prompts' sources too
    keys["train"] = sorted(set(keys.get("train", [])) | {str(row["source_key"]) for row in rows})
    manifest[KIND] = info
    manifest[DRAWN_FROM] = str(data_dir.resolve())  # its held-out rows score the round's model
    with atomic_directory(out) as tmp:
        write_jsonl(tmp / "dpo" / "train.jsonl", rows)
        write_jsonl(tmp / "samples.jsonl", samples)
        write_json(tmp / MANIFEST, manifest)


def run_round(config: OnPolicyConfig, prompts: list[Prompt], policy: str, round_number: int,
              say: Any = print) -> dict[str, Any]:
    """Sample, score and pair one round, then (unless ``pairs_only``) train its DPO; returns what it recorded."""
    out = Path(config.output_dir or "")
    pairs_dir, run_dir = out / f"pairs-round-{round_number}", out / f"round-{round_number}"
    chosen = chosen_prompts(prompts, config.prompts_per_round, config.seed + round_number)
    drawn = len(chosen)
    if config.sample_twins:
        chosen = with_sampled_twins(config, chosen)
    say(f"round {round_number}: {config.samples_per_prompt} samples for each of {len(chosen)} prompts from {policy}")
    cache = Path(config.cache_dir) if config.cache_dir else out / "cache"
    texts = sample_round(config, chosen, policy, round_number, cache / "generations.jsonl")
    flat_entries = [p.entry for p in chosen for _ in range(config.samples_per_prompt)]
    samples = read_samples(flat_entries, [t for group in texts for t in group])
    if config.rewards.get("judge"):
        judge, backend = load_judge(config, cache / "judgments.jsonl")
        try:
            samples = with_verdicts(samples, judge)
        finally:
            judge.close()
            backend.close()
    spec = RewardSpec({k: float(v) for k, v in config.rewards.items()})
    scored = [spec.score(s) for s in samples]
    k = config.samples_per_prompt
    groups = [scored[i * k : (i + 1) * k] for i in range(len(chosen))]
    pairs, counts = pair_groups(groups, config.pairing)
    rows = [pair_row(chosen[index], best, worst, round_number) for index, best, worst in pairs]
    if config.anchor_pairs:
        pool = anchor_prompts(config)
        if config.anchor_twins:
            pool = twins_of(pool, [chosen[index] for index, _, _ in pairs])
        anchors = chosen_prompts(pool, config.anchor_pairs, f"anchors|{config.seed}|{round_number}")
        rows += [anchor_row(prompt, round_number) for prompt in anchors]
        counts.anchors = len(anchors)
    counts.twin_prompts = len(chosen) - drawn
    sample_rows = [{"id": s.sample.entry.id, "lang": s.sample.entry.lang, "set": s.sample.entry.set,
                    "text": s.sample.text, **s.to_record()} for s in scored]
    info = {"round": round_number, "policy": str(Path(policy).resolve()), "counts": asdict(counts),
            "settings": settings_record(config)}
    if not pairs:
        raise RecipeError(f"round {round_number}: no pair ({counts.ties} ties, {counts.all_bad} groups without a "
                          f"usable best sample, {counts.too_few_right_labels} with fewer than two right labels): "
                          "sample more per prompt, raise the temperature, or train SFT longer")
    write_pairs(pairs_dir, Path(config.data_dir or ""), rows, sample_rows, info)
    say(f"round {round_number}: {counts.pairs} pairs of {counts.prompts} prompts ({counts.ties} ties, "
        f"{counts.all_bad} without a usable best sample, {counts.too_few_right_labels} with fewer than two right "
        f"labels dropped); mean rewards {counts.rewards_mean}"
        + (f"; {counts.anchors} Set-G reference anchors added" if counts.anchors else ""))
    if config.pairs_only:
        say(f"pairs written to {pairs_dir}: train them with `accelerate launch train/dpo.py RECIPE "
            f"sft_adapter={policy} data_dir={pairs_dir} output_dir={run_dir}`")
        return {**info, "status": "pairs", "pairs_dir": str(pairs_dir)}
    from gnt.training.dpo import run_dpo

    run_dpo(dpo_recipe(config, policy, pairs_dir, run_dir))
    return {**info, "status": "complete", "pairs_dir": str(pairs_dir), "run_dir": str(run_dir)}


def settings_record(config: OnPolicyConfig) -> dict[str, Any]:
    return {k: v for k, v in asdict(config).items() if k not in ("progress",)}


# ---------------------------------------------------------------------------------------------------------------
# Rounds
# ---------------------------------------------------------------------------------------------------------------


def settings_differences(recorded: dict[str, Any], asked: dict[str, Any], shown: int = 4) -> str:
    """The keys whose value differs between finished rounds' settings and this run's, as ``key: recorded ->
    asked`` (nested keys dotted, the first ``shown``): a refusal should say what to change, and a path spelt
    relative to where the run started counts as another value."""
    def flat(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, value in values.items():
            found |= flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value}
        return found

    old, new = flat(json.loads(json.dumps(recorded))), flat(json.loads(json.dumps(asked, default=str)))
    keys = [k for k in sorted(old.keys() | new.keys()) if old.get(k, "unset") != new.get(k, "unset")]
    parts = [f"{k}: {old.get(k, 'unset')} -> {new.get(k, 'unset')}" for k in keys[:shown]]
    return "; ".join(parts + ([f"{len(keys) - shown} more"] if len(keys) > shown else []))


def check_before_sampling(config: OnPolicyConfig) -> dict[str, Any]:
    """Everything that can be refused is refused here, before any model loads: the policy adapter, the judge
    recipe and its adapter, the DPO keys, and finished rounds another setting would overwrite. Returns the state
    of the output folder."""
    from gnt.judge.config import load_judge_recipe, resolve_model_path
    from gnt.judge.learned import judge_adapter

    policy_adapter(config.policy or "", config.model)
    if config.rewards.get("judge"):
        recipe = load_judge_recipe(config.judge, list(config.judge_keys.items()))
        if recipe.judge_adapter:
            judge_adapter(recipe.judge_adapter, resolve_model_path(recipe.judge_model or ""), recipe=recipe.recipe)
    out = Path(config.output_dir or "")
    check_output_folder(out, "onpolicy", "output_dir")  # never a user's folder, nor another kind of run
    dpo_recipe(config, config.policy or "", out / "pairs-round-1", out / "round-1")  # the keys resolve
    state_path = out / STATE
    state: dict[str, Any] = read_json(state_path) if state_path.is_file() else {"format": FORMAT, "rounds": {}}
    finished = {r: v for r, v in state.get("rounds", {}).items() if v.get("status") == "complete"}
    if finished and state.get("settings_key") != config.settings_key():
        differ = settings_differences(state.get("settings") or {}, settings_record(config))
        raise RecipeError(f"output_dir={out} holds finished round(s) {', '.join(sorted(finished))} made with other "
                          f"settings{f' ({differ})' if differ else ''}: this run would overwrite them. Choose a new "
                          f"output_dir, or rerun with the settings recorded in {state_path}")
    sampled_prompts(config)
    if config.anchor_pairs and not anchor_prompts(config):
        raise RecipeError(f"anchor_pairs={config.anchor_pairs}: the {config.prompt_split} split of {config.data_dir} "
                          "has no Set-G entry with a neutral reference to anchor")
    return state


def run_onpolicy(config: OnPolicyConfig, say: Any = print) -> Path:
    """Run the rounds the config asks for (finished ones are kept); returns the last round's run folder (the
    aligned adapter)."""
    config.validate()
    state = check_before_sampling(config)
    out = claim_output_folder(Path(config.output_dir or ""), "onpolicy", "output_dir")
    state.update(settings_key=config.settings_key(), settings=settings_record(config))
    prompts = sampled_prompts(config)
    policy = config.policy or ""
    for number in range(1, config.rounds + 1):
        done = state["rounds"].get(str(number), {})
        run_dir = out / f"round-{number}"
        if done.get("status") == "complete" and (run_dir / "adapter_config.json").is_file():
            say(f"round {number}: finished ({run_dir})")
            policy = str(run_dir)
            continue
        state["rounds"][str(number)] = run_round(config, prompts, policy, number, say)
        write_json(out / STATE, state)
        if config.pairs_only:
            return out / f"pairs-round-{number}"
        policy = str(run_dir)
    return Path(policy)
