"""Batch xCOMET scoring, executed INSIDE the comet environment (``.venv-comet``): JSONL in, JSONL + JSON out.

    .venv-comet/bin/python gnt/comet/runner.py JOB.json

where JOB.json is ``{"input": "IN.jsonl", "output": "OUT.jsonl", "summary": "SUMMARY.json",
"model": "Unbabel/XCOMET-XL", "batch_size": 8, "gpus": -1, "progress": false}`` (the last three optional).

Why a separate script: unbabel-comet 2.2.7 needs transformers < 5 and gnt needs transformers 5, so this file
imports only the standard library, torch and comet (never ``gnt``) and is run by path with the comet
environment's python; :mod:`gnt.comet.scoring` drives it from the main environment. Its one argument is a job file
that the driver writes, so the process boundary carries files only and this side needs no command-line parser of
its own (gnt's command layer is not installed here).

Input lines: ``{"key", "src", "mt", "ref"}`` (keys unique). Output lines, in input order:
``{"key", "score", "error_spans"}`` where ``error_spans`` is a list of ``{"text", "start", "end", "severity",
"confidence"}`` (character offsets into ``mt``; ``[]`` when the model found none) or ``null`` for a model that does
not return spans (a non-XCOMET COMET model). The summary holds the system score (mean of the segment scores) and
what produced it. Both files are written atomically, the summary last: a run that died leaves no summary, and the
driver never mistakes a partial output for a finished one.

``model`` is a hub id (downloaded into the Hugging Face cache; gated models need ``HF_TOKEN`` or a prior
``huggingface-cli login``), a checkpoint file, or a folder holding ``checkpoints/model.ckpt``. ``gpus: -1`` uses
every visible CUDA device (0 on CPU); with more than one, comet runs Lightning DDP, which re-executes this script
once per device, and only rank 0 returns from ``predict`` to write the files.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path

# torch >= 2.6 defaults to weights_only=True, which refuses comet's own multi-GPU prediction files (pickled
# Prediction objects) and may refuse full Lightning checkpoints. Set before torch is imported, and inherited by
# the DDP worker processes. See gnt/comet/env.py.
os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def read_inputs(path: Path) -> list[dict]:
    """Read and check the input lines; a malformed input is the driver's bug, so it stops the run."""
    samples: list[dict] = []
    seen: set[str] = set()
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            record = json.loads(line)
            for field in ("key", "src", "mt", "ref"):
                if not isinstance(record.get(field), str):
                    raise ValueError(f"{path}:{number}: field {field!r} must be a string")
            if record["key"] in seen:
                raise ValueError(f"{path}:{number}: duplicate key {record['key']!r}")
            seen.add(record["key"])
            samples.append(record)
    return samples


def resolve_checkpoint(model: str, local_files_only: bool) -> str:
    """A checkpoint file path for ``model`` (hub id, checkpoint file, or model folder)."""
    path = Path(model).expanduser()
    if path.is_file():
        return str(path)
    if path.is_dir():
        ckpt = path / "checkpoints" / "model.ckpt"
        if not ckpt.is_file():
            raise FileNotFoundError(f"{path} has no checkpoints/model.ckpt")
        return str(ckpt)
    if path.is_absolute() or model.startswith((".", "~")):  # a path, not a hub id: never ask the hub for it
        raise FileNotFoundError(f"model {model} does not exist")
    from comet import download_model

    try:
        return download_model(model, local_files_only=local_files_only)
    except KeyError as exc:  # comet hides the hub's reason behind "not supported by COMET"
        raise RuntimeError(
            f"could not download {model!r}: for a gated model (Unbabel/XCOMET-XL, -XXL) accept its licence on "
            f"its Hugging Face page and log in (`huggingface-cli login` or HF_TOKEN); offline (HF_HUB_OFFLINE=1) "
            f"it must already be in the Hugging Face cache ({exc})"
        ) from exc


def _plain(value):
    """Tensor scalars (comet leaves some in the span dicts) to Python numbers, for JSON."""
    return value.item() if hasattr(value, "item") else value


