"""Score the WMT24 gender-resolution suite for the WMT24 systems, a user's outputs file and our models.

Files written to ``<out>/wmt24/`` (other tools read these names)::

    summary.tsv        lang system ambiguity n_det n_amb M_det F_det N_det M_amb F_amb N_amb dM dF dN unknown_rate
                       unknown_gap_rate unknown_no_rendering_rate; ambiguity "omission" is the paper's Table 4,
                       "active" its Table 5
    strategies.tsv     lang system N_det N1 N2 N3 N4 N5   (Table 6: the determined items of templates 1-5)
    stereotype.tsv     lang system adverb n M F N dM dF dN p_dM p_dF p_dN   (Table 7: template 7 by adverb)
    templates.tsv      per system, template and side: the paper's item count, ours, classified, unknown, shares
    placement.tsv      our models among the WMT24 systems: value, CI, rank and paired significance per statistic
    summary.json       all of it with 95% bootstrap CIs, per-template counts beside the paper's, unknowns, flags
    unknown.jsonl      every unknown item with its reason and the text it was looked up in, for review
    items.tsv.gz       every item's reading (to compare two runs: :mod:`.moved`)
    parse_problems.tsv segments of the folder that did not parse (line, reason); absent when all parse
    leakage.json       suite adjectives in the project's templated data, and per checkpoint what it trained on
    ranking_<lang>.png systems and our checkpoints ranked, one panel per table statistic, with CIs
    record.json        inputs (folder, lexicon files and hashes), options, segment count, systems skipped

Every table is macro-averaged over its template types as Dawkins et al. (2025) define them (:mod:`.templates`,
:mod:`.tables`). Our models (``runs=``/``adapters=``/``model=``) are translated through
:mod:`gnt.evaluation.driver`, like the grid sweep and the templated suite: one backend per base model, the results
folder's generation cache (a rerun generates nothing), the same counters, and a run error when every generation
of a model failed; each is then placed among the WMT24 systems (:mod:`.placement`).
"""

from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gnt.data.errors import DataError
from gnt.evaluation.cache import CachedBackend, GenerationCache
from gnt.evaluation.config import EvalConfig
from gnt.evaluation.discovery import ModelUnderTest
from gnt.evaluation.driver import (
    BackendFactory,
    Outcome,
    default_backend_factory,
    raise_if_failed,
    run_models,
)
from gnt.evaluation.results import cache_path
from gnt.filenames import LEAKAGE, RECORD, SUMMARY
from gnt.generation.base import DecodingParams, Generation, GenerationRequest
from gnt.io import sha256_text, write_json, write_jsonl, write_text_atomic
from gnt.records import environment_record
from gnt.settings import BootstrapSettings, OutputSettings, check_positive
from gnt.templated_suite.classify import STRATEGIES, Classifier
from gnt.templated_suite.run import UNKNOWNS, plain_messages, read_output
from gnt.templated_suite.wmt24.leakage import leakage_report
from gnt.templated_suite.wmt24.lexicon import check_coverage, load_suite_lexicon
from gnt.templated_suite.wmt24.moved import ITEMS_FILE, items_writer, write_items
from gnt.templated_suite.wmt24.placement import COLUMNS as PLACEMENT_COLUMNS
from gnt.templated_suite.wmt24.placement import place, placement_rows
from gnt.templated_suite.wmt24.reader import Segment, read_suite
from gnt.templated_suite.wmt24.score import (
    STEREOTYPE_COLUMNS,
    STRATEGY_COLUMNS,
    SUMMARY_COLUMNS,
    TEMPLATE_COLUMNS,
    SystemScores,
    score_system,
    score_translations,
    stereotype_rows,
    strategy_row,
    summary_rows,
    system_json,
    template_rows,
    unknown_listing,
)
from gnt.templated_suite.wmt24.stereotypes import (
    STEREOTYPES_FILE,
    adverb_stereotype,
    check_design,
    load_stereotypes,
)
from gnt.templated_suite.wmt24.systems import (
    Translations,
    available_systems,
    read_outputs_file,
    read_wmt24_system,
)
from gnt.templated_suite.wmt24.tables import Resamples
from gnt.templated_suite.wmt24.templates import PAPER_COUNTS, TABLES, TEMPLATES, tables_of, template_of

