"""The shapes of the results files the project writes, shared by the steps that write them and the report that reads them.

Each file of a results folder is written by one step and read by several (the judge, xCOMET, the report, the
watcher, attribution). When every reader guessed at field names, a renamed field in a writer went unnoticed and
the report quietly showed "not run". Here each file's shape is written down once, as a ``TypedDict`` carrying the
file's ``format`` tag: writers build these dicts (so the JSON on disk stays plain JSON, unchanged), and readers
index them by the one name written here. A field a reader needs and does not find is then a visible error or a
plain ``None`` from a field declared optional, never a silent fallback to some other spelling.

The ``format`` tags are versioned (``.../1``): a change of shape bumps the number, so an old folder read by new
code can be recognised.
"""

from __future__ import annotations

import math
from typing import Any, Generic, Literal, TypedDict, TypeVar

# --- format tags: the value of each file's ``format`` field ---
GENERATION_FORMAT = "gnt-align/eval-generation/1"
"""generations.jsonl lines (named in record.json as ``generation_format``; the lines themselves carry no tag)."""
METRICS_FORMAT = "gnt-align/eval-metrics/2"
"""/2 holds the grid's own metrics only (the judge's and xCOMET's are in their own files, composed on reading)."""
PREFERENCE_FORMAT = "gnt-align/preference/1"
XCOMET_SUMMARY_FORMAT = "gnt-align/xcomet-summary/2"
"""/2: blocks hold ``{"xcomet": ...}`` like a metrics block, and the part's file hashes and inputs."""
JUDGE_SUMMARY_FORMAT = "gnt-align/judge-summary/1"
TEMPLATED_METRICS_FORMAT = "gnt-align/templated-metrics/1"
EVAL_RECORD_FORMAT = "gnt-align/eval-record/3"
"""/2 recorded the step that wrote it, the model's kind and its training stage (/1 left the reader to guess); /3
the size and hash of every file of the grid's part."""
SUMMARY_FORMAT = "gnt-align/eval-summary/1"


class FileDigest(TypedDict):
    """Size and SHA-256 of one results file, as the record of its part lists it (gnt.results.part)."""

    bytes: int
    sha256: str


# ----------------------------------------------------------------------------------------------- statistics
class Stat(TypedDict):
    """A bootstrap estimate: ``value`` and its percentile interval ``ci`` ([lo, hi]), None when nothing was counted."""

    value: float | None
    ci: list[float] | None
    n: int


class StatRow(TypedDict):
    """A :class:`Stat` as the report tabulates it: value, interval ends (None without an interval) and count."""

    value: float
    lo: float | None
    hi: float | None
    n: int | None


def is_stat(value: Any) -> bool:
    """Whether ``value`` has the :class:`Stat` shape (a dict with ``value`` and ``ci``)."""
    return isinstance(value, dict) and "value" in value and "ci" in value