def clean_spans(spans) -> list[dict]:
    """comet's span dicts, with plain types and a fixed set of fields."""
    return [
        {
            "text": str(span.get("text", "")),
            "start": int(_plain(span["start"])),
            "end": int(_plain(span["end"])),
            "severity": str(span["severity"]),
            "confidence": float(_plain(span.get("confidence", float("nan")))),
        }
        for span in spans
    ]


def _load_stdlib_io():
    """The project's file helpers (``gnt/io.py``, standard library only), loaded by path: this script runs inside
    the xCOMET environment, where the ``gnt`` package (and its transformers 5 stack) is not installed."""
    spec = importlib.util.spec_from_file_location("gnt_stdlib_io", Path(__file__).resolve().parent.parent / "io.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


write_text_atomic = _load_stdlib_io().write_text_atomic


def score(samples: list[dict], model_name: str, batch_size: int, gpus: int, progress: bool) -> tuple[list, dict]:
    """Score ``samples``; return (output records in input order, summary)."""
    import torch

    if gpus < 0:
        gpus = torch.cuda.device_count()
    local_only = os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")
    started = time.time()
    checkpoint = resolve_checkpoint(model_name, local_only)
    from comet import load_from_checkpoint

    model = load_from_checkpoint(checkpoint, local_files_only=local_only)
    loaded = time.time()
    output = model.predict(
        [{"src": s["src"], "mt": s["mt"], "ref": s["ref"]} for s in samples],
        batch_size=batch_size,
        gpus=gpus,
        progress_bar=progress,
    )
    scores = [float(x) for x in output["scores"]]
    if len(scores) != len(samples):
        raise RuntimeError(f"comet returned {len(scores)} scores for {len(samples)} inputs")
    metadata = output.get("metadata") or {}
    spans = metadata.get("error_spans") if hasattr(metadata, "get") else None
    if spans is not None and len(spans) != len(samples):
        raise RuntimeError(f"comet returned {len(spans)} span lists for {len(samples)} inputs")
    records = [
        {"key": s["key"], "score": scores[i], "error_spans": clean_spans(spans[i]) if spans is not None else None}
        for i, s in enumerate(samples)
    ]
    summary = {
        "model": model_name,
        "checkpoint": checkpoint,
        "model_class": type(model).__name__,
        "n": len(samples),
        "system_score": sum(scores) / len(scores),
        "batch_size": batch_size,
        "gpus": gpus,
        "load_seconds": round(loaded - started, 3),
        "predict_seconds": round(time.time() - loaded, 3),
    }
    return records, summary


def versions() -> dict[str, str]:
    """Versions of the packages that decide the scores."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("unbabel-comet", "torch", "transformers", "pytorch-lightning"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


JOB_DEFAULTS = {"batch_size": 8, "gpus": -1, "progress": False}
JOB_REQUIRED = ("input", "output", "summary", "model")


def read_job(argv: list[str]) -> dict:
    """The job file named by the one argument, with defaults filled in; a wrong job is the driver's bug."""
    if len(argv) != 1:
        raise SystemExit("usage: runner.py JOB.json  (keys: " + ", ".join((*JOB_REQUIRED, *JOB_DEFAULTS)) + ")")
    job = {**JOB_DEFAULTS, **json.loads(Path(argv[0]).read_text(encoding="utf-8"))}
    unknown = sorted(set(job) - set(JOB_REQUIRED) - set(JOB_DEFAULTS))
    missing = [key for key in JOB_REQUIRED if not job.get(key)]
    if unknown or missing:
        raise SystemExit(f"{argv[0]}: unknown keys {unknown}, missing keys {missing}")
    return job


def main(argv: list[str] | None = None) -> int:
    job = read_job(sys.argv[1:] if argv is None else argv)
    samples = read_inputs(Path(job["input"]))
    if samples:
        records, summary = score(samples, job["model"], int(job["batch_size"]), int(job["gpus"]), bool(job["progress"]))
    else:  # nothing to do: no model load
        records, summary = [], {"model": job["model"], "n": 0, "system_score": None}
    summary["versions"] = versions()
    write_text_atomic(Path(job["output"]), "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    write_text_atomic(Path(job["summary"]), json.dumps(summary, ensure_ascii=False, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
