"""Every metric of a metrics block, declared once: what computes it, its shape, its columns, W&B, the headline.

A :class:`Metric` names the step whose file holds it (``owner``: the grid's ``metrics.json``, the judge's
``judge_summary.json`` or xCOMET's ``xcomet_summary.json``), the function that computes it for one block
(:class:`gnt.evaluation.block.BlockInputs`: a cell, a language, everything), the ``TypedDict`` its value has, its
report columns (and the per-output score of each column's paired test against the base), whether and how W&B
logs it, and its place in the headline of ``summary.json`` and of the sweep's printed table. Everything that
computes, writes, checks or shows a metric reads it here:

- :func:`gnt.evaluation.metrics.compute_sections` computes each owner's metrics, and the step that owns them
  writes them (the grid sweep, the judge, xCOMET); :func:`block_errors` checks a written block against the shapes;
- the report's headline and per-cell tables take their columns from :func:`columns`, and their paired tests the
  per-output score the column names (:func:`scorer`);
- W&B logs the metrics whose ``wandb`` is set; ``summary.json`` and the printed table show :func:`headline`.

Adding a metric is adding one :class:`Metric` to :data:`METRICS` (docs/architecture.md, "Add a metric").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from gnt.bootstrap import block_seed, macro_f1, mean_ci, mean_of_ratios, ratio
from gnt.evaluation.adequacy import ADEQUACY_THRESHOLD, is_adequate, record_chrf
from gnt.evaluation.block import BlockInputs
from gnt.evaluation.labels import constant_label_baselines, label_distribution
from gnt.results.shape import shape_errors
from gnt.results_schema import (
    Adequacy,
    AdequateSetStats,
    ExtractionErrors,
    GenderStats,
    JudgedSetStats,
    LabelBaselines,
    LabelDistribution,
    LabelStats,
    PreferenceBlock,
    SetStats,
    Stat,
    XcometStats,
)

Owner = Literal["grid", "judge", "xcomet"]
"""The step whose part of a model folder holds a metric (:data:`gnt.results.model_folder.PARTS`)."""
Kind = Literal["percent", "points", "score", "errors"]
GENDERED, NEUTRAL = "GENDERED", "NEUTRAL"


@dataclass(frozen=True)
class Output:
    """One output as a paired test sees it: its slim generation row and what later steps said about it."""

    row: Mapping[str, Any]  # id, lang, set, gender, cell, key, label, error, chrf
    neutral: bool | None  # the judge's verdict (None: not judged)
    xcomet: float | None  # its set-matching xCOMET score (None: not scored)
    set_sizes: Mapping[str, int]  # outputs per set among those compared (balanced accuracy weighs by them)

    @property
    def failed(self) -> bool:
        return bool(self.row["error"])

    @property
    def expected(self) -> str:
        return GENDERED if self.row["set"] == "Set-G" else NEUTRAL

    @property
    def label_right(self) -> bool:
        return not self.failed and self.row["label"] == self.expected


Scorer = Callable[[Output, "str | None"], "float | None"]
"""An output's score in a paired test, for a column's group (None: the metric does not count this output)."""


@dataclass(frozen=True)
class Column:
    """A report column: which metric of a block and which of its groups it shows, how, and how it is tested.

    ``test`` names the paired test (a scorer of :func:`scorer`) and its group; None leaves the column untested.
    """

    key: str
    title: str
    metric: tuple[str, ...]  # the metric's name in a metrics block
    groups: tuple[str | None, ...]  # its groups (set, label, ...): the first one present is shown
    kind: Kind = "percent"  # percent (0–1 shown ×100) | points (0–100 as is, chrF++) | score (0–1) | errors
    test: tuple[str, str | None] | None = None
    higher_is_better: bool = True  # decides whether a significant change is marked ▲ (better) or ▼ (worse)
    rank: int | None = None  # where it stands in the tables (None: its metric's ``column_rank``)


def tested(key: str, title: str, metric: str, group: str | None, **how: Any) -> Column:
    """A column of one group of a metric, tested against the base with the metric's own scorer."""
    return Column(key, title, (metric,), (group,), test=(metric, group), **how)


@dataclass(frozen=True)
class Headline:
    """One number of a model's headline (summary.json and the sweep's printed table): ``path`` below the overall
    block (below the metrics for a model-wide metric), shown at ``rank`` (lower first)."""

    key: str
    title: str
    path: tuple[str, ...]
    rank: int
    ci: bool = False  # also give the interval (``<key>_ci``)