def number(value: Any) -> float | None:
    """A finite JSON number as float; None for null, NaN, booleans and anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return None if isinstance(value, float) and math.isnan(value) else float(value)


def read_stat(value: Any) -> tuple[float, float | None, float | None, int | None] | None:
    """``(value, lo, hi, n)`` of a plain number or a :class:`Stat`; None for anything else or a null estimate."""
    plain = number(value)
    if plain is not None:
        return plain, None, None, None
    if not is_stat(value):
        return None
    point = number(value["value"])
    if point is None:
        return None
    ci = value["ci"]
    lo, hi = (number(ci[0]), number(ci[1])) if isinstance(ci, list) and len(ci) == 2 else (None, None)
    n = value.get("n")
    return point, lo, hi, n if isinstance(n, int) and not isinstance(n, bool) else None


# ----------------------------------------------------------------------------------------------- generations.jsonl
class GenerationRecord(TypedDict):
    """One generation of one model: a dataset row in one grid cell (written by gnt.evaluation.generation_records)."""

    model: str
    id: str
    lang: str
    set: Literal["Set-G", "Set-N"]
    gender: str | None
    source_key: str
    cell: str  # lang/config/shots, e.g. it/G+S/4
    config: str
    shots: int
    prompt_hash: str
    key: str  # the generation request's content hash: judgments and xCOMET rows join on it
    source: str
    raw: str  # the model's whole output
    label: str | None
    translation: str | None
    error: str | None  # extraction error code, or generation_failed
    generation_error: str | None
    n_tokens: int | None
    finish_reason: str | None
    gold_label: str
    label_correct: bool
    ref_g: str
    ref_n: list[str]
    chrf: float  # sentence chrF++ against all references (0 for an extraction error): gnt.evaluation.adequacy


# ----------------------------------------------------------------------------------------------- metric values
# The value of each metric of a metrics block, as gnt.evaluation.catalog declares it (one shape per metric).
class ExtractionErrors(TypedDict):
    n: int
    rate: Stat
    by_code: dict[str, int]


SetStats = TypedDict("SetStats", {"Set-G": Stat, "Set-N": Stat, "all": Stat})
"""A rate on Set-G, on Set-N and over both."""
JudgedSetStats = TypedDict("JudgedSetStats", {"Set-G": Stat, "Set-N": Stat, "all": Stat, "n_unjudged": int})
"""A judged rate per set; ``n_unjudged`` clean outputs the judge gave no verdict for (left out)."""
SetPair = TypedDict("SetPair", {"Set-G": Stat, "Set-N": Stat})
AdequateSetStats = TypedDict("AdequateSetStats", {"Set-G": Stat, "Set-N": Stat, "all": Stat, "among_adequate": SetPair,
                                                  "n_unjudged": int})


class GenderStats(TypedDict):
    """A rate on Set-G split by the gender the source states."""

    F: Stat
    M: Stat


class LabelStats(TypedDict):
    """A judged rate per generated label (coherence)."""

    GENDERED: Stat
    NEUTRAL: Stat
    n_unjudged: int


class LabelCounts(TypedDict):
    GENDERED: int
    NEUTRAL: int


class LabelShares(TypedDict):
    GENDERED: float | None
    NEUTRAL: float | None


class LabelDistribution(TypedDict):
    counts: LabelCounts
    shares: LabelShares
    n: int
    collapse_share: float
    majority_share: float | None
    collapsed: str | None
    collapse: float | None


class LabelBaselines(TypedDict):
    balanced_accuracy: float | None
    accuracy: float | None
    macro_f1: float | None
    label: str | None


class Adequacy(TypedDict):
    threshold: float
    chrf: Stat
    chrf_extracted: Stat
    adequate: Stat
    adequate_among_extracted: Stat
    n_inadequate: int


class XcometSetStats(TypedDict):
    n: int
    n_failures: int
    matching: Stat
    ref_g: Stat


class XcometStats(TypedDict):
    """Means of one xCOMET block (failures scored 0.0, and over scored outputs only), with per-set means."""

    n: int
    n_failures: int
    matching: Stat
    ref_g: Stat
    matching_scored_only: Stat
    ref_g_scored_only: Stat
    by_set: dict[str, XcometSetStats]


# ----------------------------------------------------------------------------------------------- metrics.json
MetricsBlock = dict[str, Any]
"""The metrics of one cell, one language or everything: ``n`` and one value per metric of
:mod:`gnt.evaluation.catalog`, each of the shape the catalog declares for it (checked there, not here: a metric is
declared in one place)."""


class Bootstrap(TypedDict):
    samples: int
    seed: int
    alpha: float
    method: str


class PreferenceBlock(TypedDict):
    """Preference accuracy on held-out DPO pairs (gnt.evaluation.preference)."""

    format: str  # PREFERENCE_FORMAT
    all: Stat
    by_kind: dict[str, Stat]
    by_lang: dict[str, Stat]
    mean_margin: float | None
    n_errors: int
    split: str


class JudgeBlock(TypedDict, total=False):
    """Which judge filled GNT accuracy and coherence, and its counts (gnt.judge.apply, in judge_summary.json)."""

    kind: str
    format: str
    judge_model: str
    n_records: int
    n_extraction_errors: int
    n_judged: int
    n_judge_errors: int
    judge_errors_by_kind: dict[str, int]
    n_unannotated: int
    n_abstained: dict[str, int]
    n_rejected: int
    agreement_lexical: dict[str, Any]
    validation: dict[str, Any]


B = TypeVar("B")


class Sections(TypedDict, Generic[B]):
    """Blocks per cell (``it/G+S/4``), per language and over everything, and the bootstrap that made their CIs.

    metrics.json, judge_summary.json and xcomet_summary.json share this layout: each holds its own step's metrics
    per block, and a reader composes the blocks of the same name (gnt.results.model_folder).
    """

    cells: dict[str, B]
    languages: dict[str, B]
    overall: B
    bootstrap: Bootstrap


class _GridMetrics(Sections[MetricsBlock]):
    format: str  # METRICS_FORMAT
    model: str
    global_step: int | None
    leakage: dict[str, Any]


class GridMetrics(_GridMetrics, total=False):
    """A model folder's metrics.json, written by the grid sweep alone: its metrics per block, and the preference
    accuracy it scores beside them."""

    preference_accuracy: PreferenceBlock


class Metrics(GridMetrics, total=False):
    """A model folder's metrics as a reader sees them: metrics.json with the judge's and xCOMET's metrics composed
    into its blocks (gnt.results.model_folder.ModelFolder.metrics), and which judge filled them."""

    judged: bool
    judge: JudgeBlock


#: The keys of a metrics block's sections (``cells``, ``languages``) and its single ``overall`` block.
METRIC_SECTIONS = ("cells", "languages")


# ----------------------------------------------------------------------------------------------- per-step files
class PreferenceRecord(TypedDict, total=False):
    """One held-out pair scored under one model (preference.jsonl)."""

    id: str
    lang: str
    set: str
    origin: str
    kind: str
    cell: str | None
    source_key: str
    chosen: float
    rejected: float
    margin: float
    won: bool | None
    error: str | None


class Judgment(TypedDict, total=False):
    """One judged generation (judgments.jsonl), keyed by the generation's ``key``."""

    key: str
    id: str
    lang: str
    set: str
    cell: str
    judge: str  # the judge model's id, or "lexical"
    judge_kind: str
    format: str
    judgment_key: str
    label: str | None
    neutral: bool | None
    phrases: list[dict[str, Any]]
    probability: float  # a scored label's probability among the format's labels (label scoring)
    label_probabilities: dict[str, float]
    error: str | None
    judge_error: str  # "<kind>: <detail>" when the judge failed
    error_kind: str
    error_detail: str
    raw: str
    attempts: int
    # the lexical judge's (gnt.judge.lexical.LexicalJudgment.to_record)
    matched: list[str]
    known_words: int
    genders: list[str]
    abstained: str


