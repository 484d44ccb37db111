"""Checks on the chat template and vocabulary that catch, before training, what would only show at serving time.

- Targets must end with the template's end-of-turn token, or the trained model never stops generating.
- The vocabulary must not grow and embeddings must not be resized: vLLM cannot serve LoRA adapters that add tokens.

(Packing and attention kernels: :mod:`gnt.training.attention`.)
"""

from __future__ import annotations

from typing import Any

from gnt.training.config import TrainingError


def completion_tail(tokenizer: Any, prompt: list[dict], completion: list[dict]) -> list[int]:
    """Token ids the SFT loss is computed on: the rendered completion after the prompt's generation header."""
    def ids(messages: list[dict], **kwargs: Any) -> list[int]:
        out = tokenizer.apply_chat_template(messages, tokenize=True, **kwargs)
        return list(out["input_ids"] if hasattr(out, "keys") else out)

    prompt_ids = ids(prompt, add_generation_prompt=True)
    full_ids = ids(prompt + completion)
    shared = 0
    for a, b in zip(prompt_ids, full_ids, strict=False):
        if a != b:
            break
        shared += 1
    return full_ids[shared:]


def check_target_eos(tokenizer: Any, row: dict, eos_token: str | None) -> str:
    """Raise unless the rendered completion ends with the end-of-turn token (only whitespace after it).

    ``eos_token`` is the recipe's override (SFTConfig ``eos_token``) or the tokenizer's. Returns the token checked.
    """
    token = eos_token or tokenizer.eos_token
    if token is None:
        raise TrainingError("the tokenizer has no eos_token; set `eos_token:` in the recipe to the template's turn end")
    eos_id = tokenizer.convert_tokens_to_ids(token)
    tail = completion_tail(tokenizer, row["prompt"], row["completion"])
    positions = [i for i, t in enumerate(tail) if t == eos_id]
    if not positions or tokenizer.decode(tail[positions[-1] + 1:]).strip():
        rendered = tokenizer.decode(tail[-12:])
        raise TrainingError(
            f"training targets do not end with the end-of-turn token {token!r}: the rendered completion ends with "
            f"{rendered!r}. A model trained like this never stops. Set `eos_token:` in the recipe to the token the "
            "chat template closes an assistant turn with (e.g. <end_of_turn> for Gemma, <|eot_id|> for Llama 3)."
        )
    return token


class VocabularyGuard:
    """Remembers the vocabulary and embedding sizes at start; :meth:`check` raises if either changed."""

    def __init__(self, tokenizer: Any, model_config: Any) -> None:
        self.tokens = len(tokenizer)
        self.vocab_size = model_config.get_text_config().vocab_size

    def check(self, tokenizer: Any, model: Any) -> None:
        problems = []
        if len(tokenizer) != self.tokens:
            problems.append(f"the tokenizer grew from {self.tokens} to {len(tokenizer)} tokens")
        embeddings = model.get_input_embeddings()
        rows = getattr(embeddings, "num_embeddings", None)
        weight = getattr(embeddings, "weight", None)
        if rows is None and weight is not None and weight.dim() == 2:
            rows = weight.shape[0]
        # ZeRO-3 partitions parameters (shape 0 on each rank): only compare a materialised embedding
        if rows and rows != self.vocab_size:
            problems.append(f"the input embeddings were resized from {self.vocab_size} to {rows} rows")
        if problems:
            raise TrainingError(
                "; ".join(problems) + ". vLLM cannot serve LoRA adapters that add vocabulary: use the model's own "
                "chat template and special tokens (no chat_template_path that adds tokens)."
            )