@dataclass(frozen=True)
class Wandb:
    """How W&B logs a metric: every number of its value except the groups ``skip`` names (a group is skipped
    when it is, starts with or ends with one of them: ``n`` skips the sample sizes)."""

    skip: tuple[str, ...] = ("n",)

    def logs(self, group: str | None) -> bool:
        parts = (group or "").split("/")
        return not any(group == s or parts[0] == s or parts[-1] == s for s in self.skip)


@dataclass(frozen=True)
class Metric:
    """One metric, declared once (see the module docstring)."""

    name: str
    owner: Owner
    doc: str
    shape: Any  # the TypedDict of its value (gnt.results_schema)
    compute: Callable[[BlockInputs], Any] | None  # None: a model-wide metric computed by its own step
    columns: tuple[Column, ...] = ()
    column_rank: int = 100  # where its columns stand in the report's tables
    tests: Mapping[str, Scorer] = field(default_factory=dict)  # paired-test scorers its columns name
    wandb: Wandb | None = None  # None: not logged to W&B
    headline: tuple[Headline, ...] = ()
    scope: Literal["block", "model"] = "block"  # model: one value per model, beside the blocks


def _rate_by_set(b: BlockInputs, hits: np.ndarray, included: np.ndarray) -> tuple[Stat, Stat, Stat]:
    return b.rate(hits, included & b.is_g), b.rate(hits, included & b.is_n), b.rate(hits, included)


# ----------------------------------------------------------------------------------------------- the grid's
def extraction_errors(b: BlockInputs) -> ExtractionErrors:
    counts: dict[str, int] = {}
    for record in b.records:
        if record["error"] is not None:
            counts[record["error"]] = counts.get(record["error"], 0) + 1
    return {"n": int((~b.ok).sum()), "rate": b.rate(~b.ok, b.everyone), "by_code": dict(sorted(counts.items()))}


def label_accuracy(b: BlockInputs) -> SetStats:
    g, n, every = _rate_by_set(b, b.correct, b.everyone)
    return {"Set-G": g, "Set-N": n, "all": every}


def label_macro_f1(b: BlockInputs) -> Stat:
    columns = []
    for label in (GENDERED, NEUTRAL):
        predicted, actual = b.predicted == label, b.gold == label
        columns += [predicted & actual, predicted & ~actual, actual & ~predicted]
    return b.estimate(columns, macro_f1, b.everyone)


def label_balanced_accuracy(b: BlockInputs) -> Stat:
    return b.estimate([b.correct & b.is_g, b.is_g, b.correct & b.is_n, b.is_n], mean_of_ratios, b.everyone)


def set_g_by_gender(b: BlockInputs) -> GenderStats:
    return {"F": b.rate(b.correct, b.is_g & (b.gender == "F")), "M": b.rate(b.correct, b.is_g & (b.gender == "M"))}


def adequacy(b: BlockInputs) -> Adequacy:
    return {
        "threshold": ADEQUACY_THRESHOLD,
        "chrf": b.estimate([b.chrf, b.everyone], ratio, b.everyone),
        "chrf_extracted": b.estimate([np.where(b.ok, b.chrf, 0.0), b.ok], ratio, b.ok),
        "adequate": b.rate(b.adequate, b.everyone),
        "adequate_among_extracted": b.rate(b.adequate, b.ok),
        "n_inadequate": int((b.ok & ~b.adequate).sum()),
    }


# ----------------------------------------------------------------------------------------------- the judge's
def gnt_accuracy(b: BlockInputs) -> JudgedSetStats:
    g, n, every = _rate_by_set(b, b.gnt_correct, b.included)
    return {"Set-G": g, "Set-N": n, "all": every, "n_unjudged": b.n_unjudged}


def gnt_accuracy_adequate(b: BlockInputs) -> AdequateSetStats:
    """GNT accuracy counting an inadequate translation as a failure, like an extraction error."""
    hits = b.gnt_correct & b.adequate
    g, n, every = _rate_by_set(b, hits, ~b.adequate | b.judged)
    among = b.adequate & b.judged
    return {"Set-G": g, "Set-N": n, "all": every,
            "among_adequate": {"Set-G": b.rate(hits, among & b.is_g), "Set-N": b.rate(hits, among & b.is_n)},
            "n_unjudged": int((b.adequate & ~b.judged).sum())}


