"""Run the templated sensitivity suite for a base model and every checkpoint, through the evaluation core.

Flow: discover models (base + ``checkpoint-*`` of the runs + explicit adapters, :mod:`gnt.evaluation.discovery`)
→ load the suite (the runs' data build ``eval/templated_suite.jsonl``, a given file, or pairs rendered from the
templates) → leakage guard → per base model one backend (:func:`gnt.evaluation.driver.default_backend_factory`) behind the
sweep's shared generation cache (``<out>/cache/generations.jsonl``) → per model, per prompt style, per language:
requests sorted by prompt length and cut into fixed chunks (so a resumed run sends the same batches and gets the
same outputs) → classification → metrics → files. A rerun is served from the cache and generates nothing.
All but the suite's own requests, classification and files is :mod:`gnt.evaluation.driver`'s (shared with the
grid sweep): :class:`SuiteTask` is the suite plugged into it. A model whose every generation failed gets a record
with ``status: failed`` and no metrics, stays out of the summary and makes the run fail (exit status 1).

Prompt styles, both recorded with every output:

- ``plain``: one user turn, :data:`PLAIN_PROMPT`; the whole reply is the translation (a reply in the grid format,
  as a grid-trained checkpoint may give, is read with :func:`gnt.output_format.extract`);
- ``grid``: the grid's prompt for the configured cell (default G+S, 4 shots: the paper's headline) with the label
  + translation output format and, when the recipe says ``constrained``, its decoding regex. The generated label
  is kept, so the suite also shows whether a model *says* NEUTRAL for the ambiguous inputs.

Results layout (beside the grid sweep's files, in the same ``out_dir``)::

    <out>/<model>/templated/outputs.jsonl   one line per (style, suite item): output, translation, class, evidence
    <out>/<model>/templated/unknown.jsonl   the unknowns, for review (add valid forms via ``extra_forms``)
    <out>/<model>/templated/metrics.json    gnt.templated_suite.metrics per style and language
    <out>/<model>/templated/record.json     models, backend, prompts, suite hash, leakage, counts (written last)
    <out>/templated_suite/summary.json      every model evaluated on this suite, with headline numbers
    <out>/templated_suite/summary.tsv       tidy rows (model, style, lang, subset, metric, value, CI)
    <out>/templated_suite/plots/*.png       strategy bars and ΔN/ΔM per checkpoint
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from gnt.bootstrap import BootstrapSettings
from gnt.data.entry import LANGUAGE_NAMES, source_key
from gnt.data.templated import generate_pairs, read_suite, suite_records
from gnt.evaluation.cache import CachedBackend, GenerationCache
from gnt.evaluation.config import EvalConfig, eval_config
from gnt.evaluation.discovery import ModelUnderTest
from gnt.evaluation.driver import (
    BackendFactory,
    Outcome,
    default_backend_factory,
    discover,
    raise_if_failed,
    run_models,
    write_folder,
)
from gnt.evaluation.leakage import LeakageStatus, guard_leakage
from gnt.evaluation.results import cache_path, model_dir
from gnt.filenames import METRICS, RECORD, SUMMARY, TEMPLATED_OUTPUTS, TEMPLATED_SUITE
from gnt.generation.base import Constraint, DecodingParams, Generation, GenerationRequest
from gnt.io import read_json, sha256_file, sha256_text, write_json, write_jsonl, write_text_atomic
from gnt.output_format import extract, output_regex
from gnt.prompts.grid import CONFIGS, SHOT_COUNTS, Cell, PromptGrid
from gnt.recipe import RecipeError, RecipeSchema, resolve_recipe, split_by_owner
from gnt.records import environment_record
from gnt.templated_suite.classify import (
    UNKNOWN,
    Classification,
    Classifier,
    ExtraForm,
    load_extra_forms,
    normalise,
)
from gnt.templated_suite.metrics import compute_metrics, tidy_rows

log = logging.getLogger("gnt.templated_suite")

STYLES: tuple[str, ...] = ("plain", "grid")
PLAIN_PROMPT = "Translate the following English text into {lang_name}. Reply with the translation only.\n\n{source}"
SUITE_FILE = TEMPLATED_SUITE
SUBDIR = "templated"
OUTPUTS = TEMPLATED_OUTPUTS
UNKNOWNS = "unknown.jsonl"
UNKNOWN_FIELDS = ("style", "lang", "adjective", "variant", "source", "translation", "reason", "evidence")
"""What ``unknown.jsonl`` keeps of an output: enough to review it and, if the form is valid, add it to extra_forms."""
SUMMARY_DIR = "templated_suite"
RECORD_FORMAT = "gnt-align/templated-record/1"
SUMMARY_FORMAT = "gnt-align/templated-summary/1"


# ----------------------------------------------------------------------------------------------- configuration
@dataclass
class SuiteConfig:
    """The suite's own recipe keys; every evaluation recipe key (backend, runs, out_dir, ...) is accepted too."""

    suite: str | None = field(
        default=None,
        metadata={"help": "suite JSONL; default: the runs' data build eval/templated_suite.jsonl, else rendered"},
    )
    pairs_per_lang: int | None = field(
        default=None, metadata={"help": "evaluate at most N pairs per language (spread over templates)"}
    )
    suite_seed: int = field(default=0, metadata={"help": "seed of the pair sample and its spread over templates"})
    styles: list[str] = field(default_factory=lambda: list(STYLES), metadata={
        "choices": STYLES, "help": "prompts: plain (translate only) and/or grid (the grid cell of grid_config/grid_shots)"})
    grid_config: str = field(default="G+S", metadata={"choices": CONFIGS, "help": "grid style: prompt configuration"})
    grid_shots: int = field(default=4, metadata={"choices": SHOT_COUNTS, "help": "grid style: demonstrations per prompt"})
    extra_forms: str | None = field(default=None, metadata={"help": "TSV of extra adjective forms (lang en form label strategy)"})
    plots: bool = field(default=True, metadata={"help": "draw the suite's figures"})

    def validate(self) -> SuiteConfig:
        if not self.styles:
            raise RecipeError("styles must select at least one of plain, grid")
        if self.pairs_per_lang is not None and self.pairs_per_lang < 1:
            raise RecipeError("pairs_per_lang must be positive (or null for the whole suite)")
        if self.extra_forms and not Path(self.extra_forms).is_file():
            raise RecipeError(f"extra_forms: file not found: {self.extra_forms}")
        return self


