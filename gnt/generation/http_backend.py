"""Generation through an OpenAI-compatible ``/v1/chat/completions`` server (``vllm serve``, hosted APIs).

The adapter of a request is selected by the ``model`` field: a server started with
``vllm serve BASE --enable-lora --lora-modules sft/checkpoint-8=/path/to/checkpoint-8`` serves that adapter under
the adapter's name. Constraints: a JSON schema goes in ``response_format`` (``json_schema``, strict), which every
compatible server understands; a regex has no OpenAI field, so it goes in vLLM's extra body parameter
(``structured_outputs: {regex: ...}`` since vLLM 0.12; ``regex_field: guided_regex`` for older servers).

Requests run on a thread pool bounded by ``concurrency``. Each one has a timeout and is retried with exponential
backoff and jitter on 429, 5xx, timeouts and connection errors (honouring ``Retry-After``); other errors and
malformed replies become a :class:`Generation` with ``error`` set, never an exception. The API key is read from
the environment variable the recipe names and is never logged or recorded.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gnt.generation.base import Generation, GenerationBackend, GenerationRequest
from gnt.redact import redact

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


class HTTPBackend(GenerationBackend):
    """Chat completions over HTTP with bounded concurrency, timeouts and retries."""

    name = "http"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = None,
        concurrency: int = 8,
        timeout_s: float = 120.0,
        max_retries: int = 5,
        backoff_s: float = 1.0,
        backoff_max_s: float = 60.0,
        regex_field: str = "structured_outputs",
        system_role: bool = True,
        model_id: str | None = None,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        import httpx

        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.concurrency = max(1, concurrency)
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        if regex_field not in ("structured_outputs", "guided_regex"):
            raise ValueError(f"regex_field must be 'structured_outputs' or 'guided_regex', got {regex_field!r}")
        self.regex_field = regex_field
        self.system_role = system_role
        self.extra_body = dict(extra_body or {})
        self.model_id = model_id or f"{model}|http"
        headers = {"Content-Type": "application/json"}
        self._secrets: tuple[str, ...] = ()
        if api_key_env:
            key = os.environ.get(api_key_env)
            if not key:
                from gnt.recipe import RecipeError

                raise RecipeError(f"environment variable {api_key_env} (the API key named in the recipe) is not set")
            headers["Authorization"] = f"Bearer {key}"
            self._secrets = (key,)
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        self._client = httpx.Client(headers=headers, timeout=httpx.Timeout(timeout_s), limits=limits)
        self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="gnt-http")
        self._stats_lock = threading.Lock()
        self.stats = {"requests": 0, "retries": 0, "errors": 0}

    def supports_system_role(self) -> bool:
        return self.system_role

    def body(self, request: GenerationRequest) -> dict[str, Any]:
        """The JSON body of one chat-completions call."""
        from gnt.prompts.grid import fit_messages

        params = request.params
        body: dict[str, Any] = {
            "model": request.adapter.name if request.adapter else self.model,
            "messages": fit_messages(request.chat(), self.system_role),
            "max_tokens": params.max_new_tokens,
            "temperature": params.temperature,
            "seed": params.seed,
        }
        if params.temperature > 0:
            body["top_p"] = params.top_p
        constraint = request.constraint
        if constraint is not None:
            if constraint.kind == "json_schema":
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "output", "schema": constraint.value, "strict": True},
                }
            elif self.regex_field == "guided_regex":
                body["guided_regex"] = str(constraint.value)
            else:
                body["structured_outputs"] = {"regex": str(constraint.value)}
        body.update(self.extra_body)
        return body

    def _attempt(self, body: dict[str, Any]) -> Generation:
        import httpx

        try:
            response = self._client.post(f"{self.base_url}/chat/completions", json=body)
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            raise _Retryable(f"{type(exc).__name__}: {exc}") from exc
        if response.status_code in RETRY_STATUS:
            raise _Retryable(f"HTTP {response.status_code}", _retry_after(response.headers.get("retry-after")))
        if response.status_code >= 400:
            return Generation("", error=f"HTTP {response.status_code}: {response.text[:300]}")
        try:
            data = response.json()
            choice = data["choices"][0]
            text = choice["message"]["content"]
            if not isinstance(text, str):
                raise TypeError("message.content is not a string")
            usage = data.get("usage") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            return Generation("", error=f"malformed reply ({type(exc).__name__}: {exc}): {response.text[:200]!r}")
        return Generation(text, n_tokens=usage.get("completion_tokens"), finish_reason=choice.get("finish_reason"))

    def _one(self, request: GenerationRequest) -> Generation:
        body = self.body(request)
        for attempt in range(self.max_retries + 1):
            try:
                generation = self._attempt(body)
                break
            except _Retryable as exc:
                if attempt == self.max_retries:
                    generation = Generation("", error=f"gave up after {attempt + 1} attempts: {exc}")
                    break
                delay = min(self.backoff_max_s, self.backoff_s * 2**attempt) * random.uniform(0.5, 1.0)
                if exc.retry_after is not None:
                    delay = max(delay, min(exc.retry_after, self.backoff_max_s))
                with self._stats_lock:
                    self.stats["retries"] += 1
                log.info("retrying %s in %.2fs (%s)", body["model"], delay, exc)
                time.sleep(delay)
        with self._stats_lock:
            self.stats["requests"] += 1
            self.stats["errors"] += generation.error is not None
        return self._redacted(generation)

    def _redacted(self, generation: Generation) -> Generation:
        """The generation with the API key and any credential out of its error text (it is cached and stored)."""
        if generation.error:
            return dataclasses.replace(generation, error=redact(generation.error, self._secrets))
        return generation

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        futures = [self._pool.submit(self._one, request) for request in requests]
        results = []
        for future in futures:
            try:
                results.append(future.result())
            except Exception as exc:  # noqa: BLE001 - a bug in one request must not lose the others
                results.append(self._redacted(Generation("", error=f"{type(exc).__name__}: {exc}")))
        return results

    @property
    def model_name(self) -> str:  # type: ignore[override]
        return self.model

    def settings(self) -> dict:
        return {
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,  # the variable's name only, never its value
            "concurrency": self.concurrency,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "regex_field": self.regex_field,
        }

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self._client.close()
