"""One prompt builder for every grid cell, used for training data and for evaluation alike.

A cell is language × configuration (G+S, G, S, None) × shots (0, 2, 4). A prompt is a list of chat turns built
from parts in a fixed order: system (S) · preamble · guidelines (G) · shots · source. Consecutive parts of the same
role are merged into one turn with a blank line between them, so the preamble, guidelines and the first shot's
source share the first user turn. The builder records the character span of every part inside its turn; the
attribution analysis maps tokens to parts through these spans.

Shot order is seeded per (seed, language, shot count), not per configuration, so the four configurations of a
language differ only in the presence of S and G; the order is recorded with every rendered prompt.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gnt.data.entry import LANGUAGES, Language
from gnt.prompts.texts import Demonstration, PromptTexts, cached_prompt_texts

CONFIGS: tuple[str, ...] = ("G+S", "G", "S", "None")
SHOT_COUNTS: tuple[int, ...] = (0, 2, 4)
TURN_SEPARATOR = "\n\n"
#: Seed of the shot order when a recipe names none (recorded with every rendered prompt).
DEFAULT_SHOT_SEED = 0


def source_turn(source: str) -> str:
    """The user text that carries an English source."""
    return f"<en> {source}"


@dataclass(frozen=True, order=True)
class Cell:
    """One grid cell. ``name`` (``it/G+S/4``) is how cells are keyed in results files."""

    lang: Language
    config: str
    shots: int

    def __post_init__(self) -> None:
        if self.lang not in LANGUAGES:
            raise ValueError(f"unknown language {self.lang!r}; expected one of {LANGUAGES}")
        if self.config not in CONFIGS:
            raise ValueError(f"unknown prompt configuration {self.config!r}; expected one of {CONFIGS}")
        if self.shots not in SHOT_COUNTS:
            raise ValueError(f"unsupported shot count {self.shots!r}; expected one of {SHOT_COUNTS}")

    @property
    def name(self) -> str:
        return f"{self.lang}/{self.config}/{self.shots}"

    @classmethod
    def parse(cls, name: str) -> Cell:
        lang, config, shots = name.split("/")
        return cls(lang, config, int(shots))  # type: ignore[arg-type]

    @property
    def has_system(self) -> bool:
        return self.config in ("G+S", "S")

    @property
    def has_guidelines(self) -> bool:
        return self.config in ("G+S", "G")


def grid_cells(
    langs: Iterable[str] = LANGUAGES, configs: Iterable[str] = CONFIGS, shots: Iterable[int] = SHOT_COUNTS
) -> list[Cell]:
    """All cells of the selected slice of the grid, in a stable order."""
    return [Cell(lang, config, n) for lang in langs for config in configs for n in shots]  # type: ignore[arg-type]


@dataclass(frozen=True)
class PartSpan:
    """Where one prompt part sits: turn ``message`` of the prompt, characters ``start:end`` of its content.

    ``kind`` is one of system, preamble, guidelines, shot_user, shot_assistant, source; ``shot`` is the 1-based
    shot number and ``shot_type`` gendered/neutral for shot parts.
    """

    name: str
    kind: str
    message: int
    start: int
    end: int
    shot: int | None = None
    shot_type: str | None = None


@dataclass(frozen=True)
class GridPrompt:
    """A rendered prompt: chat turns, the span of every part, and the shots used in their order."""

    cell: Cell
    messages: tuple[dict[str, str], ...]
    parts: tuple[PartSpan, ...]
    shot_sources: tuple[str, ...]

    def part_text(self, part: PartSpan) -> str:
        return self.messages[part.message]["content"][part.start : part.end]

    def hash(self) -> str:
        """Content hash of the turns (what a generation cache keys on, together with model and decoding)."""
        return hashlib.sha256(json.dumps(self.messages, ensure_ascii=False).encode()).hexdigest()[:24]

    def as_messages(self) -> list[dict[str, str]]:
        return [dict(m) for m in self.messages]


@dataclass(frozen=True)
class _Segment:
    """One prompt part before turns are merged: its role, its text and the span it will get (placed by
    :func:`merge_segments`)."""

    role: str
    text: str
    part: PartSpan


def _segment(role: str, text: str, name: str, kind: str, shot: int | None = None,
             shot_type: str | None = None) -> _Segment:
    return _Segment(role, text, PartSpan(name, kind, -1, 0, 0, shot, shot_type))


def merge_segments(segments: Sequence[_Segment]) -> tuple[tuple[dict[str, str], ...], tuple[PartSpan, ...]]:
    """Merge consecutive same-role segments into turns, keeping each segment's span inside its turn."""
    messages: list[dict[str, str]] = []
    parts: list[PartSpan] = []
    for segment in segments:
        if messages and messages[-1]["role"] == segment.role:
            start = len(messages[-1]["content"]) + len(TURN_SEPARATOR)
            messages[-1]["content"] += TURN_SEPARATOR + segment.text
        else:
            start = 0
            messages.append({"role": segment.role, "content": segment.text})
        parts.append(replace(segment.part, message=len(messages) - 1, start=start, end=start + len(segment.text)))
    return tuple(messages), tuple(parts)