SCHEMA = RecipeSchema.from_dataclasses([SuiteConfig, EvalConfig])


def load_config(
    path: str | Path | None, overrides: Sequence[tuple[str, Any]] = (), **explicit: Any
) -> tuple[SuiteConfig, EvalConfig]:
    """Recipe < ``key=value`` overrides < explicit flags, split into the suite's keys and the evaluation keys.

    The recipe is checked against both key sets at once (so an unknown key names the closest of either); the
    evaluation keys then go through :func:`gnt.evaluation.config.eval_config`, which adds the explicit models.
    """
    resolved = resolve_recipe(path, overrides, SCHEMA)
    groups = split_by_owner(resolved, SCHEMA)
    suite_values = groups.get("SuiteConfig", {})
    suite_keys = {f.name for f in fields(SuiteConfig)}
    for key in [k for k in explicit if k in suite_keys]:
        value = explicit.pop(key)
        if value is not None:
            suite_values[key] = SCHEMA.coerce(key, value, "command line")
    suite = SuiteConfig(**suite_values).validate()
    evaluation = eval_config(groups.get("EvalConfig", {}), **explicit)
    evaluation.recipe = str(path) if path is not None else None
    if evaluation.model:
        from gnt.models.aliases import resolve_model

        evaluation.model = resolve_model(evaluation.model)  # gnt:tiny / tiny → the offline model folder
    return suite, evaluation