log = logging.getLogger("gnt.templated_suite.wmt24")
SUBDIR = "wmt24"
SUMMARY_FORMAT = "gnt-align/wmt24-summary/2"
#: A system with more unknown items than this share of the tables' items is flagged: its figures rest on a
#: minority of its outputs (TSU-HITs' lines stop mid-sentence; CycleL's Spanish is garbled).
FLAG_UNKNOWN_SHARE = 0.25


@dataclass
class Wmt24Options(BootstrapSettings, OutputSettings):
    """What to score: the ``txt-ts`` folder, the direction, which WMT24 systems, an outputs file, a row limit; the
    keys of ``eval/templated.py wmt24`` (the results folder and the bootstrap keys are the shared groups')."""

    root: str = ""
    """The suite's ``txt-ts`` folder (the command's subject)."""
    lang: str = field(default="es", metadata={"help": "target language of the en-xx direction"})
    systems: str | None = field(default=None, metadata={
        "help": "comma-separated WMT24 systems to score (null: every system with outputs; none: none)"})
    outputs: str | None = field(default=None, metadata={"help": "a TSV of seg_id<TAB>translation of another system"})
    outputs_name: str = field(default="outputs", metadata={"help": "the system name of the outputs file"})
    limit: int | None = field(default=None, metadata={
        "help": "score at most N segments, spread over the template shapes"})
    plots: bool = field(default=True, metadata={"help": "draw the ranking figure"})

    def system_names(self) -> list[str] | None:
        """The systems to score: None for every system with outputs, [] for none."""
        if self.systems is None:
            return None
        if self.systems.strip().lower() == "none":
            return []
        return [s.strip() for s in self.systems.split(",") if s.strip()]

    def validate(self) -> Wmt24Options:
        check_positive(self, "limit")
        self.validate_bootstrap()
        return self


def limit_segments(segments: Sequence[Segment], limit: int | None) -> list[Segment]:
    """At most ``limit`` segments, taken round-robin over the template types so every type stays in a sample."""
    if limit is None or limit >= len(segments):
        return list(segments)
    groups: dict[str, list[Segment]] = defaultdict(list)
    for seg in segments:
        groups[template_of(seg)].append(seg)
    queues = [groups[t] for t in TEMPLATES if t in groups]
    chosen: set[str] = set()
    while len(chosen) < limit and any(queues):
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.add(queue.pop(0).seg_id)
    return [s for s in segments if s.seg_id in chosen]


def _tsv(columns: Sequence[str], rows: Sequence[dict]) -> str:
    lines = ["\t".join(columns)]
    lines += ["\t".join("" if r[c] is None else str(r[c]) for c in columns) for r in rows]
    return "\n".join(lines) + "\n"


@dataclass
class _SegmentRequest:
    index: int
    segment: Segment
    request: GenerationRequest


