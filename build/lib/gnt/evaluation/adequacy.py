"""Translation adequacy: sentence chrF++ of each translation against its references, and the threshold below which
a translation is not counted as translating its source (docs/metrics.md#translation-adequacy).

A GNT figure means something only over text that translates the source: a judge that looks for gendered words
finds none in fluent nonsense and calls it neutral. chrF++ (character n-grams up to 6 plus word uni- and bigrams,
β = 2; sacrebleu's ``CHRF(word_order=2)``) is cheap, language-independent and needs no model, so it is computed
for every output on every backend. A row is scored against all its references (Ref-G, Ref-N and the common-set
alternatives): each is a valid translation, and sacrebleu keeps the best-matching one. An output with an extraction
error, or an empty translation, scores 0.

The threshold is one number for every language, calibrated on the references themselves (how a valid translation
scores against the *other* references of its row) and on shuffled-source baselines (fluent target-language text of
another row scored against this row's references) and on the English source copied:
``python bench/adequacy_calibration.py DATA`` writes ``bench/results/adequacy_calibration.json``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

ADEQUACY_THRESHOLD = 30.0
"""chrF++ at or above which a translation counts as adequate (calibration: bench/results/adequacy_calibration.json,
docs/metrics.md#translation-adequacy)."""


@functools.cache
def _chrf():
    from sacrebleu.metrics import CHRF

    return CHRF(word_order=2)


def chrf_pp(translation: str | None, references: Sequence[str]) -> float:
    """Sentence chrF++ (0–100) of ``translation`` against the best-matching of ``references``; 0 for no text."""
    refs = [r for r in references if r and r.strip()]
    if not translation or not translation.strip() or not refs:
        return 0.0
    return float(_chrf().sentence_score(translation, refs).score)


def references_of(record: Mapping) -> list[str]:
    """Every reference a generation record carries: Ref-G and each neutral alternative."""
    refs = [record.get("ref_g") or ""]
    refs += list(record.get("ref_n") or [])
    return [r for r in refs if r]


def record_chrf(record: Mapping) -> float:
    """chrF++ of a generation record's translation (0 for an extraction error): the value the record carries
    (``chrf``, written when the record is made), else computed from its translation and references."""
    if record.get("chrf") is not None:
        return float(record["chrf"])
    if record.get("error") is not None:
        return 0.0
    return chrf_pp(record.get("translation"), references_of(record))


def is_adequate(score: float, threshold: float = ADEQUACY_THRESHOLD) -> bool:
    return score >= threshold
