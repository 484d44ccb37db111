"""Chat-template facts about a tokenizer, and where each prompt part lands in the rendered text."""

from __future__ import annotations

from dataclasses import dataclass

from gnt.prompts.grid import GridPrompt, PartSpan

_SYSTEM_ROLE_BY_TEMPLATE: dict[str | None, bool] = {}


def supports_system_role(tokenizer) -> bool:
    """Whether the chat template renders a system turn (Gemma 2's raises or drops it); cached per template text."""
    template = getattr(tokenizer, "chat_template", None)
    if template not in _SYSTEM_ROLE_BY_TEMPLATE:
        probe = "gnt-system-probe-7f3a"
        try:
            text = tokenizer.apply_chat_template(
                [{"role": "system", "content": probe}, {"role": "user", "content": "hi"}], tokenize=False
            )
            _SYSTEM_ROLE_BY_TEMPLATE[template] = probe in text
        except Exception:  # noqa: BLE001 - any template error means "no system role"
            _SYSTEM_ROLE_BY_TEMPLATE[template] = False
    return _SYSTEM_ROLE_BY_TEMPLATE[template]


def render_prompt_text(tokenizer, messages: list[dict[str, str]]) -> str:
    """The exact text a model sees for a prompt, ending with the assistant generation header."""
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


@dataclass(frozen=True)
class LocatedPart:
    """A prompt part with its absolute character span in the rendered prompt text."""

    part: PartSpan
    start: int
    end: int


def locate_parts(text: str, prompt: GridPrompt) -> list[LocatedPart]:
    """Absolute spans of every part of ``prompt`` inside its rendered text.

    Each turn's content is found in order after the previous one (chat templates copy contents verbatim, at most
    trimming outer whitespace, which our contents never have); the part offsets inside a turn come from the builder.
    Raises if a turn cannot be found, which means the template rewrote the content and spans would be wrong.
    """
    cursor = 0
    offsets: list[int] = []
    for message in prompt.messages:
        at = text.find(message["content"], cursor)
        if at < 0:
            raise ValueError(f"turn not found verbatim in the rendered prompt (role {message['role']}); spans unknown")
        offsets.append(at)
        cursor = at + len(message["content"])
    return [LocatedPart(p, offsets[p.message] + p.start, offsets[p.message] + p.end) for p in prompt.parts]