# ----------------------------------------------------------------------------------------------- the suite
def _hash_order(text: str, seed: int) -> str:
    return hashlib.sha256(f"{seed}|{text}".encode()).hexdigest()


def limit_pairs(records: list[dict], per_lang: int | None, seed: int = 0) -> list[dict]:
    """At most ``per_lang`` pairs per language, taken round-robin over templates in a seeded order.

    A suite file is ordered by template, so its first N pairs would all come from one or two templates; the
    round-robin keeps every template (and so every ambiguity kind) in a small sample. File order is kept.
    """
    if per_lang is None:
        return records
    chosen: set[str] = set()
    by_lang: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        pairs = by_lang[record["lang"]][record["template_id"]]
        if record["pair_id"] not in pairs:
            pairs.append(record["pair_id"])
    for templates in by_lang.values():
        queues = [sorted(ids, key=lambda p: _hash_order(p, seed)) for _, ids in sorted(templates.items())]
        taken = 0
        while taken < per_lang and any(queues):
            for queue in queues:
                if queue and taken < per_lang:
                    chosen.add(queue.pop(0))
                    taken += 1
    return [r for r in records if r["pair_id"] in chosen]


def load_suite(config: SuiteConfig, evaluation: EvalConfig, models: Sequence[ModelUnderTest]) -> tuple[list[dict], dict]:
    """The suite records to evaluate (selected languages, limited) and where they came from."""
    langs = list(evaluation.langs)
    if config.suite:
        path = Path(config.suite)
        if not path.is_file():
            raise RecipeError(f"suite file not found: {path}")
        records, info = read_suite(path), {"source": str(path)}
    else:
        data_dirs = sorted({m.data_dir for m in models if m.adapter is not None and m.data_dir})
        found = []
        for data_dir in data_dirs:
            runs = [Path(m.run_dir) for m in models if m.run_dir]
            candidates = [Path(data_dir)] + [r / data_dir for r in runs] + [r.parent / data_dir for r in runs]
            found += [c / SUITE_FILE for c in candidates if (c / SUITE_FILE).is_file()][:1]
        found = sorted({str(Path(p).resolve()) for p in found})
        if len({sha256_file(Path(p)) for p in found}) > 1:  # the same suite copied elsewhere is the same suite
            raise RecipeError(
                f"the runs were trained on different data builds ({', '.join(found)}); give one suite= for all"
            )
        if found:
            records, info = read_suite(found[0]), {"source": found[0]}
        else:
            n = None if config.pairs_per_lang is None else config.pairs_per_lang * len(langs)
            records = suite_records(generate_pairs(langs, max_pairs=n, seed=config.suite_seed))
            info = {"source": "rendered from data/templates", "max_pairs": n, "seed": config.suite_seed}
    records = limit_pairs([r for r in records if r["lang"] in langs], config.pairs_per_lang, config.suite_seed)
    if not records:
        raise RecipeError(f"the suite has no items for languages {', '.join(langs)} ({info['source']})")
    info["sha256"] = sha256_text("\n".join(json.dumps(r, sort_keys=True, ensure_ascii=False) for r in records))
    info["counts"] = dict(sorted(Counter(f"{r['lang']}/{r['variant']}" for r in records).items()))
    info["pairs_per_lang"] = config.pairs_per_lang
    return records, info


# ----------------------------------------------------------------------------------------------- requests
def plain_messages(source: str, lang: str) -> list[dict[str, str]]:
    """The plain prompt: no rules, no guidelines, no format, so it measures the model's default behaviour."""
    return [{"role": "user", "content": PLAIN_PROMPT.format(lang_name=LANGUAGE_NAMES[lang], source=source)}]


