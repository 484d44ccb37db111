"""The base model a run trains over: aliases for the offline models, the SFT adapter DPO starts from, loading
arguments, and bitsandbytes 4-bit (QLoRA) settings with a capability check that fails early and clearly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gnt.filenames import RUN_RECORD
from gnt.models.aliases import MODEL_ALIASES, resolve_model
from gnt.training.config import TrainingError

__all__ = ["MODEL_ALIASES", "resolve_model"]

def describe_model(spec: str) -> str:
    """One line for dry-runs: the spec, what an alias means, and whether a local folder exists."""
    if spec in MODEL_ALIASES:
        return f"{spec} ({MODEL_ALIASES[spec]})"
    path = Path(spec)
    if path.exists() or spec.startswith((".", "/")):
        return f"{spec} ({'local folder' if path.is_dir() else 'MISSING local folder'})"
    return f"{spec} (hub id)"


def same_model(a: str, b: str) -> bool:
    """Whether two model specs name the same model (local folders compared by resolved path)."""
    if Path(a).exists() and Path(b).exists():
        return Path(a).resolve() == Path(b).resolve()
    return a.rstrip("/") == b.rstrip("/")


# ------------------------------------------------------------------------------------------------------------------
# SFT adapter (DPO's starting point and reference)
# ------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SFTAdapter:
    """An SFT adapter folder, the base model it was trained on, and the SFT run's record when there is one."""

    path: Path
    base_model: str
    run_record: dict | None


def resolve_sft_adapter(spec: str, stages: tuple[str, ...] = ("sft",)) -> SFTAdapter:
    """Find the SFT adapter a DPO recipe points to, or say exactly what is missing and how to make it.

    ``stages``: the training stages the adapter's run may come from. An alignment stage continues SFT, and an
    on-policy round continues the round before it (a DPO adapter), so those callers pass ``("sft", "dpo")``; a run
    of any other stage is refused with its stage named, and so is a learned judge (an SFT run on the judge's rows)."""
    path = Path(spec)
    run_hint = "Run the SFT stage first, e.g. `accelerate launch train/sft.py recipes/tiny.yaml`."
    if not path.exists():
        raise TrainingError(f"sft_adapter: {spec} does not exist. {run_hint}")
    config = path / "adapter_config.json"
    if not config.is_file():
        checkpoints = sorted(path.glob("checkpoint-*/adapter_config.json"), key=lambda p: int(p.parent.name.split("-")[-1]))
        hint = f" Its last checkpoint with an adapter is {checkpoints[-1].parent}." if checkpoints else ""
        raise TrainingError(
            f"sft_adapter: {spec} holds no adapter (no adapter_config.json): the SFT run has not finished.{hint} "
            f"{run_hint}"
        )
    base = json.loads(config.read_text(encoding="utf-8")).get("base_model_name_or_path")
    if not base:
        raise TrainingError(f"sft_adapter: {config} does not name its base model (base_model_name_or_path)")
    _check_adapter_weights(path)
    record = None
    for candidate in (path / RUN_RECORD, path.parent / RUN_RECORD):
        if candidate.is_file():
            record = json.loads(candidate.read_text(encoding="utf-8"))
            break
    if record is not None and record.get("stage") not in (None, *stages):
        wanted = " or ".join(stage.upper() for stage in stages)
        raise TrainingError(f"sft_adapter: {spec} comes from a {record.get('stage')} run, not an {wanted} run")
    if record is not None and record.get("data_rows") == "judge":
        raise TrainingError(f"sft_adapter: {spec} is a learned judge (its run trained on the judge's rows, data_rows: "
                            "judge), not a translation model; point to the translation SFT run")
    return SFTAdapter(path, base, record)


def _check_adapter_weights(path: Path) -> None:
    """Open the SFT adapter's safetensors (header and sizes only) before the base model loads: a truncated or
    corrupt copy is then one clear error instead of a traceback from deep inside PEFT."""
    weights = path / "adapter_model.safetensors"
    if not weights.is_file():
        if not (path / "adapter_model.bin").is_file():
            raise TrainingError(f"sft_adapter: {path} has adapter_config.json but no adapter weights "
                                "(adapter_model.safetensors): the SFT run has not finished")
        return
    try:
        from safetensors import safe_open

        with safe_open(str(weights), framework="pt") as handle:
            names = list(handle.keys())
            for name in names:
                handle.get_slice(name)
    except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types for every kind of damage
        raise TrainingError(f"sft_adapter: {weights} is unreadable ({type(exc).__name__}: {exc}); a truncated or "
                            "corrupt copy? Copy it again or rerun the SFT stage") from None
    if not names:
        raise TrainingError(f"sft_adapter: {weights} holds no tensors")