class Wmt24Task:
    """Our models on the suite, plugged into the evaluation driver: each segment with the templated suite's
    plain prompt, in suite order, through the results folder's generation cache (a rerun generates nothing).

    The translations are scored with the WMT24 systems' afterwards, so a model's "folder" is its entry in
    ``summary.json``: :meth:`write` returns the model's :class:`Translations`.
    """

    label = "wmt24"

    def __init__(self, segments: Sequence[Segment], lang: str, evaluation: EvalConfig) -> None:
        self.segments = list(segments)
        self.lang = lang
        self.chunk_size = evaluation.chunk_size
        self.params = DecodingParams(max_new_tokens=evaluation.max_new_tokens)

    def size(self, model: ModelUnderTest | None = None) -> int:
        return len(self.segments)

    def chunks(self, model: ModelUnderTest, system_role: bool) -> Iterator[list[_SegmentRequest]]:
        items = [
            _SegmentRequest(i, s, GenerationRequest.from_messages(plain_messages(s.source, self.lang), model.adapter,
                                                                  None, self.params))
            for i, s in enumerate(self.segments)
        ]
        for start in range(0, len(items), self.chunk_size):
            yield items[start : start + self.chunk_size]

    @staticmethod
    def request(item: _SegmentRequest) -> GenerationRequest:
        return item.request

    @staticmethod
    def order(item: _SegmentRequest) -> int:
        return item.index

    def record(self, model: ModelUnderTest, item: _SegmentRequest, generation: Generation, model_id: str) -> dict:
        translation, _, _ = read_output(generation, "plain", self.lang)
        return {"seg_id": item.segment.seg_id, "translation": translation or ""}

    def write(self, outcome: Outcome, backend: CachedBackend, system_role: bool) -> dict:
        model = outcome.model
        by_seg = {r["seg_id"]: r["translation"] for r in outcome.records}
        info = model.describe() | {"model_id": backend.model_id, "backend": backend.describe()}
        translations = Translations(model.name, "model", by_seg, model.base_model, model=info)
        return {"name": model.name, "counts": outcome.counts.to_json(), "translations": translations}


def translate_models(
    segments: Sequence[Segment], lang: str, models: Sequence[ModelUnderTest], evaluation: EvalConfig,
    backend_factory: BackendFactory | None = None,
) -> list[Translations]:
    """Every model's translations of the segments; a model whose every generation failed is a run error."""
    cache = GenerationCache(cache_path(evaluation.out_dir))
    task = Wmt24Task(segments, lang, evaluation)
    entries = run_models(task, evaluation, models, backend_factory or default_backend_factory, cache)
    raise_if_failed(entries)
    return [e["translations"] for e in entries]