def read_output(generation: Generation, style: str, lang: str) -> tuple[str | None, str | None, str | None]:
    """(translation, grid label, extraction error) of one output.

    ``grid``: the grid's strict extraction (an extraction error leaves the item unknown, never guessed).
    ``plain``: the reply itself, or the bracketed translation when the reply follows the grid format.
    """
    if generation.error is not None:
        return None, None, "generation_failed"
    extraction = extract(generation.text, lang)
    if style == "grid":
        if extraction.error is not None:
            return None, extraction.label, extraction.error
        return extraction.translation, extraction.label, None
    if extraction.ok:
        return extraction.translation, None, None
    return generation.text.strip() or None, None, None  # an empty reply is classified unknown ("empty")


@dataclass
class _Request:
    record: dict
    style: str
    request: GenerationRequest
    order: tuple[int, int, int] = (0, 0, 0)  # (style, language, suite position): where its output line goes


class SuiteTask:
    """The suite plugged into the evaluation driver: its requests, their classified outputs, the model folder.

    Shared across models; :func:`run_suite` sets the leakage statuses and the suite's provenance before the run.
    """

    label = "templated"

    def __init__(
        self, config: SuiteConfig, evaluation: EvalConfig, records: list[dict], classifier: Classifier
    ) -> None:
        self.config = config
        self.evaluation = evaluation
        self.records = records
        self.classifier = classifier
        self.grid = PromptGrid(sorted({r["lang"] for r in records}), evaluation.prompts_dir, seed=evaluation.grid_seed)
        self.params = DecodingParams(max_new_tokens=evaluation.max_new_tokens)
        self.langs = list(dict.fromkeys(r["lang"] for r in records))
        self.statuses: dict[str, LeakageStatus] = {}
        self.suite_info: dict = {}
        self.environment: dict = {}

    def cell(self, lang: str) -> Cell:
        """The grid cell whose prompt the ``grid`` style uses for ``lang``."""
        return Cell(lang, self.config.grid_config, self.config.grid_shots)  # type: ignore[arg-type]

    def requests(self, model: ModelUnderTest, style: str, lang: str, system_role: bool) -> list[_Request]:
        """One request per suite item of ``lang``, in suite order (the cache key follows from each request)."""
        out = []
        constraint = Constraint("regex", output_regex(lang)) if self.evaluation.constrained else None
        position = (self.config.styles.index(style), self.langs.index(lang) if lang in self.langs else 0)
        for record in self.records:
            if record["lang"] != lang:
                continue
            if style == "plain":
                request = GenerationRequest.from_messages(plain_messages(record["source"], lang), model.adapter, None, self.params)
            else:
                prompt = self.grid.render(record["source"], self.cell(lang), system_role)
                request = GenerationRequest.from_messages(prompt.messages, model.adapter, constraint, self.params)
            out.append(_Request(record, style, request, (*position, len(out))))
        return out

    def size(self, model: ModelUnderTest | None = None) -> int:
        return len(self.records) * len(self.config.styles)

    def chunks(self, model: ModelUnderTest, system_role: bool) -> Iterator[list[_Request]]:
        """Per style, per language: the requests sorted by prompt length, cut into ``chunk_size`` chunks."""
        chunk_size = self.evaluation.chunk_size
        for style in self.config.styles:
            for lang in self.langs:
                todo = self.requests(model, style, lang, system_role)
                todo.sort(key=lambda r: (sum(len(c) for _, c in r.request.messages), r.order))
                for start in range(0, len(todo), chunk_size):
                    yield todo[start : start + chunk_size]

    @staticmethod
    def request(item: _Request) -> GenerationRequest:
        return item.request

    @staticmethod
    def order(item: _Request) -> tuple[int, int, int]:
        return item.order

    def record(self, model: ModelUnderTest, req: _Request, generation: Generation, model_id: str) -> dict:
        """The output record: the suite item, the raw output, what was read from it and its class with evidence."""
        record = req.record
        translation, label, error = read_output(generation, req.style, record["lang"])
        if error is not None:
            result = Classification(UNKNOWN, reason=f"extraction:{error}")
        else:
            # the plain prompt is English throughout, so its echo is no translation; the grid prompt holds target-
            # language shots, whose words a real translation shares, so there only the source counts as an echo
            english = plain_messages(record["source"], record["lang"])[0]["content"] if req.style == "plain" else ""
            result = self.classifier.classify(translation, record, english)
        item = {
            "model": model.name,
            "style": req.style,
            **{k: record[k] for k in (
                "pair_id", "lang", "variant", "template_id", "kind", "stereotype_cue", "cue_stereotype", "adjective",
                "adjective_stereotype", "expected_gender", "source", "M", "F", "N", "N_strategy",
            )},
            "gender_marked": normalise(record["M"]) != normalise(record["F"]),
            "key": req.request.key(model_id),
            "raw": generation.text,
            "translation": translation,
            "extraction_error": error,
            "generation_error": generation.error,
            **result.to_json(),
        }
        if req.style == "grid":
            item["grid_label"] = label
        return item

    def write(self, outcome: Outcome, backend: CachedBackend, system_role: bool) -> dict:
        """Metrics, outputs, unknowns and the record (last) of one model; only the record when every item failed."""
        model, items, evaluation, config = outcome.model, outcome.records, self.evaluation, self.config
        leakage = self.statuses[model.name]
        counts = {**outcome.counts.to_json(), "unknown": sum(i["label"] == UNKNOWN for i in items)}
        log.info("%s: %d unknown of %d suite outputs", model.name, counts["unknown"], counts["requests"])
        status = {"status": "failed", "error": outcome.error} if outcome.failed else {"status": "ok"}
        record = {
            "format": RECORD_FORMAT,
            **status,
            "model": model.describe(),
            "model_id": backend.model_id,
            "global_step": model.global_step,
            "backend": backend.describe(),
            "decoding": asdict(self.params),
            "styles": config.styles,
            "plain_prompt": PLAIN_PROMPT,
            "grid": {
                "cell": f"{config.grid_config}/{config.grid_shots}",
                "constraint": evaluation.constrained,
                "seed": evaluation.grid_seed,
                "prompt_texts_hash": {lang: self.grid.texts[lang].content_hash for lang in self.grid.langs},
            },
            "system_role": system_role,
            "suite": self.suite_info,
            "extra_forms": config.extra_forms,
            "leakage": leakage.to_json(),
            "suite_config": asdict(config),
            "eval_recipe": evaluation.to_json(),
            "counts": counts,
            "seconds": round(outcome.seconds, 3),
            "environment": self.environment,
        }
        folder = model_dir(out_dir=evaluation.out_dir, name=model.name) / SUBDIR
        files: dict[str, Callable[[Path], object]] = {}
        if not outcome.failed:  # all-unknown metrics of a dead backend would look like a result
            metrics = compute_metrics(items, bootstrap=BootstrapSettings.of(evaluation))
            metrics.update(model=model.name, global_step=model.global_step, leakage=leakage.to_json(),
                           suite_sha256=self.suite_info["sha256"])
            unknown = [{k: i[k] for k in UNKNOWN_FIELDS} for i in items if i["label"] == UNKNOWN]
            files = {
                OUTPUTS: lambda path: write_jsonl(path, items),
                UNKNOWNS: lambda path: write_jsonl(path, unknown),
                METRICS: lambda path: write_json(path, metrics),
            }
        write_folder(folder, files, record, remove=(OUTPUTS, UNKNOWNS, METRICS) if outcome.failed else ())
        return {"name": model.name, "counts": counts, **status}


