"""One tidy record per (row, grid cell) of one model: ids, cell, prompt hash, raw output, extraction, references.

Records carry everything later steps need (the judge needs the source and translation, xCOMET the references,
metrics the set and gender), so no step has to join back to the data. ``key`` is the generation request's content
hash: the judge keys its judgments on it and :func:`gnt.evaluation.metrics.compute_metrics` reads them by it.

``chrf`` is the translation's sentence chrF++ against all the row's references (0 for an extraction error;
:mod:`gnt.evaluation.adequacy`). ``error`` is an extraction error code of :mod:`gnt.output_format`, or ``generation_failed`` when the backend
returned no output (its message is in ``generation_error``).
"""

from __future__ import annotations

from gnt.data.entry import Entry
from gnt.evaluation.adequacy import chrf_pp, references_of
from gnt.generation.base import Generation
from gnt.output_format import extract
from gnt.prompts.grid import Cell, GridPrompt
from gnt.results_schema import GENERATION_FORMAT as RECORD_FORMAT
from gnt.results_schema import GenerationRecord

GENERATION_FAILED = "generation_failed"
__all__ = ["GENERATION_FAILED", "RECORD_FORMAT", "generation_record"]


def generation_record(
    entry: Entry, cell: Cell, prompt: GridPrompt, key: str, generation: Generation, model: str
) -> GenerationRecord:
    """The record of one generation; extraction never raises (errors are codes, counted by the metrics)."""
    error: str | None
    if generation.error is not None:
        label, translation, error = None, None, GENERATION_FAILED
    else:
        extraction = extract(generation.text, cell.lang)
        label, translation, error = extraction.label, extraction.translation, extraction.error
    record: GenerationRecord = {
        "model": model,
        "id": entry.id,
        "lang": entry.lang,
        "set": entry.set,
        "gender": entry.gender,
        "source_key": entry.source_key,
        "cell": cell.name,
        "config": cell.config,
        "shots": cell.shots,
        "prompt_hash": prompt.hash(),
        "key": key,
        "source": entry.source,
        "raw": generation.text,
        "label": label,
        "translation": translation,
        "error": error,
        "generation_error": generation.error,
        "n_tokens": generation.n_tokens,
        "finish_reason": generation.finish_reason,
        "gold_label": entry.label,
        "label_correct": error is None and label == entry.label,
        "ref_g": entry.ref_g,
        "ref_n": list(entry.ref_n),
        "chrf": 0.0,  # an extraction error translates nothing
    }
    if error is None:  # from the record's own translation and references (record_chrf would read the 0.0 back)
        record["chrf"] = round(chrf_pp(translation, references_of(record)), 4)
    return record