def coherence(b: BlockInputs) -> LabelStats:
    """Per generated label, the share of outputs whose judged form agrees with it."""
    stats = {}
    for label in (GENDERED, NEUTRAL):
        agrees = b.ok & b.judged & (b.is_neutral == (label == NEUTRAL))
        stats[label] = b.rate(agrees, (b.labels == label) & b.included)
    return {"GENDERED": stats[GENDERED], "NEUTRAL": stats[NEUTRAL],
            "n_unjudged": int((b.ok & ~b.judged & (b.labels != None)).sum())}  # noqa: E711


class JudgedGenderStats(GenderStats):
    """Set-G GNT accuracy per source gender, and the clean Set-G outputs the judge gave no verdict for."""

    n_unjudged: int


def gnt_accuracy_by_gender(b: BlockInputs) -> JudgedGenderStats:
    """Set-G GNT accuracy split by the gender the source states: whether a model keeps feminine referents
    feminine as often as masculine ones (a masculine default shows as F well below M)."""
    return {"F": b.rate(b.gnt_correct, b.included & b.is_g & (b.gender == "F")),
            "M": b.rate(b.gnt_correct, b.included & b.is_g & (b.gender == "M")),
            "n_unjudged": int((b.ok & ~b.judged & b.is_g).sum())}


# ----------------------------------------------------------------------------------------------- xCOMET's
def _mean(b: BlockInputs, rows: Sequence[Mapping[str, Any]], field_name: str, tag: str) -> Stat:
    scored = [r for r in rows if r[field_name] is not None]
    seed = block_seed(b.bootstrap.bootstrap_seed, f"{b.name}|{tag}", "xcomet")
    return mean_ci([r[field_name] for r in scored], [(r["lang"], r["id"]) for r in scored], b.bootstrap,
                   seed)  # type: ignore[return-value]


def xcomet(b: BlockInputs) -> XcometStats:
    """Means of the segment scores: every output (a failure scores 0.0) and scored outputs only, and per set."""
    rows, scored = b.records, [r for r in b.records if r["failure"] is None]
    by_set = {}
    for set_name in ("Set-G", "Set-N"):
        subset = [r for r in rows if r["set"] == set_name]
        if subset:
            by_set[set_name] = {"n": len(subset), "n_failures": sum(r["failure"] is not None for r in subset),
                                "matching": _mean(b, subset, "score_matching", f"{set_name}|m"),
                                "ref_g": _mean(b, subset, "score_ref_g", f"{set_name}|g")}
    return {"n": len(rows), "n_failures": len(rows) - len(scored),
            "matching": _mean(b, rows, "score_matching", "m"), "ref_g": _mean(b, rows, "score_ref_g", "g"),
            "matching_scored_only": _mean(b, scored, "score_matching", "ms"),
            "ref_g_scored_only": _mean(b, scored, "score_ref_g", "gs"), "by_set": by_set}  # type: ignore[typeddict-item]


# ----------------------------------------------------------------------------------------------- paired scores
def _in_set(score: Callable[[Output], float | None]) -> Scorer:
    """A scorer counting only outputs of the column's set (its group)."""
    return lambda o, group: score(o) if o.row["set"] == group else None


def _balanced(o: Output, group: str | None) -> float | None:
    """Each output weighs 1 / (2 · its set's size): the mean of weight × correct is the balanced accuracy."""
    if not all(o.set_sizes.values()):
        return None
    return sum(o.set_sizes.values()) / (2 * o.set_sizes[o.row["set"]]) * float(o.label_right)


def _gnt(adequate_only: bool) -> Scorer:
    def score(o: Output) -> float | None:
        if o.failed or (adequate_only and not is_adequate(record_chrf(o.row))):
            return 0.0
        return None if o.neutral is None else float(o.neutral == (o.row["set"] == "Set-N"))

    return _in_set(score)


def _coherent(o: Output, group: str | None) -> float | None:
    if o.failed or o.row["label"] != group or o.neutral is None:
        return None
    return float(o.neutral == (group == NEUTRAL))


def _gnt_by_gender(o: Output, group: str | None) -> float | None:
    if o.row["set"] != "Set-G" or o.row.get("gender") != group:
        return None
    return 0.0 if o.failed else None if o.neutral is None else float(not o.neutral)