def run_wmt24(
    options: Wmt24Options,
    *,
    evaluation: EvalConfig | None = None,
    models: Sequence[ModelUnderTest] = (),
    backend_factory: BackendFactory | None = None,
) -> Path:
    """Score every requested source of translations; return ``<out>/wmt24``."""
    started = time.perf_counter()
    suite = read_suite(options.root, options.lang)
    for problem in suite.problems:
        log.warning("%s", problem)
    lexicon = load_suite_lexicon(options.lang)
    check_coverage(lexicon, (a for seg in suite.segments for a in seg.adjectives))
    stereotypes = load_stereotypes()
    check_design(suite.segments, stereotypes)
    segments = limit_segments(suite.segments, options.limit)
    log.info("WMT24 gender-res en-%s: %d segments parsed of %d (%d scored)", options.lang, len(suite.segments),
             suite.total, len(segments))

    sources: list[Translations] = []
    skipped: dict[str, str] = {}
    names = options.system_names()
    names = available_systems(suite.root, options.lang) if names is None else names
    for system in names:
        translations = read_wmt24_system(suite, system)
        if not any(translations.by_seg.get(s.seg_id, "").strip() for s in segments):
            skipped[system] = "no translation of any suite segment (did not take part in the test suites)"
            log.info("%s: skipped, %s", system, skipped[system])
            continue
        sources.append(translations)
    if options.outputs:
        by_seg = read_outputs_file(options.outputs, {s.seg_id for s in suite.segments})
        sources.append(Translations(options.outputs_name, "file", by_seg, options.outputs))
    if models:
        if evaluation is None:
            raise ValueError("scoring models needs an evaluation config")
        sources.extend(translate_models(segments, options.lang, models, evaluation, backend_factory))
    if not sources:
        raise DataError("nothing to score: no system with outputs, no --outputs file, no model", suite.root)

    classifier = Classifier(lexicon.extra)
    folder = Path(options.out_dir) / SUBDIR
    templates = {seg.seg_id: template_of(seg) for seg in segments}
    resamples = Resamples.draw(segments, templates, options.lang, BootstrapSettings.of(options))
    alpha = options.alpha
    rows: dict[str, list[dict]] = {"summary": [], "strategies": [], "stereotype": [], "templates": []}
    unknown: list[dict] = []
    scored: dict[str, SystemScores] = {}
    detailed: dict[str, dict] = {}
    with items_writer(folder / ITEMS_FILE) as writer:
        for source in sources:
            items = score_translations(segments, source.by_seg, lexicon, source.system, classifier, stereotypes)
            write_items(writer, items)
            scores = score_system(items, resamples, source.system, options.lang)
            scored[source.system] = scores
            rows["summary"].extend(summary_rows(scores, alpha))
            rows["strategies"].append(strategy_row(scores, alpha))
            rows["stereotype"].extend(stereotype_rows(scores, alpha))
            rows["templates"].extend(template_rows(scores, PAPER_COUNTS))
            unknown.extend(unknown_listing(items))
            detailed[source.system] = {"kind": source.kind, "source": source.source, "model": source.model,
                                       "flags": _flags(scores), **system_json(scores, alpha)}
            rate = scores.unknowns["in_tables"]
            log.info("%s: %d items, %.1f%% unknown in the tables", source.system, scores.unknowns["all"]["n_items"],
                     100 * rate["unknown"] / max(1, rate["n_items"]))

    systems = [scored[s.system] for s in sources if s.kind == "wmt24"]
    placements = {s.system: place(scored[s.system], systems, alpha) for s in sources if s.kind != "wmt24"}
    for name, placement in placements.items():
        detailed[name]["placement"] = placement
    leakage = leakage_report((a for seg in suite.segments for a in seg.adjectives), models)
    for name, status in leakage["models"].items():
        if name in detailed:
            detailed[name]["leakage"] = status
    write_text_atomic(folder / "summary.tsv", _tsv(SUMMARY_COLUMNS, rows["summary"]))
    write_text_atomic(folder / "strategies.tsv", _tsv(STRATEGY_COLUMNS, rows["strategies"]))
    write_text_atomic(folder / "stereotype.tsv", _tsv(STEREOTYPE_COLUMNS, rows["stereotype"]))
    write_text_atomic(folder / "templates.tsv", _tsv(TEMPLATE_COLUMNS, rows["templates"]))
    placement_path = folder / "placement.tsv"
    if placements:
        write_text_atomic(placement_path, _tsv(PLACEMENT_COLUMNS, [
            row for name, placement in placements.items() for row in placement_rows(options.lang, name, placement)]))
    elif placement_path.exists():
        placement_path.unlink()
    write_jsonl(folder / UNKNOWNS, unknown)
    write_json(folder / LEAKAGE, leakage)
    problems_path = folder / "parse_problems.tsv"
    if suite.problems:
        problem_rows = [{"path": p.path, "line": p.line, "seg_id": p.seg_id, "reason": p.reason}
                        for p in suite.problems]
        write_text_atomic(problems_path, _tsv(("path", "line", "seg_id", "reason"), problem_rows))
    elif problems_path.exists():
        problems_path.unlink()
    plot = None
    if options.plots:
        from gnt.templated_suite.wmt24.plots import plot_ranking

        entries = [(s.system, s.kind, detailed[s.system]) for s in sources]
        plot = str(plot_ranking(entries, options.lang, folder / f"ranking_{options.lang}.png"))
    totals = {key: sum(d["unknowns"]["all"][key] for d in detailed.values())
              for key in ("n_items", "unknown", "unknown_gap", "unknown_no_rendering")}
    write_json(folder / SUMMARY, {
        "format": SUMMARY_FORMAT,
        "lang": options.lang,
        "segments": {"in_folder": suite.total, "parsed": len(suite.segments), "scored": len(segments),
                     "problems": len(suite.problems)},
        "tables": {name: {"paper": t.paper, "determined": list(t.determined), "ambiguous": list(t.ambiguous),
                          "definition": t.description} for name, t in TABLES.items()}
                  | {"stereotype": {"paper": "Table 7", "templates": ["7"],
                                    "definition": "template 7 without an adverb, with masculine- and with "
                                                  "feminine-stereotyped adverbs; contrasts paired per adjective"}},
        "templates": template_comparison(segments, templates, stereotypes, options.limit is not None),
        "bootstrap": BootstrapSettings.of(options).record(
            "percentile; the segments of each template type resampled (template 7: its adjectives), the same "
            "resamples for every system, so differences are paired"),
        "denominator": "classified items (unknowns excluded and counted); each table side macro-averaged over "
                       "its template types",
        "strategies": list(STRATEGIES),
        **{f"{key}_overall": round(totals[key] / totals["n_items"], 6) if totals["n_items"] else None
           for key in ("unknown", "unknown_gap", "unknown_no_rendering")},
        "flag_unknown_share": FLAG_UNKNOWN_SHARE,
        "systems": detailed,
        "skipped": skipped,
        "plot": plot,
    })
    write_json(folder / RECORD, {
        "format": "gnt-align/wmt24-record/2",
        "options": asdict(options),
        "lexicon": {path: sha256_text(Path(path).read_text(encoding="utf-8")) for path in lexicon.paths},
        "stereotypes": sha256_text(STEREOTYPES_FILE.read_text(encoding="utf-8")),
        "evaluation": evaluation.to_json() if evaluation is not None and models else None,
        "seconds": round(time.perf_counter() - started, 3),
        "environment": environment_record(),
    })
    return folder


