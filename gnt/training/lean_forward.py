"""A training forward that computes only what the loss needs: labelled positions in the LM head, and a prompt
prefix that all rows of a batch share computed once.

Two costs dominate a LoRA step on prompt–completion rows whose prompts are long and alike (the grid's system text,
preamble, guidelines and shots, then one source sentence):

1. **The LM head.** TRL's fused head projects hidden states onto the vocabulary in tiles, never materialising the
   logits; on CUDA/XPU it projects only the positions that carry a label, but elsewhere it projects every position
   (its compaction is tied to Triton, to keep tile shapes stable for compilers such as Neuron's). On a CPU, with
   Gemma's 262k-token vocabulary, that is ~7x more head work than the completion needs.
   :func:`score_labelled_positions_only` makes it compact on the CPU too (no compiler there to appease).
2. **The shared prompt prefix.** Rows of one grid cell share every token up to their source sentence. When they
   are batched together (:class:`PromptGroupedSampler`), :func:`share_prompt_prefix` runs the backbone on that
   prefix once, repeats its key/value cache over the batch and runs only the rows' own suffixes on top. Causal
   attention makes this exact: no prefix position can see a suffix token, so the prefix states are those the full
   forward computes, and gradients flow back into the prefix through the repeated cache.
"""

from __future__ import annotations

import math
import random
import types
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from gnt.training.data import GROUP_FIELD, TARGET_LABEL

MIN_SHARED_TOKENS = 16
"""Below this many shared tokens the second backbone call costs more than it saves."""


def score_labelled_positions_only() -> None:
    """Make TRL's fused LM head project only labelled positions on every device, the CPU included.

    TRL 1.16 decides compaction with ``_use_triton(device)`` inside ``trl.trainer.utils``; its own kernels module
    keeps the real answer, so the torch tiles still run on the CPU. Idempotent.
    """
    import trl.trainer.utils as trl_utils

    if getattr(trl_utils._use_triton, "gnt_compact", False):
        return
    triton_check = trl_utils._use_triton

    def compact(device: Any) -> bool:
        return device.type == "cpu" or triton_check(device)

    compact.gnt_compact = True  # type: ignore[attr-defined]
    trl_utils._use_triton = compact


def shared_prefix_length(input_ids: Any, attention_mask: Any | None) -> int:
    """How many leading tokens every row of the batch has in common (and attends to: no padding among them)."""
    import torch

    if input_ids.dim() != 2 or input_ids.shape[0] < 2:
        return 0
    same = (input_ids == input_ids[:1]).all(dim=0)
    if attention_mask is not None:
        same &= attention_mask.bool().all(dim=0)
    differs = torch.nonzero(~same)
    return int(differs[0, 0]) if len(differs) else int(input_ids.shape[1])


def _cache_of(output: Any) -> Any:
    cache = getattr(output, "cache", None)
    return cache if cache is not None else getattr(output, "past_key_values", None)


@contextmanager
def checkpointed_layers(backbone: Any) -> Iterator[int]:
    """Checkpoint the decoder layers of ``backbone`` for the forward passes run inside the block; yields how many.

    Each layer keeps only its input and recomputes its activations during the backward pass (non-reentrant
    ``torch.utils.checkpoint``, which replays the random state, so LoRA dropout draws the same masks): the
    gradients are those of the plain forward, for about a third more compute on these batches. The recompute
    needs no flag, so the layers go back to running plainly when the block ends, before the backward pass.
    """
    from functools import partial

    from torch.utils.checkpoint import checkpoint
    from transformers.modeling_layers import GradientCheckpointingLayer

    layers = [m for m in backbone.modules() if isinstance(m, GradientCheckpointingLayer)]
    keys = ("gradient_checkpointing", "_gradient_checkpointing_func")
    before = [{key: layer.__dict__[key] for key in keys if key in layer.__dict__} for layer in layers]
    for layer in layers:
        layer.gradient_checkpointing = True
        layer._gradient_checkpointing_func = partial(checkpoint, use_reentrant=False)  # type: ignore[assignment]
    try:
        yield len(layers)
    finally:
        for layer, saved in zip(layers, before, strict=True):
            for key in keys:
                layer.__dict__.pop(key, None)
            layer.__dict__.update(saved)


