"""The suite's minimal pairs: the determined and ambiguous readings of the same adjective in the same frame.

The suite perturbs each determined segment ("The man smiled. 'I think I'm tall...'") into an ambiguous twin
("I smiled. 'I think I'm tall...'"), so an adjective's response to ambiguity is read against the same adjective
with a known referent. A slot's pair is its family, adjective, turn, person and polarity
(:func:`gnt.templated_suite.wmt24.score.pair_key`); a pair is *matched* in a pool when it has at least one
classified ambiguous item of that pool and one classified determined item.

Pairs are weighted equally: pooling items would let a few adjectives that the suite repeats over many occupations
("bloody" and "educated" have ~180 ambiguous "they" items each and a handful of determined ones) set N_amb on their
own, while their N_det comes from other adjectives, and ΔN would measure which adjectives are epicene rather than
the response to ambiguity. So per pair the M/F/N rates of each side are taken over its classified items, a pool's
M_det, N_amb... are the means of those rates over its matched pairs, ΔN the mean of the per-pair differences, and
the percentile bootstrap resamples pairs (both sides together: the Δ intervals are paired).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from gnt.evaluation.bootstrap import block_seed, cluster_sums, estimate, ratio, resampling_weights
from gnt.templated_suite.classify import UNKNOWN

CLASSES: tuple[str, ...] = ("M", "F", "N")
_DIGITS = 6


def matched_pairs(items: Sequence[Mapping], pool: str) -> list[Mapping]:
    """The items of ``pool``'s matched pairs (unknowns included, so they are still counted)."""
    amb, det = set(), set()
    for it in items:
        if it["label"] == UNKNOWN:
            continue
        if it["variant"] == "ambiguous" and it["ambiguity"] == pool:
            amb.add(it["pair_id"])
        elif it["variant"] == "determined":
            det.add(it["pair_id"])
    keys = amb & det
    return [
        it for it in items
        if it["pair_id"] in keys and (it["variant"] == "determined" or it["ambiguity"] == pool)
    ]


def _difference(sums: np.ndarray) -> np.ndarray:
    return ratio(sums[..., 0:2]) - ratio(sums[..., 2:4])


def _round(result: dict, n: int) -> dict:
    out = {"value": None, "ci": None, "n": n}
    if n and result.get("value") is not None and not np.isnan(result["value"]):
        out["value"] = round(float(result["value"]), _DIGITS)
        out["ci"] = [round(float(x), _DIGITS) for x in result["ci"]]
    return out


def paired_block(items: Sequence[Mapping], name: str, n_boot: int, seed: int, alpha: float) -> dict:
    """M/F/N per side as means over matched pairs, their per-pair differences, and pair-resampled CIs.

    ``items`` are the items of matched pairs (:func:`matched_pairs`); the result has the keys of
    :func:`gnt.templated_suite.metrics.block_metrics` that the WMT24 tables read (``classified``,
    ``determined``, ``ambiguous``, ``delta``, ``N_det``, ``n_pairs``).
    """
    known = [it for it in items if it["label"] != UNKNOWN]
    sizes = Counter((it["pair_id"], it["variant"]) for it in known)
    pairs = [it["pair_id"] for it in known]
    n_pairs = len(set(pairs))
    weights = resampling_weights(n_pairs, n_boot, block_seed(seed, name))
    side = {v: np.array([it["variant"] == v for it in known], dtype=float) for v in ("determined", "ambiguous")}
    share = np.array([1.0 / sizes[(it["pair_id"], it["variant"])] for it in known])
    result: dict = {
        "n_pairs": n_pairs,
        "classified": {v: int(mask.sum()) for v, mask in side.items()},
        "weighting": "each matched pair weighs the same on each side",
    }
    for c in CLASSES:
        hit = np.array([it["label"] == c for it in known], dtype=float) * share
        columns = {v: (hit * mask, share * mask) for v, mask in side.items()}
        for v in side:
            rows = cluster_sums(np.stack(columns[v], axis=1), pairs) if known else np.zeros((0, 2))
            result.setdefault(v, {})[c] = _round(estimate(rows, ratio, weights, alpha), n_pairs)
        both = np.stack(columns["ambiguous"] + columns["determined"], axis=1) if known else np.zeros((0, 4))
        rows = cluster_sums(both, pairs) if known else both
        result.setdefault("delta", {})[c] = _round(estimate(rows, _difference, weights, alpha), n_pairs)
    result["N_det"] = result["determined"]["N"]
    return result