def _flags(scores: SystemScores) -> list[str]:
    """Why a system's figures should not be read as the others' (empty for most): too few usable outputs."""
    in_tables = scores.unknowns["in_tables"]
    if not in_tables["n_items"] or in_tables["unknown"] / in_tables["n_items"] <= FLAG_UNKNOWN_SHARE:
        return []
    reasons: Counter = Counter()
    for template, groups in scores.counts["templates"].items():
        for entry in groups.values() if tables_of(template) else ():
            reasons.update(entry["unknown"])
    main = ", ".join(f"{reason} {count}" for reason, count in reasons.most_common(3))
    share = in_tables["unknown"] / in_tables["n_items"]
    return [f"{share:.0%} of the tables' items unknown ({main}): the figures rest on a minority of its outputs"]


def template_comparison(segments: Sequence[Segment], templates: dict[str, str], stereotypes: dict,
                        limited: bool) -> dict:
    """Per template type: the paper's item counts, the scored suite's, their difference and why it is what it is."""
    ours: dict[str, Counter] = {t: Counter() for t in TEMPLATES}
    for seg in segments:
        template = templates[seg.seg_id]
        for slot in seg.slots:
            if template == "7":
                ours[template][adverb_stereotype(seg, stereotypes)] += 1
            else:
                ours[template]["determined" if seg.characters[slot.character].gender else "ambiguous"] += 1
    out = {}
    for template in TEMPLATES:
        paper = PAPER_COUNTS.get(template)
        suite = dict(sorted(ours[template].items()))
        if paper is None:
            why = "in the published suite, in none of the paper's tables: scored and counted here, in no table"
            difference = None
        else:
            difference = {k: suite.get(k, 0) - paper.get(k, 0) for k in sorted(set(paper) | set(suite))}
            if not any(difference.values()):
                why = "the same items as the paper's; a system's classified count is lower by its unknowns"
            elif limited:
                why = "a sample of the suite was scored (limit=): fewer items than the paper's"
            else:
                why = "the folder's suite differs from the one the paper describes"
        out[template] = {"tables": list(tables_of(template)), "segments": sum(t == template for t in templates.values()),
                         "paper": paper, "suite": suite, "difference": difference, "explanation": why}
    return out