# ----------------------------------------------------------------------------------------------- the run
def run_suite(
    config: SuiteConfig, evaluation: EvalConfig, *, backend_factory: BackendFactory | None = None
) -> Path:
    """Evaluate every discovered model on the suite; return the folder with the cross-model summary.

    Raises :class:`~gnt.evaluation.driver.GenerationFailure` (after writing the summary of the others) when
    every generation of a model failed.
    """
    started = time.perf_counter()
    out = Path(evaluation.out_dir)
    models = discover(evaluation)
    records, suite_info = load_suite(config, evaluation, models)
    statuses = guard_leakage(
        models,
        {source_key(r["source"]) for r in records},
        len(records),
        allow=evaluation.allow_leakage,
        logger=log,
        scope=" on the suite",
        leaking="model(s) trained on suite sources",
        advice="use the data build's eval/templated_suite.jsonl",
    )
    extra: list[ExtraForm] = load_extra_forms(config.extra_forms) if config.extra_forms else []
    task = SuiteTask(config, evaluation, records, Classifier(extra))
    task.statuses, task.suite_info, task.environment = statuses, suite_info, environment_record()
    log.info("templated suite: %d model(s) × %d style(s) × %d item(s) → %s", len(models), len(config.styles), len(records), out)
    cache = GenerationCache(cache_path(out))
    entries = run_models(task, evaluation, models, backend_factory or default_backend_factory, cache)
    folder = write_summary(out, suite_info["sha256"], plots=config.plots)
    log.info("templated suite done in %.1fs", time.perf_counter() - started)
    raise_if_failed(entries)
    return folder


