"""Classify every adjective slot of a system's translations and compute the suite's tables with bootstrap CIs.

An *item* is one adjective slot of one segment as translated by one system. Its ``variant`` is ``determined``
when the slot's referent has a stated gender (the man / the woman / he / she) and ``ambiguous`` otherwise; its
``pool`` says which comparison it belongs to:

* ``omission``: ambiguous slots about the narrator "I" or an unnamed listener "you", against the determined slots
  of the plain dialogue templates (the same dialogues with I ↔ he/she/the man/the woman);
* ``active``: slots about a character the text calls "they", against the determined slots of the occupation
  templates (the same dialogues with they ↔ he/she).

Each item is classified with the templated suite's :class:`~gnt.templated_suite.classify.Classifier` on the
stretch of the translation that renders its slot (:mod:`.align`); proportions are over classified items, unknowns
are left out and counted. A pool's M/F/N rates, Δs and their CIs are computed on the suite's matched pairs
(:mod:`.pairs`: the same adjective in the same frame, determined in one segment and ambiguous in its twin), each
pair weighing the same, with a percentile bootstrap that resamples pairs, so the Δ intervals are paired. Unpaired
items are counted, not scored. The strategy shares are over all classified determined items.

An item the lexicon does not recognise is read from its predicate (:mod:`.predicate`, Spanish); what is still
unknown is either a gap of ours (``no_form``, ``unaligned``, ``conflict``) or an output that holds no rendering of
the adjective (:data:`NO_RENDERING`: missing or empty line, English left untranslated, a translation cut short, a
pro-form "lo soy" in place of the adjective, the adjective made to describe another person: "no somos rudos"
for "you're not rude"), and the summary reports the two rates apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from gnt.evaluation.bootstrap import DEFAULT_ALPHA, DEFAULT_SAMPLES, DEFAULT_SEED
from gnt.templated_suite.classify import (
    STRATEGIES,
    UNKNOWN,
    Classification,
    Classifier,
    looks_untranslated,
    normalise,
)
from gnt.templated_suite.metrics import _Resampler
from gnt.templated_suite.wmt24.align import clean, is_truncated, slot_texts
from gnt.templated_suite.wmt24.lexicon import SuiteLexicon
from gnt.templated_suite.wmt24.pairs import matched_pairs, paired_block
from gnt.templated_suite.wmt24.predicate import RULE as PREDICATE_RULE
from gnt.templated_suite.wmt24.predicate import is_pro_form, predicates_someone_else, read_predicate
from gnt.templated_suite.wmt24.reader import AMBIGUITIES, Segment, Slot

METRICS_FORMAT = "gnt-align/wmt24-metrics/2"
#: Unknown reasons that mean the output holds no rendering of the adjective (not a gap of the lexicon).
NO_RENDERING: tuple[str, ...] = ("missing", "empty", "untranslated", "truncated", "pro_form", "wrong_person")


def pool_of(segment: Segment, ambiguity: str | None) -> str:
    if ambiguity is not None:
        return ambiguity
    return "active" if segment.family == "occupation" else "omission"


def pair_key(segment: Segment, slot: Slot) -> str:
    """The minimal pair a slot belongs to: the same adjective in the same frame, whoever its referent is."""
    polarity = "not" if slot.negated else "is"
    return f"{segment.family}|{slot.adjective}|turn{slot.turn}|{slot.person}|{polarity}"


def refine_unknown(result: Classification, text: str | None, english: str, person: str, lang: str,
                   truncated: bool) -> Classification:
    """A lexicon miss read from its predicate, or told apart as an output without a rendering of the adjective.

    In a translation cut short, a slot left without a reading is ``truncated`` before anything else: the clause it
    was looked up in may be another slot's that the cut left unsplit ("Creo que soy útil y tú").
    """
    if result.label != UNKNOWN or result.reason not in ("no_form", "unaligned"):
        return result
    if text is not None and result.reason == "no_form":
        if lang == "es" and (read := read_predicate(text, person)) is not None:
            return read
        if is_pro_form(text):
            return Classification(UNKNOWN, reason="pro_form")
    if truncated:
        return Classification(UNKNOWN, reason="truncated")
    if text is not None and result.reason == "no_form":
        if lang == "es" and predicates_someone_else(text, person):
            return Classification(UNKNOWN, reason="wrong_person")
        if looks_untranslated(text, english):
            return Classification(UNKNOWN, reason="untranslated")
    return result


def segment_items(
    segment: Segment, translation: str | None, lexicon: SuiteLexicon, classifier: Classifier, system: str
) -> list[dict]:
    """The classified items of one segment's translation (one per slot)."""
    lang = lexicon.lang
    texts = slot_texts(segment, translation or "", lang) if translation and translation.strip() else None
    # An echo of the English is judged on the whole segment: a short clause such as "No, no eres cruel" shares
    # most of its words with "No, you're not cruel", so the classifier's own per-text check is switched off.
    echo = texts is not None and looks_untranslated(clean(translation or ""), segment.source)
    truncated = texts is not None and is_truncated(translation or "", segment)
    items = []
    for index, slot in enumerate(segment.slots):
        character = segment.characters[slot.character]
        entry = lexicon.entry(slot.adjective)
        assert entry is not None, slot.adjective  # check_coverage ran before scoring
        record = {
            "lang": lang, "adjective": slot.adjective, "M": entry.m, "F": entry.f, "N": entry.n,
            "N_strategy": entry.n_strategy, "ref_neutral": None,
        }
        if texts is None:
            reason = "missing" if translation is None else "empty"
            result, how, text = Classification(UNKNOWN, reason=reason), None, None
        else:
            how, text = texts[index].how, texts[index].text
            record["source"] = ""
            if echo:
                result = Classification(UNKNOWN, reason="untranslated")
            elif text is None:
                reason = "truncated" if how == "cut" else "unaligned"
                result = refine_unknown(Classification(UNKNOWN, reason=reason), None, "", slot.person, lang,
                                        truncated)
            else:
                result = classifier.classify(text, record)
            if how != "whole":  # the whole translation holds other people's predicates too
                result = refine_unknown(result, text, texts[index].english, slot.person, lang, truncated)
            elif truncated and result.label == UNKNOWN and result.reason == "no_form":
                result = Classification(UNKNOWN, reason="truncated")
        items.append({
            "system": system,
            "lang": lang,
            "seg_id": segment.seg_id,
            "slot": index,
            "turn": slot.turn,
            "person": slot.person,
            "referent": slot.referent,
            "adjective": slot.adjective,
            "family": segment.family,
            "how": character.how,
            "variant": "ambiguous" if character.gender is None else "determined",
            "ambiguity": character.ambiguity,
            "pool": pool_of(segment, character.ambiguity),
            "expected_gender": character.gender,
            "adverb": segment.adverb,
            "occupation": character.occupation,
            "gender_marked": normalise(entry.m) != normalise(entry.f),
            "pair_id": pair_key(segment, slot),
            "aligned_by": how,
            "text": text,
            **result.to_json(),
        })
    return items