class XcometRow(TypedDict):
    """One generation's xCOMET scores (xcomet.jsonl); ``failure`` says why it was scored 0.0 without the model."""

    key: str
    id: str | None
    lang: str
    set: str
    cell: str
    ref_matching: str
    score_matching: float
    score_ref_g: float
    error_spans_matching: Any
    error_spans_ref_g: Any
    failure: str | None


class PartRecord(TypedDict, total=False):
    """What every part's record adds (gnt.results.part): each file's size and hash, and the inputs' hashes."""

    files: dict[str, FileDigest]
    inputs: dict[str, str]  # file of another part -> the SHA-256 it had when this part was computed from it


class _XcometSummary(Sections[MetricsBlock], PartRecord):
    format: str  # XCOMET_SUMMARY_FORMAT
    n: int
    n_failures: int
    failures_by_code: dict[str, int]
    system_matching: float | None
    system_ref_g: float | None
    system_matching_scored_only: float | None
    system_ref_g_scored_only: float | None
    per_cell: dict[str, dict[str, Any]]


class XcometSummary(_XcometSummary, total=False):
    """xcomet_summary.json, the xCOMET part's record: system means, per-cell means, and blocks holding the
    ``xcomet`` metric (gnt.comet.summary)."""

    model: str
    model_identity: str
    results: str
    cache: str
    scoring: dict[str, Any]
    config: dict[str, Any]


