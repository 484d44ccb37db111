"""The grid's output format ``<lang> **LABEL** [translation]``: rendering, the decoding regex, and extraction.

Extraction never raises: an output that does not follow the format yields an :class:`Extraction` with an
``error`` code, counted per cell by the metrics. Error codes:

- ``empty``: the output is empty or whitespace;
- ``no_label``: no ``**GENDERED**`` / ``**NEUTRAL**`` marker;
- ``wrong_lang_tag``: a marker is there but the ``<xx>`` tag before it is missing or names another language;
- ``no_translation``: no ``[`` after the label;
- ``unterminated``: the ``[`` is never closed (typically a generation cut at the token limit);
- ``empty_translation``: ``[]``;
- ``placeholder``: the translation is the format's own placeholder word (``[translation]``): the model copied the
  answer template of the instructions instead of translating. Small models do this for every input at zero
  shots; counting it as a translation would report a model that never translates as error-free.

The translation is the text inside the first bracket *pair*, matched by depth, so a translation that itself holds
brackets (``[A6-0123/2009]``) is extracted whole instead of being cut at its first ``]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LABELS = ("GENDERED", "NEUTRAL")
PLACEHOLDER = "translation"
"""The word the prompt's answer-format lines put in the brackets (``<it> **NEUTRAL** [translation]``)."""
_LABEL = re.compile(r"\*\*\s*(GENDERED|NEUTRAL)\s*\*\*")
_TAG_BEFORE = re.compile(r"<([a-z]{2})>\s*$")


def format_output(lang: str, label: str, translation: str) -> str:
    """The assistant text a correct answer consists of."""
    if label not in LABELS:
        raise ValueError(f"label must be one of {LABELS}, got {label!r}")
    return f"<{lang}> **{label}** [{translation}]"


def label_of(text: str) -> str | None:
    """The first ``**GENDERED**``/``**NEUTRAL**`` marker's label in a text, else None."""
    found = _LABEL.search(text)
    return found.group(1) if found else None


def output_regex(lang: str) -> str:
    """The constrained-decoding regex of one language.

    The published grid regex gives ``\\[[^\\]]+\\]`` for the translation; that cannot express a translation of a source that holds
    brackets, so ours also admits one level of balanced brackets inside. Every string that regex accepts
    without a ``[`` inside is accepted here too.
    """
    body = r"(?:[^\[\]]|\[[^\[\]]*\])+"
    return rf"<{lang}>\s\*\*(GENDERED|NEUTRAL)\*\*\s\[{body}\]"


@dataclass(frozen=True)
class Extraction:
    """What was read from one raw output. ``label``/``translation`` are filled when they could be read."""

    label: str | None
    translation: str | None
    error: str | None

    @property
    def ok(self) -> bool:
        return self.error is None


def _bracket_body(text: str, start: int) -> tuple[str | None, str | None]:
    """Text inside the bracket opened at ``start``, matched by depth; (None, code) when it never closes."""
    depth = 0
    for index in range(start, len(text)):
        char = text[index]
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return text[start + 1 : index], None
    return None, "unterminated"


def extract(text: str | None, lang: str) -> Extraction:
    """Read label and translation from a raw output in the grid's format (see module doc for error codes)."""
    if text is None or not text.strip():
        return Extraction(None, None, "empty")
    marker = _LABEL.search(text)
    if marker is None:
        return Extraction(None, None, "no_label")
    label = marker.group(1)
    tag = _TAG_BEFORE.search(text[: marker.start()])
    open_at = text.find("[", marker.end())
    if open_at < 0:
        return Extraction(label, None, "no_translation")
    body, error = _bracket_body(text, open_at)
    if error:
        return Extraction(label, text[open_at + 1 :].strip() or None, error)
    translation = body.strip()
    if not translation:
        return Extraction(label, None, "empty_translation")
    if translation.strip(" .").lower() == PLACEHOLDER:
        return Extraction(label, translation, "placeholder")
    if tag is None or tag.group(1) != lang:
        return Extraction(label, translation, "wrong_lang_tag")
    return Extraction(label, translation, None)
