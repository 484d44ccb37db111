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
are left out and counted. The rates, Δs and their CIs are :func:`gnt.templated_suite.metrics.block_metrics`
(percentile bootstrap, the same code as the templated suite), resampling *adjectives* (each adjective occurs in
determined and ambiguous slots, so a resample keeps both sides together: the Δ intervals are paired).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from gnt.templated_suite.classify import (
    STRATEGIES,
    UNKNOWN,
    Classification,
    Classifier,
    looks_untranslated,
    normalise,
)
from gnt.templated_suite.metrics import _Resampler, block_metrics
from gnt.templated_suite.wmt24.align import clean, slot_texts
from gnt.templated_suite.wmt24.lexicon import SuiteLexicon
from gnt.templated_suite.wmt24.reader import AMBIGUITIES, Segment

METRICS_FORMAT = "gnt-align/wmt24-metrics/1"


def pool_of(segment: Segment, ambiguity: str | None) -> str:
    if ambiguity is not None:
        return ambiguity
    return "active" if segment.family == "occupation" else "omission"


def segment_items(
    segment: Segment, translation: str | None, lexicon: SuiteLexicon, classifier: Classifier, system: str
) -> list[dict]:
    """The classified items of one segment's translation (one per slot)."""
    lang = lexicon.lang
    texts = slot_texts(segment, translation or "", lang) if translation and translation.strip() else None
    # An echo of the English is judged on the whole segment: a short clause such as "No, no eres cruel" shares
    # most of its words with "No, you're not cruel", so the classifier's own per-text check is switched off.
    echo = texts is not None and looks_untranslated(clean(translation or ""), segment.source)
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
                result = Classification(UNKNOWN, reason="unaligned")
            else:
                result = classifier.classify(text, record)
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
            "pair_id": slot.adjective,
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


def system_metrics(items: Sequence[Mapping], *, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05) -> dict:
    """Per pool (omission, active) the templated suite's block metrics; over all items the strategy shares."""
    name = f"{items[0]['system']}|{items[0]['lang']}" if items else "empty"
    pools, marked = {}, {}
    for pool in AMBIGUITIES:
        chosen = [it for it in items if it["pool"] == pool]
        block = block_metrics(chosen, f"{name}|{pool}", n_boot, seed, alpha)
        block["n_items"] = len(chosen)
        block["unknown"] = sum(it["label"] == UNKNOWN for it in chosen)
        pools[pool] = block
        # Epicene adjectives (valiente, feliz) are N at no cost whatever the referent; on the gender-marked ones
        # an N answer is a choice, so this block shows the response to ambiguity without that floor.
        chosen = [it for it in chosen if it["gender_marked"]]
        block = block_metrics(chosen, f"{name}|{pool}|marked", n_boot, seed, alpha)
        block["n_items"] = len(chosen)
        block["unknown"] = sum(it["label"] == UNKNOWN for it in chosen)
        marked[pool] = block
    return {
        "format": METRICS_FORMAT,
        "pools": pools,
        "gender_marked": marked,
        "strategies": _strategy_shares(items, f"{name}|strategies", n_boot, seed, alpha),
        "n_items": len(items),
        "unknown": sum(it["label"] == UNKNOWN for it in items),
        "unknown_reasons": dict(sorted(Counter(it["reason"] for it in items if it["label"] == UNKNOWN).items())),
        "bootstrap": {"samples": n_boot, "seed": seed, "alpha": alpha, "method": "percentile, adjectives resampled"},
    }


SUMMARY_COLUMNS = (
    "lang", "system", "ambiguity", "n_det", "n_amb", "M_det", "F_det", "N_det", "M_amb", "F_amb", "N_amb",
    "dM", "dF", "dN", "unknown_rate",
)
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
        row["unknown_rate"] = round(block["unknown"] / block["n_items"], 6) if block["n_items"] else None
        rows.append(row)
    return rows


def strategy_row(lang: str, system: str, metrics: Mapping) -> dict:
    det = metrics["strategies"]["determined"]
    return {"lang": lang, "system": system, "N_det": det["N"]["value"], **{s: det[s]["value"] for s in STRATEGIES}}


def unknown_listing(items: Iterable[Mapping]) -> list[dict]:
    """Every unknown item with its reason and what was looked at, for review."""
    keys = ("system", "lang", "seg_id", "slot", "adjective", "variant", "pool", "reason", "evidence", "aligned_by", "text")
    return [{k: it.get(k) for k in keys} for it in items if it["label"] == UNKNOWN]
