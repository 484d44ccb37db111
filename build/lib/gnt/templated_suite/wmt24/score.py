"""Classify every adjective slot of a system's translations and compute the paper's tables from the items.

An *item* is one adjective slot of one segment as translated by one system. Its ``variant`` is ``determined``
when the slot's referent has a stated gender (the man / the woman / he / she) and ``ambiguous`` otherwise; its
``template`` is the segment's template type (:mod:`.templates`), which decides the tables it counts in:

* omission (the paper's Table 4): templates 1-4, ambiguous slots about the narrator "I";
* active (Table 5): template 5, "they" against he/she;
* strategies (Table 6): N and N1-N5 among the determined items of templates 1-5;
* stereotype (Table 7): template 7 by the stereotype of its adverb (none, masculine, feminine).

Each item is classified with the templated suite's :class:`~gnt.templated_suite.classify.Classifier` on the
stretch of the translation that renders its slot (:mod:`.align`); proportions are over classified items, unknowns
are left out and counted, and each table side is macro-averaged over its template types (:mod:`.tables`).

An item the lexicon does not recognise is read from its predicate (:mod:`.predicate`, Spanish); a Spanish N form
that a determiner or a gendered noun marks ("soy un cobarde", "tú eres la alegre") takes that gender. What is
still unknown is either a gap of ours (``no_form``, ``unaligned``, ``conflict``) or an output that holds no
rendering of the adjective (:data:`NO_RENDERING`: missing or empty line, English left untranslated, a refusal to
translate, a translation cut short, a pro-form "lo soy" in place of the adjective), and the summary reports the
two rates apart. A predicate said of the wrong person ("no somos rudos" for "you're not rude") is read by its
gender like any mistranslation, under its own rule name.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gnt.templated_suite.classify import (
    STRATEGIES,
    UNKNOWN,
    Classification,
    Classifier,
    looks_untranslated,
    normalise,
)
from gnt.templated_suite.wmt24.align import clean, is_truncated, slot_texts
from gnt.templated_suite.wmt24.lexicon import SuiteLexicon
from gnt.templated_suite.wmt24.predicate import (
    OTHER_PERSON_RULE,
    is_pro_form,
    marked_by_determiner,
    marked_by_relative,
    read_other_person,
    read_predicate,
)
from gnt.templated_suite.wmt24.predicate import RULE as PREDICATE_RULE
from gnt.templated_suite.wmt24.reader import Segment
from gnt.templated_suite.wmt24.stereotypes import adverb_stereotype, load_stereotypes
from gnt.templated_suite.wmt24.tables import (
    Resamples,
    StereotypeResult,
    TableResult,
    stereotype_table,
    system_table,
)
from gnt.templated_suite.wmt24.templates import TABLES, TEMPLATES, template_of

METRICS_FORMAT = "gnt-align/wmt24-metrics/3"
#: Unknown reasons that mean the output holds no rendering of the adjective (not a gap of the lexicon).
NO_RENDERING: tuple[str, ...] = ("missing", "empty", "untranslated", "refused", "truncated", "pro_form")
#: An English refusal instead of a translation ("I apologize, but I cannot translate that specific text...").
_REFUSAL = re.compile(r"\b(?:i apologi[sz]e|i cannot|i can't|i will not|i won't|i'm not able|i am not able|"
                      r"i don't feel comfortable|i do not feel comfortable)\b.*\btranslat", re.IGNORECASE | re.DOTALL)


def is_refusal(translation: str) -> bool:
    """Whether a system answered with a refusal in English rather than a translation."""
    return bool(_REFUSAL.search(translation))


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
        if lang == "es" and (other := read_other_person(text, person)) is not None:
            return other
        if looks_untranslated(text, english):
            return Classification(UNKNOWN, reason="untranslated")
    return result


def refine_neutral(result: Classification, text: str | None, person: str, lang: str) -> Classification:
    """A Spanish N reading that the sentence marks after all: the referent is "el que"/"la que" ("yo soy la que
    tiene suerte" is F), or a word of one form (N1) has a determiner or gendered noun ("soy un cobarde" is M).

    The determiner test is for N1 only: the noun phrases of N3 ("tengo una buena figura") carry their own noun's
    gender, not the referent's.
    """
    if lang != "es" or result.label != "N" or not text:
        return result
    if (relative := marked_by_relative(text, person)) is not None:
        return relative
    if result.strategy != "N1" or not result.evidence:
        return result
    return marked_by_determiner(text, result.evidence) or result


def segment_items(
    segment: Segment, translation: str | None, lexicon: SuiteLexicon, classifier: Classifier, system: str,
    stereotypes: dict[str, dict[str, str]] | None = None,
) -> list[dict]:
    """The classified items of one segment's translation (one per slot)."""
    lang = lexicon.lang
    texts = slot_texts(segment, translation or "", lang) if translation and translation.strip() else None
    # An echo of the English is judged on the whole segment: a short clause such as "No, no eres cruel" shares
    # most of its words with "No, you're not cruel", so the classifier's own per-text check is switched off.
    echo = texts is not None and looks_untranslated(clean(translation or ""), segment.source)
    refused = texts is not None and is_refusal(translation or "")
    truncated = texts is not None and is_truncated(translation or "", segment)
    template = template_of(segment)
    stereotype = adverb_stereotype(segment, stereotypes if stereotypes is not None else load_stereotypes())
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
            if echo or refused:
                result = Classification(UNKNOWN, reason="refused" if refused else "untranslated")
            elif text is None:
                reason = "truncated" if how == "cut" else "unaligned"
                result = refine_unknown(Classification(UNKNOWN, reason=reason), None, "", slot.person, lang,
                                        truncated)
            else:
                result = refine_neutral(classifier.classify(text, record), text, slot.person, lang)
            if how != "whole":  # the whole translation holds other people's predicates too
                result = refine_unknown(result, text, texts[index].english, slot.person, lang, truncated)
            elif truncated and result.label == UNKNOWN and result.reason == "no_form":
                result = Classification(UNKNOWN, reason="truncated")
        items.append({
            "system": system,
            "lang": lang,
            "seg_id": segment.seg_id,
            "slot": index,
            "template": template,
            "turn": slot.turn,
            "person": slot.person,
            "referent": slot.referent,
            "adjective": slot.adjective,
            "family": segment.family,
            "how": character.how,
            "variant": "ambiguous" if character.gender is None else "determined",
            "ambiguity": character.ambiguity,
            "expected_gender": character.gender,
            "adverb": segment.adverb,
            "adverb_stereotype": stereotype,
            "occupation": character.occupation,
            "gender_marked": normalise(entry.m) != normalise(entry.f),
            "aligned_by": how,
            "text": text,
            **result.to_json(),
        })
    return items


def score_translations(
    segments: Sequence[Segment], translations: Mapping[str, str], lexicon: SuiteLexicon, system: str,
    classifier: Classifier | None = None, stereotypes: dict[str, dict[str, str]] | None = None,
) -> list[dict]:
    """Items of every segment; a segment missing from ``translations`` gives unknown items (reason ``missing``)."""
    classifier = classifier or Classifier(lexicon.extra)
    stereotypes = stereotypes if stereotypes is not None else load_stereotypes()
    items: list[dict] = []
    for segment in segments:
        items.extend(segment_items(segment, translations.get(segment.seg_id), lexicon, classifier, system, stereotypes))
    return items


def unknown_split(items: Iterable[Mapping]) -> dict:
    """Unknown counts: all, lexicon gaps (ours to fix) and outputs without a rendering of the adjective."""
    reasons = [it["reason"] for it in items if it["label"] == UNKNOWN]
    no_rendering = sum(r in NO_RENDERING for r in reasons)
    return {"unknown": len(reasons), "unknown_gap": len(reasons) - no_rendering, "unknown_no_rendering": no_rendering}


@dataclass
class SystemScores:
    """Everything one system's items give: the four tables (estimates with their resamples), counts and unknowns."""

    system: str
    lang: str
    tables: dict[str, TableResult]
    stereotype: StereotypeResult
    counts: dict
    unknowns: dict


def _template_counts(items: Sequence[Mapping]) -> dict:
    """Per template and group (the side; for template 7 the adverb's stereotype): items, classified, the classified
    items per class and strategy, and the unknowns by reason."""
    out: dict = {}
    for it in items:
        group = it["variant"] if it["template"] != "7" else f"adverb:{it['adverb_stereotype']}"
        entry = out.setdefault(it["template"], {}).setdefault(
            group, {"items": 0, "classified": 0, "labels": {}, "unknown": {}})
        entry["items"] += 1
        if it["label"] == UNKNOWN:
            entry["unknown"][it["reason"]] = entry["unknown"].get(it["reason"], 0) + 1
            continue
        entry["classified"] += 1
        for key in (it["label"], it.get("strategy")):
            if key:
                entry["labels"][key] = entry["labels"].get(key, 0) + 1
    return out


#: Unknown items shown per reason in summary.json (all of them are in unknown.jsonl).
EXAMPLES_PER_REASON = 3


def _unknown_examples(items: Sequence[Mapping]) -> dict[str, list[dict]]:
    """The first few unknown items of each reason: segment, slot, template, adjective and the text looked at."""
    out: dict[str, list[dict]] = {}
    for it in items:
        if it["label"] == UNKNOWN and len(out.setdefault(it["reason"], [])) < EXAMPLES_PER_REASON:
            out[it["reason"]].append({k: it.get(k) for k in ("seg_id", "slot", "template", "adjective", "text")})
    return dict(sorted(out.items()))


def _in_tables(items: Sequence[Mapping]) -> list[Mapping]:
    templates = {t for table in TABLES.values() for t in table.determined + table.ambiguous} | {"7"}
    return [it for it in items if it["template"] in templates]


def score_system(items: Sequence[Mapping], resamples: Resamples, system: str, lang: str) -> SystemScores:
    """The tables and counts of one system's items on the run's shared resamples."""
    tables = {name: system_table(items, name, resamples) for name in TABLES}
    per_table = {name: unknown_split(it for it in items if it["template"] in t.determined + t.ambiguous)
                 | {"n_items": sum(it["template"] in t.determined + t.ambiguous for it in items)}
                 for name, t in TABLES.items()}
    stereo_items = [it for it in items if it["template"] == "7"]
    per_table["stereotype"] = unknown_split(stereo_items) | {"n_items": len(stereo_items)}
    in_tables = _in_tables(items)
    unknowns = {
        "all": unknown_split(items) | {"n_items": len(items)},
        "in_tables": unknown_split(in_tables) | {"n_items": len(in_tables)},
        "per_table": per_table,
        "reasons": dict(sorted(Counter(it["reason"] for it in items if it["label"] == UNKNOWN).items())),
        "examples": _unknown_examples(items),
    }
    counts = {
        "templates": _template_counts(items),
        "decided_by_predicate": sum(it.get("rule") == PREDICATE_RULE for it in items),
        "decided_by_determiner": sum(it.get("rule") in ("determiner", "relative") for it in items),
        "decided_by_other_person": sum(it.get("rule") == OTHER_PERSON_RULE for it in items),
    }
    return SystemScores(system, lang, tables, stereotype_table(items, resamples), counts, unknowns)


def system_json(scores: SystemScores, alpha: float) -> dict:
    """summary.json's entry of one system: every table with its CIs, the counts and the unknowns."""
    return {
        "format": METRICS_FORMAT,
        "tables": {name: table.to_json(alpha) for name, table in scores.tables.items()},
        "stereotype": scores.stereotype.to_json(alpha),
        **scores.counts,
        "unknowns": scores.unknowns,
    }


ISSUE_SUMMARY_COLUMNS = (
    "lang", "system", "ambiguity", "n_det", "n_amb", "M_det", "F_det", "N_det", "M_amb", "F_amb", "N_amb",
    "dM", "dF", "dN", "unknown_rate",
)
#: Columns after the fixed ones: the unknown rate split into our gaps and outputs without a rendering.
SUMMARY_EXTRA_COLUMNS = ("unknown_gap_rate", "unknown_no_rendering_rate")
SUMMARY_COLUMNS = ISSUE_SUMMARY_COLUMNS + SUMMARY_EXTRA_COLUMNS
STRATEGY_COLUMNS = ("lang", "system", "N_det", *STRATEGIES)
STEREOTYPE_COLUMNS = ("lang", "system", "adverb", "n", "M", "F", "N", "dM", "dF", "dN", "p_dM", "p_dF", "p_dN")
TEMPLATE_COLUMNS = ("lang", "system", "template", "group", "paper_items", "items", "classified", "unknown",
                    "M", "F", "N", *STRATEGIES)
#: The ambiguity tables of summary.tsv (Tables 4 and 5), in order.
AMBIGUITY_TABLES = ("omission", "active")


def _rate(count: int, total: int) -> float | None:
    return round(count / total, 6) if total else None


def summary_rows(scores: SystemScores, alpha: float) -> list[dict]:
    """summary.tsv: one row per ambiguity table (omission = Table 4, active = Table 5)."""
    rows = []
    for name in AMBIGUITY_TABLES:
        table = scores.tables[name].to_json(alpha)
        unknown = scores.unknowns["per_table"][name]
        row = {"lang": scores.lang, "system": scores.system, "ambiguity": name,
               "n_det": table["n_determined"]["classified"], "n_amb": table["n_ambiguous"]["classified"]}
        for c in ("M", "F", "N"):
            row[f"{c}_det"] = table["determined"][c]["value"]
            row[f"{c}_amb"] = table["ambiguous"][c]["value"]
            row[f"d{c}"] = table["delta"][c]["value"]
        for column, count in (("unknown_rate", "unknown"), ("unknown_gap_rate", "unknown_gap"),
                              ("unknown_no_rendering_rate", "unknown_no_rendering")):
            row[column] = _rate(unknown[count], unknown["n_items"])
        rows.append(row)
    return rows


def strategy_row(scores: SystemScores, alpha: float) -> dict:
    """strategies.tsv (Table 6): N and N1-N5 shares of the determined items, macro-averaged over templates 1-5."""
    det = scores.tables["strategies"].to_json(alpha)["determined"]
    return {"lang": scores.lang, "system": scores.system, "N_det": det["N"]["value"],
            **{s: det[s]["value"] for s in STRATEGIES}}


def stereotype_rows(scores: SystemScores, alpha: float) -> list[dict]:
    """stereotype.tsv (Table 7): M/F/N per adverb condition; the Δs and paired p-values against no adverb."""
    result = scores.stereotype.to_json(alpha)
    rows = []
    for condition, contrast in (("none", None), ("M", "masculine_vs_none"), ("F", "feminine_vs_none")):
        side = result["conditions"][condition]
        row = {"lang": scores.lang, "system": scores.system,
               "adverb": {"none": "none", "M": "masculine", "F": "feminine"}[condition],
               "n": side["n"]["classified"], **{c: side[c]["value"] for c in ("M", "F", "N")}}
        for c in ("M", "F", "N"):
            test = result["contrasts"][contrast][c] if contrast else {}
            row[f"d{c}"], row[f"p_d{c}"] = test.get("value"), test.get("p_value")
        rows.append(row)
    return rows


def template_rows(scores: SystemScores, paper: Mapping[str, Mapping[str, int]]) -> list[dict]:
    """templates.tsv: per template and group the paper's item count, ours, and the classified shares."""
    rows = []
    for template in TEMPLATES:
        for group, entry in sorted(scores.counts["templates"].get(template, {}).items()):
            classified = entry["classified"]
            rows.append({
                "lang": scores.lang, "system": scores.system, "template": template, "group": group,
                "paper_items": paper.get(template, {}).get(group.split(":", 1)[-1]), "items": entry["items"],
                "classified": classified, "unknown": sum(entry["unknown"].values()),
                **{k: _rate(entry["labels"].get(k, 0), classified) for k in ("M", "F", "N", *STRATEGIES)},
            })
    return rows


def unknown_listing(items: Iterable[Mapping]) -> list[dict]:
    """Every unknown item with its reason and what was looked at, for review."""
    keys = ("system", "lang", "seg_id", "slot", "template", "adjective", "variant", "reason", "evidence",
            "aligned_by", "text")
    return [{k: it.get(k) for k in keys} for it in items if it["label"] == UNKNOWN]
