"""The attribution engine: gradient × input on the input embeddings, batched, one backward per target span.

For a row and a target span S, the explained quantity is ``F = Σ_{j∈S} logit_j`` (the logit of the forced token
at position ``j``, read at position ``j-1``) and the signed relevance of input token ``i`` is ``e_i · ∂F/∂e_i``;
the score is its absolute value (docs/attribution.md). Rows of a batch are independent (separate batch elements, causal
attention, no cross-row normalisation), so the gradient of the batch sum gives every row its own gradient: one
forward for the batch, then one backward per target (``S_L``, ``S_T``) with the graph kept between them.

The same computation on a model whose modules carry the AttnLRP rules (:mod:`gnt.attribution.attnlrp`) yields
LRP relevances: the patched backward *is* the relevance propagation, and ``e · grad`` reads it off the input.

Right padding keeps every real token at its own position (position ids start at 0 for each row) and a pad
never influences a real token under causal attention, so padded rows score exactly like unpadded ones.
Only the logits of target positions are projected on the vocabulary (``logits_to_keep`` as an index tensor),
which matters for 150k-token vocabularies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from gnt.attribution.spans import TARGETS, AttributionInput


@dataclass
class PassCounter:
    """Forward and backward passes actually run (reported as passes per row)."""

    forwards: int = 0
    backwards: int = 0
    rows: int = 0


@dataclass(frozen=True)
class TargetRelevance:
    """Signed relevance ``e_i · ∂F/∂e_i`` of every token of the sequence and the explained ``F`` (accumulated in
    fp32, or fp64 for an fp64 model)."""

    relevance: np.ndarray
    target_logit: float

    @property
    def scores(self) -> np.ndarray:
        """``s(i) = |relevance|`` (docs/attribution.md)."""
        return np.abs(self.relevance)


def model_device(model) -> torch.device:
    return next(model.parameters()).device


def padded_batch(sequences: Sequence[Sequence[int]], device: torch.device, pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids and the attention mask."""
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = torch.tensor(list(seq), dtype=torch.long)
        mask[row, : len(seq)] = 1
    return ids.to(device), mask.to(device)


def forward_logits(model, embeds: torch.Tensor, mask: torch.Tensor, positions: Sequence[int]) -> tuple[torch.Tensor, dict[int, int]]:
    """Logits at the given sequence positions only: ``[batch, len(positions), vocab]`` and position → column."""
    keep = sorted(set(positions))
    keep_tensor = torch.tensor(keep, dtype=torch.long, device=embeds.device)
    out = model(inputs_embeds=embeds, attention_mask=mask, use_cache=False, logits_to_keep=keep_tensor)
    return out.logits, {p: c for c, p in enumerate(keep)}


def leaf_embeddings(model, ids: torch.Tensor) -> torch.Tensor:
    """Input embeddings as a leaf tensor that collects gradients (the model's parameters stay frozen)."""
    with torch.no_grad():
        embeds = model.get_input_embeddings()(ids)
    return embeds.detach().requires_grad_(True)


def explain_batch(
    model,
    inputs: Sequence[AttributionInput],
    targets: Sequence[str] = TARGETS,
    counter: PassCounter | None = None,
) -> list[dict[str, TargetRelevance]]:
    """Relevance of every token for each target span of each row: one forward, one backward per target.

    Rows without a span for a target get no entry for it. The model should be in eval mode with parameters that
    do not require gradients (:func:`freeze`); gradients are taken w.r.t. the input embeddings only.
    """
    for target in targets:
        if target not in TARGETS:
            raise ValueError(f"unknown target {target!r}; expected one of {TARGETS}")
    device = model_device(model)
    ids, mask = padded_batch([x.input_ids for x in inputs], device)
    wanted = [(t, b, x.targets[t]) for t in targets for b, x in enumerate(inputs) if x.targets.get(t)]
    results: list[dict[str, TargetRelevance]] = [{} for _ in inputs]
    if not wanted:
        return results
    embeds = leaf_embeddings(model, ids)
    positions = [j - 1 for _, _, span in wanted for j in span]
    logits, column = forward_logits(model, embeds, mask, positions)
    if counter is not None:
        counter.forwards += 1
        counter.rows += len(inputs)
    active = [t for t in targets if any(w[0] == t for w in wanted)]
    acc_dtype = torch.promote_types(embeds.dtype, torch.float32)  # bf16 models accumulate in fp32
    for number, target in enumerate(active):
        rows = [(b, span) for t, b, span in wanted if t == target]
        batch_index = torch.tensor([b for b, span in rows for _ in span], device=device)
        cols = torch.tensor([column[j - 1] for _, span in rows for j in span], device=device)
        token_ids = ids[batch_index, torch.tensor([j for _, span in rows for j in span], device=device)]
        picked = logits[batch_index, cols, token_ids].to(acc_dtype)
        objective = picked.sum()
        (grad,) = torch.autograd.grad(objective, embeds, retain_graph=number < len(active) - 1)
        if counter is not None:
            counter.backwards += 1
        relevance = (embeds.detach().to(acc_dtype) * grad.to(acc_dtype)).sum(-1).cpu().numpy()
        per_row = torch.zeros(len(inputs), dtype=acc_dtype)
        per_row.index_add_(0, batch_index.cpu(), picked.detach().cpu())
        for b, _ in rows:
            length = len(inputs[b].input_ids)
            results[b][target] = TargetRelevance(relevance[b, :length].copy(), float(per_row[b]))
    return results


def freeze(model) -> None:
    """Eval mode, no parameter gradients: only the embeddings' gradient is needed (and memory stays small)."""
    model.eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)


def length_batches(lengths: Sequence[int], batch_size: int, max_batch_tokens: int | None = None) -> list[list[int]]:
    """Indices grouped into batches of similar length (sorted by length, longest first), capped in rows and in
    padded tokens so a long prompt never pads a whole batch to its size."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        width = max([lengths[i] for i in current] + [lengths[index]])
        too_many_tokens = max_batch_tokens is not None and current and width * (len(current) + 1) > max_batch_tokens
        if current and (len(current) >= batch_size or too_many_tokens):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches
