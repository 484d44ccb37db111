"""Generation through an OpenAI-compatible ``/v1/chat/completions`` server (``vllm serve``, hosted APIs).

The adapter of a request is selected by the ``model`` field: a server started with
``vllm serve BASE --enable-lora --lora-modules sft/checkpoint-8=/path/to/checkpoint-8`` serves that adapter under
the adapter's name. Constraints: a JSON schema goes in ``response_format`` (``json_schema``, strict), which every
compatible server understands; a regex has no OpenAI field, so it goes in vLLM's extra body parameter
(``structured_outputs: {regex: ...}`` since vLLM 0.12; ``regex_field: guided_regex`` for older servers).

Requests run on a thread pool bounded by ``concurrency``. Each one has a deadline (``timeout_s`` for the whole
request, not per read: a server that drips its reply a byte at a time cannot hold a request longer) and is retried
with exponential backoff and jitter on 429, 5xx, timeouts and connection errors (honouring ``Retry-After``); other
errors and malformed replies become a :class:`Generation` with ``error`` set, never an exception. A reply is read
up to a size that ``max_tokens`` can explain (:func:`reply_limit`): a server that ignores ``max_tokens`` and sends
megabytes gets an error for that request, not the machine's memory. A reply that names another model than the one
asked for is kept, said once and recorded (``settings()["replied_models"]``).

The API key is read from the environment variable the recipe names and registered with :mod:`gnt.redact`, like
the password of a ``base_url`` (``http://user:pass@host/v1``): neither is ever logged or written; error bodies are
redacted before they are cut to length.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gnt.generation.base import Generation, GenerationBackend, GenerationRequest
from gnt.redact import clip, redact, redact_url, register_secret, url_secrets

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
ERROR_TEXT = 300
"""Characters of an error body kept in a generation's error (after redaction)."""
REPLY_BASE_BYTES = 1 << 20
REPLY_BYTES_PER_TOKEN = 64
"""A reply may be :data:`REPLY_BASE_BYTES` plus this much per token of ``max_tokens`` (a token is a few bytes of
text, escaped in JSON, with log-probabilities at most): far above any honest reply, far below what fills memory."""


def reply_limit(max_tokens: int | None) -> int:
    """The most bytes read of one reply to a request for ``max_tokens`` tokens."""
    return REPLY_BASE_BYTES + REPLY_BYTES_PER_TOKEN * max(0, int(max_tokens or 0))


def check_served_model(model: str, served_model: str | None) -> None:
    """A model built offline (a ``gnt:`` alias, resolved to a folder of the local cache) has no name on a server:
    without ``served_model`` its cache path would be sent as the model name. A RecipeError says what to give."""
    from pathlib import Path

    from gnt.models.cache import is_built

    if not served_model and model and Path(model).is_dir() and is_built(Path(model)):
        from gnt.recipe import RecipeError

        raise RecipeError(f"backend http: the model is a build of this machine's model cache ({model}), which a "
                          "server knows by another name: give served_model=NAME, the name it serves the model under")


class _TooLarge(Exception):
    """A reply longer than :func:`reply_limit` (a server that ignored ``max_tokens``)."""


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
        for secret in (*self._secrets, *url_secrets(self.base_url)):
            register_secret(secret)  # kept out of every file and log line from now on
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        self._client = httpx.Client(headers=headers, timeout=httpx.Timeout(timeout_s), limits=limits)
        self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="gnt-http")
        self._stats_lock = threading.Lock()
        self.stats = {"requests": 0, "retries": 0, "errors": 0}
        self.replied_models: dict[str, int] = {}
        """Model names in replies that differ from the name asked for, with their counts (said once each)."""

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

    def _read(self, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        """POST one request; its status, headers and body, read within ``timeout_s`` in all and up to
        :func:`reply_limit` bytes (:class:`_TooLarge` beyond)."""
        import httpx

        deadline = time.monotonic() + self.timeout_s
        limit = reply_limit(body.get("max_tokens"))
        try:
            with self._client.stream("POST", f"{self.base_url}/chat/completions", json=body) as response:
                chunks, size = [], 0
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > limit:
                        raise _TooLarge(f"the reply is larger than {limit} bytes for max_tokens="
                                        f"{body.get('max_tokens')}: the server ignores max_tokens")
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        raise httpx.ReadTimeout(f"no whole reply within timeout_s={self.timeout_s:g} s")
                return response.status_code, dict(response.headers), b"".join(chunks)
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            raise _Retryable(f"{type(exc).__name__}: {exc}") from exc

    def _attempt(self, body: dict[str, Any]) -> Generation:
        try:
            status, headers, raw = self._read(body)
        except _TooLarge as exc:
            return Generation("", error=str(exc))
        text = raw.decode("utf-8", errors="replace")
        if status in RETRY_STATUS:
            raise _Retryable(f"HTTP {status}", _retry_after(headers.get("retry-after")))
        if status >= 400:
            return Generation("", error=f"HTTP {status}: {clip(text, ERROR_TEXT, self._secrets)}")
        try:
            data = json.loads(text)
            choice = data["choices"][0]
            content = choice["message"]["content"]
            if not isinstance(content, str):
                raise TypeError("message.content is not a string")
            usage = data.get("usage") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            return Generation("", error=f"malformed reply ({type(exc).__name__}: {exc}): "
                                        f"{clip(text, ERROR_TEXT - 100, self._secrets)!r}")
        self._check_model(body["model"], data.get("model"))
        return Generation(content, n_tokens=usage.get("completion_tokens"), finish_reason=choice.get("finish_reason"))

    def _check_model(self, asked: str, replied: Any) -> None:
        """Say once, and record, a reply from another model than the one asked for (a dated snapshot of the asked
        name, ``gpt-4o`` → ``gpt-4o-2024-08-06``, is the same model)."""
        if not isinstance(replied, str) or not replied or replied.startswith(asked):
            return
        with self._stats_lock:
            first = replied not in self.replied_models
            self.replied_models[replied] = self.replied_models.get(replied, 0) + 1
        if first:
            log.warning("the server at %s answered a request for model %r as model %r: check served_model "
                        "(the replies are kept, and recorded as replied_models)", redact_url(self.base_url), asked,
                        replied)

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
            "base_url": redact_url(self.base_url),  # never its user name or password
            "api_key_env": self.api_key_env,  # the variable's name only, never its value
            "concurrency": self.concurrency,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "regex_field": self.regex_field,
            **({"replied_models": dict(self.replied_models)} if self.replied_models else {}),
        }

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self._client.close()
