"""DPO on the decision alone: each preference pair is scored at the first completion token where its chosen and
rejected answers differ.

A ``label_decision`` pair holds the same translation under the correct and the wrong label. DPO over the whole
answer also scores the translation *given* each label, P(translation | NEUTRAL) against P(translation |
GENDERED): dozens of tokens whose gradients outweigh the one label token and, measured on the Gemma demo's dev
rows, drag the decision towards one label (``bench/results/dpo_dev.json``). Everything before the first
differing token is the same text in the same context, so it cancels in the DPO margin anyway; keeping only that
token makes the margin β·[(log π − log π_ref)(right label) − (log π − log π_ref)(wrong label)] at the point where the
model decides: a logistic loss on the recognition decision, relative to the SFT reference. Pairs whose answers
differ in more than the label (Ref-N against Ref-G) are scored at their first difference as well, which is the
label too in the project's output format.
"""

from __future__ import annotations

from typing import Any


def first_difference(chosen: list[int], rejected: list[int]) -> int | None:
    """Index of the first token where two completions differ (one ending early counts), None when equal."""
    for index, (a, b) in enumerate(zip(chosen, rejected, strict=False)):
        if a != b:
            return index
    return None if len(chosen) == len(rejected) else min(len(chosen), len(rejected))


class DecisionTokenCollator:
    """Wraps TRL's preference collator: the ``completion_mask`` keeps only each pair's first differing token.

    TRL's batch holds the chosen answers in its first half and the rejected ones, in the same order, in its second;
    the policy's and the reference's log-probabilities are both summed over this mask, so they stay comparable.
    A pair with identical answers keeps no token (a constant loss, no gradient).
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.pairs = 0
        self.identical = 0

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        batch = self.inner(examples)
        ids, mask = batch["input_ids"], batch["completion_mask"]
        half = mask.shape[0] // 2
        kept = mask.new_zeros(mask.shape)
        for row in range(half):
            positions = [mask[row].nonzero().flatten(), mask[row + half].nonzero().flatten()]
            tokens = [ids[row][positions[0]].tolist(), ids[row + half][positions[1]].tolist()]
            index = first_difference(*tokens)
            self.pairs += 1
            if index is None:
                self.identical += 1
                continue
            for side, offset in ((0, 0), (1, half)):
                if index < len(positions[side]):
                    kept[row + offset, positions[side][index]] = 1
        batch["completion_mask"] = kept
        return batch


def score_decision_token_only(trainer: Any) -> dict:
    """Replace a built DPOTrainer's collator by :class:`DecisionTokenCollator`; returns what the run record keeps."""
    trainer.data_collator = DecisionTokenCollator(trainer.data_collator)
    return {"decision_token_only": True}
