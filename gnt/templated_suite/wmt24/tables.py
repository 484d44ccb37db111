"""The paper's four tables for one system, macro-averaged per template type, with bootstrap CIs and paired tests.

Proportions are over classified items (unknowns are left out and counted). Each side of a table (determined,
ambiguous) is the unweighted mean over its template types (:data:`~.templates.TABLES`) of the M/F/N (and N1-N5)
shares among that type's classified items, so a template with many slots per segment does not outweigh another;
a Δ is the ambiguous side minus the determined side.

Intervals come from a percentile bootstrap that resamples the *segments* of each template type (each type on its
own, as the macro-average treats them) and, for template 7, the *adjectives* (each with its items without an adverb,
with masculine- and with feminine-stereotyped adverbs). The resampling is drawn once per run, from the segment list
and the seed alone, and shared by every system and model scored. So:

* a Δ's interval is paired wherever its two sides share segments (the determined and the ambiguous slots of one
  template-4 dialogue travel together);
* the stereotype contrasts of template 7 are paired per adjective (:func:`stereotype_table`);
* two systems are compared on the same resamples (:func:`paired_test` of their difference), which is how a checkpoint of ours is
  placed among the WMT24 systems.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gnt.bootstrap import BootstrapSettings
from gnt.templated_suite.classify import STRATEGIES, UNKNOWN
from gnt.templated_suite.wmt24.reader import Segment
from gnt.templated_suite.wmt24.stereotypes import NO_ADVERB
from gnt.templated_suite.wmt24.templates import SIDES, TABLES, Table

CLASSES: tuple[str, ...] = ("M", "F", "N")
COUNTED: tuple[str, ...] = CLASSES + STRATEGIES
#: Columns of a count row: the classes and strategies, then classified items, then all items.
_CLASSIFIED, _ITEMS = len(COUNTED), len(COUNTED) + 1
ADVERB_CONDITIONS: tuple[str, ...] = (NO_ADVERB, "M", "F")
#: Template-7 contrasts: (name, condition, baseline); paired per adjective.
CONTRASTS: tuple[tuple[str, str, str], ...] = (
    ("masculine_vs_none", "M", NO_ADVERB), ("feminine_vs_none", "F", NO_ADVERB), ("feminine_vs_masculine", "F", "M"),
)
_DIGITS = 6


@dataclass
class Estimate:
    """A statistic's point value and its bootstrap replicates (NaN where a replicate drew no classified item)."""

    value: float | None
    replicates: np.ndarray
    n: int

    def to_json(self, alpha: float) -> dict:
        """``{"value", "ci", "n"}``, rounded; value and ci are None when nothing was classified."""
        if self.value is None:
            return {"value": None, "ci": None, "n": self.n}
        finite = self.replicates[~np.isnan(self.replicates)]
        low, high = np.percentile(finite, [100 * alpha / 2, 100 * (1 - alpha / 2)]) if finite.size else (
            self.value, self.value)
        return {"value": round(self.value, _DIGITS), "ci": [round(float(low), _DIGITS), round(float(high), _DIGITS)],
                "n": self.n}

    def __sub__(self, other: Estimate) -> Estimate:
        value = None if self.value is None or other.value is None else self.value - other.value
        return Estimate(value, self.replicates - other.replicates, min(self.n, other.n))


def paired_test(diff: Estimate, alpha: float) -> dict:
    """A difference of two estimates on the same resamples (``a - b``): value, percentile CI, two-sided p-value.

    The p-value is the share of resampled differences at least |a − b| away from a − b (the bootstrap distribution
    shifted to the null), +1 corrected, as in :func:`gnt.bootstrap.paired_bootstrap`.
    """
    out = diff.to_json(alpha)
    if diff.value is None:
        out["p_value"] = None
        return out
    finite = diff.replicates[~np.isnan(diff.replicates)]
    if np.allclose(finite, diff.value) and diff.value == 0:
        out["p_value"] = 1.0
    else:
        extreme = int(np.sum(np.abs(finite - diff.value) >= abs(diff.value) - 1e-12))
        out["p_value"] = round(min(1.0, (1 + extreme) / (1 + finite.size)), _DIGITS)
    return out


@dataclass
class Resamples:
    """The resampling units of a run and their bootstrap weights, shared by every system scored.

    ``units[key]`` lists the cluster ids in a fixed order (the segments of a template type, or the adjectives of
    template 7) and ``weights[key]`` is B × len(units) multinomial counts, seeded by the run's seed and the key only.
    """

    units: dict[str, list[str]]
    weights: dict[str, np.ndarray]
    samples: int
    alpha: float

    @classmethod
    def draw(cls, segments: Sequence[Segment], templates: Mapping[str, str], lang: str,
             bootstrap: BootstrapSettings) -> Resamples:
        units: dict[str, list[str]] = {}
        for seg in segments:
            units.setdefault(templates[seg.seg_id], []).append(seg.seg_id)
        adjectives = sorted({seg.slots[0].adjective for seg in segments if templates[seg.seg_id] == "7"})
        if adjectives:
            units["7-adjectives"] = adjectives
        weights = {key: bootstrap.weights(len(ids), f"wmt24|{lang}|{key}") for key, ids in units.items()}
        return cls(units, weights, bootstrap.bootstrap_samples, bootstrap.alpha)


