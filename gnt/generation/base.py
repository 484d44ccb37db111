"""The one interface every generation backend implements, and the request/response types it speaks.

A request is chat turns plus an optional adapter and an optional output constraint (a regex for the translation
grid, a JSON schema for the judge). Backends batch requests as they see fit and return one :class:`Generation` per
request, in order. A backend never raises for one bad request: it returns a Generation with ``error`` set, so a
72,000-generation run is never lost to one failure. The content hash of a request (:meth:`GenerationRequest.key`)
is what caches key on: the same prompt, model, adapter weights and decoding parameters are computed once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from gnt.io import hash_json
from gnt.settings import DEFAULT_MAX_NEW_TOKENS, DEFAULT_PREFIX_CACHING  # noqa: F401 - the backends' default


@dataclass(frozen=True)
class Constraint:
    """Constrained decoding: ``kind`` is ``regex`` or ``json_schema``; ``value`` the pattern or the schema (dict)."""

    kind: Literal["regex", "json_schema"]
    value: Any

    def to_json(self) -> dict:
        return {"kind": self.kind, "value": self.value}


@dataclass(frozen=True)
class DecodingParams:
    """Decoding settings; greedy (temperature 0) by default as the grid prescribes (docs/prompt-grid.md)."""

    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0


@dataclass(frozen=True)
class Adapter:
    """A LoRA adapter to apply for a request: ``name`` is stable and unique per weights (e.g. ``sft/checkpoint-8``),
    ``path`` the folder, ``weights_hash`` the content hash of its weights (what caches key on)."""

    name: str
    path: str
    weights_hash: str


@dataclass(frozen=True)
class GenerationRequest:
    messages: tuple[tuple[str, str], ...]  # (role, content) pairs: hashable and JSON-stable
    adapter: Adapter | None = None
    constraint: Constraint | None = None
    params: DecodingParams = field(default_factory=DecodingParams)

    @classmethod
    def from_messages(
        cls,
        messages: Sequence[dict[str, str]],
        adapter: Adapter | None = None,
        constraint: Constraint | None = None,
        params: DecodingParams | None = None,
    ) -> GenerationRequest:
        return cls(tuple((m["role"], m["content"]) for m in messages), adapter, constraint, params or DecodingParams())

    def chat(self) -> list[dict[str, str]]:
        return [{"role": role, "content": content} for role, content in self.messages]

    def key(self, model_id: str) -> str:
        """Content hash of (model, adapter weights, turns, constraint, decoding params)."""
        return hash_json(
            {
                "model": model_id,
                "adapter": self.adapter.weights_hash if self.adapter else None,
                "messages": self.messages,
                "constraint": self.constraint.to_json() if self.constraint else None,
                "params": asdict(self.params),
            }
        )


@dataclass(frozen=True)
class Generation:
    """One result: the raw text, or an ``error`` description when the backend failed for this request."""

    text: str
    error: str | None = None
    n_tokens: int | None = None
    finish_reason: str | None = None


class GenerationBackend(ABC):
    """Generates for batches of requests against one base model (adapters applied per request)."""

    #: Stable identity of the base model (hub id or resolved local path + weights hash); part of every cache key.
    model_id: str
    #: What run records call the backend (``transformers``, ``vllm``, ``http``); the class name where unset.
    name: str = ""
    #: The model as the user named it (hub id, folder, or a server's model name); recorded beside ``model_id``.
    model_name: str = ""

    @abstractmethod
    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Return one Generation per request, in order; never raise for an individual request's failure."""

    def supports_system_role(self) -> bool:
        """Whether the model's chat template renders a system turn; callers fit prompts to it (docs/prompt-grid.md)."""
        return True

    def describe(self) -> dict:
        """Backend name, model and settings for run records.

        Every backend's record opens with the same keys (``backend``, ``model``, ``model_id``), so a reader finds
        which model a run used in one place whatever served it; a backend adds its own knobs in :meth:`settings`.
        """
        record: dict[str, Any] = {"backend": self.name or type(self).__name__}
        if self.model_name:
            record["model"] = self.model_name
        return {**record, "model_id": self.model_id, **self.settings()}

    def settings(self) -> dict[str, Any]:
        """The backend's own settings for its run record (none by default)."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release engines, threads or GPU memory."""