# ----------------------------------------------------------------------------------------------- summary
def _model_order(entry: dict) -> tuple:
    """Plot order: base first, then each run's checkpoints by step, then explicit adapters."""
    kind_rank = {"base": 0, "checkpoint": 1, "adapter": 2}.get(entry.get("kind", ""), 3)
    return (kind_rank, entry.get("run_dir") or "", entry.get("global_step") or 0, entry["name"])


def completed_models(out: str | Path, suite_sha256: str | None = None) -> list[dict]:
    """Every model folder under ``out`` with a finished suite record (optionally: on this suite), in plot order."""
    out = Path(out)
    entries = []
    for record_path in sorted(list(out.glob(f"*/{SUBDIR}/{RECORD}")) + list(out.glob(f"*/*/{SUBDIR}/{RECORD}"))):
        record = read_json(record_path)
        if record.get("format") != RECORD_FORMAT or record.get("status") == "failed":
            continue  # a failed model has a record and nothing to summarise
        if suite_sha256 and record["suite"]["sha256"] != suite_sha256:
            continue
        folder = record_path.parent
        entries.append({
            "name": record["model"]["name"],
            "kind": record["model"]["kind"],
            "run_dir": record["model"].get("run_dir"),
            "global_step": record.get("global_step"),
            "folder": str(folder.relative_to(out)),
            "suite_sha256": record["suite"]["sha256"],
        })
    return sorted(entries, key=_model_order)


def write_summary(out: str | Path, suite_sha256: str | None, *, plots: bool = True) -> Path:
    """Summary JSON + tidy TSV over every model evaluated on the suite, and the plots; returns their folder."""
    out = Path(out)
    folder = out / SUMMARY_DIR
    models = completed_models(out, suite_sha256)
    rows: list[dict] = []
    for entry in models:
        metrics = read_json(out / entry["folder"] / METRICS)
        model_rows = tidy_rows(entry["name"], metrics, entry["global_step"])
        rows.extend(model_rows)
        entry["headline"] = {
            f"{r['style']}/{r['lang']}/{r['metric']}": r["value"]
            for r in model_rows
            if r["subset"] == "all" and r["metric"] in ("N_det", "delta_M", "delta_N", "unknown_amb")
        }
    write_json(folder / SUMMARY, {"format": SUMMARY_FORMAT, "suite_sha256": suite_sha256, "models": models})
    columns = ["model", "global_step", "style", "lang", "subset", "metric", "value", "ci_low", "ci_high", "n"]
    lines = ["\t".join(columns)] + [
        "\t".join("" if r[c] is None else str(r[c]) for c in columns) for r in rows
    ]
    write_text_atomic(folder / "summary.tsv", "\n".join(lines) + "\n")
    if plots and models:
        from gnt.templated_suite.plots import plot_all

        plot_all(out, models, folder / "plots")
    return folder
