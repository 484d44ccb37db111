"""What the metrics of one block (a cell, a language, everything) are computed from: its rows, their columns as
arrays, the judge's verdicts on them, and the one resampling matrix every interval of the block shares.

A metric's compute function (:mod:`gnt.evaluation.catalog`) takes a :class:`BlockInputs` and reads the columns it
needs; each column is built once per block, when first read. Rows are generation records for the grid's and the
judge's metrics and xCOMET rows (the same ``lang``, ``id``, ``set``, ``cell`` fields) for xCOMET's.

An output with an extraction error counts as a failure everywhere (a wrong label, a non-neutral and incoherent
translation), even when a label could be read from it: errors are never silently dropped. Every value carries a
bootstrap CI resampled by row (:mod:`gnt.bootstrap`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from gnt.bootstrap import BootstrapSettings, cluster_sums, estimate, ratio, rounded
from gnt.evaluation.adequacy import ADEQUACY_THRESHOLD, record_chrf
from gnt.results_schema import Stat

Judgments = Mapping[str, Mapping[str, Any]]
"""A judge's verdicts by generation ``key``: ``{"neutral": bool, "label": ...}`` (binary neutrality)."""


def judged_neutral(record: Mapping[str, Any], judgments: Judgments | None) -> bool | None:
    """The judge's binary neutrality of a record's translation; None when it gave no usable verdict."""
    judgment = judgments.get(record["key"]) if judgments else None
    neutral = judgment.get("neutral") if judgment else None
    return neutral if isinstance(neutral, bool) else None


class BlockInputs:
    """One block's rows and the columns its metrics share (built on first use), with its resampling matrix."""

    def __init__(self, records: Sequence[Mapping[str, Any]], name: str, bootstrap: BootstrapSettings,
                 judgments: Judgments | None = None) -> None:
        self.records = records
        self.name = name
        self.bootstrap = bootstrap
        self.judgments = judgments
        self.clusters = [(r["lang"], r["id"]) for r in records]

    @property
    def n(self) -> int:
        return len(self.records)

    @cached_property
    def weights(self) -> np.ndarray:
        return self.bootstrap.weights(len(set(self.clusters)), self.name)

    def column(self, key: str) -> np.ndarray:
        values = np.empty(len(self.records), dtype=object)
        values[:] = [r[key] for r in self.records]
        return values

    # --- estimates ---
    def estimate(self, columns: Sequence[np.ndarray], statistic: Callable[[np.ndarray], np.ndarray],
                 included: np.ndarray | None = None) -> Stat:
        """Point and CI of ``statistic`` over the per-row ``columns``; ``n`` counts ``included`` rows."""
        per_record = np.stack(columns, axis=1).astype(float) if self.n else np.zeros((0, len(columns)))
        result = estimate(cluster_sums(per_record, self.clusters), statistic, self.weights, self.bootstrap.alpha)
        result["n"] = int(included.sum()) if included is not None else self.n
        if result["n"] == 0:
            result.update(value=None, ci=None)
        return rounded(result)  # type: ignore[return-value]

    def rate(self, hits: np.ndarray, included: np.ndarray) -> Stat:
        """The share of ``included`` rows that are ``hits``."""
        return self.estimate([hits & included, included], ratio, included)

    # --- the grid's columns ---
    @cached_property
    def everyone(self) -> np.ndarray:
        return np.ones(self.n, dtype=bool)

    @cached_property
    def is_g(self) -> np.ndarray:
        return self.column("set") == "Set-G"

    @cached_property
    def is_n(self) -> np.ndarray:
        return ~self.is_g

    @cached_property
    def ok(self) -> np.ndarray:
        """Rows without an extraction error."""
        return self.column("error") == None  # noqa: E711 - elementwise on an object array

    @cached_property
    def labels(self) -> np.ndarray:
        return self.column("label")

    @cached_property
    def predicted(self) -> np.ndarray:
        """The generated label, None for a row with an extraction error."""
        none = np.full(self.n, None, dtype=object)
        return np.where(self.ok, self.labels, none)

    @cached_property
    def gold(self) -> np.ndarray:
        return np.where(self.is_g, "GENDERED", "NEUTRAL")

    @cached_property
    def correct(self) -> np.ndarray:
        """The label is readable and right for the row's set."""
        return self.ok & (self.predicted == self.gold)

    @cached_property
    def gender(self) -> np.ndarray:
        return self.column("gender")

    @cached_property
    def chrf(self) -> np.ndarray:
        return np.array([record_chrf(r) for r in self.records], dtype=float)

    @cached_property
    def adequate(self) -> np.ndarray:
        """Extracted translations that translate their source (chrF++ at or above the threshold)."""
        return self.ok & (self.chrf >= ADEQUACY_THRESHOLD)

    # --- the judge's columns ---
    @cached_property
    def judged(self) -> np.ndarray:
        """Rows the judge gave a verdict on."""
        return np.array([v is not None for v in self._neutral], dtype=bool)

    @cached_property
    def is_neutral(self) -> np.ndarray:
        return np.array([bool(v) for v in self._neutral], dtype=bool)

    @cached_property
    def _neutral(self) -> list[bool | None]:
        return [judged_neutral(r, self.judgments) for r in self.records]

    @cached_property
    def included(self) -> np.ndarray:
        """Rows GNT accuracy counts: extraction errors (failures) and judged outputs; unjudged clean ones are out."""
        return ~self.ok | self.judged

    @cached_property
    def gnt_correct(self) -> np.ndarray:
        """Judged neutral on Set-N, judged gendered on Set-G."""
        return self.ok & self.judged & (self.is_neutral == self.is_n)

    @cached_property
    def n_unjudged(self) -> int:
        return int((self.ok & ~self.judged).sum())
