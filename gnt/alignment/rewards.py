"""GNT rewards: what an aligned translator is rewarded for, one documented function each (docs/alignment.md).

A sample is one output of the policy for one entry, in the grid's format ``<lang> **LABEL** [translation]``. Each
reward reads it against the entry; all but the two chrF++ grades return 1.0 (earned) or 0.0 (not):

- :func:`label_reward`: the label is the correct one for the entry's set (Set-G → GENDERED, Set-N → NEUTRAL);
- :func:`judge_reward`: the judge's verdict on the translation is the correct form for the set: NEUTRAL for Set-N,
  CORRECTLY GENDERED for Set-G (a MONO judge: GENDERED). This is what GNT accuracy counts, so the judge must be a
  validated one (the learned judge: docs/judge.md);
- :func:`adequacy_reward`: the translation translates its source: chrF++ against the entry's references at or
  above the adequacy threshold (docs/metrics.md#translation-adequacy). Without it the judge reward alone would
  prefer short neutral-sounding text over the translation;
- :func:`chrf_reward`: how close the translation is to the entry's references, chrF++ / 100 (0 to 1). The binary
  rewards score most samples of a well-trained policy alike (each prompt's samples a tie, no pair); this grade
  still ranks them, so the pairs teach the adequacy the GNT figure counts (inadequate = wrong).
- :func:`target_chrf_reward`: the same grade against the references in the form the set asks for only (Set-N:
  the Ref-N alternatives; Set-G: Ref-G). ``chrf`` reads Ref-G too, so for a Set-N source a sample that comes close
  to the gendered reference's wording earns its grade from it (docs/alignment.md has one read from a bench pair);
  this one grades only against the form the source asks for.
- :func:`adjective_form_reward`: on templated entries with a gender-marked adjective, the templated suite's
  classifier finds no adjective form the set rules out (Set-N: either gender's; Set-G: any but the stated
  gender's; the lexicon's forms, which the entry carries). It sees what a small judge
  misses: a rewritten noun followed by a gendered adjective ("Nel mio lavoro di ingegneria, sono curiosa").

An output with an extraction error earns nothing from any reward. A sample's total is the weighted sum of the
rewards a recipe names. Judge verdicts are computed in one batch beforehand (:func:`score_samples`), through the
judge's cache, so a translation two samples share is judged once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gnt.data.entry import Entry
from gnt.evaluation.adequacy import ADEQUACY_THRESHOLD, chrf_pp
from gnt.output_format import Extraction, extract
from gnt.templated_suite.entry_forms import adjective_class, gender_marked
from gnt.training.config import REWARD_WEIGHTS


@dataclass(frozen=True)
class Sample:
    """One policy output for one entry, read once: the raw text, its extraction, its chrF++ and the judge's label
    of its translation (None when it was not judged: an extraction error or a judge error)."""

    entry: Entry
    text: str
    extraction: Extraction
    chrf: float
    verdict: str | None = None

    @property
    def references(self) -> list[str]:
        return [self.entry.ref_g, *self.entry.ref_n]

    @property
    def target_references(self) -> list[str]:
        """The references in the form the entry's set asks for: the Ref-N alternatives for Set-N, Ref-G for Set-G."""
        return list(self.entry.ref_n) if self.entry.set == "Set-N" else [self.entry.ref_g]


def label_reward(sample: Sample) -> float:
    """1 when the output's label is the entry's (GENDERED for Set-G, NEUTRAL for Set-N) and the output is clean."""
    return float(sample.extraction.ok and sample.extraction.label == sample.entry.label)


CORRECT_FORM = {"Set-N": ("NEUTRAL",), "Set-G": ("CORRECTLY GENDERED", "GENDERED")}
"""The judge labels that are the correct form of a translation, by set."""


def judge_reward(sample: Sample) -> float:
    """1 when the judge calls the translation the correct form for its set (Set-N: NEUTRAL; Set-G: CORRECTLY
    GENDERED); 0 for the wrong form, a judge error or an extraction error."""
    return float(sample.extraction.ok and sample.verdict in CORRECT_FORM[sample.entry.set])


def adequacy_reward(sample: Sample) -> float:
    """1 when the translation's chrF++ against the entry's references reaches the adequacy threshold."""
    return float(sample.extraction.ok and sample.chrf >= ADEQUACY_THRESHOLD)


def chrf_reward(sample: Sample) -> float:
    """The translation's chrF++ against the entry's references, scaled to 0..1 (graded adequacy; 0 for an
    extraction error). Weighted 1 beside the binary rewards, a whole binary reward outweighs any chrF++ gap short of
    100 points: the grade decides between samples the other rewards score alike."""
    return sample.chrf / 100.0 if sample.extraction.ok else 0.0


def target_chrf_reward(sample: Sample) -> float:
    """The translation's chrF++ against the references in the form the entry's set asks for (Set-N: every Ref-N
    alternative; Set-G: Ref-G), scaled to 0..1; 0 for an extraction error. Like ``chrf`` it decides between samples
    the binary rewards score alike, but it never prefers the wrong form's wording."""
    return chrf_pp(sample.extraction.translation, sample.target_references) / 100.0 if sample.extraction.ok else 0.0


