"""Where a model of ours stands among the WMT24 systems, statistic by statistic, on all four tables.

Every system and model is scored on the same segments with the same bootstrap resamples (:mod:`.tables`), so a
model and a system are compared *paired*: the difference of their statistic on each resample gives its interval
and two-sided p-value. For each statistic the placement gives the model's value with its CI, its rank among the
systems (1 = the highest value) and which systems are significantly above or below it at the run's alpha.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gnt.templated_suite.wmt24.score import SystemScores
from gnt.templated_suite.wmt24.tables import Estimate, paired_test

#: (table, statistic, what it says): the statistics a model is placed on.
STATISTICS: tuple[tuple[str, str, str], ...] = (
    ("omission", "dN", "gender-neutral response to omission (Table 4)"),
    ("omission", "dM", "masculine default under omission (Table 4)"),
    ("omission", "N_amb", "neutral share of ambiguous items, omission (Table 4)"),
    ("active", "dN", "gender-neutral response to 'they' (Table 5)"),
    ("active", "dM", "masculine default under 'they' (Table 5)"),
    ("active", "N_amb", "neutral share of 'they' items (Table 5)"),
    ("strategies", "N_det", "baseline neutrality of determined items (Table 6)"),
    ("strategies", "N3", "other part of speech among determined items (Table 6)"),
    ("stereotype", "dM_masculine", "M share, masculine-stereotyped adverb minus none (Table 7)"),
    ("stereotype", "dF_feminine", "F share, feminine-stereotyped adverb minus none (Table 7)"),
)
COLUMNS = ("lang", "model", "table", "statistic", "value", "ci_low", "ci_high", "rank", "of", "above", "below")


def estimate(scores: SystemScores, table: str, statistic: str) -> Estimate:
    """The :class:`Estimate` behind one statistic of :data:`STATISTICS`."""
    if table == "stereotype":
        contrast = {"dM_masculine": ("masculine_vs_none", "M"), "dF_feminine": ("feminine_vs_none", "F")}[statistic]
        return scores.stereotype.contrasts[contrast[0]][contrast[1]]
    result = scores.tables[table]
    if statistic.startswith("d") and statistic[1:] in result.delta:
        return result.delta[statistic[1:]]
    cls, _, side = statistic.partition("_")
    if table == "strategies":
        return result.sides["determined"].estimates["N" if statistic == "N_det" else statistic]
    return result.sides["ambiguous" if side == "amb" else "determined"].estimates[cls]


def place(model: SystemScores, systems: Sequence[SystemScores], alpha: float) -> dict:
    """``{table: {statistic: {...}}}`` for one model against every system (see the module docstring)."""
    out: dict = {}
    for table, statistic, meaning in STATISTICS:
        ours = estimate(model, table, statistic)
        entry: dict = {"meaning": meaning, **ours.to_json(alpha), "rank": None, "of": 0, "above": [], "below": [],
                       "versus": {}}
        values = []
        for system in systems:
            theirs = estimate(system, table, statistic)
            if theirs.value is None:
                continue
            values.append(theirs.value)
            test = paired_test(ours - theirs, alpha)
            entry["versus"][system.system] = test
            if test["p_value"] is not None and test["p_value"] < alpha:
                entry["below" if test["value"] > 0 else "above"].append(system.system)
        if ours.value is not None:
            entry["rank"] = 1 + sum(v > ours.value for v in values)
            entry["of"] = len(values)
        out.setdefault(table, {})[statistic] = entry
    return out


def placement_rows(lang: str, name: str, placement: Mapping) -> list[dict]:
    """placement.tsv rows of one model: value, CI, rank and how many systems are significantly above / below."""
    rows = []
    for table, stats in placement.items():
        for statistic, entry in stats.items():
            ci = entry.get("ci") or [None, None]
            rows.append({"lang": lang, "model": name, "table": table, "statistic": statistic, "value": entry["value"],
                         "ci_low": ci[0], "ci_high": ci[1], "rank": entry["rank"], "of": entry["of"],
                         "above": len(entry["above"]), "below": len(entry["below"])})
    return rows
