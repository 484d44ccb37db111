"""Build the generation backend an evaluation recipe names, for one base model.

The recipe's ``backend`` key picks transformers (CPU/small GPU), vllm (GPU, LoRA per request) or http (an
OpenAI-compatible server); the other keys are passed to that backend only. Imports are lazy: choosing the
transformers backend never imports vLLM, and vice versa.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gnt.generation.base import GenerationBackend

if TYPE_CHECKING:
    from gnt.evaluation.config import EvalConfig


def make_backend(config: EvalConfig, base_model: str, adapter_paths: Sequence[str] = ()) -> GenerationBackend:
    """A backend for ``base_model`` configured from the recipe (``adapter_paths`` size vLLM's LoRA slots)."""
    if config.backend == "transformers":
        from gnt.generation.transformers_backend import TransformersBackend

        return TransformersBackend(
            base_model,
            dtype=config.dtype,
            device=config.device,
            batch_size=config.batch_size,
            max_loaded_adapters=config.max_loras,
            trust_remote_code=config.trust_remote_code,
            cpu_threads=config.cpu_threads,
        )
    if config.backend == "vllm":
        from gnt.generation.vllm_backend import VLLMBackend

        return VLLMBackend(
            base_model,
            tensor_parallel_size=config.tensor_parallel_size,
            dtype="bfloat16" if config.dtype == "auto" else config.dtype,
            max_loras=config.max_loras,
            max_lora_rank=config.max_lora_rank,
            adapter_paths=adapter_paths,
            max_model_len=config.max_model_len,
            gpu_memory_utilization=config.gpu_memory_utilization,
            enable_prefix_caching=config.enable_prefix_caching,
            seed=config.grid_seed,
            engine_extra=config.engine_extra,
        )
    if config.backend == "http":
        from gnt.generation.http_backend import HTTPBackend
        from gnt.generation.identity import model_identity

        return HTTPBackend(
            config.base_url or "",
            config.served_model or base_model,
            api_key_env=config.api_key_env,
            concurrency=config.concurrency,
            timeout_s=config.timeout_s,
            max_retries=config.max_retries,
            regex_field=config.regex_field,
            system_role=config.system_role != "no",
            model_id=f"{model_identity(base_model)}|http",
        )
    raise ValueError(f"unknown backend {config.backend!r}; expected transformers, vllm or http")
