"""The forced token sequence of one row: which prompt part every token belongs to, and the two target spans.

Tokens are mapped to parts through character spans (the builder's :class:`~gnt.prompts.grid.PartSpan`, located in
the rendered text by :func:`~gnt.prompts.chat.locate_parts`) and the tokenizer's offset mapping, never by searching
for token strings, so a word that occurs in several parts (``<en>``, a name repeated in a shot) is never confused.

The prompt and the model's output are tokenised separately and concatenated: that is what the model saw while it
generated (the prompt is tokenised on its own, then each generated token appended). The output itself is
re-tokenised from its text, which is the canonical tokenisation; the generated ids are not stored by the evaluator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gnt.prompts.chat import locate_parts, render_prompt_text
from gnt.prompts.grid import GridPrompt, PartSpan

TARGETS: tuple[str, ...] = ("S_L", "S_T")
LABEL_PART = "label"
TRANSLATION_PART = "translation"
FORMAT_PART = "output_format"

# Display order of the part groups (the paper's Fig. 6/7 x axis).
GROUP_ORDER: tuple[str, ...] = (
    "system",
    "preamble",
    "guidelines",
    "shot_gendered_user",
    "shot_gendered_assistant",
    "shot_neutral_user",
    "shot_neutral_assistant",
    "source",
    "label",
)
PROMPT_KINDS = ("system", "preamble", "guidelines", "shot_user", "shot_assistant", "source")

# Same marker as gnt.output_format.extract (kept in step by a test): the label word inside ``**...**``.
_LABEL_MARKER = re.compile(r"\*\*\s*(GENDERED|NEUTRAL)\s*\*\*")


@dataclass(frozen=True)
class PartInfo:
    """What a part is, for ranking and aggregation. ``group`` pools the shots by type and role."""

    name: str
    kind: str
    group: str
    shot: int | None = None
    shot_type: str | None = None


def part_info(part: PartSpan) -> PartInfo:
    """The attribution view of a prompt part (``shot2_user`` of a neutral shot → group ``shot_neutral_user``)."""
    if part.kind in ("shot_user", "shot_assistant"):
        role = "user" if part.kind == "shot_user" else "assistant"
        group = f"shot_{part.shot_type}_{role}"
    else:
        group = part.kind
    return PartInfo(part.name, part.kind, group, part.shot, part.shot_type)


OUTPUT_PARTS: dict[str, PartInfo] = {
    LABEL_PART: PartInfo(LABEL_PART, "label", "label"),
    TRANSLATION_PART: PartInfo(TRANSLATION_PART, "translation", "translation"),
    FORMAT_PART: PartInfo(FORMAT_PART, "output_format", "output_format"),
}


@dataclass(frozen=True)
class OutputSpans:
    """Character spans inside the raw output: the label word and the text inside the first bracket pair."""

    label: tuple[int, int] | None
    translation: tuple[int, int] | None


def output_spans(raw: str | None, lang: str) -> OutputSpans:
    """Where the label and the translation sit in a raw output, following :func:`gnt.output_format.extract`.

    The label span is the word (GENDERED/NEUTRAL) inside the ``**`` marker; the translation span is the text inside
    the first bracket pair after it, matched by depth and stripped of outer whitespace. Either is ``None`` when the
    output does not have it (the row then gets no score for that target). The language tag is not checked: a wrong
    tag does not change what the model conditioned on.
    """
    if not raw:
        return OutputSpans(None, None)
    marker = _LABEL_MARKER.search(raw)
    if marker is None:
        return OutputSpans(None, None)
    label = (marker.start(1), marker.end(1))
    open_at = raw.find("[", marker.end())
    if open_at < 0:
        return OutputSpans(label, None)
    depth = 0
    for index in range(open_at, len(raw)):
        if raw[index] == "[":
            depth += 1
        elif raw[index] == "]":
            depth -= 1
            if depth == 0:
                start, end = open_at + 1, index
                while start < end and raw[start].isspace():
                    start += 1
                while end > start and raw[end - 1].isspace():
                    end -= 1
                return OutputSpans(label, (start, end) if end > start else None)
    return OutputSpans(label, None)


def assign_parts(
    text: str, offsets: list[tuple[int, int]], spans: list[tuple[str, int, int]]
) -> tuple[list[str | None], int]:
    """The part of every token (``None``: outside every part, i.e. chat-template text) and the straddle count.

    A token belongs to a part when its text, stripped of outer whitespace, lies inside the part's span (a token
    like ``".\\n"`` ending a part and starting the separator belongs to the part). A token whose stripped text
    crosses a part boundary goes to the part it overlaps most and is counted as a straddle (byte-level BPE with a
    Qwen/Llama pre-tokeniser never produces one on our prompts; a test checks it).
    """
    ordered = sorted(spans, key=lambda s: s[1])
    parts: list[str | None] = []
    straddles = 0
    for start, end in offsets:
        core_start, core_end = start, end
        while core_start < core_end and text[core_start].isspace():
            core_start += 1
        while core_end > core_start and text[core_end - 1].isspace():
            core_end -= 1
        if core_start == core_end:  # a pure-whitespace token: judged by its whole extent
            core_start, core_end = start, end
        if core_start == core_end:
            parts.append(None)
            continue
        best, best_overlap, inside = None, 0, False
        for name, p_start, p_end in ordered:
            overlap = min(core_end, p_end) - max(core_start, p_start)
            if overlap <= 0:
                continue
            if p_start <= core_start and core_end <= p_end:
                best, inside = name, True
                break
            if overlap > best_overlap:
                best, best_overlap = name, overlap
        if best is not None and not inside:
            straddles += 1
        parts.append(best)
    return parts, straddles


@dataclass
class AttributionInput:
    """One row ready for the engine: token ids, each token's part, and the token positions of each target span.

    ``targets[t]`` lists positions ``j`` whose logit (row ``j-1`` of the logits, column ``input_ids[j]``) is summed
    for target ``t``; an absent or empty entry means the output has no such span.
    """

    row_id: str
    input_ids: list[int]
    offsets: list[tuple[int, int]]
    token_parts: list[str | None]
    parts: dict[str, PartInfo]
    prompt_len: int
    text: str
    targets: dict[str, list[int]] = field(default_factory=dict)
    straddles: int = 0

    def __len__(self) -> int:
        return len(self.input_ids)

    def ranked(self, target: str) -> list[int]:
        """Positions ranked for ``target``: prompt parts for S_L; prompt parts except the source, plus the label,
        for S_T (docs/attribution.md). Chat-template tokens, the output's format tokens and the target tokens are never ranked."""
        keep: list[int] = []
        for index, name in enumerate(self.token_parts):
            if name is None:
                continue
            kind = self.parts[name].kind
            if target == "S_L":
                ok = index < self.prompt_len and kind in PROMPT_KINDS
            elif target == "S_T":
                ok = (index < self.prompt_len and kind in PROMPT_KINDS and kind != "source") or name == LABEL_PART
            else:
                raise ValueError(f"unknown target {target!r}; expected one of {TARGETS}")
            if ok:
                keep.append(index)
        return keep

    def token_text(self, index: int) -> str:
        start, end = self.offsets[index]
        return self.text[start:end]


