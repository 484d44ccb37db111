"""Tidy per-part aggregates over rows: the data behind the paper's Fig. 6/7 analogues.

Input: the per-row records that :mod:`gnt.attribution.run` writes to ``scores.jsonl`` (one per row and target, with
per-part statistics at two levels, ``parts`` and ``groups``). Aggregating from the saved records, not from live
tensors, means the tables can be rebuilt (other slices, other outcome splits) without running a model again.

One output row per (level, part, target, lang, set, outcome_by, outcome):

- ``top10_rate``: share of rows in which the part has at least one token among the row's top-10 ranked tokens;
- ``top10_share``: mean share of the row's top-10 tokens that belong to the part;
- ``mean_score``: mean over rows of the part's mean normalised token score;
- ``relevance_share``: mean over rows of the part's share of the row's total score;
- ``n``: rows in which the part is present (a part a configuration lacks is absent, not zero).

``set`` also takes ``all`` (both sets pooled); ``outcome_by`` is ``all`` (no split) or one of the outcome kinds
recorded per row (``label``: correct/wrong label; ``judged``: neutral/gendered translation; ``gnt``: correct/wrong
GNT), with ``outcome`` its value.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from gnt.io import write_json, write_text_atomic

COLUMNS: tuple[str, ...] = (
    "level", "part", "target", "lang", "set", "outcome_by", "outcome",
    "top10_rate", "top10_share", "mean_score", "relevance_share", "n",
)
LEVELS: tuple[str, ...] = ("part", "group")
_LEVEL_FIELD = {"part": "parts", "group": "groups"}


def _slices(record: dict, outcome_kinds: Sequence[str]) -> list[tuple[str, str, str]]:
    """The (set, outcome_by, outcome) cells a row counts in."""
    outcomes = record.get("outcomes") or {}
    cells = []
    for set_name in (record["set"], "all"):
        cells.append((set_name, "all", "all"))
        for kind in outcome_kinds:
            if kind in outcomes and outcomes[kind] is not None:
                cells.append((set_name, kind, str(outcomes[kind])))
    return cells


def aggregate(records: Iterable[dict], outcome_kinds: Sequence[str] = ("label", "judged", "gnt")) -> list[dict]:
    """Aggregate per-row records into tidy rows (see module doc), sorted for stable files."""
    sums: dict[tuple, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0])
    for record in records:
        for level in LEVELS:
            stats = record.get(_LEVEL_FIELD[level]) or {}
            n_top = max(1, min(10, int(record.get("n_ranked", 10))))
            for set_name, by, outcome in _slices(record, outcome_kinds):
                for part, stat in stats.items():
                    key = (level, part, record["target"], record["lang"], set_name, by, outcome)
                    acc = sums[key]
                    acc[0] += 1.0 if stat["in_top10"] else 0.0
                    acc[1] += stat["top10_count"] / n_top
                    acc[2] += stat["mean"]
                    acc[3] += stat["share"]
                    acc[4] += 1
    rows = []
    for key, (in_top, top_share, mean, share, n) in sums.items():
        rows.append(
            dict(
                zip(COLUMNS[:7], key, strict=True),
                top10_rate=round(in_top / n, 6),
                top10_share=round(top_share / n, 6),
                mean_score=round(mean / n, 6),
                relevance_share=round(share / n, 6),
                n=int(n),
            )
        )
    rows.sort(key=lambda r: tuple(str(r[c]) for c in COLUMNS[:7]))
    return rows


def write_table(rows: list[dict], csv_path: str | Path, json_path: str | Path | None = None, columns: Sequence[str] = COLUMNS) -> None:
    """Write tidy rows as CSV (and JSON records), atomically."""
    import io

    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomic(csv_path, buffer.getvalue())
    if json_path is not None:
        write_json(json_path, rows)


def select(rows: Iterable[dict], **where: str) -> list[dict]:
    """Rows whose fields equal every given value (``select(rows, level="group", target="S_L")``)."""
    return [r for r in rows if all(r.get(k) == v for k, v in where.items())]
