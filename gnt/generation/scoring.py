"""Log-probabilities of given completions under a model (no generation): what preference accuracy needs.

For a prompt (chat turns) and a completion (the assistant turn as text), the score is the sum of the
log-probabilities of the completion's tokens, end-of-turn token included, and their count, so a caller can
length-normalise. The prompt is rendered exactly as for generation (chat template, generation prompt, system turn
fitted to the template) and the completion is the rest of the fully rendered conversation, tokenized after it:
the same split TRL uses for prompt–completion training rows.

Only the transformers backend can score (it holds the model); other backends raise :class:`ScoringUnsupported`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from gnt.generation.base import Adapter, GenerationBackend

T = TypeVar("T")


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


def _encode(requests: Sequence[Any], encode: Callable[[Any], tuple[list[int], list[int]]], results: list[Any],
            failed: Callable[[str], Any]) -> dict[int, tuple[list[int], list[int]]]:
    """Each request's token ids by ``encode``; a request whose rendering fails gets ``failed(reason)`` in
    ``results`` and is left out, so a template error is that request's failure only."""
    encoded: dict[int, tuple[list[int], list[int]]] = {}
    for index, request in enumerate(requests):
        try:
            encoded[index] = encode(request)
        except Exception as exc:  # noqa: BLE001 - a template error is this request's failure only
            results[index] = failed(f"rendering failed: {exc}")
    return encoded


def _run_batches(inner: Any, requests: Sequence[Any], prompts: dict[int, list[int]],
                 lengths: dict[int, tuple[int, int]], run: Callable[[list[int], Any], list[T]],
                 failed: Callable[[str], T], batch_size: int,
                 subgroup: Callable[[int], Hashable] | None = None) -> dict[int, T]:
    """Run ``run(batch, prefix)`` over scoring requests: grouped by adapter (and ``subgroup``), clustered by
    shared prompt prefix (one key/value cache per cluster and adapter, as generation does), rows sorted by length
    (``lengths``: prompt and answer tokens) and cut into batches. A failing batch is split in halves until the
    failing request alone gets ``failed(reason)``, so one bad request never costs the others."""
    from gnt.generation.prefix_cache import prefix_clusters

    groups: dict[tuple, list[int]] = {}
    for index in prompts:
        adapter = requests[index].adapter
        key = ((adapter.name, adapter.weights_hash) if adapter else None, subgroup(index) if subgroup else None)
        groups.setdefault(key, []).append(index)

    def resilient(batch: list[int], prefix: Any) -> list[T]:
        try:
            return run(batch, prefix)
        except Exception as exc:  # noqa: BLE001 - isolate the failure, never lose the whole batch
            if len(batch) == 1:
                return [failed(f"{type(exc).__name__}: {exc}")]
            half = len(batch) // 2
            return resilient(batch[:half], prefix) + resilient(batch[half:], prefix)

    def plan(indices: list[int]):
        """``(members, prefix or None)``: clusters of shared prompt prefixes, rows sorted by length inside."""
        total = {i: sum(lengths[i]) for i in indices}
        if not inner.prefix_reuse:
            yield sorted(indices, key=total.__getitem__), None
            return
        for cluster in prefix_clusters([prompts.get(i, []) for i in range(len(requests))], indices):
            members = sorted(cluster.indices, key=total.__getitem__)
            prefix = None
            if cluster.prefix_len and inner._prefix_allowed(max(total[i] for i in members)):
                tokens = tuple(prompts[members[0]][: cluster.prefix_len])
                prefix = (tokens, inner._build_prefix(requests[members[0]].adapter, tokens))
            yield members, prefix

    results: dict[int, T] = {}
    with inner._lock:
        for indices in groups.values():
            for members, prefix in plan(indices):
                for start in range(0, len(members), batch_size):
                    batch = members[start : start + batch_size]
                    results.update(zip(batch, resilient(batch, prefix), strict=True))
    return results


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

    from gnt.generation.prefix_cache import batch_copy

    inner = _transformers_backend(backend)
    results: list[CompletionScore | None] = [None] * len(requests)
    encoded = _encode(requests, lambda request: _token_ids(inner, request), results,
                      lambda why: CompletionScore(0.0, 0, why))
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

    lengths = {i: (len(encoded[i][0]), len(encoded[i][1])) for i in encoded}
    failed = lambda why: CompletionScore(0.0, 0, why)  # noqa: E731
    for index, score in _run_batches(inner, requests, {i: e[0] for i, e in encoded.items()}, lengths, run, failed,
                                     batch_size).items():
        results[index] = score
    return [r if r is not None else CompletionScore(0.0, 0, "not scored") for r in results]