def fit_messages(messages: Sequence[dict[str, str]], system_role: bool) -> list[dict[str, str]]:
    """Adapt stored turns to a chat template: without a system role the system text opens the first user turn.

    Used on stored training rows (built without knowing the model); same merge rule as the builder.
    """
    segments = [
        _segment("user" if (m["role"] == "system" and not system_role) else m["role"], m["content"], "turn", "turn")
        for m in messages
    ]
    merged, _ = merge_segments(segments)
    return [dict(m) for m in merged]


class PromptGrid:
    """Renders any grid cell for any English source with the project's (or a user's) prompt texts."""

    def __init__(self, langs: Iterable[str] = LANGUAGES, prompts_dir: str | Path | None = None, seed: int = DEFAULT_SHOT_SEED) -> None:
        self.langs = tuple(langs)
        self.seed = seed
        self.prompts_dir = str(prompts_dir) if prompts_dir else None
        self.texts: dict[str, PromptTexts] = {lang: cached_prompt_texts(lang, self.prompts_dir) for lang in self.langs}

    def demonstration_keys(self) -> set[str]:
        """Source keys of every demonstration: these sources are excluded from training and evaluation."""
        return {d.source_key for texts in self.texts.values() for d in texts.demonstrations}

    def shots_for(self, lang: str, shots: int) -> list[Demonstration]:
        """The seeded shots of a language and shot count: half gendered then half neutral."""
        if shots == 0:
            return []
        texts = self.texts[lang]
        rng = random.Random(f"gnt-shots|{self.seed}|{lang}|{shots}")
        half = shots // 2
        gendered = rng.sample(list(texts.gendered_demos), half)
        neutral = rng.sample(list(texts.neutral_demos), half)
        return gendered + neutral

    def shot_orders(self, cells: Iterable[Cell]) -> dict[str, list[str]]:
        """The recorded shot order of each cell: the demonstrations' sources, in prompt order."""
        return {cell.name: [d.source for d in self.shots_for(cell.lang, cell.shots)] for cell in cells}

    def render(self, source: str, cell: Cell, system_role: bool = True) -> GridPrompt:
        """Build the chat turns of one cell for one English source (``system_role=False`` for Gemma-like templates)."""
        if cell.lang not in self.texts:
            raise ValueError(f"language {cell.lang!r} was not loaded; this grid has {self.langs}")
        texts = self.texts[cell.lang]
        segments: list[_Segment] = []
        if cell.has_system:
            segments.append(_segment("system" if system_role else "user", texts.system, "system", "system"))
        segments.append(_segment("user", texts.preamble, "preamble", "preamble"))
        if cell.has_guidelines:
            segments.append(_segment("user", texts.guidelines, "guidelines", "guidelines"))
        demos = self.shots_for(cell.lang, cell.shots)
        for number, demo in enumerate(demos, start=1):
            segments.append(_segment("user", source_turn(demo.source), f"shot{number}_user", "shot_user", number, demo.kind))
            segments.append(
                _segment("assistant", demo.answer(cell.lang), f"shot{number}_assistant", "shot_assistant", number, demo.kind)
            )
        segments.append(_segment("user", source_turn(source), "source", "source"))
        messages, parts = merge_segments(segments)
        return GridPrompt(cell, messages, parts, tuple(d.source for d in demos))
