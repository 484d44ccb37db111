"""Read everything under an evaluation results folder into tidy tables the report, the plots and W&B share.

The results folder is written by several steps run separately (grid sweep, judge, xCOMET, attribution, templated
suite), any of which may not have run yet: a part that was not written is "not run". A part that was written is
read only when it is whole (its record and the size and hash of each file it lists, :mod:`gnt.results.part`); a
damaged one, or one of another format, is left out with a warning that names the file and the command that writes
it again, never shown as "not run" and never read as another version. Each field is read by the one name its
producer writes, as :mod:`gnt.results_schema` declares it; the file names are those of :mod:`gnt.filenames`.

Layout (``<out>/``):

- ``summary.json``: the models of the sweep (names or objects with ``name``), in its order; every other model
  folder is a model too (the folders are the truth). A model folder is one whose ``record.json`` names it: a copy
  such as ``base.bak/`` is not one. Names may contain ``/`` (``sft/checkpoint-8``).
- ``<model>/record.json`` (format ``eval-record/3``: the model's kind, stage and ``global_step``, its adapter,
  backend, decoding, shot orders, leakage, the training run record and its files' hashes), written last by the
  sweep; a model folder without a whole one is left out with a warning, never guessed at. The metrics are those
  the folder's one reader composes (:meth:`gnt.results.model_folder.ModelFolder.metrics`: ``metrics.json`` with
  the judge's and xCOMET's blocks); beside them ``generations.jsonl``, ``judgments.jsonl``, ``xcomet.jsonl`` +
  ``xcomet_summary.json``, ``preference.jsonl``, ``attribution/**`` and ``templated/**`` (tidy data + PNGs).
- ``judge_validation.json``: the judge validation report kept beside the results (others are named to
  :func:`collect`).

The central table is :attr:`Results.metrics`: one :class:`MetricRow` per (model, scope, cell/language, metric,
group) with value and 95% CI, flattened from each ``metrics.json``'s ``cells``, ``languages`` and ``overall``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gnt.bootstrap import BootstrapSettings, recorded_bootstrap
from gnt.filenames import (
    ATTRIBUTION_DIR,
    GENERATIONS,
    JUDGE_VALIDATION,
    JUDGMENTS,
    METRICS,
    PREFERENCE,
    RECORD,
    SUMMARY,
    TEMPLATED_DIR,
    TEMPLATED_OUTPUTS,
    TEMPLATED_SUITE_DIR,
    XCOMET_ROWS,
)
from gnt.io import read_json
from gnt.jsonl_cache import iter_jsonl
from gnt.results.folder import model_names, stray_folders
from gnt.results.model_folder import GRID, JUDGE, PARTS, XCOMET, ModelFolder
from gnt.results.part import check_part
from gnt.results_schema import (
    EVAL_RECORD_FORMAT,
    EvalRecord,
    GenerationRecord,
    Judgment,
    Metrics,
    TemplatedMetrics,
    XcometSummary,
    number,
    read_stat,
    summary_model_names,
)

log = logging.getLogger(__name__)
#: Keys of a metrics block that are not metrics (the grid blocks carry none today; tidy sub-blocks may).
_BLOCK_META = {"format"}

#: ``(value, lo, hi, n)`` of a number or a ``{"value", "ci", "n"}`` estimate (the one stat shape the project writes).
parse_stat = read_stat


@dataclass(frozen=True)
class MetricRow:
    """One number of one model: ``scope`` is ``cell``, ``language`` or ``overall``; ``group`` a set, gender or label."""

    model: str
    scope: str
    lang: str | None
    cell: str | None
    metric: str
    group: str | None
    value: float
    lo: float | None = None
    hi: float | None = None
    n: int | None = None

    @property
    def config(self) -> str | None:
        return self.cell.split("/")[1] if self.cell and self.cell.count("/") == 2 else None

    @property
    def shots(self) -> int | None:
        if self.cell and self.cell.count("/") == 2:
            try:
                return int(self.cell.split("/")[2])
            except ValueError:
                return None
        return None


def flatten_block(block: Any, model: str, scope: str, lang: str | None, cell: str | None) -> list[MetricRow]:
    """All numbers of one metrics block: ``metric`` = top-level key, ``group`` = the nested key path below it."""
    rows: list[MetricRow] = []

    def walk(value: Any, metric: str, group: list[str]) -> None:
        stat = parse_stat(value)
        if stat is not None:
            rows.append(MetricRow(model, scope, lang, cell, metric, "/".join(group) or None, *stat))
            return
        if isinstance(value, dict):
            for key, sub in value.items():
                if key == "ci" or str(key).startswith("_"):
                    continue
                walk(sub, metric, [*group, str(key)])

    if not isinstance(block, dict):
        return rows
    for key, value in block.items():
        if key in _BLOCK_META or str(key).startswith("_"):
            continue
        walk(value, str(key), [])
    return rows


def flatten_metrics(metrics: Metrics, model: str) -> list[MetricRow]:
    """Tidy rows of a ``metrics.json``: its ``cells`` and ``languages`` blocks (by name), ``overall`` and the
    ``preference_accuracy`` block."""
    rows: list[MetricRow] = []
    for cell, block in (metrics.get("cells") or {}).items():
        rows.extend(flatten_block(block, model, "cell", cell.split("/")[0], cell))
    for lang, block in (metrics.get("languages") or {}).items():
        rows.extend(flatten_block(block, model, "language", lang, None))
    overall = metrics.get("overall")
    if isinstance(overall, dict):
        rows.extend(flatten_block(overall, model, "overall", None, None))
    preference = metrics.get("preference_accuracy")
    if isinstance(preference, dict):  # its own block: pairs, not generations (gnt.evaluation.preference)
        kinds = {f"kind:{kind}": block for kind, block in (preference.get("by_kind") or {}).items()}
        rows.extend(flatten_block({"preference_accuracy": {"all": preference.get("all"), **kinds}},
                                  model, "overall", None, None))
        for lang, stat in (preference.get("by_lang") or {}).items():
            rows.extend(flatten_block({"preference_accuracy": {"all": stat}}, model, "language", lang, None))
    return rows


@dataclass
class ModelResult:
    """Everything on disk about one evaluated model (base or checkpoint); absent parts are None or empty."""

    name: str
    directory: Path
    record: EvalRecord = field(default_factory=dict)  # type: ignore[assignment]
    metrics: Metrics | None = None
    generations: list[dict] = field(default_factory=list)  # slim: the fields tests and joins need (SLIM_FIELDS)
    samples: list[GenerationRecord] = field(default_factory=list)  # full records of the first rows of each cell and set
    judgments: list[Judgment] = field(default_factory=list)  # slim, plus phrases for the sample rows
    xcomet_rows: list[dict] = field(default_factory=list)  # key and score_matching of each xcomet.jsonl line
    xcomet_summary: XcometSummary | None = None
    run_record: dict | None = None
    attribution_pngs: list[Path] = field(default_factory=list)
    attribution_tables: list[Path] = field(default_factory=list)
    preference: list[dict] = field(default_factory=list)  # slim preference-pair rows (id, lang, kind, won)
    templated_items: list[dict] = field(default_factory=list)  # slim suite items (style, lang, pair, variant, label)
    templated_metrics: TemplatedMetrics | None = None
    templated_pngs: list[Path] = field(default_factory=list)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def rows_for(self, lang: str | None) -> list[dict]:
        """Slim generation rows of one language (all with None), indexed once."""
        if "by_lang" not in self._cache:
            by_lang: dict[str | None, list[dict]] = {None: self.generations}
            for row in self.generations:
                by_lang.setdefault(row["lang"], []).append(row)
            self._cache["by_lang"] = by_lang
        return self._cache["by_lang"].get(lang, [])

    @property
    def described(self) -> dict:
        """The record's description of the model (``model``: name, kind, base_model, adapter, run_dir)."""
        model = self.record.get("model")
        return dict(model) if isinstance(model, dict) else {}

    @property
    def adapter_path(self) -> str | None:
        adapter = self.described.get("adapter")
        return str(adapter["path"]) if isinstance(adapter, dict) and adapter.get("path") else None

    @property
    def recorded(self) -> bool:
        """Whether the record names the model's kind, stage and step (``eval-record/3``): nothing is guessed then."""
        return self.record.get("format") == EVAL_RECORD_FORMAT

    @property
    def is_base(self) -> bool:
        return self.record.get("kind") == "base"

    @property
    def failed(self) -> bool:
        """Whether the sweep recorded this model as failed (every generation in error: no metrics to show)."""
        return self.record.get("status") == "failed"

    @property
    def global_step(self) -> int | None:
        return 0 if self.is_base else self.record.get("global_step")

    @property
    def run_dir(self) -> str | None:
        run_dir = self.described.get("run_dir")
        return str(run_dir) if run_dir else None

    @property
    def stage(self) -> str:
        """``base``, or the training stage (``sft``/``dpo``), as the sweep recorded it."""
        return str(self.record.get("stage", "unknown"))

    @property
    def leakage(self) -> dict:
        value = self.record.get("leakage") or dict(self.metrics or {}).get("leakage")
        return value if isinstance(value, dict) else {"status": "not recorded"}

    def judgment_index(self) -> dict[str, Judgment]:
        """Judgments by generation key; built once."""
        if "judgments" not in self._cache:
            self._cache["judgments"] = {str(j["key"]): j for j in self.judgments if j.get("key") is not None}
        return self._cache["judgments"]

    def xcomet_index(self) -> dict[str, float | None]:
        """Set-matching segment score by generation key (a failure is scored 0.0 by the xCOMET step)."""
        if "xcomet" not in self._cache:
            self._cache["xcomet"] = {
                str(row["key"]): number(row.get("score_matching")) for row in self.xcomet_rows if row.get("key") is not None
            }
        return self._cache["xcomet"]


