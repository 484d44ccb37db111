"""Generation with vLLM (GPU only): one engine per base model, every checkpoint a per-request LoRA adapter.

The engine is built once with LoRA enabled and prefix caching on (all prompts of a grid cell share their long
system/guidelines/shots prefix), in bf16, with the tensor-parallel size from the recipe. Each request carries its
adapter as a ``LoRARequest`` whose integer id is stable per adapter for the life of the backend, so vLLM keeps
adapters resident between calls instead of reloading them. Output constraints use the current structured-output
API (``SamplingParams(structured_outputs=StructuredOutputsParams(regex=... | json=...))``, vLLM >= 0.12).

Prompts are rendered with the model's own chat template here (system turn fitted to the template) and sent as
token ids, exactly as the transformers backend sees them, so the two backends condition on identical tokens.

vLLM is imported lazily: this module imports on machines without vLLM, and the tests check the exact engine
arguments and per-request parameters built here against a stand-in ``vllm`` module.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gnt.generation.base import (
    DEFAULT_PREFIX_CACHING,
    Adapter,
    Generation,
    GenerationBackend,
    GenerationRequest,
)
from gnt.generation.identity import model_identity

SUPPORTED_LORA_RANKS = (8, 16, 32, 64, 128, 256, 320, 512)


def required_lora_rank(adapter_paths: Sequence[str | Path]) -> int | None:
    """Smallest rank vLLM accepts that fits every adapter's ``r`` (None when no adapter config is readable)."""
    ranks = []
    for path in adapter_paths:
        config = Path(path) / "adapter_config.json"
        if config.is_file():
            ranks.append(int(json.loads(config.read_text(encoding="utf-8")).get("r", 8)))
    if not ranks:
        return None
    need = max(ranks)
    return next((r for r in SUPPORTED_LORA_RANKS if r >= need), need)