def share_prompt_prefix(model: Any, min_tokens: int = MIN_SHARED_TOKENS) -> Any:
    """Patch the backbone of ``model`` (a causal LM, PEFT-wrapped or not) so a batch whose rows share a prefix of at
    least ``min_tokens`` tokens computes it once. Returns the patched backbone.

    The patched forward falls back to the original one whenever it could not be exact or would not help: a single
    row, embeddings passed instead of ids, a cache or explicit positions given, hidden states or attentions
    requested, activation checkpointing on (it disables the cache the prefix is handed over in), or a shared
    prefix shorter than ``min_tokens`` or covering the whole batch. A training batch that falls back only because
    its rows share too little (the mixed batches :class:`PromptGroupedSampler` puts at the end of an epoch) runs
    under :func:`checkpointed_layers`: every row then carries its whole prompt through the backbone, and keeping
    all of their activations would make those few batches the run's memory peak.
    """
    import torch

    causal_lm = model.get_base_model() if hasattr(model, "get_base_model") else model
    backbone = causal_lm.base_model if causal_lm.base_model is not causal_lm else causal_lm.model
    if getattr(backbone, "gnt_shared_prefix", False):
        return backbone
    original = backbone.forward

    def forward(self: Any, input_ids: Any = None, attention_mask: Any = None, **kwargs: Any) -> Any:
        plain = (
            input_ids is None
            or kwargs.get("inputs_embeds") is not None
            or kwargs.get("position_ids") is not None
            or kwargs.get("cache") is not None
            or kwargs.get("past_key_values") is not None
            or kwargs.get("output_hidden_states")
            or kwargs.get("output_attentions")
            or (getattr(self, "gradient_checkpointing", False) and self.training)
        )
        shared = 0 if plain else shared_prefix_length(input_ids, attention_mask)
        if shared < min_tokens or shared >= input_ids.shape[1]:
            if plain or not (self.training and torch.is_grad_enabled()):
                return original(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
            with checkpointed_layers(self):  # rows of several groups: bounded memory, the same gradients
                return original(input_ids=input_ids, attention_mask=attention_mask, **{**kwargs, "use_cache": False})
        rows, length = input_ids.shape
        kwargs = {k: v for k, v in kwargs.items() if k not in ("use_cache", "cache", "past_key_values", "position_ids")}
        head = original(input_ids=input_ids[:1, :shared],
                        attention_mask=None if attention_mask is None else attention_mask[:1, :shared],
                        use_cache=True, **kwargs)
        cache = _cache_of(head)
        if cache is None:  # a backbone that returns no cache: nothing to hand over
            return original(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        cache.batch_repeat_interleave(rows)
        positions = torch.arange(shared, length, device=input_ids.device).unsqueeze(0).expand(rows, -1)
        tail = original(input_ids=input_ids[:, shared:], attention_mask=attention_mask, position_ids=positions,
                        cache=cache, use_cache=True, **kwargs)
        hidden = torch.cat([head.last_hidden_state.expand(rows, -1, -1), tail.last_hidden_state], dim=1)
        return type(tail)(last_hidden_state=hidden)

    backbone.forward = types.MethodType(forward, backbone)
    backbone.gnt_shared_prefix = True
    return backbone


class PromptGroupedSampler:
    """Training order in which every run of ``batch_size`` consecutive rows comes from one prompt group (a grid
    cell), so the rows of a batch share their prompt prefix; groups and batches are shuffled, seeded per epoch.

    With ``units`` (a key per row), rows of one unit are batched together: a judge's references of one source (its
    gendered and its neutral translation, a minimal pair) then meet in one batch, so the gradient sees what tells
    them apart and nothing the two share. Otherwise, with ``labels`` (each row's target label), a batch also holds
    as many rows of each label as the group allows,
    alternating them: a batch whose rows pull the decision both ways in equal numbers moves no constant bias, so
    what the gradient teaches is the difference between the rows (what states a gender), not the label of the
    latest batches. Rows a group cannot fit into a whole batch (its size modulo ``batch_size``, and the surplus of
    its majority label when balancing) are pooled into mixed batches at the end of the order, which simply share
    and balance less. Every row appears exactly once per epoch.
    """

    def __init__(self, groups: Sequence[str], batch_size: int, seed: int,
                 labels: Sequence[str | None] | None = None, units: Sequence[str] | None = None) -> None:
        self.groups = list(groups)
        self.labels = list(labels) if labels is not None else None
        self.units = list(units) if units is not None else None
        self.batch_size = max(1, int(batch_size))
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.groups)

    def _unit_batches(self, indices: list[int], rng: random.Random) -> tuple[list[list[int]], list[int]]:
        """Units (rows sharing a unit key) in a shuffled order, laid end to end and cut into batches: a unit stays
        in one batch unless it straddles a cut. The remainder is the leftover."""
        assert self.units is not None
        by_unit: dict[str, list[int]] = defaultdict(list)
        for index in indices:
            by_unit[self.units[index]].append(index)
        order = sorted(by_unit)
        rng.shuffle(order)
        stream = [index for unit in order for index in by_unit[unit]]
        cut = len(stream) - len(stream) % self.batch_size
        return [stream[i:i + self.batch_size] for i in range(0, cut, self.batch_size)], stream[cut:]

    def _group_batches(self, indices: list[int], rng: random.Random) -> tuple[list[list[int]], list[int]]:
        size = self.batch_size
        if self.units is not None:
            return self._unit_batches(indices, rng)
        if self.labels is None or size < 2:
            rng.shuffle(indices)
            cut = len(indices) - len(indices) % size
            return [indices[i:i + size] for i in range(0, cut, size)], indices[cut:]
        by_label: dict[str | None, list[int]] = defaultdict(list)
        for index in indices:
            by_label[self.labels[index]].append(index)
        pools = [by_label[label] for label in sorted(by_label, key=str)]
        for pool in pools:
            rng.shuffle(pool)
        batches: list[list[int]] = []
        while sum(map(len, pools)) >= size and sum(1 for pool in pools if pool) >= min(2, len(pools)):
            batch: list[int] = []
            while len(batch) < size:  # round-robin over the labels: 4 + 4 in a batch of 8
                for pool in pools:
                    if pool and len(batch) < size:
                        batch.append(pool.pop())
            batches.append(batch)
        return batches, [index for pool in pools for index in pool]

    def batches(self) -> list[list[int]]:
        rng = random.Random(f"{self.seed}:{self.epoch}")
        members: dict[str, list[int]] = defaultdict(list)
        for index, group in enumerate(self.groups):
            members[group].append(index)
        whole, leftover = [], []
        for group in sorted(members):
            full, rest = self._group_batches(members[group], rng)
            whole += full
            leftover += rest
        rng.shuffle(whole)
        rng.shuffle(leftover)
        tail = [leftover[i:i + self.batch_size] for i in range(0, len(leftover), self.batch_size)]
        return whole + tail

    def __iter__(self) -> Iterator[int]:
        for batch in self.batches():
            yield from batch


def is_balanced(batch_labels: Sequence[str | None]) -> bool:
    """Whether a batch holds both labels, in numbers that differ by at most one."""
    counts = Counter(batch_labels)
    return len(counts) > 1 and max(counts.values()) - min(counts.values()) <= 1


def shared_rows_fraction(groups: Sequence[str], batch_size: int) -> float:
    """Share of rows that land in a single-group batch (what the log reports)."""
    counts: dict[str, int] = defaultdict(int)
    for group in groups:
        counts[group] += 1
    whole = sum(n - n % batch_size for n in counts.values())
    return whole / len(groups) if groups else 0.0


def expected_saving(prefix_tokens: float, row_tokens: float, batch_size: int) -> float:
    """Backbone tokens per row without / with sharing (a rough speed-up estimate for the log)."""
    shared = row_tokens - prefix_tokens + prefix_tokens / batch_size
    return row_tokens / shared if shared > 0 else math.inf


def decision_token_ids(tokenizer: Any, langs: Sequence[str] = (),
                       answers: Sequence[Sequence[str]] = ()) -> set[int]:
    """The token ids at which alternative answers first differ: the one token that carries the decision.

    For translation rows, a GENDERED and a NEUTRAL answer per language tag (for Gemma 3, ``G`` of ``G|ENDER|ED``
    against ``NE`` of ``NE|UTRAL``); ``answers`` adds other groups of alternatives, such as a judge's label replies
    (``{"label": "CORRECTLY GENDERED"}`` ... ``{"label": "NEUTRAL"}``: the label's first token).
    """
    from gnt.output_format import format_output

    groups = [[format_output(lang, label, "x") for label in ("GENDERED", "NEUTRAL")] for lang in langs]
    ids: set[int] = set()
    for group in [*groups, *answers]:
        encoded = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in group]
        at = next((i for i in range(min(map(len, encoded))) if len({e[i] for e in encoded}) > 1), None)
        if at is not None:
            ids.update(e[at] for e in encoded)
    return ids


