"""Judge an evaluation results folder: the judge's part of each model folder (judgments, GNT accuracy, coherence).

The evaluator leaves ``<results>/<model>/generations.jsonl`` (one record per row × grid cell, with ``key``,
``source``, ``translation`` and the extraction ``error``) and ``metrics.json``. This step:

1. collects every clean translation (no extraction error) of every model folder and judges the distinct
   (language, source, translation) items once, through the judge cache shared by the whole folder
   (``<results>/cache/judgments.jsonl``): the same translation from two cells or two checkpoints costs one judgment,
   and a rerun costs none;
2. writes ``<model>/judgments.jsonl``: one line per judged generation record (its ``key``), with the judge
   (model id), the phrases, the label, the binary neutrality, or ``error: "judge_error"`` with the kind, the
   detail (``judge_error``) and the raw text;
3. with an LLM judge, also runs the lexical judge (free) on the same records, writes
   ``<model>/judgments-lexical.jsonl`` and reports the agreement of the two (percent and Cohen's κ);
4. computes the judge's metrics (GNT accuracy, coherence, ...: those :mod:`gnt.evaluation.catalog` gives to the
   judge) per block with the judgments and the grid's bootstrap settings, and writes them, last, in
   ``<model>/judge_summary.json`` with a ``judge`` block: which judge, how many errors, the agreement, and the
   judge's validation figures when a validation report is given. It never opens ``metrics.json`` to merge into
   it: a reader composes the two (:class:`gnt.results.model_folder.ModelFolder`).

Records with an extraction error are not judged (the metrics count them as failures). A ``judge_error`` leaves
its record unjudged: the metrics leave it out of GNT accuracy and count it as ``n_unjudged``, and the summary
counts it by kind, so a judge failure is never silently turned into a model failure or success. So does a
verdict that is not one (a cached line whose label is not one of the format's labels, or whose neutrality is not a
boolean): it is counted as ``n_rejected`` with a warning, never as a judgment.

The loop over the folders is :func:`gnt.evaluation.driver.run_folders` (one batch over every folder's items, then
each folder's part with ``judge_summary.json`` last); :class:`_JudgeTask` is the judge plugged into it.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gnt.bootstrap import recorded_bootstrap
from gnt.data.entry import Entry
from gnt.data.errors import DataError
from gnt.evaluation.adequacy import references_of
from gnt.evaluation.driver import run_folders
from gnt.evaluation.metrics import compute_sections
from gnt.filenames import JUDGE_CACHE, JUDGMENTS, LEXICAL_JUDGMENTS, RECORD
from gnt.io import read_json, read_jsonl
from gnt.judge.agreement import binary_agreement
from gnt.judge.lexical import LexicalJudge, LexicalJudgment
from gnt.judge.llm_judge import JudgeItem, Judgment, LLMJudge
from gnt.judge.schema import CROSS_LABELS, MONO_LABELS, judge_format
from gnt.results.folder import ResultsFolder
from gnt.results.model_folder import JUDGE, ModelFolder
from gnt.results.part import Payload
from gnt.results_schema import JUDGE_SUMMARY_FORMAT, JudgeBlock, JudgeSummary

log = logging.getLogger(__name__)

#: The judge cache's place in a results folder.
CACHE = JUDGE_CACHE
LEXICAL_LABELS = (*MONO_LABELS, *CROSS_LABELS)
"""The labels the lexical judge gives (it judges in the MONO space; its records name both)."""


def load_rows(source: str | Path, langs: Iterable[str] | None = None) -> list[Entry]:
    """Dataset rows from an mGeNTE folder/TSV/hub id or a JSON-lines file of entries (a data build's eval file)."""
    from gnt.data.entry import LANGUAGES
    from gnt.data.mgente import load_mgente

    langs = tuple(langs or LANGUAGES)
    path = Path(source)
    if path.suffix == ".jsonl" and path.is_file():
        return [e for e in (Entry.from_record(r) for r in read_jsonl(path)) if e.lang in langs]
    return load_mgente(source, langs)  # type: ignore[arg-type]


def recorded_rows(results_dir: str | Path, langs: Iterable[str] | None = None) -> list[Entry] | None:
    """The rows an evaluation recorded it used, or None when unknown: every file its models' ``record.json`` name
    (``rows.files``: the mGeNTE rows and, with ``templated_rows``, the templated ones; ``rows.source`` in records
    without it), each loaded once.

    The lexical judge needs each row's gendered words, which generation records do not carry, and validation on
    the evaluated rows' references needs every evaluated row; this finds them without the user repeating the data
    path. A source that no longer loads is reported and skipped.
    """
    from gnt.paths import PROJECT_ROOT

    sources: dict[str, Path] = {}  # every file any model of the folder was evaluated on, in the order first named
    for path in sorted(Path(results_dir).rglob(RECORD)):
        try:
            rows = read_json(path).get("rows") or {}
        except ValueError:
            continue
        for source in list(rows.get("files") or {}) or ([rows["source"]] if rows.get("source") else []):
            sources.setdefault(str(source), path)
    entries: list[Entry] = []
    loaded: set[Path] = set()  # one file named two ways (relative, absolute) is read once
    for source, path in sources.items():
        found = next((c for c in (Path(source), PROJECT_ROOT / source) if c.exists()), None)
        if found is None or found.resolve() in loaded:
            continue
        loaded.add(found.resolve())
        try:
            entries += load_rows(found, langs)
        except (DataError, ValueError, KeyError) as exc:
            log.warning("rows recorded in %s do not load (%s): lexical judge without them", path, exc)
    by_row = {(e.lang, e.id): e for e in reversed(entries)}  # a row two builds share counts once (the first named)
    return [by_row[key] for key in dict.fromkeys((e.lang, e.id) for e in entries)] or None


def judgeable(record: Mapping[str, Any]) -> bool:
    """A record whose translation was extracted (an extraction error is scored as a failure, not judged)."""
    return record.get("error") is None and bool(record.get("translation"))


def _entry_for(record: Mapping[str, Any], entries: Mapping[tuple[str, str], Entry] | None) -> Entry | None:
    return entries.get((record["lang"], str(record["id"]))) if entries else None


def judge_item(record: Mapping[str, Any], entries: Mapping[tuple[str, str], Entry] | None = None) -> JudgeItem:
    """The judge item of a record; the source comes from the record, else from the dataset rows."""
    source = record.get("source")
    if not source:
        entry = _entry_for(record, entries)
        source = entry.source if entry else ""
    return JudgeItem(record["lang"], source or "", record["translation"])


def lexical_judgment(
    record: Mapping[str, Any], lexical: LexicalJudge, entries: Mapping[tuple[str, str], Entry] | None = None
) -> LexicalJudgment:
    """Lexical judgment of a record with the gendered words of its row (record fields first, then the dataset)."""
    entry = _entry_for(record, entries)
    words = record.get("gendered_words")
    if words is None:
        words = entry.gendered_words if entry else ()
    meta = record.get("meta") or (entry.meta if entry else {}) or {}
    origin = record.get("origin") or (entry.origin if entry else "")
    adjective = meta.get("adjective") if origin == "templated" else None
    return lexical.judge_record(record["translation"], record["lang"], references_of(record), tuple(words), adjective)


def _llm_record(record: Mapping[str, Any], judgment: Judgment) -> dict[str, Any]:
    out = {
        "key": record["key"],
        "id": record["id"],
        "lang": record["lang"],
        "set": record["set"],
        "cell": record["cell"],
        "judge": judgment.judge_model,
        "judge_kind": "llm",
        "format": judgment.format,
        "judgment_key": judgment.cache_key,
        "label": judgment.label,
        "neutral": judgment.neutral,
        "phrases": judgment.phrases,
        "error": judgment.error,
    }
    if judgment.probability is not None:  # a scored label: how sure the judge was
        out.update(probability=judgment.probability, label_probabilities=judgment.label_probabilities)
    if judgment.error:
        out.update(
            judge_error=f"{judgment.error_kind}: {judgment.error_detail}",
            error_kind=judgment.error_kind,
            error_detail=judgment.error_detail,
            raw=judgment.raw,
            attempts=judgment.attempts,
        )
    return out


def _lexical_record(record: Mapping[str, Any], judgment: LexicalJudgment) -> dict[str, Any]:
    return {
        "key": record["key"],
        "id": record["id"],
        "lang": record["lang"],
        "set": record["set"],
        "cell": record["cell"],
        "judge": "lexical",
        "judge_kind": "lexical",
        "format": "LEXICAL",
        "error": None,
        **judgment.to_record(),
    }


def validation_figures(report: Mapping[str, Any], fmt: str) -> dict[str, Any]:
    """The part of a validation report that belongs beside GNT numbers judged in ``fmt``."""
    if report.get("kind") == "references":
        return {
            "kind": "references",
            "format": fmt,
            "accuracy": {
                r["lang"]: {name: cell["accuracy"] for name, cell in r["cells"].items()}
                for r in report.get("results", [])
                if r["format"] == fmt
            },
        }
    if report.get("kind") == "gold_tsv":
        return {
            "kind": "gold_tsv",
            "format": report.get("format"),
            "path": report.get("path"),
            "n": report.get("n"),
            **{k: report["labels"].get(k) for k in ("accuracy", "macro_f1", "kappa")},
            "binary": {k: report["binary"].get(k) for k in ("accuracy", "macro_f1", "kappa")},
        }
    return {}


def usable_verdicts(verdicts: Mapping[str, tuple[Any, Any]], labels: Iterable[str], where: str
                    ) -> tuple[dict[str, dict[str, Any]], int]:
    """``{key: {"neutral", "label"}}`` of the verdicts that are verdicts (a label of the judge's format, a boolean
    neutrality), and how many were rejected (logged once: a damaged or hand-edited cache line is never counted)."""
    allowed = set(labels)
    usable, rejected = {}, 0
    for key, (neutral, label) in verdicts.items():
        if isinstance(neutral, bool) and isinstance(label, str) and label in allowed:
            usable[key] = {"neutral": neutral, "label": label}
        else:
            rejected += 1
    if rejected:
        log.warning("%s: %d verdict(s) with a label outside %s or a neutrality that is not true/false ignored "
                    "(a damaged judge cache line?): counted as unjudged", where, rejected, ", ".join(sorted(allowed)))
    return usable, rejected


class _JudgeTask:
    """The judge plugged into the folder driver: every folder's clean translations judged in one batch (the batch
    result: judgments by generation key), then per folder the judgments and ``judge_summary.json`` (the judge's
    part of the folder: its record, with the judge's metrics, written last)."""

    part = JUDGE

    def __init__(
        self, llm: LLMJudge | None, lexical: LexicalJudge | None, by_row: Mapping[tuple[str, str], Entry] | None,
        validation: Mapping[str, Any] | None, say: Callable[[str], None],
    ) -> None:
        self.llm, self.lexical, self.by_row, self.validation, self.say = llm, lexical, by_row, validation, say
        self.info = llm.describe() if llm is not None else LexicalJudge.describe()

    @staticmethod
    def load(folder: ModelFolder) -> list[dict]:
        return folder.generations()

    def run_batch(self, items: list[dict]) -> dict[str, Judgment]:
        """The LLM judge over the distinct clean translations of every folder (the lexical judge is per folder)."""
        llm, say = self.llm, self.say
        if llm is None:
            return {}
        records = [r for r in items if judgeable(r)]
        judge_items = [judge_item(r, self.by_row) for r in records]
        if llm.fmt.cross and any(not i.source for i in judge_items):
            raise DataError("records without their source: a CROSS judge needs it (give the dataset with data=...)")
        say(f"judging {len(judge_items)} translations with {llm.fmt.name} ({llm.model_id})")
        judged = llm.judge(judge_items, progress=lambda done, total: say(f"  judged {done}/{total} distinct items"))
        say(f"  {llm.stats.cached} from cache, {llm.stats.judged} judged now, {llm.stats.errors} judge errors")
        return {r["key"]: j for r, j in zip(records, judged, strict=True)}

    def score(self, folder: ModelFolder, records: list[dict], llm_by_key: Mapping[str, Judgment]
              ) -> tuple[dict[str, Payload], dict, dict]:
        llm, lexical, fmt = self.llm, self.lexical, self.info["format"]
        clean = [r for r in records if judgeable(r)]
        lex = {r["key"]: lexical_judgment(r, lexical, self.by_row) for r in clean} if lexical is not None else {}
        unannotated = sum(j.known_words == 0 for j in lex.values())
        block: JudgeBlock = {
            "kind": self.info["kind"],
            "format": fmt,
            "judge_model": self.info["judge_model"],
            "n_records": len(records),
            "n_extraction_errors": len(records) - len(clean),
        }
        files: dict[str, Payload] = {}
        if llm is not None:
            own = [llm_by_key[r["key"]] for r in clean]
            files[JUDGMENTS] = [_llm_record(r, j) for r, j in zip(clean, own, strict=True)]
            judgments, rejected = usable_verdicts(
                {r["key"]: (j.neutral, j.label) for r, j in zip(clean, own, strict=True) if j.ok},
                judge_format(fmt).labels, folder.name)
            block.update({
                "n_judged": len(judgments),
                "n_judge_errors": sum(not j.ok for j in own),
                "judge_errors_by_kind": dict(Counter(str(j.error_kind) for j in own if not j.ok)),
                "n_rejected": rejected,
            })
            if lexical is not None:
                files[LEXICAL_JUDGMENTS] = [_lexical_record(r, lex[r["key"]]) for r in clean]
                pairs = [(bool(llm_by_key[k].neutral), bool(lex[k].neutral)) for k in lex
                         if k in judgments and lex[k].known_words and not lex[k].abstained]
                block["agreement_lexical"] = {
                    **binary_agreement([a for a, _ in pairs], [b for _, b in pairs]),
                    "n_unannotated": unannotated,
                }
        else:
            files[JUDGMENTS] = [_lexical_record(r, lex[r["key"]]) for r in clean]
            judgments, rejected = usable_verdicts(
                {k: (j.neutral, j.label) for k, j in lex.items() if not j.abstained}, LEXICAL_LABELS, folder.name)
            block.update({"n_judged": len(judgments), "n_judge_errors": 0, "judge_errors_by_kind": {},
                          "n_unannotated": unannotated, "n_rejected": rejected,
                          "n_abstained": dict(Counter(str(j.reason) for j in lex.values() if j.abstained))})
        if self.validation:
            block["validation"] = validation_figures(self.validation, fmt)
        self.say(f"{folder.name}: {block['n_judged']} judged, {block['n_judge_errors']} judge errors, "
                 f"{block['n_extraction_errors']} extraction errors")
        bootstrap = recorded_bootstrap(dict(folder.grid_metrics()))
        record: JudgeSummary = {
            "format": JUDGE_SUMMARY_FORMAT, "judge": block, "judge_info": self.info,
            "stats": llm.stats.to_dict() if llm else None,
            **compute_sections(records, "judge", judgments=judgments, bootstrap=bootstrap),
        }
        return files, dict(record), dict(block)


def judge_results(
    folder: ResultsFolder,
    models: Sequence[str],
    *,
    llm: LLMJudge | None = None,
    lexical: LexicalJudge | None = None,
    entries: Iterable[Entry] | None = None,
    validation: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Judge the model folders ``models`` of ``folder`` and refill their metrics; returns the per-model summaries.

    The primary judge is ``llm`` when given, else ``lexical``; with both, the lexical judge is the cross-check.
    ``entries`` (the evaluated dataset rows) supply gendered words for the lexical judge, and sources for records
    that lack them. Never raises for a judge failure: those are counted.
    """
    if llm is None and lexical is None:
        raise ValueError("give an llm judge, a lexical judge, or both")
    by_row: dict[tuple[str, str], Entry] | None = (
        {(e.lang, str(e.id)): e for e in entries} if entries is not None else None)
    task = _JudgeTask(llm, lexical, by_row, validation, progress or (lambda _msg: None))
    return run_folders(task, folder, models)
