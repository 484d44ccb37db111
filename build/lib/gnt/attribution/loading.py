"""Loading a model for attribution: device and dtype policy, eager attention for AttnLRP, adapters merged.

bf16 on GPU (what the paper used, and half the activation memory of fp32 for the backward), fp32 on CPU (CPU bf16
matmuls are slow and its gradients coarse). A LoRA adapter is merged into the base weights: the AttnLRP rules patch
the base architecture's modules, and a merged model is also faster for the forward/backward.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

from gnt.attribution.gradxinput import freeze

METHODS: tuple[str, ...] = ("gradxinput", "attnlrp")


def resolve_device(device: str = "auto") -> str:
    """``auto``: the GPU when there is one."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def resolve_dtype(dtype: str, device: str) -> torch.dtype:
    """bf16 on GPU, fp32 on CPU unless told otherwise (CPU bf16 is slow and its gradients are coarse)."""
    import torch

    from gnt.settings import dtype_name

    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    return getattr(torch, dtype_name(dtype))


def load_model(
    model_path: str, adapter: str | None = None, *, method: str = "gradxinput", device: str = "auto", dtype: str = "auto"
) -> tuple[Any, Any]:
    """(model, tokenizer), the model frozen and ready for attribution; a LoRA adapter is merged (AttnLRP patches
    base modules).

    AttnLRP needs eager attention (see :mod:`gnt.attribution.attnlrp`); gradient × input uses the default kernel.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, device)
    tokenizer = AutoTokenizer.from_pretrained(adapter if adapter and Path(adapter, "tokenizer_config.json").is_file() else model_path)
    kwargs = {"dtype": torch_dtype}
    if method == "attnlrp":
        kwargs["attn_implementation"] = "eager"
    model = AutoModelForCausalLM.from_pretrained(model_path, **kwargs)
    if adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter).merge_and_unload()
    model.to(device)
    freeze(model)
    return model, tokenizer


def provenance(model_path: str, adapter: str | None, model, cell: str, seed: int, prompts: str | None) -> dict:
    """What both kinds of attribution record say about where they ran: the weights, the device and precision they
    were computed on, and the prompt grid (cell, shot seed, texts) that rendered the inputs, so two records can be
    compared only when these agree."""
    parameter = next(model.parameters())
    return {
        "model": model_path,
        "adapter": adapter,
        "device": str(parameter.device),
        "dtype": str(parameter.dtype).replace("torch.", ""),
        "cell": cell,
        "grid": {"seed": seed, "prompts_dir": prompts},
    }