def row_key(row: Mapping[str, Any]) -> str:
    """A generation's join key with judgments and xCOMET rows: the generation request's content hash."""
    return str(row["key"])


@dataclass
class Results:
    """A whole results folder: its models in order (base first, then by stage and step) and shared artefacts."""

    directory: Path
    summary: dict
    models: list[ModelResult]
    metrics: list[MetricRow]
    judge_validation: list[tuple[Path, dict]]
    missing: dict[str, list[str]]
    suite_pngs: list[Path] = field(default_factory=list)  # templated-suite figures across models
    warnings: list[str] = field(default_factory=list)  # shown at the top of the report and logged

    def model(self, name: str) -> ModelResult:
        for model in self.models:
            if model.name == name:
                return model
        raise KeyError(name)

    @property
    def base(self) -> ModelResult | None:
        return next((m for m in self.models if m.is_base), None)

    @property
    def languages(self) -> list[str]:
        order = ["it", "es", "de", "el"]
        found = {row.lang for row in self.metrics if row.lang} | {
            g["lang"] for m in self.models for g in m.generations[:1] if g.get("lang")
        }
        return [lang for lang in order if lang in found] + sorted(found - set(order))

    @property
    def cells(self) -> list[str]:
        return sorted({row.cell for row in self.metrics if row.cell}, key=_cell_order)

    @property
    def bootstrap(self) -> BootstrapSettings:
        """The settings the metrics' intervals were computed with (the ``bootstrap`` block the sweep writes, the
        same in every model of one sweep); the report's paired tests and significance marks use the same ones."""
        recorded = next((dict(m.metrics) for m in self.models if m.metrics and m.metrics.get("bootstrap")), None)
        return recorded_bootstrap(recorded or {})

    @property
    def alpha(self) -> float:
        return self.bootstrap.alpha

    def has(self, metric: str) -> bool:
        return any(row.metric == metric for row in self.metrics)


