"""Paired tests of the templated suite between two models: did a checkpoint's N_amb or ΔN really change?

Both models translated the same suite pairs, so the comparison is paired by pair: the pairs are resampled jointly
for both models (a pair's determined and ambiguous items travel together), each statistic is recomputed for each
model on every resample, and the difference's percentile interval and two-sided p-value (share of resampled
differences on the other side of zero, +1 corrected) are reported. Statistics, over classified items only (as in
:mod:`gnt.templated_suite.metrics`):

- ``N_amb``: share of ambiguous inputs translated neutrally;
- ``dN``: ΔN = N_amb − N_det, the gender-neutral response to ambiguity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from gnt.bootstrap import DEFAULT, BootstrapSettings

STATISTICS = ("N_amb", "dN")
UNKNOWN = "unknown"


def _pair_counts(items: Iterable[Mapping], style: str, lang: str) -> dict[str, np.ndarray]:
    """Per pair: [N ambiguous, classified ambiguous, N determined, classified determined]."""
    counts: dict[str, np.ndarray] = {}
    for item in items:
        if item.get("style") != style or item.get("lang") != lang:
            continue
        row = counts.setdefault(str(item["pair_id"]), np.zeros(4))
        offset = 0 if item["variant"] == "ambiguous" else 2
        if item.get("label") != UNKNOWN:
            row[offset + 1] += 1
            row[offset] += item.get("label") == "N"
    return counts


def _statistic(sums: np.ndarray, name: str) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        amb = sums[..., 0] / sums[..., 1]
        if name == "N_amb":
            return amb
        return amb - sums[..., 2] / sums[..., 3]


def paired_suite_test(
    base_items: Iterable[Mapping],
    other_items: Iterable[Mapping],
    *,
    style: str,
    lang: str,
    statistic: str,
    bootstrap: BootstrapSettings = DEFAULT,
) -> dict | None:
    """``{"base", "other", "delta", "ci", "p_value", "n_pairs"}`` for other − base, or None without shared pairs."""
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    a, b = _pair_counts(base_items, style, lang), _pair_counts(other_items, style, lang)
    keys = sorted(set(a) & set(b))
    if not keys:
        return None
    base, other = np.stack([a[k] for k in keys]), np.stack([b[k] for k in keys])
    observed_a, observed_b = _statistic(base.sum(0), statistic), _statistic(other.sum(0), statistic)
    if np.isnan(observed_a) or np.isnan(observed_b):
        return None
    rng = np.random.default_rng(bootstrap.bootstrap_seed)
    index = rng.integers(0, len(keys), size=(bootstrap.bootstrap_samples, len(keys)))
    diff = _statistic(other[index].sum(1), statistic) - _statistic(base[index].sum(1), statistic)
    diff = diff[~np.isnan(diff)]
    delta = float(observed_b - observed_a)
    if diff.size == 0:
        return None
    if np.allclose(diff, 0) and delta == 0:
        p_value = 1.0
    else:
        below, above = float((diff <= 0).sum()), float((diff >= 0).sum())
        p_value = min(1.0, 2 * (min(below, above) + 1) / (diff.size + 1))
    lo, hi = np.percentile(diff, [100 * bootstrap.alpha / 2, 100 * (1 - bootstrap.alpha / 2)])
    return {"base": float(observed_a), "other": float(observed_b), "delta": delta, "ci": [float(lo), float(hi)],
            "p_value": p_value, "n_pairs": len(keys)}