def score_translations(
    segments: Sequence[Segment], translations: Mapping[str, str], lexicon: SuiteLexicon, system: str,
    classifier: Classifier | None = None,
) -> list[dict]:
    """Items of every segment; a segment missing from ``translations`` gives unknown items (reason ``missing``)."""
    classifier = classifier or Classifier(lexicon.extra)
    items: list[dict] = []
    for segment in segments:
        items.extend(segment_items(segment, translations.get(segment.seg_id), lexicon, classifier, system))
    return items


def _strategy_shares(items: Sequence[Mapping], name: str, n_boot: int, seed: int, alpha: float) -> dict:
    """N and N1..N5 as shares of all classified determined (and ambiguous) items, with bootstrap CIs."""
    res = _Resampler(items, name, n_boot, seed, alpha)
    labels = np.array([it["label"] for it in items], dtype=object)
    strategies = np.array([it.get("strategy") for it in items], dtype=object)
    known = labels != UNKNOWN
    out: dict = {}
    for variant in ("determined", "ambiguous"):
        mask = res.column(lambda it, v=variant: it["variant"] == v) & known
        entry = {"N": res.rate(labels == "N", mask)}
        for s in STRATEGIES:
            entry[s] = res.rate((labels == "N") & (strategies == s), mask)
        out[variant] = entry
    return out


def _unknown_split(items: Sequence[Mapping]) -> dict:
    """Unknown counts: all, lexicon gaps (ours to fix) and outputs without a rendering of the adjective."""
    reasons = [it["reason"] for it in items if it["label"] == UNKNOWN]
    no_rendering = sum(r in NO_RENDERING for r in reasons)
    return {"unknown": len(reasons), "unknown_gap": len(reasons) - no_rendering, "unknown_no_rendering": no_rendering}