def _cell_order(cell: str) -> tuple:
    parts = cell.split("/")
    lang_order = {"it": 0, "es": 1, "de": 2, "el": 3}
    config_order = {"G+S": 0, "G": 1, "S": 2, "None": 3}
    if len(parts) != 3:
        return (9, cell)
    shots = int(parts[2]) if parts[2].isdigit() else 0
    return (lang_order.get(parts[0], 8), config_order.get(parts[1], 8), -shots, cell)


def _read_json_or_none(path: Path) -> Any:
    if not path.is_file():
        return None
    try:
        return read_json(path)
    except (OSError, json.JSONDecodeError):
        return None


#: Generation rows are kept slim (``id, lang, set, gender, cell, key, label, error, chrf``): a full grid is 72,000
#: records per model, and the long texts are kept only for the sample rows, so a report over many checkpoints
#: stays within memory.
SLIM_FIELDS = ("id", "lang", "set", "gender", "cell", "key", "label", "error", "chrf")
JUDGMENT_FIELDS = ("key", "id", "cell", "neutral", "label", "judge_error", "error", "judge", "format")
XCOMET_FIELDS = ("key", "score_matching")
PREFERENCE_FIELDS = ("id", "lang", "kind", "won")
TEMPLATED_FIELDS = ("style", "lang", "pair_id", "variant", "label")
SAMPLES_PER_CELL_AND_SET = 8


def _iter_jsonl(path: Path) -> Iterable[dict]:
    """Records of a JSON-lines file, skipping a truncated or corrupt line (a killed writer)."""
    return (record for record in iter_jsonl(path) if record is not None)


def _slim(records: Iterable[dict], fields: tuple[str, ...]) -> list[dict]:
    return [{k: r.get(k) for k in fields} for r in records]