# ---------------------------------------------------------------------------------------------------------------
# Choosing among a few fixed replies (a judge's labels): one pass per prompt, one projected position
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChoiceRequest:
    """A prompt and the fixed replies to choose among after it (e.g. a judge format's label replies), under
    ``adapter`` (None: the base model)."""

    prompt: tuple[tuple[str, str], ...]
    choices: tuple[str, ...]
    adapter: Adapter | None = None


@dataclass(frozen=True)
class ChoiceScores:
    """Each choice's log-probability at its decision token (the first token where the replies differ), given the
    prompt and the tokens every reply shares; or ``error``."""

    logprobs: tuple[float, ...]
    error: str | None = None

    def probabilities(self) -> tuple[float, ...]:
        """The choices' probabilities renormalised over the choices (they sum to 1): the distribution a decoder
        constrained to these replies samples from."""
        top = max(self.logprobs)
        weights = [math.exp(v - top) for v in self.logprobs]
        total = sum(weights)
        return tuple(w / total for w in weights)


def _choice_ids(backend, request: ChoiceRequest) -> tuple[list[int], list[int]]:
    """The prompt with the tokens every reply shares (``{"label": "``) appended, and each reply's decision token."""
    encoded = [_token_ids(backend, ScoreRequest(request.prompt, choice, request.adapter)) for choice in request.choices]
    prompt = encoded[0][0]
    answers = [ids for _, ids in encoded]
    common = 0
    while all(common < len(a) for a in answers) and len({a[common] for a in answers}) == 1:
        common += 1
    decisions = [a[common] if common < len(a) else None for a in answers]
    if None in decisions or len(set(decisions)) != len(decisions):
        raise ValueError("the choices do not differ in one token after what they share: they cannot be told apart "
                         "at a single decision token")
    return prompt + answers[0][:common], decisions  # type: ignore[return-value]


def score_choices(backend: GenerationBackend, requests: Sequence[ChoiceRequest],
                  batch_size: int = 16) -> list[ChoiceScores]:
    """The log-probability of each choice's decision token after its prompt and the replies' shared tokens.

    Replies that share everything up to one token and are fixed after it (a judge's JSON label replies under their
    schema: after ``NE`` only ``UTRAL"}`` is valid) are chosen at that token: a decoder constrained to the replies
    has no other choice to make, so the renormalised probabilities (:meth:`ChoiceScores.probabilities`) are exactly
    the constrained decoder's. One forward pass per prompt, on top of the shared-prefix cache generation uses (the
    system text of one language), with only the last position projected on the vocabulary. A failing batch is
    retried row by row, so one bad request costs one error.
    """
    import torch

    from gnt.generation.prefix_cache import batch_copy

    inner = _transformers_backend(backend)
    results: list[ChoiceScores | None] = [None] * len(requests)
    encoded = _encode(requests, lambda request: _choice_ids(inner, request), results,
                      lambda why: ChoiceScores((), why))
    device = inner.device

    def run(batch: list[int], prefix) -> list[ChoiceScores]:
        context = inner._activate(requests[batch[0]].adapter)
        shared = len(prefix[0]) if prefix else 0
        pad = inner.tokenizer.pad_token_id
        tails = [encoded[i][0][shared:] for i in batch]
        width = max(len(t) for t in tails)
        ids = torch.tensor([[pad] * (width - len(t)) + t for t in tails], device=device)  # left-padded: one last column
        tail_mask = torch.tensor([[0] * (width - len(t)) + [1] * len(t) for t in tails], device=device)
        mask = torch.cat([torch.ones(len(batch), shared, dtype=tail_mask.dtype, device=device), tail_mask], dim=1)
        positions = (shared + tail_mask.cumsum(-1) - 1).clamp(min=shared)
        extra = {"cache": batch_copy(prefix[1], len(batch)), "use_cache": True} if prefix else {}
        last = torch.tensor([width - 1], device=device)
        with context, torch.inference_mode():
            logits = inner._model(input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=last,
                                  **extra).logits[:, -1].float()
            logprobs = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
            chosen = torch.tensor([encoded[i][1] for i in batch], device=device)
            picked = logprobs.gather(-1, chosen)
        return [ChoiceScores(tuple(row)) for row in picked.tolist()]

    lengths = {i: (len(e[0]), 1) for i, e in encoded.items()}
    for index, score in _run_batches(inner, requests, {i: e[0] for i, e in encoded.items()}, lengths, run,
                                     lambda why: ChoiceScores((), why), batch_size).items():
        results[index] = score
    return [r if r is not None else ChoiceScores((), "not scored") for r in results]
