"""Calibrate the adequacy threshold: how chrF++ scores real translations and text that does not translate its source.

    python bench/adequacy_calibration.py                    # the bundled sample (data/sample)
    python bench/adequacy_calibration.py /data/mgente       # your mGeNTE TSVs (same layout)

Per language, three distributions of sentence chrF++ against a row's references (Ref-G, Ref-N and the common-set
alternatives, best match kept, as the evaluator scores):

- ``other_reference``: each reference scored against the row's *other* references — a valid translation that is
  not the one being compared with (a neutral rewrite against the gendered reference, and the reverse);
- ``shuffled_source``: a reference of another row (a seeded derangement) — fluent target-language text that does
  not translate this source, the failure a lexical judge cannot see;
- ``source_copied``: the English source itself, the other common failure of small models.

The record gives their quantiles and, for candidate thresholds, the share of each distribution at or above it. The
threshold the project uses (``gnt.evaluation.adequacy.ADEQUACY_THRESHOLD``) should keep nearly every shuffled
and copied text below and most valid translations above; the record says how well it does.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from record import bench_command, conclude

from gnt.cli.command import Call, Subject
from gnt.data.mgente import load_mgente
from gnt.evaluation.adequacy import ADEQUACY_THRESHOLD, chrf_pp

ROOT = Path(__file__).resolve().parent.parent
CANDIDATES = (15, 20, 25, 30, 35, 40)
QUANTILES = (1, 5, 25, 50, 75, 95, 99)


def _references(entry) -> list[str]:
    return [r for r in (entry.ref_g, *entry.ref_n) if r]


def _summary(values: list[float]) -> dict:
    array = np.array(values, dtype=float)
    return {
        "n": len(values),
        "mean": round(float(array.mean()), 2),
        "quantiles": {f"p{q}": round(float(np.percentile(array, q)), 2) for q in QUANTILES},
        "share_at_or_above": {str(t): round(float((array >= t).mean()), 4) for t in CANDIDATES},
    }


def calibrate(entries: list, seed: int = 0) -> dict:
    """The three distributions of one language's entries."""
    other, shuffled, copied = [], [], []
    refs = [_references(e) for e in entries]
    for entry, row_refs in zip(entries, refs, strict=True):
        for i, reference in enumerate(row_refs):
            rest = row_refs[:i] + row_refs[i + 1:]
            if rest:
                other.append(chrf_pp(reference, rest))
        copied.append(chrf_pp(entry.source, row_refs))
    order = list(range(len(entries)))
    rng = random.Random(seed)
    while len(order) > 1 and any(i == j for i, j in enumerate(order)):
        rng.shuffle(order)
    for i, j in enumerate(order):
        shuffled.append(chrf_pp(refs[j][0], refs[i]))
    return {"other_reference": _summary(other), "shuffled_source": _summary(shuffled), "source_copied": _summary(copied)}


@dataclass
class AdequacyCalibrationOptions:
    """Which languages (the TSVs' folder is the MGENTE positional)."""

    langs: list[str] = field(default_factory=lambda: ["it", "es", "de", "el"], metadata={
        "help": "target languages calibrated"})


def _run(call: Call) -> None:
    args = call.build(AdequacyCalibrationOptions)
    mgente = call.subject or str(ROOT / "data" / "sample")
    entries = load_mgente(mgente, list(args.langs))
    per_lang = {}
    for lang in args.langs:
        lang_entries = [e for e in entries if e.lang == lang]
        if lang_entries:
            per_lang[lang] = calibrate(lang_entries)
    t = str(int(ADEQUACY_THRESHOLD)) if float(ADEQUACY_THRESHOLD).is_integer() else str(ADEQUACY_THRESHOLD)
    rows = []
    for lang, dists in per_lang.items():
        for name, dist in dists.items():
            share = dist["share_at_or_above"].get(t)
            rows.append((f"{lang} {name}: median / share >= {t}", f"{dist['quantiles']['p50']} / {share}", ""))
    figures = {"data": mgente, "threshold": ADEQUACY_THRESHOLD, "languages": per_lang}
    worst_shuffled = max(d["shuffled_source"]["share_at_or_above"].get(t, 0) for d in per_lang.values())
    worst_copied = max(d["source_copied"]["share_at_or_above"].get(t, 0) for d in per_lang.values())
    weakest_valid = min(d["other_reference"]["share_at_or_above"].get(t, 0) for d in per_lang.values())
    figures.update(worst_shuffled_above=worst_shuffled, worst_copied_above=worst_copied,
                   weakest_valid_above=weakest_valid)
    goals = {"shuffled and copied texts at or above the threshold": "<= 2% in every language",
             "valid translations (other references) at or above": ">= 80% in every language"}
    missed = []
    if max(worst_shuffled, worst_copied) > 0.02:
        missed.append(f"{max(worst_shuffled, worst_copied):.1%} of a non-translation baseline reaches {t}")
    if weakest_valid < 0.8:
        missed.append(f"only {weakest_valid:.1%} of valid translations reach {t} in some language")
    conclude("adequacy_calibration", "chrF++ adequacy calibration", rows, figures, goals, missed)


COMMAND = bench_command(
    __name__, __file__, "benchmark: how chrF++ scores real translations and text that does not translate its source",
    AdequacyCalibrationOptions, _run, __doc__,
    subject=Subject("MGENTE", "a folder of mGeNTE TSVs (default: the bundled sample, data/sample)",
                    required=False)
)