def _count_rows(items: Sequence[Mapping], units: list[str], key: str) -> np.ndarray:
    """Per unit: counts of M, F, N, N1..N5, classified items and all items (units × 10)."""
    index = {u: i for i, u in enumerate(units)}
    rows = np.zeros((len(units), len(COUNTED) + 2))
    for it in items:
        row = rows[index[it[key]]]
        row[_ITEMS] += 1
        if it["label"] == UNKNOWN:
            continue
        row[_CLASSIFIED] += 1
        row[COUNTED.index(it["label"])] += 1
        if it["label"] == "N" and it.get("strategy") in STRATEGIES:
            row[COUNTED.index(it["strategy"])] += 1
    return rows


def _shares(sums: np.ndarray) -> np.ndarray:
    """Class/strategy shares among classified items, from count sums (..., 10) → (..., 8); NaN without any."""
    classified = sums[..., _CLASSIFIED : _CLASSIFIED + 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(classified > 0, sums[..., :_CLASSIFIED] / np.where(classified > 0, classified, 1), np.nan)


def _macro(per_template: list[np.ndarray]) -> np.ndarray:
    """Unweighted mean over template types, ignoring types without a classified item (NaN when none has one)."""
    stacked = np.stack(per_template)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "mean of empty slice": no type has an item
        return np.nanmean(stacked, axis=0)


@dataclass
class Side:
    """One side of a table: per counted class an :class:`Estimate`, and the item counts behind it."""

    estimates: dict[str, Estimate]
    classified: int
    items: int


def _side(items: Sequence[Mapping], templates: Sequence[str], variant: str, resamples: Resamples) -> Side:
    points, replicates, classified, total = [], [], 0, 0
    for template in templates:
        units = resamples.units.get(template, [])
        chosen = [it for it in items if it["template"] == template and it["variant"] == variant]
        rows = _count_rows(chosen, units, "seg_id")
        sums = rows.sum(axis=0)
        classified, total = classified + int(sums[_CLASSIFIED]), total + int(sums[_ITEMS])
        points.append(_shares(sums))
        weights = resamples.weights.get(template, np.zeros((resamples.samples, 0)))
        replicates.append(_shares(weights @ rows))
    point = _macro(points) if points else np.full(len(COUNTED), np.nan)
    reps = _macro(replicates) if replicates else np.full((resamples.samples, len(COUNTED)), np.nan)
    estimates = {
        name: Estimate(None if np.isnan(point[j]) else float(point[j]), reps[:, j], classified)
        for j, name in enumerate(COUNTED)
    }
    return Side(estimates, classified, total)


@dataclass
class TableResult:
    """A table of one system: its sides, the Δ per class, and its unknowns."""

    table: Table
    sides: dict[str, Side]
    delta: dict[str, Estimate]

    def to_json(self, alpha: float) -> dict:
        out: dict = {"paper": self.table.paper, "templates": {"determined": list(self.table.determined),
                                                             "ambiguous": list(self.table.ambiguous)}}
        for variant, side in self.sides.items():
            out[variant] = {name: est.to_json(alpha) for name, est in side.estimates.items()}
            out[f"n_{variant}"] = {"classified": side.classified, "items": side.items}
        if self.delta:
            out["delta"] = {name: est.to_json(alpha) for name, est in self.delta.items()}
        return out


def system_table(items: Sequence[Mapping], name: str, resamples: Resamples) -> TableResult:
    """Table ``name`` (omission, active or strategies) of one system's items."""
    table = TABLES[name]
    sides = {variant: _side(items, getattr(table, variant), variant, resamples)
             for variant in SIDES if getattr(table, variant)}
    delta = {}
    if len(sides) == 2:
        delta = {c: sides["ambiguous"].estimates[c] - sides["determined"].estimates[c] for c in CLASSES}
    return TableResult(table, sides, delta)


@dataclass
class StereotypeResult:
    """Template 7 of one system: M/F/N per adverb condition and the paired contrasts between conditions."""

    conditions: dict[str, Side]
    contrasts: dict[str, dict[str, Estimate]]

    def to_json(self, alpha: float) -> dict:
        return {
            "paper": "Table 7",
            "conditions": {c: {"n": {"classified": s.classified, "items": s.items},
                               **{k: s.estimates[k].to_json(alpha) for k in CLASSES}}
                           for c, s in self.conditions.items()},
            "contrasts": {name: {k: paired_test(diff, alpha) for k, diff in by_class.items()}
                          for name, by_class in self.contrasts.items()},
        }


def stereotype_table(items: Sequence[Mapping], resamples: Resamples) -> StereotypeResult:
    """M/F/N of template 7 without an adverb and with masculine- or feminine-stereotyped adverbs.

    Each condition pools its classified items; the resampling unit is the adjective, drawn once for all three
    conditions, so a contrast (e.g. feminine adverb − no adverb) compares the same adjectives on every resample.
    """
    units = resamples.units.get("7-adjectives", [])
    weights = resamples.weights.get("7-adjectives", np.zeros((resamples.samples, 0)))
    conditions: dict[str, Side] = {}
    for condition in ADVERB_CONDITIONS:
        chosen = [it for it in items if it["template"] == "7" and it["adverb_stereotype"] == condition]
        rows = _count_rows(chosen, units, "adjective")
        sums = rows.sum(axis=0)
        point, reps = _shares(sums), _shares(weights @ rows)
        estimates = {k: Estimate(None if np.isnan(point[j]) else float(point[j]), reps[:, j], int(sums[_CLASSIFIED]))
                     for j, k in enumerate(COUNTED)}
        conditions[condition] = Side(estimates, int(sums[_CLASSIFIED]), int(sums[_ITEMS]))
    contrasts = {name: {k: conditions[a].estimates[k] - conditions[b].estimates[k] for k in CLASSES}
                 for name, a, b in CONTRASTS}
    return StereotypeResult(conditions, contrasts)
