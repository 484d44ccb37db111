"""What the readable labels of a block say beyond accuracy: their distribution (and whether the model collapsed onto
one label) and the scores of the best constant label, which a model must beat to show it decides."""

from __future__ import annotations

import numpy as np

from gnt.results_schema import LabelBaselines, LabelDistribution

COLLAPSE_SHARE = 0.95
"""A model whose readable labels are at least this share one class has collapsed onto a constant label."""


def label_distribution(labels: np.ndarray) -> LabelDistribution:
    """Counts and shares of the labels a model gave (outputs with an extraction error excluded), and whether they
    collapsed onto one class (``collapsed``: the majority label, or null; undefined without any label)."""
    gendered, neutral = int((labels == "GENDERED").sum()), int((labels == "NEUTRAL").sum())
    total = gendered + neutral
    majority, top = ("GENDERED", gendered) if gendered >= neutral else ("NEUTRAL", neutral)
    collapsed = majority if total and top / total >= COLLAPSE_SHARE else None
    return {"counts": {"GENDERED": gendered, "NEUTRAL": neutral},
            "shares": {"GENDERED": round(gendered / total, 6) if total else None,
                       "NEUTRAL": round(neutral / total, 6) if total else None},
            "n": total, "collapse_share": COLLAPSE_SHARE, "majority_share": round(top / total, 6) if total else None,
            "collapsed": collapsed, "collapse": (1.0 if collapsed else 0.0) if total else None}


def constant_label_baselines(n_gendered: int, n_neutral: int) -> LabelBaselines:
    """What the best constant label scores on a block with these gold counts: a model must beat these to have
    learnt the decision. Balanced accuracy of any constant is 0.5; accuracy and macro-F1 favour the majority."""
    total = n_gendered + n_neutral
    if not total:
        return {"balanced_accuracy": None, "accuracy": None, "macro_f1": None, "label": None}
    f1 = {"GENDERED": n_gendered / (2 * n_gendered + n_neutral) if n_gendered else 0.0,
          "NEUTRAL": n_neutral / (2 * n_neutral + n_gendered) if n_neutral else 0.0}  # (other class's F1 is 0) / 2
    best = max(f1, key=lambda label: f1[label])
    return {"balanced_accuracy": 0.5, "accuracy": round(max(n_gendered, n_neutral) / total, 6),
            "macro_f1": round(f1[best], 6), "label": best}