def weigh_decision_token(model: Any, decision_ids: set[int], weight: float) -> None:
    """Scale the loss of each completion's decision token (its first token in ``decision_ids``) by ``weight``.

    The label is one token of a ~30-token completion, so with equal weights the translation's tokens dominate
    the gradient and the label drifts from one constant to the other before the model separates the sets. The
    weight acts on the gradient that reaches the final hidden state at the position predicting that token, which
    is exactly weighting that token's term of the loss (a final hidden state feeds only its own next-token
    prediction; the LM head is frozen under LoRA). The loss TRL logs stays the unweighted one, comparable across
    runs. Patches the forward TRL's fused LM head installed (call after the trainer is built).
    """
    import torch

    causal_lm = model.get_base_model() if hasattr(model, "get_base_model") else model
    backbone = causal_lm.base_model if causal_lm.base_model is not causal_lm else causal_lm.model
    fused = causal_lm.forward
    lookup = torch.tensor(sorted(decision_ids), dtype=torch.long)

    def forward(*args: Any, labels: Any = None, fused_lm_head: bool = False, **kwargs: Any) -> Any:
        if not (fused_lm_head and labels is not None and torch.is_grad_enabled()):
            return fused(*args, labels=labels, fused_lm_head=fused_lm_head, **kwargs)
        hits = torch.isin(labels, lookup.to(labels.device))
        rows = torch.nonzero(hits.any(dim=1)).flatten()
        first = hits.int().argmax(dim=1)[rows]  # the completion's first decision token in each row that has one
        scale = torch.ones(labels.shape[0], labels.shape[1], 1)
        scale[rows, first - 1] = weight  # the hidden state one position earlier predicts it

        def hook(_module: Any, _args: Any, output: Any) -> None:
            hidden = output.last_hidden_state
            if hidden.requires_grad:
                hidden.register_hook(lambda grad: grad * scale.to(grad.device, grad.dtype))

        handle = backbone.register_forward_hook(hook)
        try:
            return fused(*args, labels=labels, fused_lm_head=fused_lm_head, **kwargs)
        finally:
            handle.remove()

    causal_lm.forward = forward