def engine_kwargs(
    model: str,
    *,
    revision: str | None = None,
    tensor_parallel_size: int = 1,
    dtype: str = "bfloat16",
    enable_lora: bool = True,
    max_loras: int = 4,
    max_lora_rank: int = 64,
    max_model_len: int | None = None,
    gpu_memory_utilization: float = 0.9,
    enable_prefix_caching: bool = DEFAULT_PREFIX_CACHING,
    seed: int = 0,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The keyword arguments of ``vllm.LLM`` for one base model (recorded in the run record as they are)."""
    kwargs: dict[str, Any] = {
        "model": model,
        "revision": revision,
        "dtype": dtype,
        "tensor_parallel_size": tensor_parallel_size,
        "enable_prefix_caching": enable_prefix_caching,
        "gpu_memory_utilization": gpu_memory_utilization,
        "seed": seed,
    }
    if enable_lora:
        kwargs.update(enable_lora=True, max_loras=max_loras, max_lora_rank=max_lora_rank)
    if max_model_len:
        kwargs["max_model_len"] = max_model_len
    kwargs.update(extra or {})
    return kwargs


def sampling_kwargs(request: GenerationRequest) -> dict[str, Any]:
    """``SamplingParams`` fields of one request, with the structured-output constraint as a plain dict.

    Greedy when temperature is 0. JSON schemas are compiled without free whitespace, as in the transformers
    backend (a model that may emit whitespace anywhere can loop on it until the token limit).
    """
    params = request.params
    kwargs: dict[str, Any] = {
        "max_tokens": params.max_new_tokens,
        "temperature": params.temperature,
        "top_p": params.top_p if params.temperature > 0 else 1.0,
        "seed": params.seed,
        "skip_special_tokens": True,
    }
    constraint = request.constraint
    if constraint is not None:
        if constraint.kind == "regex":
            kwargs["structured_outputs"] = {"regex": str(constraint.value)}
        elif constraint.kind == "json_schema":
            kwargs["structured_outputs"] = {"json": constraint.value, "disable_any_whitespace": True}
        else:
            raise ValueError(f"unknown constraint kind {constraint.kind!r}")
    return kwargs


class VLLMBackend(GenerationBackend):
    """Offline vLLM engine over one base model; adapters and constraints per request."""

    name = "vllm"

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        tensor_parallel_size: int = 1,
        dtype: str = "bfloat16",
        max_loras: int = 4,
        max_lora_rank: int | None = None,
        adapter_paths: Sequence[str | Path] = (),
        max_model_len: int | None = None,
        gpu_memory_utilization: float = 0.9,
        enable_prefix_caching: bool = DEFAULT_PREFIX_CACHING,
        seed: int = 0,
        engine_extra: dict[str, Any] | None = None,
        model_id: str | None = None,
        use_tqdm: bool = False,
    ) -> None:
        self.model_name = str(model)
        rank = max_lora_rank or required_lora_rank(adapter_paths) or 64
        self.engine_kwargs = engine_kwargs(
            self.model_name,
            revision=revision,
            tensor_parallel_size=tensor_parallel_size,
            dtype=dtype,
            max_loras=max_loras,
            max_lora_rank=rank,
            max_model_len=max_model_len,
            gpu_memory_utilization=gpu_memory_utilization,
            enable_prefix_caching=enable_prefix_caching,
            seed=seed,
            extra=engine_extra,
        )
        self.model_id = model_id or f"{model_identity(self.model_name, revision)}|vllm/{dtype}"
        self.use_tqdm = use_tqdm
        self._llm = None
        self._tokenizer = None
        self._lora_ids: dict[tuple[str, str], int] = {}
        self.generated = 0

    @property
    def llm(self):
        """The engine, built on first use (a fully cached rerun never starts it)."""
        if self._llm is None:
            from vllm import LLM

            self._llm = LLM(**self.engine_kwargs)
        return self._llm

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            if self._llm is not None:
                self._tokenizer = self._llm.get_tokenizer()
            else:  # no engine needed to render prompts or to check the template's system role
                from transformers import AutoTokenizer

                self._tokenizer = AutoTokenizer.from_pretrained(
                    self.model_name, revision=self.engine_kwargs.get("revision")
                )
        return self._tokenizer

    def supports_system_role(self) -> bool:
        from gnt.prompts.chat import supports_system_role

        return supports_system_role(self.tokenizer)

    def lora_request(self, adapter: Adapter | None):
        """The ``LoRARequest`` of an adapter; its int id is stable per (name, weights) in this backend."""
        if adapter is None:
            return None
        from vllm.lora.request import LoRARequest

        key = (adapter.name, adapter.weights_hash)
        if key not in self._lora_ids:
            self._lora_ids[key] = len(self._lora_ids) + 1  # vLLM reserves 0 for "no adapter"
        return LoRARequest(adapter.name, self._lora_ids[key], str(adapter.path))

    def sampling_params(self, request: GenerationRequest):
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        kwargs = sampling_kwargs(request)
        if "structured_outputs" in kwargs:
            kwargs["structured_outputs"] = StructuredOutputsParams(**kwargs["structured_outputs"])
        return SamplingParams(**kwargs)

    def prompt_token_ids(self, request: GenerationRequest) -> list[int]:
        from gnt.prompts.chat import render_prompt_text
        from gnt.prompts.grid import fit_messages

        text = render_prompt_text(self.tokenizer, fit_messages(request.chat(), self.supports_system_role()))
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        results: list[Generation | None] = [None] * len(requests)
        prompts, params, loras, indices = [], [], [], []
        for index, request in enumerate(requests):
            try:
                prompts.append({"prompt_token_ids": self.prompt_token_ids(request)})
                params.append(self.sampling_params(request))
                loras.append(self.lora_request(request.adapter))
                indices.append(index)
            except Exception as exc:  # noqa: BLE001 - one bad request must not fail the batch
                results[index] = Generation("", error=f"request preparation failed: {exc}")
        if indices:
            try:
                outputs = self.llm.generate(prompts, params, lora_request=loras, use_tqdm=self.use_tqdm)
            except Exception as exc:  # noqa: BLE001 - report per request; the caller's cache keeps the rest
                outputs = None
                for index in indices:
                    results[index] = Generation("", error=f"{type(exc).__name__}: {exc}")
            if outputs is not None:
                for index, output in zip(indices, outputs, strict=True):
                    results[index] = self._generation(output)
                self.generated += len(indices)
        return [r if r is not None else Generation("", error="not generated") for r in results]

    @staticmethod
    def _generation(output) -> Generation:
        completion = output.outputs[0]
        reason = getattr(completion, "finish_reason", None)
        return Generation(completion.text, n_tokens=len(completion.token_ids), finish_reason=reason)

    def settings(self) -> dict:
        return {
            "engine_kwargs": self.engine_kwargs,
            "adapters": {f"{name}": lora_id for (name, _), lora_id in self._lora_ids.items()},
        }

    def close(self) -> None:
        """Drop the engine and give its GPU memory back (a later backend in this process needs it)."""
        if self._llm is None:
            return
        import gc

        self._llm = None
        gc.collect()
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:  # pragma: no cover - vLLM always brings torch
            pass
