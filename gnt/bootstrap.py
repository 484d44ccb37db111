"""Bootstrap confidence intervals and the paired bootstrap test, over clusters of records.

Every statistic here is a function of *sums* of per-record counts (correct/total, TP/FP/FN), so one resampling
matrix ``W`` (B × clusters, multinomial counts) gives all B replicates of all statistics at once as ``W @ counts``.
Records are resampled by cluster: a cell has one record per row, but a language or overall aggregate has the same
row in every cell, and those outputs are correlated, so the row (not the record) is the resampling unit.

Percentile intervals; seeded, so the same records always give the same intervals (resumed sweeps compare equal).

How many replicates, which seed and which alpha are one :class:`BootstrapSettings` object, passed whole from the
recipe (its fields are the recipe keys ``bootstrap_samples``, ``bootstrap_seed`` and ``alpha``) to every function
here: one name and one default for each, wherever an interval or a test is computed.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from gnt.recipe import Bounds, RecipeError

#: Bootstrap replicates of every confidence interval (recipe key ``bootstrap_samples``), its seed and alpha.
DEFAULT_SAMPLES = 1000
DEFAULT_SEED = 0
DEFAULT_ALPHA = 0.05
#: Replicates of a paired test called without a count: the p-value's resolution is 1 / (replicates + 1).
DEFAULT_PAIRED_SAMPLES = 10_000
SAMPLES_BOUNDS = Bounds(1, 1_000_000, note="each replicate is a row of a matrix over the rows evaluated")
"""The range of a count of bootstrap replicates: beyond it the resampling matrix does not fit in memory."""


@dataclass
class BootstrapSettings:
    """The paired bootstrap behind every confidence interval the project reports (docs/metrics.md)."""

    bootstrap_samples: int = field(default=DEFAULT_SAMPLES, metadata={"help": "bootstrap resamples per interval",
                                                                      "bounds": SAMPLES_BOUNDS})
    bootstrap_seed: int = field(default=DEFAULT_SEED, metadata={"help": "seed of the resampling",
                                                                "bounds": Bounds(0, 2**32 - 1)})
    alpha: float = field(default=DEFAULT_ALPHA, metadata={"help": "1 - confidence level of the intervals",
                                                          "bounds": Bounds(0, 1, above=True, below=True)})

    def validate_bootstrap(self) -> None:
        if self.bootstrap_samples is not None and self.bootstrap_samples < 1:
            raise RecipeError(f"bootstrap_samples must be at least 1 (got {self.bootstrap_samples})")
        if not 0 < self.alpha < 1:
            raise RecipeError(f"alpha must be between 0 and 1 (got {self.alpha})")

    @classmethod
    def of(cls, config: object) -> BootstrapSettings:
        """The bootstrap settings of any config that has their keys (a recipe class that inherits this group, a
        recipe record's mapping); a key it lacks keeps its default."""
        get = config.get if isinstance(config, dict) else (lambda name, default: getattr(config, name, default))
        return cls(**{f.name: get(f.name, f.default) for f in dataclasses.fields(cls)})

    def paired(self) -> BootstrapSettings:
        """The settings of a paired test: at least ``DEFAULT_PAIRED_SAMPLES`` replicates, since a bootstrap p-value
        cannot fall below 1 / (replicates + 1) and a Holm correction over a table of tests needs small ones."""
        return dataclasses.replace(self, bootstrap_samples=max(self.bootstrap_samples, DEFAULT_PAIRED_SAMPLES))

    def weights(self, n_clusters: int, name: str, namespace: str | None = None) -> np.ndarray:
        """The resampling matrix of one named block (:func:`block_seed`, :func:`resampling_weights`)."""
        return resampling_weights(n_clusters, self.bootstrap_samples, block_seed(self.bootstrap_seed, name, namespace))

    def record(self, method: str) -> dict:
        """The ``bootstrap`` block of a metrics file: what its intervals were computed with."""
        return {"samples": self.bootstrap_samples, "seed": self.bootstrap_seed, "alpha": self.alpha, "method": method}


def recorded_bootstrap(metrics: dict) -> BootstrapSettings:
    """The settings a metrics file's intervals were computed with (its ``bootstrap`` block, written by
    :meth:`BootstrapSettings.record`), so a step that recomputes them (the judge) computes the same ones."""
    block = metrics.get("bootstrap") or {}
    return BootstrapSettings(int(block.get("samples", DEFAULT_SAMPLES)), int(block.get("seed", DEFAULT_SEED)),
                             float(block.get("alpha", DEFAULT_ALPHA)))


DEFAULT = BootstrapSettings()
"""The recipe defaults (1,000 replicates, seed 0, alpha 0.05)."""
PAIRED = BootstrapSettings(bootstrap_samples=DEFAULT_PAIRED_SAMPLES)
"""A paired test's defaults (10,000 replicates)."""


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


def mean_ci(values: Sequence[float], clusters: Sequence[Hashable], bootstrap: BootstrapSettings, seed: int) -> dict:
    """Mean of one value per record with its percentile CI (clusters resampled), rounded; ``n`` counts records.
    ``seed`` is the block's own (:func:`block_seed` of the settings' seed and the block's name).

    The shape of every rate and mean the results files hold (``{"value", "ci", "n"}``), for steps that score each
    record with one number (xCOMET segment scores, won preference pairs).
    """
    per_record = np.array([[v, 1.0] for v in values], dtype=float).reshape(-1, 2)
    sums = cluster_sums(per_record, clusters)
    weights = resampling_weights(sums.shape[0], bootstrap.bootstrap_samples, seed)
    result = estimate(sums, ratio, weights, bootstrap.alpha)
    result["n"] = len(values)
    return rounded(result)


def paired_bootstrap(
    a_correct: Sequence[float],
    b_correct: Sequence[float],
    *,
    clusters: Sequence[Hashable] | None = None,
    bootstrap: BootstrapSettings = PAIRED,
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
    n_boot, alpha = bootstrap.bootstrap_samples, bootstrap.alpha
    weights = resampling_weights(counts.shape[0], n_boot, bootstrap.bootstrap_seed)
    diff = float(ratio(counts.sum(axis=0)))
    replicates = ratio(weights @ counts)
    low, high = np.percentile(replicates, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    extreme = np.sum(np.abs(replicates - diff) >= abs(diff) - 1e-12)
    p_value = float((1 + extreme) / (1 + n_boot))
    return {"diff": diff, "ci": [float(low), float(high)], "p_value": min(1.0, p_value), "n": int(a.size)}
