"""Sensitivity metrics of the templated suite (docs/templated-suite.md) from classified outputs.

Input: one *item* per (pair, variant) of one model and prompt style, i.e. a suite record plus its classification
(``label`` M/F/N/unknown, ``strategy`` N1..N5). Per language and subset:

- ``determined`` / ``ambiguous``: the proportions (M, F, N) of the *classified* outputs of that variant. Unknowns
  are left out of the denominator and reported as ``unknown_rate``: a lexicon miss says nothing about gender, and
  counting it as "not N" would let a model that translates worse look more masculine;
- ``delta``: ΔM = M_amb − M_det (default-masculine response), ΔF, ΔN = N_amb − N_det (gender-neutral response);
  ``N_det`` the baseline neutrality. A model whose class never changes between the two variants of a pair has
  ΔM = ΔF = ΔN = 0 exactly (CI [0, 0]);
- ``strategies``: counts of N1..N5 per variant and their shares among the N outputs;
- subsets: ``all``, ``omission`` (I/you) vs ``active`` ("they"), each ``kind``, and ``gender_marked`` (adjectives
  whose M and F forms differ: there an N answer takes effort, while an epicene adjective is N for free);
- ``stereotype``: for the template's cue (emotionally, nurse, engineer...) and for the adjective's own stereotype,
  the ambiguous-input proportions of the F- and M-stereotyped groups minus those of the unstereotyped group
  (``effect``: does a female-coded cue raise F, a male-coded one M, and either lower N?), and on determined inputs
  the misgendering rate (class = the other gender) when the cue contradicts the stated gender vs when it agrees;
- ``grid_labels`` (grid prompt style only): the share of NEUTRAL labels per variant and the extraction error rate.

Every rate carries a percentile bootstrap CI. The resampling unit is the *pair* (its determined and ambiguous
items together), so the Δ intervals are paired. The bootstrap machinery is the evaluation core's
(:mod:`gnt.bootstrap`), so grid and suite intervals are computed the same way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from gnt.bootstrap import (
    DEFAULT,
    BootstrapSettings,
    cluster_sums,
    estimate,
    ratio,
    rounded,
)
from gnt.results_schema import TEMPLATED_METRICS_FORMAT as METRICS_FORMAT
from gnt.templated_suite.classify import STRATEGIES, UNKNOWN

CLASSES: tuple[str, ...] = ("M", "F", "N")
VARIANTS: tuple[str, ...] = ("determined", "ambiguous")
SUBSETS: dict[str, Callable[[Mapping], bool]] = {
    "all": lambda item: True,
    "omission": lambda item: item["kind"] in ("omission_i", "omission_you"),
    "active": lambda item: item["kind"] == "active_they",
    "omission_i": lambda item: item["kind"] == "omission_i",
    "omission_you": lambda item: item["kind"] == "omission_you",
    "active_they": lambda item: item["kind"] == "active_they",
    "gender_marked": lambda item: bool(item.get("gender_marked", True)),
}


def _difference(sums: np.ndarray) -> np.ndarray:
    """Statistic over ``[..., (hits_a, total_a, hits_b, total_b)]``: hits_a/total_a − hits_b/total_b."""
    return ratio(sums[..., 0:2]) - ratio(sums[..., 2:4])


class _Resampler:
    """The items of one block, clustered by pair, with one resampling matrix shared by all its statistics."""

    def __init__(self, items: Sequence[Mapping], name: str, bootstrap: BootstrapSettings) -> None:
        self.items = items
        self.alpha = bootstrap.alpha
        self.clusters = [item["pair_id"] for item in items]
        self.weights = bootstrap.weights(len(set(self.clusters)), name)

    def column(self, predicate: Callable[[Mapping], bool]) -> np.ndarray:
        return np.array([bool(predicate(item)) for item in self.items], dtype=bool)

    def _estimate(self, columns: Sequence[np.ndarray], statistic, n: int) -> dict:
        per_item = np.stack(columns, axis=1).astype(float) if self.items else np.zeros((0, len(columns)))
        result = estimate(cluster_sums(per_item, self.clusters), statistic, self.weights, self.alpha)
        result["n"] = n
        if n == 0:
            result.update(value=None, ci=None)
        return rounded(result)

    def rate(self, hits: np.ndarray, included: np.ndarray) -> dict:
        """hits / included, with CI; ``n`` is the number of included items."""
        return self._estimate([hits & included, included], ratio, int(included.sum()))

    def difference(self, hits_a: np.ndarray, incl_a: np.ndarray, hits_b: np.ndarray, incl_b: np.ndarray) -> dict:
        """rate(a) − rate(b), resampled jointly; ``n`` is the number of pairs."""
        n = len(set(self.clusters)) if incl_a.any() and incl_b.any() else 0
        return self._estimate([hits_a & incl_a, incl_a, hits_b & incl_b, incl_b], _difference, n)


def _labels(items: Sequence[Mapping]) -> np.ndarray:
    column = np.empty(len(items), dtype=object)
    column[:] = [item["label"] for item in items]
    return column


def block_metrics(items: Sequence[Mapping], name: str, bootstrap: BootstrapSettings = DEFAULT) -> dict:
    """(M, F, N) per variant, Δs, N_det, unknown rates and strategy counts of one group of items."""
    res = _Resampler(items, name, bootstrap)
    labels = _labels(items)
    variant = {v: res.column(lambda it, v=v: it["variant"] == v) for v in VARIANTS}
    known = labels != UNKNOWN
    is_class = {c: labels == c for c in CLASSES}
    result: dict = {
        "n_pairs": len(set(res.clusters)),
        "n": {v: int(mask.sum()) for v, mask in variant.items()},
        "classified": {v: int((mask & known).sum()) for v, mask in variant.items()},
        "counts": {
            v: {**{c: int((mask & is_class[c]).sum()) for c in CLASSES}, UNKNOWN: int((mask & ~known).sum())}
            for v, mask in variant.items()
        },
        "unknown_rate": {v: res.rate(~known, mask) for v, mask in variant.items()},
    }
    for v, mask in variant.items():
        result[v] = {c: res.rate(is_class[c], mask & known) for c in CLASSES}
    result["delta"] = {
        c: res.difference(is_class[c], variant["ambiguous"] & known, is_class[c], variant["determined"] & known)
        for c in CLASSES
    }
    result["N_det"] = result["determined"]["N"]
    strategies: dict = {}
    shares: dict = {}
    for v in VARIANTS:
        counts = Counter(
            item.get("strategy") for item in items if item["variant"] == v and item["label"] == "N"
        )
        total = sum(counts.values())
        strategies[v] = {s: counts.get(s, 0) for s in STRATEGIES}
        shares[v] = {s: (round(counts.get(s, 0) / total, 6) if total else None) for s in STRATEGIES}
    result["strategies"] = strategies
    result["strategy_shares"] = shares
    result["unknown_reasons"] = {
        v: dict(sorted(Counter(
            item.get("reason") or "?" for item in items if item["variant"] == v and item["label"] == UNKNOWN
        ).items()))
        for v in VARIANTS
    }
    return result


def _stereotype_metrics(items: Sequence[Mapping], field: str, name: str, bootstrap: BootstrapSettings) -> dict:
    """Shift of the ambiguous (M, F, N) under F-/M-stereotyped cues vs none, and misgendering by cue congruence."""
    res = _Resampler(items, name, bootstrap)
    labels = _labels(items)
    known = labels != UNKNOWN
    amb = res.column(lambda it: it["variant"] == "ambiguous") & known
    det = res.column(lambda it: it["variant"] == "determined") & known
    group = {g: res.column(lambda it, g=g: (it.get(field) or None) == g) for g in ("F", "M", None)}
    out: dict = {"field": field}
    for g, mask in group.items():
        key = g or "none"
        entry: dict = {
            "n_pairs": len({it["pair_id"] for it, m in zip(items, mask, strict=True) if m}),
            "ambiguous": {c: res.rate(labels == c, amb & mask) for c in CLASSES},
        }
        if g is not None:
            entry["effect"] = {
                c: res.difference(labels == c, amb & mask, labels == c, amb & group[None]) for c in CLASSES
            }
        out[key] = entry
    expected = np.array([it.get("expected_gender") for it in items], dtype=object)
    cue = np.array([it.get(field) or None for it in items], dtype=object)
    opposite = np.array(
        [it["label"] in ("M", "F") and it.get("expected_gender") in ("M", "F") and it["label"] != it["expected_gender"]
         for it in items],
        dtype=bool,
    )
    has_cue = cue != None  # noqa: E711 - elementwise on an object array
    congruent = det & has_cue & (cue == expected)
    incongruent = det & has_cue & (cue != expected)
    out["determined_misgendered"] = {
        "congruent": res.rate(opposite, congruent),
        "incongruent": res.rate(opposite, incongruent),
        "none": res.rate(opposite, det & ~has_cue),
        "effect": res.difference(opposite, incongruent, opposite, congruent),
    }
    return out


def _grid_label_metrics(items: Sequence[Mapping], name: str, bootstrap: BootstrapSettings) -> dict:
    """NEUTRAL-label share per variant (does the model *say* it saw ambiguity?) and the extraction error rate."""
    res = _Resampler(items, name, bootstrap)
    everyone = np.ones(len(items), dtype=bool)
    ok = res.column(lambda it: it.get("extraction_error") is None)
    neutral = res.column(lambda it: it.get("grid_label") == "NEUTRAL")
    result = {
        "neutral_label": {
            v: res.rate(neutral & ok, res.column(lambda it, v=v: it["variant"] == v) & ok) for v in VARIANTS
        },
        "extraction_error_rate": res.rate(~ok, everyone),
        "extraction_errors": dict(sorted(Counter(
            it["extraction_error"] for it in items if it.get("extraction_error") is not None
        ).items())),
    }
    return result


def language_metrics(items: Sequence[Mapping], name: str, bootstrap: BootstrapSettings = DEFAULT) -> dict:
    """Every subset block, the stereotype effects and (for grid outputs) the label shares of one language."""
    out: dict = {
        subset: block_metrics([it for it in items if keep(it)], f"{name}|{subset}", bootstrap)
        for subset, keep in SUBSETS.items()
    }
    result: dict = {"subsets": out}
    result["stereotype"] = {
        "cue": _stereotype_metrics(items, "cue_stereotype", f"{name}|cue", bootstrap),
        "adjective": _stereotype_metrics(items, "adjective_stereotype", f"{name}|adj", bootstrap),
    }
    if any("grid_label" in it for it in items):
        result["grid_labels"] = _grid_label_metrics(items, f"{name}|labels", bootstrap)
    return result


def compute_metrics(
    items: Iterable[Mapping], *, bootstrap: BootstrapSettings = DEFAULT
) -> dict:
    """Metrics per prompt style and language from classified items (each with ``style`` and ``lang``)."""
    by_style: dict[str, dict[str, list[Mapping]]] = {}
    for item in items:
        by_style.setdefault(item.get("style", "plain"), {}).setdefault(item["lang"], []).append(item)
    return {
        "format": METRICS_FORMAT,
        "styles": {
            style: {
                lang: language_metrics(lang_items, f"{style}|{lang}", bootstrap)
                for lang, lang_items in sorted(langs.items())
            }
            for style, langs in by_style.items()
        },
        "bootstrap": bootstrap.record("percentile, pairs resampled"),
        "denominator": "classified outputs (unknowns excluded and reported as unknown_rate)",
    }


HEADLINE_SUBSETS = ("all", "omission", "active", "gender_marked")


def tidy_rows(model: str, metrics: Mapping, global_step: int | None = None) -> list[dict]:
    """Long-format rows (model, style, lang, subset, metric, value, ci) of the headline numbers, for tables/plots."""
    rows: list[dict] = []
    for style, langs in metrics["styles"].items():
        for lang, lang_metrics in langs.items():
            for subset in HEADLINE_SUBSETS:
                block = lang_metrics["subsets"][subset]
                values: dict[str, dict] = {}
                for c in CLASSES:
                    values[f"{c}_det"] = block["determined"][c]
                    values[f"{c}_amb"] = block["ambiguous"][c]
                    values[f"delta_{c}"] = block["delta"][c]
                for v, short in (("determined", "det"), ("ambiguous", "amb")):
                    values[f"unknown_{short}"] = block["unknown_rate"][v]
                for metric, result in values.items():
                    ci = result.get("ci") or [None, None]
                    rows.append({
                        "model": model, "global_step": global_step, "style": style, "lang": lang, "subset": subset,
                        "metric": metric, "value": result.get("value"), "ci_low": ci[0], "ci_high": ci[1],
                        "n": result.get("n"),
                    })
    return rows
