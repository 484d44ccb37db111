"""The steps the pipeline knows: each step package defines its :class:`gnt.results.step.Step` as ``STEP`` in its
``step`` module, registered here by name (imported when first used: a step may pull in torch or matplotlib)."""

from __future__ import annotations

import importlib
from functools import cache

from gnt.pipeline.keys import STEPS
from gnt.results.step import Step

MODULES: dict[str, str] = {
    "grid": "gnt.evaluation.step",
    "judge": "gnt.judge.step",
    "xcomet": "gnt.comet.step",
    "attribution": "gnt.attribution.step",
    "templated": "gnt.templated_suite.step",
    "report": "gnt.report.step",
}
"""Step name → the module that defines it; the names are the pipeline's :data:`gnt.pipeline.keys.STEPS`."""

assert tuple(MODULES) == STEPS, "every step has its module, in the pipeline's order"


@cache
def step_of(name: str) -> Step:
    """The registered step ``name``."""
    step = importlib.import_module(MODULES[name]).STEP
    if step.name != name:
        raise RuntimeError(f"{MODULES[name]}.STEP is named {step.name!r}, registered as {name!r}")
    return step