def target_labels(dataset: Any) -> list[str | None]:
    """Each training row's target label: its ``target_label`` column where rows carry one (a judge's rows), else
    GENDERED/NEUTRAL read from its completion (SFT) or chosen answer (DPO)."""
    from gnt.output_format import label_of

    if TARGET_LABEL in dataset.column_names:
        return [str(label) if label is not None else None for label in dataset[TARGET_LABEL]]
    column = "completion" if "completion" in dataset.column_names else "chosen"
    return [label_of(" ".join(m["content"] for m in messages)) for messages in dataset[column]]


def make_lean(trainer: Any, share_prefix: bool, balance_labels: bool = False,
              group_column: str = GROUP_FIELD, units: str | None = None) -> dict:
    """Apply the savings to a built TRL trainer; returns what was applied (logged and kept in the run record).

    ``share_prefix`` batches rows by ``group_column`` (the grid cell every training row records) and patches the
    policy's backbone; it is skipped, with the reason, under packing (rows are already concatenated) and when
    the dataset has no such column. ``balance_labels`` makes every batch hold GENDERED and NEUTRAL targets in
    equal numbers (see :class:`PromptGroupedSampler`).
    """
    score_labelled_positions_only()
    applied: dict[str, Any] = {"labelled_positions_only": True, "shared_prefix": False, "balanced_labels": False}
    if not (share_prefix or balance_labels or units):
        return applied
    args, dataset = trainer.args, trainer.train_dataset
    if getattr(args, "packing", False) or getattr(args, "padding_free", False):
        applied["skipped"] = "packing/padding-free rows are concatenated, not batched"
        return applied
    groups = ["all"] * len(dataset)
    if share_prefix:
        if group_column in dataset.column_names:
            groups = [str(value) for value in dataset[group_column]]
        else:
            applied["shared_prefix_skipped"] = f"the training rows have no '{group_column}' column"
            share_prefix = False
    labels = target_labels(dataset) if balance_labels else None
    unit_keys = None
    if units:
        if units not in dataset.column_names:
            from gnt.training.config import TrainingError

            raise TrainingError(f"batch_units: the training rows have no '{units}' column (they have "
                                f"{', '.join(dataset.column_names)})")
        unit_keys = [str(value) for value in dataset[units]]
        applied["batch_units"] = units
    sampler = PromptGroupedSampler(groups, args.per_device_train_batch_size, args.seed, labels, unit_keys)
    trainer._get_train_sampler = lambda train_dataset=None: sampler
    if share_prefix:
        share_prompt_prefix(trainer.model)
        applied.update(shared_prefix=True, unshared_batches_checkpointed=True, rows_in_single_cell_batches=round(
            shared_rows_fraction(groups, args.per_device_train_batch_size), 3))
    if labels is not None:
        balanced = sum(len(batch) for batch in sampler.batches() if is_balanced([labels[i] for i in batch]))
        applied.update(balanced_labels=True, rows_in_balanced_batches=round(balanced / max(1, len(labels)), 3))
    return applied