class _JudgeSummary(Sections[MetricsBlock], PartRecord):
    format: str  # JUDGE_SUMMARY_FORMAT
    judge: JudgeBlock


class JudgeSummary(_JudgeSummary, total=False):
    """judge_summary.json, the judge part's record: which judge and its counts (``judge``), and blocks holding the
    judge's metrics (gnt.judge.apply)."""

    judge_info: dict[str, Any]
    stats: dict[str, Any] | None


class TemplatedMetrics(TypedDict, total=False):
    """templated/metrics.json: per prompt style and language, the suite's subsets (gnt.templated_suite.metrics)."""

    format: str  # TEMPLATED_METRICS_FORMAT
    styles: dict[str, dict[str, Any]]


class TemplatedItem(TypedDict, total=False):
    """The fields of one classified suite output (templated/outputs.jsonl) the report counts."""

    style: str
    lang: str
    pair_id: str
    variant: str
    label: str


# ----------------------------------------------------------------------------------------------- record.json, summary.json
class AdapterDescription(TypedDict):
    name: str
    path: str
    weights_hash: str


ModelKind = Literal["base", "checkpoint", "adapter"]


class ModelDescription(TypedDict):
    """Which model a folder holds (gnt.evaluation.discovery.ModelUnderTest.describe)."""

    name: str
    kind: ModelKind
    base_model: str
    adapter: AdapterDescription | None
    run_dir: str | None
    global_step: int | None
    stage: str


class EvalRecord(PartRecord, total=False):
    """A model folder's record.json, the grid's part record, written last by the sweep: it names the model and
    vouches for the grid's files (a folder whose record says it is not this model's is a copy, not a model)."""

    format: str  # EVAL_RECORD_FORMAT
    status: Literal["ok", "failed"]
    error: str  # the first generation error, when status is failed
    step: str  # the step that wrote it: grid
    kind: Literal["base", "checkpoint", "adapter"]
    stage: str  # base, or the training stage (sft, dpo), else the run folder's name, else adapter
    generation_format: str
    model: ModelDescription
    model_id: str
    base_identity: str  # the base model's content identity (gnt.generation.identity.model_identity)
    global_step: int | None
    backend: dict[str, Any]
    decoding: dict[str, Any]
    constraint: dict[str, str] | None
    system_role: bool
    grid: dict[str, Any]  # cells, seed, prompts_dir, prompt_texts_hash
    shot_orders: dict[str, Any]
    rows: dict[str, Any]  # source, ...
    leakage: dict[str, Any]  # gnt.evaluation.leakage.LeakageStatus
    run_record: dict[str, Any]  # the checkpoint's gnt_run.json without its list of training keys
    eval_recipe: dict[str, Any]
    counts: dict[str, int]
    seconds: float
    environment: dict[str, Any]
    sharded: dict[str, Any]


class SummaryEntry(TypedDict, total=False):
    """One model of summary.json."""

    name: str
    kind: str
    base_model: str
    global_step: int | None
    adapter_weights_hash: str | None
    leakage: str
    generations: str
    metrics: str
    record: str
    counts: dict[str, int]
    status: str
    error: str
    headline: dict[str, Any] | None


class Summary(TypedDict):
    """A results folder's summary.json: every evaluated model, in sweep order."""

    format: str  # SUMMARY_FORMAT
    cache: str
    models: list[SummaryEntry]


def summary_model_names(summary: Any) -> list[str]:
    """The model names a summary.json lists, in order (a summary that is not one gives none)."""
    models = summary.get("models") if isinstance(summary, dict) else None
    names: list[str] = []
    for entry in models if isinstance(models, list) else []:
        name = entry.get("name") if isinstance(entry, dict) else None
        if isinstance(name, str) and name not in names:
            names.append(name)
    return names