def read_generations(path: Path, per_cell_and_set: int = SAMPLES_PER_CELL_AND_SET
                     ) -> tuple[list[dict], list[GenerationRecord]]:
    """``(slim rows, full sample rows)``: every row with the fields joins and tests need, and whole records for the first
    ``per_cell_and_set`` rows of each (cell, set) — what the sample browser and the W&B table show."""
    slim: list[dict] = []
    samples: list[GenerationRecord] = []
    counts: dict[tuple, int] = {}
    for record in _iter_jsonl(path):
        slim.append({**{k: record.get(k) for k in SLIM_FIELDS}, "id": str(record["id"]), "key": row_key(record)})
        group = (record["cell"], record["set"])
        if counts.get(group, 0) < per_cell_and_set:
            counts[group] = counts.get(group, 0) + 1
            samples.append(record)  # type: ignore[arg-type]  # a line of generations.jsonl
    return slim, samples


def read_judgments(path: Path, sample_keys: set[str]) -> list[Judgment]:
    """Judgments with the fields metrics and joins need; phrases and raw text only for the sample rows."""
    out = []
    for record in _iter_jsonl(path):
        out.append(record if record.get("key") in sample_keys else {k: record[k] for k in JUDGMENT_FIELDS if k in record})
    return out  # type: ignore[return-value]


class ResultsError(RuntimeError):
    """A results file exists but cannot be read (a truncated write, a hand edit): the message names it and the fix."""


def _model_names(directory: Path, summary: dict, warnings: list[str]) -> list[str]:
    """The models to report: those ``summary.json`` lists (its order), then every other model folder on disk.

    The folders are the truth: a model a concurrent or interrupted sweep left out of the summary is still reported,
    a summary entry whose folder is gone is named in a warning instead of shown as a model that was "not run", and
    a folder that holds results but is no model folder (a copy such as ``base.bak/``, a sweep stopped half-way)
    is named in a warning and never counted as a model.
    """
    names = summary_model_names(summary)
    on_disk = model_names(directory)
    for name, why in stray_folders(directory).items():
        warnings.append(f"{directory / name}: left out: {why}; only folders the evaluation wrote are models")
    gone = [n for n in names if n not in on_disk]
    for name in gone:
        warnings.append(f"summary.json lists {name!r}, but {directory / name} holds no results: left out")
    return [n for n in names if n in on_disk] + [n for n in on_disk if n not in names]


def _read_result_json(path: Path) -> Any:
    """A results JSON file, None when absent; a present but unreadable one is an error, never "not run"."""
    if not path.is_file():
        return None
    try:
        return read_json(path)
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: unreadable ({exc}); delete it or write it again") from None


def _run_record(model: ModelResult) -> dict | None:
    """The training run record of a checkpoint, as the sweep embedded it in record.json."""
    embedded = model.record.get("run_record")
    return embedded if isinstance(embedded, dict) and embedded else None


def _whole_parts(root: Path, pattern: str, name: str, what: str, how: str, warnings: list[str]) -> list[Path]:
    """The folders of the sub-folder parts matching ``pattern`` (their records) whose files are whole; a damaged
    one is named in a warning with the command that writes it again, never shown as "not run"."""
    whole = []
    for record in sorted(root.glob(pattern)):
        found = check_part(record.parent, RECORD)
        if found.ok:
            whole.append(record.parent)
        else:
            warnings.append(f"{name}: {what} left out: {found.problem}; {how}")
    return whole


def read_model(root: Path, name: str, warnings: list[str]) -> ModelResult | None:
    """One model's folder, its parts read only when whole (each left-out part named in ``warnings``); None when
    its grid part itself is not (then it is left out whole, with the command that writes it again)."""
    folder = ModelFolder(root, name)
    directory = folder.path
    found = folder.check(GRID)
    if not found.ok:
        warnings.append(f"{name}: left out: {found.problem}; {PARTS[GRID].rewrite}")
        return None
    model = ModelResult(name=name, directory=directory)
    model.record = found.record  # type: ignore[assignment]
    model.metrics, left_out = folder.metrics()
    warnings += left_out
    model.generations, model.samples = read_generations(directory / GENERATIONS)
    if folder.check(JUDGE).ok:
        model.judgments = read_judgments(directory / JUDGMENTS, {row_key(r) for r in model.samples})
    xcomet = folder.check(XCOMET)
    if xcomet.ok:
        model.xcomet_rows = _slim(_iter_jsonl(directory / XCOMET_ROWS), XCOMET_FIELDS)
        model.xcomet_summary = xcomet.record  # type: ignore[assignment]
    model.preference = _slim(_iter_jsonl(directory / PREFERENCE), PREFERENCE_FIELDS)
    model.run_record = _run_record(model)
    attribution = directory / ATTRIBUTION_DIR
    for part in _whole_parts(attribution, f"*/*/{RECORD}", name, "attribution", "rerun eval/attribute.py", warnings):
        model.attribution_pngs += sorted(part.rglob("*.png"))
        model.attribution_tables += sorted(p for p in part.rglob("*") if p.suffix in (".json", ".jsonl", ".csv", ".tsv"))
    templated = directory / TEMPLATED_DIR
    if _whole_parts(directory, f"{TEMPLATED_DIR}/{RECORD}", name, "the templated suite", "rerun eval/templated.py",
                    warnings):
        model.templated_pngs = sorted(templated.rglob("*.png"))
        model.templated_items = _slim(_iter_jsonl(templated / TEMPLATED_OUTPUTS), TEMPLATED_FIELDS)
        model.templated_metrics = _read_result_json(templated / METRICS)
    return model