# ------------------------------------------------------------------------------------------------------------------
# Loading arguments and quantization
# ------------------------------------------------------------------------------------------------------------------


def model_init_kwargs(model_args: Any, training_args: Any) -> dict[str, Any]:
    """``from_pretrained`` keyword arguments, as TRL's scripts build them (recipe ``model_init_kwargs`` win)."""
    kwargs: dict[str, Any] = {
        "revision": model_args.model_revision,
        "trust_remote_code": training_args.trust_remote_code,
        "attn_implementation": model_args.attn_implementation,
        "dtype": model_args.dtype,
    }
    kwargs.update(training_args.model_init_kwargs or {})
    return {k: v for k, v in kwargs.items() if v is not None}


def quantization_config(model_args: Any) -> Any:
    """A BitsAndBytesConfig for QLoRA / 8-bit recipes, else None.

    The compute dtype is the recipe's ``dtype``; ``bnb_4bit_quant_storage`` defaults to it as well, which is what
    ZeRO-3 and FSDP need to shard 4-bit weights (harmless elsewhere).
    """
    if not (model_args.load_in_4bit or model_args.load_in_8bit):
        return None
    import torch
    from transformers import BitsAndBytesConfig

    if model_args.load_in_8bit:
        return BitsAndBytesConfig(load_in_8bit=True)
    compute = model_args.dtype if model_args.dtype not in (None, "auto") else "bfloat16"
    storage = model_args.bnb_4bit_quant_storage or compute
    return BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type=model_args.bnb_4bit_quant_type,
        bnb_4bit_use_double_quant=model_args.use_bnb_nested_quant,
        bnb_4bit_compute_dtype=getattr(torch, compute),
        bnb_4bit_quant_storage=getattr(torch, storage),
    )


def check_quantization_available(model_args: Any, device: str) -> None:
    """Fail before loading anything if bitsandbytes cannot run 4-bit (or 8-bit) on ``device``.

    Quantizes and dequantizes one small tensor with the requested settings: cheaper than discovering it after
    minutes of loading a 7B model, and the message can suggest the LoRA recipe instead.
    """
    if not (model_args.load_in_4bit or model_args.load_in_8bit):
        return
    kind = "4-bit" if model_args.load_in_4bit else "8-bit"
    advice = (
        f"QLoRA ({kind} base model) needs bitsandbytes {kind} kernels for '{device}', and they do not run on this "
        "machine: {reason}. Train with LoRA instead: set load_in_4bit: false / load_in_8bit: false (for example "
        "recipes/qwen.yaml instead of recipes/qwen-qlora.yaml)."
    )
    try:
        import bitsandbytes.functional as bnbf
        import torch
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        raise TrainingError(advice.format(reason=f"bitsandbytes cannot be imported ({exc})")) from None
    try:
        sample = torch.linspace(-1, 1, 4096, dtype=torch.float32, device=device).reshape(64, 64)
        if model_args.load_in_4bit:
            packed, state = bnbf.quantize_4bit(
                sample, quant_type=model_args.bnb_4bit_quant_type, compress_statistics=model_args.use_bnb_nested_quant
            )
            restored = bnbf.dequantize_4bit(packed, state)
        else:
            packed, state = bnbf.quantize_blockwise(sample)
            restored = bnbf.dequantize_blockwise(packed, state)
        error = (restored.float() - sample).abs().max().item()
    except Exception as exc:  # noqa: BLE001
        raise TrainingError(advice.format(reason=f"{type(exc).__name__}: {exc}")) from None
    if not error < 0.25:
        raise TrainingError(advice.format(reason=f"a {kind} round trip is off by {error:.3f}"))


def load_sft_policy(adapter: SFTAdapter, base_model: str, model_args: Any, training_args: Any) -> Any:
    """Base model + the SFT adapter as the trainable ``default`` adapter (DPO's policy at step 0).

    TRL's DPOTrainer, given a PeftModel and no ``ref_model``, copies ``default`` into a frozen ``ref`` adapter and
    computes reference log-probs with it: the reference policy is the SFT policy, with no second model in memory.
    """
    from peft import PeftModel
    from trl.trainer.utils import create_model_from_path

    kwargs = model_init_kwargs(model_args, training_args)
    quant = quantization_config(model_args)
    if quant is not None:
        kwargs["quantization_config"] = quant
    if training_args.distributed_state.distributed_type in ("MULTI_GPU", "DEEPSPEED"):
        kwargs["device_map"] = None  # as TRL does: "auto" fails under distributed training
    base = create_model_from_path(base_model, **kwargs)
    return PeftModel.from_pretrained(base, str(adapter.path), is_trainable=True)
