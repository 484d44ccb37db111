"""Bootstrap confidence intervals and the paired bootstrap test, over clusters of records.

Every statistic here is a function of *sums* of per-record counts (correct/total, TP/FP/FN), so one resampling
matrix ``W`` (B × clusters, multinomial counts) gives all B replicates of all statistics at once as ``W @ counts``.
Records are resampled by cluster: a cell has one record per row, but a language or overall aggregate has the same
row in every cell, and those outputs are correlated, so the row (not the record) is the resampling unit.

Percentile intervals; seeded, so the same records always give the same intervals (resumed sweeps compare equal).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Sequence

import numpy as np

#: Bootstrap replicates of every confidence interval (recipe key ``bootstrap_samples``), its seed and alpha.
DEFAULT_SAMPLES = 1000
DEFAULT_SEED = 0
DEFAULT_ALPHA = 0.05
#: Replicates of a paired test called without a count: the p-value's resolution is 1 / (replicates + 1).
DEFAULT_PAIRED_SAMPLES = 10_000


def block_seed(seed: int, name: str, namespace: str | None = None) -> int:
    """The resampling seed of one named block (a cell, a language, a subset) under the run's ``seed``.

    Each block gets its own resamples, independent of the others yet the same whatever order blocks are computed
    in, so a resumed or partial run reproduces every interval. ``namespace`` keeps the streams of two steps apart
    (xCOMET's blocks are named like the grid's).
    """
    text = f"{seed}|{name}" if namespace is None else f"{namespace}|{seed}|{name}"
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def rounded(result: dict, digits: int = 6) -> dict:
    """An :func:`estimate` result with its value and interval rounded (in place) for the results files."""
    if result.get("value") is not None:
        result["value"] = round(result["value"], digits)
        result["ci"] = [round(x, digits) for x in result["ci"]]
    return result


def resampling_weights(n_clusters: int, n_boot: int, seed: int) -> np.ndarray:
    """B × n multinomial counts: row b says how often each cluster is drawn in replicate b."""
    rng = np.random.default_rng(seed)
    if n_clusters == 0:
        return np.zeros((n_boot, 0))
    return rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_boot).astype(float)


def cluster_sums(values: np.ndarray, clusters: Sequence[Hashable]) -> np.ndarray:
    """Sum the per-record count rows of ``values`` (n × k) within each cluster (→ clusters × k), in first-seen order."""
    index: dict[Hashable, int] = {}
    ids = np.array([index.setdefault(c, len(index)) for c in clusters], dtype=int)
    out = np.zeros((len(index), values.shape[1]))
    np.add.at(out, ids, values)
    return out


def _safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def ratio(sums: np.ndarray) -> np.ndarray:
    """Statistic over ``[..., (hits, total)]``: hits / total."""
    return _safe_ratio(sums[..., 0], sums[..., 1])


def mean_of_ratios(sums: np.ndarray) -> np.ndarray:
    """Statistic over ``[..., (hits, total) per group]``: the unweighted mean of the groups' ratios (e.g. label
    balanced accuracy = mean of the Set-G and Set-N accuracies); undefined when any group is empty."""
    parts = [_safe_ratio(sums[..., 2 * g], sums[..., 2 * g + 1]) for g in range(sums.shape[-1] // 2)]
    return np.mean(np.stack(parts, axis=-1), axis=-1)


def macro_f1(sums: np.ndarray) -> np.ndarray:
    """Statistic over ``[..., (tp, fp, fn) per class]``: unweighted mean of the per-class F1 scores."""
    scores = []
    for c in range(sums.shape[-1] // 3):
        tp, fp, fn = sums[..., 3 * c], sums[..., 3 * c + 1], sums[..., 3 * c + 2]
        scores.append(_safe_ratio(2 * tp, 2 * tp + fp + fn))
    return np.mean(np.stack(scores, axis=-1), axis=-1)


def estimate(
    counts: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray], weights: np.ndarray, alpha: float = DEFAULT_ALPHA
) -> dict:
    """Point estimate and percentile CI of ``statistic`` over cluster count rows (clusters × k)."""
    n = int(counts.shape[0])
    point = statistic(counts.sum(axis=0)) if n else np.nan
    if not n or np.isnan(point):
        return {"value": None, "ci": None, "n": n}
    replicates = statistic(weights @ counts)
    replicates = replicates[~np.isnan(replicates)]
    low, high = np.percentile(replicates, [100 * alpha / 2, 100 * (1 - alpha / 2)]) if replicates.size else (point, point)
    return {"value": float(point), "ci": [float(low), float(high)], "n": n}


def mean_ci(values: Sequence[float], clusters: Sequence[Hashable], n_boot: int, seed: int,
            alpha: float = DEFAULT_ALPHA) -> dict:
    """Mean of one value per record with its percentile CI (clusters resampled), rounded; ``n`` counts records.

    The shape of every rate and mean the results files hold (``{"value", "ci", "n"}``), for steps that score each
    record with one number (xCOMET segment scores, won preference pairs).
    """
    per_record = np.array([[v, 1.0] for v in values], dtype=float).reshape(-1, 2)
    sums = cluster_sums(per_record, clusters)
    result = estimate(sums, ratio, resampling_weights(sums.shape[0], n_boot, seed), alpha)
    result["n"] = len(values)
    return rounded(result)


def paired_bootstrap(
    a_correct: Sequence[float],
    b_correct: Sequence[float],
    *,
    clusters: Sequence[Hashable] | None = None,
    n_boot: int = DEFAULT_PAIRED_SAMPLES,
    seed: int = DEFAULT_SEED,
    alpha: float = DEFAULT_ALPHA,
) -> dict:
    """Paired bootstrap of mean(a) − mean(b) over the same items (e.g. two checkpoints on the same rows × cells).

    Returns ``diff`` (a − b), its percentile ``ci``, and a two-sided ``p_value`` from the bootstrap distribution
    shifted to the null (how often a resampled difference moves at least |diff| away from diff); identical
    inputs give diff 0, CI [0, 0] and p 1. ``clusters`` groups correlated items (default: each item alone).
    """
    a = np.asarray(a_correct, dtype=float)
    b = np.asarray(b_correct, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired samples must have the same length, got {a.size} and {b.size}")
    if a.size == 0:
        return {"diff": None, "ci": None, "p_value": None, "n": 0}
    counts = np.stack([a - b, np.ones_like(a)], axis=1)
    if clusters is not None:
        counts = cluster_sums(counts, clusters)
    weights = resampling_weights(counts.shape[0], n_boot, seed)
    diff = float(ratio(counts.sum(axis=0)))
    replicates = ratio(weights @ counts)
    low, high = np.percentile(replicates, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    extreme = np.sum(np.abs(replicates - diff) >= abs(diff) - 1e-12)
    p_value = float((1 + extreme) / (1 + n_boot))
    return {"diff": diff, "ci": [float(low), float(high)], "p_value": min(1.0, p_value), "n": int(a.size)}
