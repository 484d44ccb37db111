"""Log-probabilities of given completions under a model (no generation): what preference accuracy needs.

For a prompt (chat turns) and a completion (the assistant turn as text), the score is the sum of the
log-probabilities of the completion's tokens, end-of-turn token included, and their count, so a caller can
length-normalise. The prompt is rendered exactly as for generation (chat template, generation prompt, system turn
fitted to the template) and the completion is the rest of the fully rendered conversation, tokenized after it:
the same split TRL uses for prompt–completion training rows.

Only the transformers backend can score (it holds the model); other backends raise :class:`ScoringUnsupported`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gnt.generation.base import Adapter, GenerationBackend


class ScoringUnsupported(RuntimeError):
    """The backend cannot return log-probabilities of given text (vLLM, HTTP)."""


@dataclass(frozen=True)
class ScoreRequest:
    """One completion to score after one prompt, under ``adapter`` (None: the base model)."""

    prompt: tuple[tuple[str, str], ...]  # (role, content) turns
    completion: str
    adapter: Adapter | None = None


@dataclass(frozen=True)
class CompletionScore:
    """Sum of the completion tokens' log-probabilities and their count; ``error`` set instead when it failed."""

    logprob: float
    n_tokens: int
    error: str | None = None

    @property
    def mean(self) -> float:
        """Length-normalised log-probability (per token)."""
        return self.logprob / self.n_tokens if self.n_tokens else float("-inf")


def _transformers_backend(backend: GenerationBackend):
    from gnt.generation.transformers_backend import TransformersBackend

    inner = getattr(backend, "backend", backend)  # a CachedBackend wraps the real one
    if not isinstance(inner, TransformersBackend):
        raise ScoringUnsupported(
            f"scoring completions needs the transformers backend (this one is {type(inner).__name__})"
        )
    return inner


def _token_ids(backend, request: ScoreRequest) -> tuple[list[int], list[int]]:
    """Prompt ids and completion ids of one request, rendered as in generation."""
    from gnt.prompts.chat import render_prompt_text
    from gnt.prompts.grid import fit_messages

    turns = [{"role": r, "content": c} for r, c in request.prompt]
    turns = fit_messages(turns, backend.supports_system_role())
    prompt = render_prompt_text(backend.tokenizer, turns)
    full = backend.tokenizer.apply_chat_template(
        [*turns, {"role": "assistant", "content": request.completion}], tokenize=False
    )
    if not full.startswith(prompt):
        raise ValueError("the chat template renders the conversation with a different prefix than the prompt")
    tokenize = backend.tokenizer
    prompt_ids = tokenize(prompt, add_special_tokens=False)["input_ids"]
    completion_ids = tokenize(full[len(prompt):].rstrip("\n"), add_special_tokens=False)["input_ids"]
    return prompt_ids, completion_ids


def score_completions(
    backend: GenerationBackend, requests: Sequence[ScoreRequest], batch_size: int = 8
) -> list[CompletionScore]:
    """Score every request; a failing batch is retried row by row so one bad request costs one error.

    Requests whose prompts share a long token prefix (one grid cell: system, preamble, guidelines, shots) reuse
    one key/value cache of that prefix per adapter, as generation does (the backend's ``prefix_reuse`` switch):
    only each row's own suffix (source and completion) is run per row. The prefix never reaches a row's last
    prompt token, so every scored logit comes from the row's own pass.
    """
    import torch

    from gnt.generation.prefix_cache import batch_copy, prefix_clusters

    inner = _transformers_backend(backend)
    results: list[CompletionScore | None] = [None] * len(requests)
    encoded: dict[int, tuple[list[int], list[int]]] = {}
    for index, request in enumerate(requests):
        try:
            encoded[index] = _token_ids(inner, request)
        except Exception as exc:  # noqa: BLE001 - a template error is this request's failure only
            results[index] = CompletionScore(0.0, 0, f"rendering failed: {exc}")
    groups: dict[tuple | None, list[int]] = {}
    for index in encoded:
        adapter = requests[index].adapter
        groups.setdefault((adapter.name, adapter.weights_hash) if adapter else None, []).append(index)

    def run(batch: list[int], prefix) -> list[CompletionScore]:
        context = inner._activate(requests[batch[0]].adapter)
        shared = len(prefix[0]) if prefix else 0
        tails = [(encoded[i][0] + encoded[i][1])[shared:] for i in batch]
        width = max(len(t) for t in tails)
        pad = inner.tokenizer.pad_token_id
        ids = torch.tensor([t + [pad] * (width - len(t)) for t in tails], device=inner.device)
        mask = torch.tensor([[1] * (shared + len(t)) + [0] * (width - len(t)) for t in tails], device=inner.device)
        extra = {}
        if prefix:
            extra = {"cache": batch_copy(prefix[1], len(batch)), "use_cache": True,
                     "position_ids": torch.arange(shared, shared + width, device=inner.device).expand(len(batch), -1)}
        starts = [len(encoded[i][0]) - shared for i in batch]  # each row's first completion token, in the tail
        first = min(starts) - 1  # the earliest position whose logits predict a completion token
        # Only positions that predict a completion token are projected on the vocabulary (Gemma's LM head has 262k
        # rows: the source tokens' logits would cost as much as the rest of the pass and are never read).
        keep = torch.arange(first, width - 1, device=inner.device)
        with context, torch.inference_mode():
            logits = inner._model(input_ids=ids, attention_mask=mask, logits_to_keep=keep, **extra).logits.float()
            targets = ids[:, first + 1 :]
            logprobs = logits.gather(-1, targets[..., None])[..., 0] - torch.logsumexp(logits, dim=-1)
        out = []
        for row, index in enumerate(batch):
            offset, n = starts[row] - 1 - first, len(encoded[index][1])
            out.append(CompletionScore(float(logprobs[row, offset : offset + n].sum()), n))
        return out

    def resilient(batch: list[int], prefix) -> list[CompletionScore]:
        try:
            return run(batch, prefix)
        except Exception as exc:  # noqa: BLE001 - isolate the failure, never lose the whole batch
            if len(batch) == 1:
                return [CompletionScore(0.0, 0, f"{type(exc).__name__}: {exc}")]
            half = len(batch) // 2
            return resilient(batch[:half], prefix) + resilient(batch[half:], prefix)

    def plan(indices: list[int]):
        """``(batch, prefix or None)``: clusters of shared prompt prefixes, rows sorted by length inside."""
        prompts = {i: encoded[i][0] for i in indices}
        if not inner.prefix_reuse:
            yield sorted(indices, key=lambda i: len(prompts[i]) + len(encoded[i][1])), None
            return
        for cluster in prefix_clusters([prompts.get(i, []) for i in range(len(requests))], indices):
            members = sorted(cluster.indices, key=lambda i: len(prompts[i]) + len(encoded[i][1]))
            prefix = None
            longest = max(len(prompts[i]) + len(encoded[i][1]) for i in members)
            if cluster.prefix_len and inner._prefix_allowed(longest):
                tokens = tuple(prompts[members[0]][: cluster.prefix_len])
                prefix = (tokens, inner._build_prefix(requests[members[0]].adapter, tokens))
            yield members, prefix

    with inner._lock:
        for indices in groups.values():
            for members, prefix in plan(indices):
                for start in range(0, len(members), batch_size):
                    batch = members[start : start + batch_size]
                    for index, score in zip(batch, resilient(batch, prefix), strict=True):
                        results[index] = score
    return [r if r is not None else CompletionScore(0.0, 0, "not scored") for r in results]
