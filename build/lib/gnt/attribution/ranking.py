"""Per-row scores: max-normalised token scores over the ranked tokens, the top tokens, and per-part statistics.

Normalisation divides by the largest score *among the ranked tokens* (after dropping chat-template tokens, the
output's format tokens, the target tokens and, for S_T, the source), so every row's top ranked token scores 1
and rows are comparable. Normalising over all tokens instead would let an excluded token (the source, for S_T)
set the scale and compress everything else.

Per part (and per group of parts: the shots pooled by type and role) a row records:

- ``in_top10``: whether at least one of the part's tokens is among the row's 10 highest-scored ranked tokens
  (ties broken by position) — the paper's "how often the part is among the top-10 tokens";
- ``top10_count``: how many of the top-10 tokens the part holds;
- ``mean``: the mean normalised score of the part's tokens; ``max``: its highest one;
- ``share``: the part's share of the row's total score (sums to 1 over the parts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gnt.attribution.spans import AttributionInput

TOP_K = 10


@dataclass(frozen=True)
class RankedScores:
    """The ranked tokens of one row and target: positions, normalised scores, part and group of each token."""

    positions: np.ndarray
    scores: np.ndarray
    parts: tuple[str, ...]
    groups: tuple[str, ...]
    tokens: tuple[str, ...]
    raw_max: float

    def top(self, k: int = TOP_K) -> np.ndarray:
        """Indices (into the ranked arrays) of the ``k`` highest scores; ties go to the earlier token."""
        order = np.lexsort((self.positions, -self.scores))
        return order[: min(k, len(order))]


def normalise(scores: np.ndarray) -> tuple[np.ndarray, float]:
    """Divide by the maximum (all zeros stay zeros); returns the normalised scores and the maximum."""
    top = float(scores.max()) if scores.size else 0.0
    if top <= 0.0 or not np.isfinite(top):
        return np.zeros_like(scores, dtype=np.float64), top
    return scores.astype(np.float64) / top, top


def rank(inp: AttributionInput, relevance: np.ndarray, positions: Sequence[int]) -> RankedScores:
    """Scores ``|relevance|`` of the given positions, max-normalised, with each token's part and group."""
    pos = np.asarray(list(positions), dtype=np.int64)
    raw = np.abs(np.asarray(relevance, dtype=np.float64)[pos]) if pos.size else np.zeros(0)
    scores, top = normalise(raw)
    names = tuple(inp.token_parts[p] or "" for p in pos)
    groups = tuple(inp.parts[n].group for n in names)
    tokens = tuple(inp.token_text(int(p)) for p in pos)
    return RankedScores(pos, scores, names, groups, tokens, top)


@dataclass(frozen=True)
class PartStat:
    n_tokens: int
    mean: float
    max: float
    in_top10: bool
    top10_count: int
    share: float

    def to_json(self) -> dict:
        return {
            "n_tokens": self.n_tokens,
            "mean": round(self.mean, 6),
            "max": round(self.max, 6),
            "in_top10": self.in_top10,
            "top10_count": self.top10_count,
            "share": round(self.share, 6),
        }


def part_stats(ranked: RankedScores, level: str = "part", k: int = TOP_K) -> dict[str, PartStat]:
    """Statistics of every part (``level="part"``) or group (``level="group"``) present among the ranked tokens."""
    if level not in ("part", "group"):
        raise ValueError("level must be 'part' or 'group'")
    names = ranked.parts if level == "part" else ranked.groups
    top = set(ranked.top(k).tolist())
    total = float(ranked.scores.sum())
    out: dict[str, PartStat] = {}
    for name in dict.fromkeys(names):
        idx = [i for i, n in enumerate(names) if n == name]
        values = ranked.scores[idx]
        count = sum(1 for i in idx if i in top)
        out[name] = PartStat(
            n_tokens=len(idx),
            mean=float(values.mean()),
            max=float(values.max()),
            in_top10=count > 0,
            top10_count=count,
            share=float(values.sum() / total) if total > 0 else 0.0,
        )
    return out


def top_tokens(ranked: RankedScores, n: int = 20) -> list[dict]:
    """The ``n`` highest-scored tokens with their part, for inspection."""
    return [
        {
            "position": int(ranked.positions[i]),
            "token": ranked.tokens[i],
            "part": ranked.parts[i],
            "group": ranked.groups[i],
            "score": round(float(ranked.scores[i]), 6),
        }
        for i in ranked.top(n)
    ]
