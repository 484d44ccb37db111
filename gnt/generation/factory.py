"""Build the generation backend a recipe names, for one base model: the one place that maps settings to backends.

The recipe's ``backend`` key picks transformers (CPU/small GPU), vllm (GPU, LoRA per request) or http (an
OpenAI-compatible server); the other keys of :class:`~gnt.settings.BackendSettings` are passed to that backend
only. Imports are lazy: choosing the transformers backend never imports vLLM, and vice versa.

:func:`build_backend` is the one way in for every user (the sweep and its preference scoring, the templated and
WMT24 suites, the judge, a learned judge: a base model plus its LoRA adapter in ``adapter_paths``, sent with each
request), so a backend key means the same thing in each, and so does a cache identity: an HTTP model is keyed by
the identity of the model it serves (:func:`gnt.generation.identity.model_identity`) for every user alike. A user
passes only what it decides beyond the backend keys (its seed, whether prompts keep a system turn).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gnt.generation.base import GenerationBackend

if TYPE_CHECKING:
    from gnt.settings import BackendSettings


def build_backend(
    settings: BackendSettings,
    model: str,
    *,
    adapter_paths: Sequence[str] = (),
    seed: int = 0,
    system_role: bool = True,
    merged_adapter: str | None = None,
) -> GenerationBackend:
    """The backend ``settings.backend`` for ``model``; each backend takes only its own keys.

    ``dtype="auto"`` means bfloat16 on vLLM; http serves ``served_model`` (else ``model``) from ``base_url``.
    ``enable_prefix_caching`` is vLLM's prefix caching and the transformers backend's shared-prefix reuse alike.
    ``system_role`` tells the HTTP backend whether the server's template takes a system turn (local backends read
    their own template). ``adapter_paths`` size vLLM's LoRA slots (the transformers backend loads an adapter when
    a request names it). ``merged_adapter`` (transformers) is one adapter merged into the base weights at load, for
    a backend that serves nothing else (a trained judge).
    """
    s = settings
    model_id = None
    if s.backend == "http":
        from gnt.generation.identity import model_identity

        model_id = f"{model_identity(model)}|http"
    if s.backend == "transformers":
        from gnt.generation.transformers_backend import TransformersBackend

        return TransformersBackend(
            model,
            dtype=s.dtype,
            device=s.device,
            batch_size=s.batch_size,
            max_loaded_adapters=s.max_loras,
            trust_remote_code=s.trust_remote_code,
            cpu_threads=s.cpu_threads,
            model_id=model_id,
            prefix_reuse=s.enable_prefix_caching,
            merged_adapter=merged_adapter,
        )
    if s.backend == "vllm":
        from gnt.generation.vllm_backend import VLLMBackend

        return VLLMBackend(
            model,
            tensor_parallel_size=s.tensor_parallel_size,
            dtype="bfloat16" if s.dtype == "auto" else s.dtype,
            max_loras=s.max_loras,
            max_lora_rank=s.max_lora_rank,
            adapter_paths=adapter_paths,
            max_model_len=s.max_model_len,
            gpu_memory_utilization=s.gpu_memory_utilization,
            enable_prefix_caching=s.enable_prefix_caching,
            seed=seed,
            engine_extra=s.engine_extra,
            model_id=model_id,
        )
    if s.backend == "http":
        from gnt.generation.http_backend import HTTPBackend, check_served_model

        check_served_model(model, s.served_model)
        return HTTPBackend(
            s.base_url or "",
            s.served_model or model,
            api_key_env=s.api_key_env,
            concurrency=s.concurrency,
            timeout_s=s.timeout_s,
            max_retries=s.http_retries,
            regex_field=s.regex_field,
            system_role=system_role,
            model_id=model_id,
        )
    raise ValueError(f"unknown backend {s.backend!r}; expected transformers, vllm or http")
