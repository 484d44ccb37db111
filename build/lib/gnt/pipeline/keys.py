"""The pipeline keys of an evaluation recipe: which steps run after the grid sweep, and each step's settings.

They live apart from :class:`gnt.evaluation.config.EvalConfig` (the sweep's own keys): an evaluation recipe is both
sets of keys, so one file names the whole post-training evaluation. Each step's mapping holds the keys of that
step's own command (:func:`gnt.pipeline.step_schema`). This module imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STEPS: tuple[str, ...] = ("grid", "judge", "xcomet", "attribution", "templated", "report")
"""Every step the pipeline knows, in the order a full evaluation runs them."""

DEFAULT_STEPS: tuple[str, ...] = ("grid",)
"""A recipe without ``steps`` runs the grid sweep only, as ``eval/evaluate.py`` always did."""


@dataclass
class PipelineKeys:
    """The recipe keys of :mod:`gnt.pipeline`; each step's settings are a mapping under its name."""

    steps: list[str] = field(default_factory=list, metadata={
        "help": f"steps to run in order, of {', '.join(STEPS)} (empty: grid only)"})
    judge: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "judge step: recipe (a judge recipe file) and judge recipe keys, e.g. {judge: lexical}"})
    xcomet: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "xcomet step: recipe and xCOMET keys, e.g. {tiny: true, xcomet_batch_size: 8}"})
    attribution: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "attribution step: models (names, or last; default all) and attribution keys, e.g. {max_rows: 2}"})
    templated: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "templated step: suite keys and evaluation keys for the suite, e.g. {pairs_per_lang: 6}"})
    report: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "report step: out_dir, samples_per_cell, bootstrap_samples, title, judge_validation, wandb, wandb_mode"})


STEP_SETTINGS: tuple[str, ...] = ("judge", "xcomet", "attribution", "templated", "report")
"""The steps that take settings (the grid's settings are the recipe's own keys)."""