def _sort_key(model: ModelResult) -> tuple:
    stage_order = {"base": 0, "sft": 1, "dpo": 2}
    return (stage_order.get(model.stage, 3), model.stage, model.global_step or 0, model.name)


def find_judge_validation(directory: Path) -> list[tuple[Path, dict]]:
    """The judge validation report kept in the results folder (``judge_validation.json`` at its top), if any.

    ``eval/judge.py validate`` writes its report wherever ``validation`` says (``outputs/judge-validation.json``
    by default); a report kept under another name is named to the report (``judge_validation``), never searched
    for. Its fields are the report's fixed headline keys (:func:`gnt.report.tables.judge_validity`).
    """
    data = _read_result_json(directory / JUDGE_VALIDATION)
    return [(directory / JUDGE_VALIDATION, data)] if isinstance(data, dict) else []


def collect(results_dir: str | Path, judge_validation: Iterable[str | Path] = ()) -> Results:
    """Read a results folder into :class:`Results`; raises only when there is nothing to report at all.

    ``judge_validation``: validation reports kept elsewhere (``eval/judge.py validate`` writes
    ``outputs/judge-validation.json`` by default), added to those found under the folder.
    """
    directory = Path(results_dir)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory}: results folder not found (the out_dir of eval/evaluate.py)")
    warnings: list[str] = []
    summary: Any = {}
    if (directory / SUMMARY).is_file():
        try:
            summary = read_json(directory / SUMMARY)
        except (OSError, ValueError) as exc:
            warnings.append(f"{directory / SUMMARY} is unreadable ({exc}): models listed from their folders")
    if not isinstance(summary, dict):
        summary = {}
    names = _model_names(directory, summary, warnings)
    if not names:
        raise FileNotFoundError(
            f"{directory}: no evaluated model found (expected summary.json or <model>/metrics.json); "
            "run eval/evaluate.py first"
        )
    read = [read_model(directory, name, warnings) for name in names]
    models = sorted((m for m in read if m is not None), key=_sort_key)
    if not models:
        raise ResultsError(f"{directory}: no model folder whose results are whole: " + "; ".join(warnings))
    metrics = [row for model in models if model.metrics for row in flatten_metrics(model.metrics, model.name)]
    missing: dict[str, list[str]] = {}
    for model in models:
        absent = [
            part
            for part, present in (
                ("metrics", model.metrics is not None),
                ("generations", bool(model.generations)),
                ("judge", bool(model.judgments) or any(r.metric == "gnt_accuracy" for r in metrics if r.model == model.name)),
                ("xcomet", bool(model.xcomet_rows) or model.xcomet_summary is not None),
                ("attribution", bool(model.attribution_pngs or model.attribution_tables)),
                ("templated", bool(model.templated_metrics or model.templated_pngs)),
            )
            if not present
        ]
        missing[model.name] = absent
        if model.failed:
            warnings.append(f"{model.name}: failed, every generation in error ({model.record.get('error')}); "
                            "rerun eval/evaluate.py to retry it")
    validation = find_judge_validation(directory)
    for extra in judge_validation:
        data = _read_json_or_none(Path(extra))
        if not isinstance(data, dict):
            raise FileNotFoundError(f"{extra}: judge validation report not found or not JSON")
        validation.append((Path(extra), data))
    suite = directory / TEMPLATED_SUITE_DIR
    suite_pngs = sorted(suite.rglob("*.png")) if suite.is_dir() else []
    if suite_pngs:
        for model in models:
            if model.templated_metrics is not None and "templated" in missing[model.name]:
                missing[model.name].remove("templated")
    for warning in warnings:
        log.warning("report: %s", warning)
    return Results(directory, summary, models, metrics, validation, missing, suite_pngs, warnings)
