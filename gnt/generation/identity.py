"""Content identities of base models and adapters: what generation caches key on.

A cache keyed on a folder path would serve stale outputs after a checkpoint is overwritten, and miss when the same
weights move. So an adapter is identified by a hash of its weights and config, and a local base model by a hash of
its config, tokenizer files and a fingerprint of each weight file (size plus its first and last MiB: hashing
every byte of a 15 GB model would cost minutes per sweep, and a changed tensor changes the safetensors header).
A hub id is identified by itself and its revision.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors", "adapter_model.bin")
_SMALL_FILES = (
    "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
    "special_tokens_map.json",
)
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt")
_EDGE = 1 << 20


def is_adapter_dir(path: str | Path) -> bool:
    path = Path(path)
    return (path / "adapter_config.json").is_file() and any((path / f).is_file() for f in ADAPTER_FILES[1:])


def adapter_weights_hash(path: str | Path, length: int = 16) -> str:
    """Hash of an adapter folder's config and weights (every byte: adapters are small)."""
    path = Path(path)
    if not is_adapter_dir(path):
        raise FileNotFoundError(f"{path} is not a PEFT adapter folder (needs adapter_config.json + adapter weights)")
    digest = hashlib.sha256()
    for name in ADAPTER_FILES:
        file = path / name
        if not file.is_file():
            continue
        digest.update(name.encode() + b"\0")
        if name == "adapter_config.json":
            digest.update(_canonical_config(file))
            continue
        with open(file, "rb") as handle:
            for block in iter(lambda h=handle: h.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:length]


def _canonical_config(file: Path) -> bytes:
    """An adapter config as it means, not as it was written: PEFT keeps ``target_modules`` as a set and writes it in
    an order that changes with each process's string hashing, so the same adapter trained twice would otherwise get
    two identities (and miss every cache). Keys are sorted too; a file that is not JSON is taken byte for byte."""
    import json

    raw = file.read_bytes()
    try:
        config = json.loads(raw)
    except ValueError:
        return raw
    if isinstance(config, dict) and isinstance(config.get("target_modules"), list):
        config["target_modules"] = sorted(config["target_modules"], key=str)
    return json.dumps(config, sort_keys=True, ensure_ascii=False).encode()


def _file_fingerprint(file: Path, digest) -> None:
    size = file.stat().st_size
    digest.update(f"{file.name}\0{size}\0".encode())
    with open(file, "rb") as handle:
        digest.update(handle.read(_EDGE))
        if size > 2 * _EDGE:
            handle.seek(-_EDGE, 2)
            digest.update(handle.read(_EDGE))


def model_identity(model: str | Path, revision: str | None = None, length: int = 16) -> str:
    """``<name>@<hash>`` for a local folder, ``<hub id>@<revision or main>`` for a hub id."""
    path = Path(model).expanduser()
    if not path.is_dir():
        return f"{model}@{revision or 'main'}"
    digest = hashlib.sha256()
    for name in _SMALL_FILES:
        file = path / name
        if file.is_file():
            digest.update(name.encode() + b"\0" + file.read_bytes())
    for file in sorted(p for p in path.iterdir() if p.suffix in _WEIGHT_SUFFIXES or p.name.endswith(".index.json")):
        _file_fingerprint(file, digest)
    return f"{path.resolve().name}@{digest.hexdigest()[:length]}"