# ----------------------------------------------------------------------------------------------- the catalog
METRICS: tuple[Metric, ...] = (
    Metric("extraction_errors", "grid", "outputs whose label or translation could not be read: count, rate, codes",
           ExtractionErrors, extraction_errors, column_rank=90,
           columns=(Column("errors", "Extraction errors", ("extraction_errors",), ("rate",), "errors",
                           test=("extraction_errors", None), higher_is_better=False),),
           tests={"extraction_errors": lambda o, group: float(o.failed)},
           wandb=Wandb(skip=("by_code",)),
           headline=(Headline("extraction_error_rate", "errors", ("extraction_errors", "rate"), 10),)),
    Metric("label_accuracy", "grid", "the generated label against Set-G -> GENDERED, Set-N -> NEUTRAL",
           SetStats, label_accuracy, column_rank=20,
           columns=(tested("label_g", "Label acc. Set-G", "label_accuracy", "Set-G"),
                    tested("label_n", "Label acc. Set-N", "label_accuracy", "Set-N")),
           tests={"label_accuracy": _in_set(lambda o: float(o.label_right))}, wandb=Wandb(),
           headline=(Headline("label_accuracy_set_g", "acc G", ("label_accuracy", "Set-G"), 20),
                     Headline("label_accuracy_set_n", "acc N", ("label_accuracy", "Set-N"), 30))),
    Metric("label_macro_f1", "grid", "mean of the GENDERED and NEUTRAL label F1 over both sets",
           Stat, label_macro_f1, column_rank=15,
           columns=(Column("label_f1", "Label macro-F1", ("label_macro_f1",), (None,)),), wandb=Wandb(),
           headline=(Headline("label_macro_f1", "macro-F1 [95% CI]", ("label_macro_f1",), 40, ci=True),)),
    Metric("label_balanced_accuracy", "grid", "mean of the Set-G and Set-N label accuracies (a constant scores 0.5)",
           Stat, label_balanced_accuracy, column_rank=10,
           columns=(tested("label_bal", "Label bal. acc.", "label_balanced_accuracy", None),),
           tests={"label_balanced_accuracy": _balanced}, wandb=Wandb()),
    Metric("label_distribution", "grid", "counts and shares of the readable labels, and label collapse",
           LabelDistribution, lambda b: label_distribution(b.predicted[b.ok]),
           wandb=Wandb(skip=("counts", "n", "collapse_share", "majority_share"))),
    Metric("label_baselines", "grid", "what the best constant label scores on this block",
           LabelBaselines, lambda b: constant_label_baselines(int(b.is_g.sum()), int(b.is_n.sum()))),
    Metric("set_g_by_gender", "grid", "Set-G label accuracy by the source gender F / M",
           GenderStats, set_g_by_gender, wandb=Wandb()),
    Metric("adequacy", "grid", "chrF++ against every reference, and the share of outputs at or above the threshold",
           Adequacy, adequacy, column_rank=30,
           columns=(Column("chrf", "chrF++", ("adequacy",), ("chrf",), "points", test=("chrf", None)),
                    Column("adequate", "Adequate", ("adequacy",), ("adequate",), test=("adequate", None))),
           tests={"chrf": lambda o, group: record_chrf(o.row),
                  "adequate": lambda o, group: float(not o.failed and is_adequate(record_chrf(o.row)))},
           wandb=Wandb(skip=("n", "threshold"))),
    Metric("gnt_accuracy", "judge", "Set-N judged neutral, Set-G judged gendered; unjudged clean outputs left out",
           JudgedSetStats, gnt_accuracy, column_rank=40,
           columns=(tested("gnt_n", "GNT acc. Set-N", "gnt_accuracy", "Set-N"),
                    tested("gnt_g", "GNT acc. Set-G", "gnt_accuracy", "Set-G", rank=46)),
           tests={"gnt_accuracy": _gnt(adequate_only=False)}, wandb=Wandb(skip=("n", "n_unjudged"))),
    Metric("gnt_accuracy_adequate", "judge", "GNT accuracy with inadequate translations counted as failures",
           AdequateSetStats, gnt_accuracy_adequate, column_rank=45,
           columns=(tested("gnt_n_adequate", "GNT acc. Set-N, inadequate = wrong", "gnt_accuracy_adequate", "Set-N"),),
           tests={"gnt_accuracy_adequate": _gnt(adequate_only=True)}, wandb=Wandb(skip=("n", "n_unjudged"))),
    Metric("gnt_accuracy_by_gender", "judge", "Set-G GNT accuracy by the source gender F / M",
           JudgedGenderStats, gnt_accuracy_by_gender, column_rank=48,
           columns=(tested("gnt_g_f", "GNT acc. Set-G F", "gnt_accuracy_by_gender", "F"),
                    tested("gnt_g_m", "GNT acc. Set-G M", "gnt_accuracy_by_gender", "M")),
           tests={"gnt_accuracy_by_gender": _gnt_by_gender}, wandb=Wandb(skip=("n", "n_unjudged"))),
    Metric("coherence", "judge", "per generated label, the share of outputs whose judged form agrees with it",
           LabelStats, coherence, column_rank=50,
           columns=(tested("coh_n", "Coherence (NEUTRAL label)", "coherence", "NEUTRAL"),),
           tests={"coherence": _coherent}, wandb=Wandb(skip=("n", "n_unjudged"))),
    Metric("xcomet", "xcomet", "xCOMET segment-score means (failures scored 0.0), set-matching and Ref-G references",
           XcometStats, xcomet, column_rank=60,
           columns=(Column("xcomet", "xCOMET", ("xcomet",), ("matching",), "score", test=("xcomet", None)),),
           tests={"xcomet": lambda o, group: None if o.xcomet is None else o.xcomet}, wandb=Wandb()),
    Metric("preference_accuracy", "grid", "share of held-out preference pairs whose chosen side the model scores "
           "higher (gnt.evaluation.preference computes it over pairs, not generations)",
           PreferenceBlock, None, scope="model", column_rank=95,
           columns=(tested("pref", "Preference acc.", "preference_accuracy", "all"),),
           headline=(Headline("preference_accuracy", "pref.", ("preference_accuracy", "all"), 50),)),
)

BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS}


def of_owner(owner: Owner) -> tuple[Metric, ...]:
    """The per-block metrics a step computes and writes."""
    return tuple(m for m in METRICS if m.owner == owner and m.scope == "block")


def columns() -> tuple[Column, ...]:
    """The report's columns, in display order (by rank; a metric's columns in their declared order)."""
    placed = [(m.column_rank if c.rank is None else c.rank, index, c)
              for index, (m, c) in enumerate((m, c) for m in METRICS for c in m.columns)]
    return tuple(column for _, _, column in sorted(placed, key=lambda item: (item[0], item[1])))


def scorer(test: str) -> Scorer | None:
    """The per-output score of the paired test ``test`` (a column's ``test`` name)."""
    for metric in METRICS:
        if test in metric.tests:
            return metric.tests[test]
    return None


def headline_entries() -> list[tuple[Metric, Headline]]:
    return sorted(((m, h) for m in METRICS for h in m.headline), key=lambda mh: mh[1].rank)


def headline(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The few numbers a summary or a printed table shows of one model's (composed) metrics: ``n`` and each
    declared :class:`Headline` (None when absent)."""
    overall = metrics.get("overall") or {}
    out: dict[str, Any] = {"n": overall.get("n")}
    for metric, entry in headline_entries():
        value: Any = metrics if metric.scope == "model" else overall
        for step in entry.path:
            value = value.get(step) if isinstance(value, dict) else None
        out[entry.key] = value.get("value") if isinstance(value, dict) else None
        if entry.ci:
            out[f"{entry.key}_ci"] = value.get("ci") if isinstance(value, dict) else None
    return out


def block_errors(block: Mapping[str, Any], owners: Sequence[Owner] = ("grid", "judge", "xcomet"),
                 where: str = "$") -> list[str]:
    """Where a written metrics block departs from the catalog: an undeclared metric, a value of another shape."""
    errors = [] if isinstance(block.get("n"), int) or "grid" not in owners else [f"{where}.n: not an integer"]
    declared = {m.name: m for m in METRICS if m.owner in owners and m.scope == "block"}
    for name, value in block.items():
        if name == "n":
            continue
        metric = declared.get(name)
        if metric is None:
            errors.append(f"{where}: {name!r} is not a metric of {', '.join(owners)} (gnt.evaluation.catalog)")
        elif value is not None:
            errors += shape_errors(value, metric.shape, f"{where}.{name}")
    return errors
