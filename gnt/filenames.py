"""The names of the files the project writes, in one place: writers and readers import them from here.

A results folder of a sweep holds one sub-folder per model (base, then each checkpoint) and a ``summary.json`` that
lists them; each model folder holds its generations, metrics and record, and the later steps (judge, xCOMET,
attribution) add their files beside them. The report, the watcher and the demo find everything by these names.
"""

from __future__ import annotations

from pathlib import Path

# --- data build (the folder written by data/build.py) ---
MANIFEST = "manifest.json"
"""The build's record: inputs and their hashes, split counts, the source ids held out of training."""
DRAWN_FROM = "drawn_from"
"""Manifest key of a data folder derived from a build (an on-policy round's pairs): that build's folder, whose
held-out rows a model trained on the derived folder is scored on."""
TEMPLATED_SUITE = Path("eval") / "templated_suite.jsonl"
"""The held-out templated determined/ambiguous pairs, inside a build folder."""

# --- training (inside an output_dir of train/sft.py or train/dpo.py) ---
RUN_RECORD = "gnt_run.json"
"""Resolved recipe, versions, data hashes and git commit of a training run."""

# --- offline model builds ---
MODEL_MARKER = "gnt_model.json"
"""Written last in a folder of a model built offline: a folder without it is not a finished build."""

# --- a results folder and its model folders ---
SUMMARY = "summary.json"
"""Results-folder index: the models evaluated and their folders (also the WMT24 summary inside ``wmt24/``)."""
GENERATIONS = "generations.jsonl"
"""One record per generation of a model folder."""
METRICS = "metrics.json"
"""The model folder's metrics (grid, preference, templated); judge and xCOMET merge their blocks into it."""
RECORD = "record.json"
"""The model folder's record, written last: a folder with a record is complete."""
GENERATION_CACHE = Path("cache") / "generations.jsonl"
"""Generations keyed by everything that decides them, shared by every model of a results folder."""
PREFERENCE = "preference.jsonl"
"""One scored held-out preference pair per line (chosen vs rejected log-probabilities, won)."""
PREFERENCE_CACHE = "preference_cache.jsonl"
"""Scored preference pairs (log-probabilities), keyed like the generation cache."""
JUDGMENTS = "judgments.jsonl"
"""One judge verdict per generation."""
LEXICAL_JUDGMENTS = "judgments-lexical.jsonl"
"""The lexical judge's cross-check verdicts, beside an LLM judge's."""
JUDGE_CACHE = Path("cache") / "judgments.jsonl"
"""Judge verdicts keyed by judge, format, item and prompt, shared by every model of a results folder."""
JUDGE_SUMMARY = "judge_summary.json"
"""The judge step's counters (verdicts, judge errors, retries) for a model folder."""
JUDGE_VALIDATION = "judge_validation.json"
"""A judge validation report kept in a results folder (its top level), read by the report; reports kept
elsewhere are named to the report step (``judge_validation``)."""
XCOMET_ROWS = "xcomet.jsonl"
"""One xCOMET score (with error spans) per generation."""
XCOMET_SUMMARY = "xcomet_summary.json"
"""xCOMET means with CIs per language and configuration."""
XCOMET_LOG = "xcomet.log"
"""The comet runner's output, appended per call."""
XCOMET_CACHE = Path("cache") / "xcomet.jsonl"
"""xCOMET scores keyed by checkpoint, source, hypothesis and reference."""
CACHE_DIR = "cache"
"""The results folder's shared caches: not a model folder."""
ATTRIBUTION_DIR = "attribution"
"""Inside a model folder: attribution tables and figures."""
TEMPLATED_DIR = "templated"
"""Inside a model folder: the templated suite's outputs.jsonl, metrics.json and record.json."""
TEMPLATED_OUTPUTS = "outputs.jsonl"
"""Inside ``templated/``: one classified output per (prompt style, suite item)."""
TEMPLATED_SUITE_DIR = "templated_suite"
"""Inside a results folder: the templated suite's cross-model summary and plots."""
LEAKAGE = "leakage.json"
"""Which evaluated items also occur in the model's training data."""
REPORT_HTML = "report.html"
REPORT_MARKDOWN = "report.md"
"""The report as Markdown, written after ``report.html``: a report folder holding both is complete."""
REPORT_DATA = "report_data.json"