def _encode(tokenizer, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return list(encoding["input_ids"]), [tuple(o) for o in encoding["offset_mapping"]]


def build_input(
    tokenizer, prompt: GridPrompt, output: str | None, *, row_id: str = "", lang: str | None = None
) -> AttributionInput:
    """Tokenise the rendered prompt plus the forced ``output`` and map every token to its part and target.

    ``tokenizer`` must be a fast tokenizer (offset mapping); the prompt is rendered with the chat template's
    generation header exactly as the evaluator renders it. With ``output=None`` only the prompt is built.
    """
    if not getattr(tokenizer, "is_fast", False):
        raise TypeError("attribution needs a fast tokenizer (offset mapping) to map tokens to prompt parts")
    prompt_text = render_prompt_text(tokenizer, prompt.as_messages())
    located = locate_parts(prompt_text, prompt)
    parts = {lp.part.name: part_info(lp.part) for lp in located}
    spans = [(lp.part.name, lp.start, lp.end) for lp in located]
    ids, offsets = _encode(tokenizer, prompt_text)
    prompt_len = len(ids)
    text = prompt_text
    targets: dict[str, list[int]] = {}
    if output:
        out_ids, out_offsets = _encode(tokenizer, output)
        shift = len(prompt_text)
        ids += out_ids
        offsets += [(a + shift, b + shift) for a, b in out_offsets]
        text = prompt_text + output
        found = output_spans(output, lang or prompt.cell.lang)
        parts.update(OUTPUT_PARTS)
        spans.append((FORMAT_PART, shift, shift + len(output)))  # the rest of the output: tag, asterisks, brackets
        for name, span in ((LABEL_PART, found.label), (TRANSLATION_PART, found.translation)):
            if span is not None:
                spans.append((name, shift + span[0], shift + span[1]))
        token_parts, straddles = _assign_output_aware(text, offsets, spans, prompt_len)
        for target, name in (("S_L", LABEL_PART), ("S_T", TRANSLATION_PART)):
            span = found.label if name == LABEL_PART else found.translation
            if span is None:
                continue
            a, b = shift + span[0], shift + span[1]
            # Every output token that overlaps the span is a target token (a token like ".]" carries the end).
            positions = [j for j in range(prompt_len, len(ids)) if offsets[j][0] < b and offsets[j][1] > a]
            targets[target] = [j for j in positions if j > 0]
    else:
        token_parts, straddles = assign_parts(text, offsets, spans)
    return AttributionInput(row_id, ids, offsets, token_parts, parts, prompt_len, text, targets, straddles)


def _assign_output_aware(
    text: str, offsets: list[tuple[int, int]], spans: list[tuple[str, int, int]], prompt_len: int
) -> tuple[list[str | None], int]:
    """Prompt tokens against prompt parts; output tokens against label/translation first, then the format part."""
    prompt_spans = [s for s in spans if s[0] not in OUTPUT_PARTS]
    prompt_parts, straddles = assign_parts(text, offsets[:prompt_len], prompt_spans)
    specific = [s for s in spans if s[0] in (LABEL_PART, TRANSLATION_PART)]
    output_parts: list[str | None] = []
    for start, end in offsets[prompt_len:]:
        overlapping = [name for name, p_start, p_end in specific if min(end, p_end) > max(start, p_start)]
        output_parts.append(overlapping[0] if overlapping else FORMAT_PART)
    return prompt_parts + output_parts, straddles