def system_metrics(
    items: Sequence[Mapping], *, n_boot: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED, alpha: float = DEFAULT_ALPHA
) -> dict:
    """Per pool (omission, active) the templated suite's block metrics on matched pairs; over all items the
    strategy shares; unknowns per pool over every item of the pool, paired or not."""
    name = f"{items[0]['system']}|{items[0]['lang']}" if items else "empty"
    pools, marked = {}, {}
    for pool in AMBIGUITIES:
        in_pool = [it for it in items if it["pool"] == pool]
        chosen = matched_pairs(items, pool)
        block = paired_block(chosen, f"{name}|{pool}", n_boot, seed, alpha)
        block["n_items"] = len(in_pool)
        block["n_paired_items"] = len(chosen)
        block["n_pairs_matched"] = block["n_pairs"]
        block.update(_unknown_split(in_pool))
        pools[pool] = block
        # Epicene adjectives (valiente, feliz) are N at no cost whatever the referent; on the gender-marked ones
        # an N answer is a choice, so this block shows the response to ambiguity without that floor.
        chosen = [it for it in chosen if it["gender_marked"]]
        block = paired_block(chosen, f"{name}|{pool}|marked", n_boot, seed, alpha)
        block["n_items"] = sum(it["gender_marked"] for it in in_pool)
        block["n_paired_items"] = len(chosen)
        block.update(_unknown_split([it for it in in_pool if it["gender_marked"]]))
        marked[pool] = block
    return {
        "format": METRICS_FORMAT,
        "pools": pools,
        "gender_marked": marked,
        "strategies": _strategy_shares(items, f"{name}|strategies", n_boot, seed, alpha),
        "n_items": len(items),
        **_unknown_split(items),
        "unknown_reasons": dict(sorted(Counter(it["reason"] for it in items if it["label"] == UNKNOWN).items())),
        "decided_by_predicate": sum(it.get("rule") == PREDICATE_RULE for it in items),
        "bootstrap": {"samples": n_boot, "seed": seed, "alpha": alpha,
                      "method": "percentile, matched pairs resampled"},
    }


ISSUE_SUMMARY_COLUMNS = (
    "lang", "system", "ambiguity", "n_det", "n_amb", "M_det", "F_det", "N_det", "M_amb", "F_amb", "N_amb",
    "dM", "dF", "dN", "unknown_rate",
)
#: Columns after the issue's exact ones: the unknown rate split into our gaps and outputs without a rendering.
SUMMARY_EXTRA_COLUMNS = ("unknown_gap_rate", "unknown_no_rendering_rate")
SUMMARY_COLUMNS = ISSUE_SUMMARY_COLUMNS + SUMMARY_EXTRA_COLUMNS
STRATEGY_COLUMNS = ("lang", "system", "N_det", *STRATEGIES)


def summary_rows(lang: str, system: str, metrics: Mapping) -> list[dict]:
    rows = []
    for pool in AMBIGUITIES:
        block = metrics["pools"][pool]
        row = {
            "lang": lang, "system": system, "ambiguity": pool,
            "n_det": block["classified"]["determined"], "n_amb": block["classified"]["ambiguous"],
        }
        for c in ("M", "F", "N"):
            row[f"{c}_det"] = block["determined"][c]["value"]
            row[f"{c}_amb"] = block["ambiguous"][c]["value"]
            row[f"d{c}"] = block["delta"][c]["value"]
        for column, count in (("unknown_rate", "unknown"), ("unknown_gap_rate", "unknown_gap"),
                              ("unknown_no_rendering_rate", "unknown_no_rendering")):
            row[column] = round(block[count] / block["n_items"], 6) if block["n_items"] else None
        rows.append(row)
    return rows


def strategy_row(lang: str, system: str, metrics: Mapping) -> dict:
    det = metrics["strategies"]["determined"]
    return {"lang": lang, "system": system, "N_det": det["N"]["value"], **{s: det[s]["value"] for s in STRATEGIES}}


def unknown_listing(items: Iterable[Mapping]) -> list[dict]:
    """Every unknown item with its reason and what was looked at, for review."""
    keys = ("system", "lang", "seg_id", "slot", "adjective", "variant", "pool", "reason", "evidence", "aligned_by", "text")
    return [{k: it.get(k) for k in keys} for it in items if it["label"] == UNKNOWN]
