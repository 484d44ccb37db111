"""Build the generation backend an evaluation recipe names, for one base model.

The recipe's ``backend`` key picks transformers (CPU/small GPU), vllm (GPU, LoRA per request) or http (an
OpenAI-compatible server); the other keys are passed to that backend only. Imports are lazy: choosing the
transformers backend never imports vLLM, and vice versa.

:func:`build_backend` takes plain keyword arguments and serves every recipe (evaluation and judge);
:func:`make_backend` maps an :class:`~gnt.evaluation.config.EvalConfig` onto it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gnt.generation.base import DEFAULT_PREFIX_CACHING, GenerationBackend

if TYPE_CHECKING:
    from gnt.evaluation.config import EvalConfig


def build_backend(
    backend: str,
    model: str,
    *,
    adapter_paths: Sequence[str] = (),
    dtype: str = "auto",
    device: str = "auto",
    batch_size: int = 16,
    max_loras: int = 4,
    max_lora_rank: int | None = None,
    trust_remote_code: bool = False,
    cpu_threads: int | None = None,
    tensor_parallel_size: int = 1,
    max_model_len: int | None = None,
    gpu_memory_utilization: float = 0.9,
    enable_prefix_caching: bool = DEFAULT_PREFIX_CACHING,
    seed: int = 0,
    engine_extra: dict[str, Any] | None = None,
    base_url: str | None = None,
    served_model: str | None = None,
    api_key_env: str | None = None,
    concurrency: int = 8,
    timeout_s: float = 120.0,
    max_retries: int = 5,
    regex_field: str = "structured_outputs",
    system_role: bool = True,
    model_id: str | None = None,
) -> GenerationBackend:
    """A ``backend`` ("transformers", "vllm" or "http") for ``model``; each backend takes only its own keys.

    ``dtype="auto"`` means bfloat16 on vLLM; http serves ``served_model`` (else ``model``) from ``base_url``.
    ``enable_prefix_caching`` is vLLM's prefix caching and the transformers backend's shared-prefix reuse alike.
    """
    if backend == "transformers":
        from gnt.generation.transformers_backend import TransformersBackend

        return TransformersBackend(
            model,
            dtype=dtype,
            device=device,
            batch_size=batch_size,
            max_loaded_adapters=max_loras,
            trust_remote_code=trust_remote_code,
            cpu_threads=cpu_threads,
            model_id=model_id,
            prefix_reuse=enable_prefix_caching,
        )
    if backend == "vllm":
        from gnt.generation.vllm_backend import VLLMBackend

        return VLLMBackend(
            model,
            tensor_parallel_size=tensor_parallel_size,
            dtype="bfloat16" if dtype == "auto" else dtype,
            max_loras=max_loras,
            max_lora_rank=max_lora_rank,
            adapter_paths=adapter_paths,
            max_model_len=max_model_len,
            gpu_memory_utilization=gpu_memory_utilization,
            enable_prefix_caching=enable_prefix_caching,
            seed=seed,
            engine_extra=engine_extra,
            model_id=model_id,
        )
    if backend == "http":
        from gnt.generation.http_backend import HTTPBackend

        return HTTPBackend(
            base_url or "",
            served_model or model,
            api_key_env=api_key_env,
            concurrency=concurrency,
            timeout_s=timeout_s,
            max_retries=max_retries,
            regex_field=regex_field,
            system_role=system_role,
            model_id=model_id,
        )
    raise ValueError(f"unknown backend {backend!r}; expected transformers, vllm or http")


def make_backend(config: EvalConfig, base_model: str, adapter_paths: Sequence[str] = ()) -> GenerationBackend:
    """A backend for ``base_model`` configured from the recipe (``adapter_paths`` size vLLM's LoRA slots)."""
    model_id = None
    if config.backend == "http":
        from gnt.generation.identity import model_identity

        model_id = f"{model_identity(base_model)}|http"
    return build_backend(
        config.backend,
        base_model,
        adapter_paths=adapter_paths,
        dtype=config.dtype,
        device=config.device,
        batch_size=config.batch_size,
        max_loras=config.max_loras,
        max_lora_rank=config.max_lora_rank,
        trust_remote_code=config.trust_remote_code,
        cpu_threads=config.cpu_threads,
        tensor_parallel_size=config.tensor_parallel_size,
        max_model_len=config.max_model_len,
        gpu_memory_utilization=config.gpu_memory_utilization,
        enable_prefix_caching=config.enable_prefix_caching,
        seed=config.grid_seed,
        engine_extra=config.engine_extra,
        base_url=config.base_url,
        served_model=config.served_model,
        api_key_env=config.api_key_env,
        concurrency=config.concurrency,
        timeout_s=config.timeout_s,
        max_retries=config.max_retries,
        regex_field=config.regex_field,
        system_role=config.system_role != "no",
        model_id=model_id,
    )