def ruled_out_forms(entry: Entry) -> tuple[str, ...]:
    """The adjective classes a translation of a templated entry must not show: Set-N rules out M and F; Set-G every
    form but the stated gender's (the other gender and the neutral one: GNT counts a Set-G translation right only
    in the referent's gender, and "soy una persona nerviosa" for "she confessed" is the neutral rewrite spread to a
    source that genders its speaker). Nothing for an mGeNTE entry, an epicene adjective (its forms are one) or a
    Set-G entry without a stated gender."""
    if not gender_marked(entry):
        return ()
    if entry.set == "Set-N":
        return ("M", "F")
    if entry.gender not in ("M", "F"):
        return ()
    return tuple(form for form in ("M", "F", "N") if form != entry.gender)


def adjective_form_reward(sample: Sample) -> float:
    """1 unless the templated suite's classifier (:class:`gnt.templated_suite.classify.Classifier`, the one that
    scores the suite's ΔM/ΔF/ΔN) finds the adjective in a form the entry's set rules out (:func:`ruled_out_forms`);
    0 then, or for an extraction error. Why: a small judge calls "Nel mio lavoro di ingegneria, sono curiosa"
    neutral, and a policy rewarded by that judge learns to rewrite the noun and keep the gendered adjective; the
    lexicon forms are known for templated entries, so the classifier reads the adjective there. Every other entry
    earns 1: its samples all share the entry, so a constant never ranks them, and it adds nothing to a pair's margin."""
    if not sample.extraction.ok:
        return 0.0
    ruled_out = ruled_out_forms(sample.entry)
    if not ruled_out:
        return 1.0
    return float(adjective_class(sample.extraction.translation, sample.entry) not in ruled_out)


REWARDS: dict[str, Callable[[Sample], float]] = {
    "label": label_reward,
    "judge": judge_reward,
    "adequacy": adequacy_reward,
    "chrf": chrf_reward,
    "target_chrf": target_chrf_reward,
    "adjective_form": adjective_form_reward,
}
"""Every reward by the name recipes use."""


def check_rewards(weights: Mapping[str, float]) -> None:
    """Unknown reward names or no positive weight: one error naming the valid rewards."""
    from gnt.recipe import RecipeError

    unknown = sorted(set(weights) - set(REWARDS))
    if unknown:
        raise RecipeError(f"unknown reward(s) {', '.join(unknown)}; valid: {', '.join(REWARDS)}")
    bad = {name: w for name, w in weights.items() if not isinstance(w, (int, float)) or not 0 <= w < 1e6}
    if bad or not any(w > 0 for w in weights.values()):
        raise RecipeError(f"reward weights must be finite numbers >= 0, at least one positive (got {dict(weights)})")


@dataclass(frozen=True)
class Scored:
    """A sample with each reward and the weighted total."""

    sample: Sample
    rewards: dict[str, float]
    total: float

    def to_record(self) -> dict[str, Any]:
        return {"rewards": self.rewards, "total": round(self.total, 4), "chrf": round(self.sample.chrf, 2),
                "verdict": self.sample.verdict, "error": self.sample.extraction.error}


def read_samples(entries: Sequence[Entry], texts: Sequence[str]) -> list[Sample]:
    """Samples (extraction and chrF++; no verdict yet) of ``texts`` for ``entries``, position by position."""
    samples = []
    for entry, text in zip(entries, texts, strict=True):
        extraction = extract(text, entry.lang)
        chrf = chrf_pp(extraction.translation, [entry.ref_g, *entry.ref_n]) if extraction.ok else 0.0
        samples.append(Sample(entry, text, extraction, chrf))
    return samples


def with_verdicts(samples: Sequence[Sample], judge: Any) -> list[Sample]:
    """The samples with the judge's label of each clean translation (one batch; the judge's cache serves repeats).
    ``judge`` is an :class:`gnt.judge.llm_judge.LLMJudge`; its errors leave the verdict None."""
    from dataclasses import replace

    from gnt.judge.llm_judge import JudgeItem

    clean = [i for i, s in enumerate(samples) if s.extraction.ok and s.extraction.translation]
    items = [JudgeItem(samples[i].entry.lang, samples[i].entry.source, samples[i].extraction.translation or "")
             for i in clean]
    verdicts = {i: (j.label if j.ok else None) for i, j in zip(clean, judge.judge(items), strict=True)}
    return [replace(s, verdict=verdicts.get(i)) for i, s in enumerate(samples)]


@dataclass(frozen=True)
class RewardSpec:
    """Which rewards count and how much: ``{name: weight}``."""

    weights: dict[str, float] = field(default_factory=lambda: dict(REWARD_WEIGHTS))

    def score(self, sample: Sample) -> Scored:
        rewards = {name: REWARDS[name](sample) for name in self.weights}
        return Scored(sample, rewards, sum(self.weights[name] * value for name, value in rewards.items()))
