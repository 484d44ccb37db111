"""Classification agreement figures shared by judge validation and judge cross-checks.

Accuracy, per-label precision/recall/F1, macro-F1, confusion matrix and Cohen's κ, in plain Python so the numbers
can be checked by hand (the tests do). Conventions, stated once:

* macro-F1 averages F1 over the labels that occur in the gold *or* the predictions (as scikit-learn does by
  default), so a label nobody used does not pull the mean down with a meaningless 0;
* a prediction that is not a label (a judge error) stays in the data as its own category: it counts as wrong for
  accuracy, lowers the recall of its gold label, appears as a confusion-matrix column and is a category for κ,
  but it is not itself a label that gets an F1;
* κ = (p_o − p_e) / (1 − p_e), with p_e from the two marginals; when p_e = 1 (both raters always say the same
  single label) κ is undefined and reported as None.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> float | None:
    """Cohen's κ of two raters over the same items (None when undefined)."""
    if len(a) != len(b):
        raise ValueError("both raters must label the same items")
    n = len(a)
    if n == 0:
        return None
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[k] * cb.get(k, 0) for k in ca) / (n * n)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1 - p_e)


def confusion(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> dict[str, dict[str, int]]:
    """``matrix[gold][pred]`` counts, rows and columns in ``labels`` order (columns also for non-label predictions)."""
    columns = list(labels) + sorted({p for p in pred if p not in labels})
    rows = list(labels) + sorted({g for g in gold if g not in labels})
    matrix = {g: dict.fromkeys(columns, 0) for g in rows}
    for g, p in zip(gold, pred, strict=True):
        matrix[g][p] += 1
    return matrix


def classification_report(
    gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]
) -> dict[str, Any]:
    """Accuracy, per-label P/R/F1, macro-F1, confusion matrix and κ of predictions against gold labels."""
    if len(gold) != len(pred):
        raise ValueError("gold and predictions differ in length")
    n = len(gold)
    correct = sum(g == p for g, p in zip(gold, pred, strict=True))
    used = [lab for lab in labels if lab in set(gold) | set(pred)]
    per_label: dict[str, dict[str, float | int]] = {}
    for lab in used:
        tp = sum(g == lab and p == lab for g, p in zip(gold, pred, strict=True))
        n_pred = sum(p == lab for p in pred)
        n_gold = sum(g == lab for g in gold)
        precision = tp / n_pred if n_pred else 0.0
        recall = tp / n_gold if n_gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_label[lab] = {"precision": precision, "recall": recall, "f1": f1, "support": n_gold}
    macro_f1 = sum(v["f1"] for v in per_label.values()) / len(per_label) if per_label else None
    return {
        "n": n,
        "accuracy": correct / n if n else None,
        "macro_f1": macro_f1,
        "kappa": cohen_kappa(gold, pred),
        "per_label": per_label,
        "confusion": confusion(gold, pred, labels),
        "labels": list(labels),
    }


def binary_agreement(a: Sequence[bool], b: Sequence[bool]) -> dict[str, Any]:
    """Percent agreement and κ of two neutrality judgments over the same translations."""
    n = len(a)
    agree = sum(x == y for x, y in zip(a, b, strict=True))
    return {"n": n, "agreement": agree / n if n else None, "kappa": cohen_kappa(list(a), list(b))}
