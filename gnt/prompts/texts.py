"""Prompt texts as data: system prompt, preamble, per-language guidelines and demonstrations.

The texts live in ``data/prompts/`` (``common.yaml`` + ``{lang}.yaml``) and a user can point at another directory
with the same layout (for example a paper's official prompts). Loading validates what it reads, because the public
prompt files of the field have known defects (a Greek demonstration whose gender contradicts its source): every
problem is reported with file, line and key, all at once.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from gnt.data.entry import LANGUAGE_NAMES, Language, source_key
from gnt.data.errors import DataError, DataErrors
from gnt.output_format import format_output
from gnt.paths import PROMPTS_DIR

_F_CUES = {
    "she", "her", "hers", "herself", "mrs", "ms", "miss", "madam", "madame", "woman", "women", "lady", "ladies",
    "sister", "mother", "daughter", "wife", "girl", "chairwoman", "spokeswoman", "businesswoman", "congresswoman",
}
_M_CUES = {
    "he", "him", "his", "himself", "mr", "sir", "man", "men", "gentleman", "gentlemen", "brother", "father", "son",
    "husband", "boy", "chairman", "spokesman", "businessman", "congressman",
}


def source_gender_cues(source: str) -> dict[str, set[str]]:
    """English words in ``source`` that state a referent's gender, by gender (proper names are not cues)."""
    words = set(re.findall(r"[a-z]+", source.casefold()))
    return {"F": words & _F_CUES, "M": words & _M_CUES}


@dataclass(frozen=True)
class Demonstration:
    """One shot: an English source and its correct answer. ``set`` decides the label (Set-G → GENDERED)."""

    set: str
    gender: str | None
    source: str
    translation: str
    europarl_id: str = ""
    gendered_words: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        return "GENDERED" if self.set == "Set-G" else "NEUTRAL"

    @property
    def kind(self) -> str:
        """``gendered`` or ``neutral``: the type attribution reports each shot under."""
        return "gendered" if self.set == "Set-G" else "neutral"

    def answer(self, lang: str) -> str:
        return format_output(lang, self.label, self.translation)

    @property
    def source_key(self) -> str:
        return source_key(self.source)


@dataclass(frozen=True)
class PromptTexts:
    """Everything the grid needs to render prompts of one language."""

    lang: Language
    system: str
    preamble: str
    guidelines: str
    demonstrations: tuple[Demonstration, ...]
    content_hash: str

    @property
    def gendered_demos(self) -> tuple[Demonstration, ...]:
        return tuple(d for d in self.demonstrations if d.set == "Set-G")

    @property
    def neutral_demos(self) -> tuple[Demonstration, ...]:
        return tuple(d for d in self.demonstrations if d.set == "Set-N")


def _load_yaml_with_lines(path: Path) -> tuple[dict, dict[str, int]]:
    """Parse YAML and remember the line of each top-level key and of each demonstration item."""
    try:
        text = path.read_text(encoding="utf-8")
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except FileNotFoundError as exc:
        raise DataError("prompt file not found", path) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise DataError(f"malformed YAML: {getattr(exc, 'problem', exc)}", path, mark.line + 1 if mark else None) from exc
    if not isinstance(data, dict):
        raise DataError("expected a mapping of keys (system, preamble, guidelines, demonstrations)", path, 1)
    lines: dict[str, int] = {}
    for key_node, value_node in node.value:
        lines[key_node.value] = key_node.start_mark.line + 1
        if key_node.value == "demonstrations" and isinstance(value_node, yaml.SequenceNode):
            for index, item in enumerate(value_node.value):
                lines[f"demonstrations[{index}]"] = item.start_mark.line + 1
    return data, lines


def _text(data: dict, key: str, path: Path, lines: dict[str, int], errors: list[DataError]) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        errors.append(DataError(f"missing or empty text {key!r}", path, lines.get(key, 1), key))
        return ""
    return value.strip()


def _demonstration(item: object, where: str, path: Path, line: int, errors: list[DataError]) -> Demonstration | None:
    if not isinstance(item, dict):
        errors.append(DataError("a demonstration must be a mapping", path, line, where))
        return None
    problems: list[str] = []
    set_name = item.get("set")
    gender = item.get("gender")
    source = str(item.get("source") or "").strip()
    translation = str(item.get("translation") or "").strip()
    if set_name not in ("Set-G", "Set-N"):
        problems.append(f"set must be Set-G or Set-N, got {set_name!r}")
    if not source or not translation:
        problems.append("source and translation must be non-empty")
    if "]" in translation and "[" not in translation:
        problems.append("translation holds an unbalanced ']', which the output format cannot carry")
    words: list[tuple[str, str]] = []
    for raw in item.get("gendered_words") or []:
        word, _, word_gender = str(raw).rpartition(":")
        if word_gender not in ("F", "M") or not word:
            problems.append(f"gendered word {raw!r} must look like 'word:F' or 'word:M'")
            continue
        words.append((word, word_gender))
        if word.casefold() not in translation.casefold():
            problems.append(f"gendered word {word!r} does not occur in the translation")
    if set_name == "Set-G":
        if gender not in ("F", "M"):
            problems.append(f"a gendered demonstration needs gender F or M, got {gender!r}")
        else:
            cues = source_gender_cues(source)
            other = "M" if gender == "F" else "F"
            if cues[other] and not cues[gender]:
                problems.append(
                    f"gender {gender} contradicts its source, whose cues say {other} ({', '.join(sorted(cues[other]))})"
                )
            wrong = [w for w, g in words if g != gender]
            if wrong:
                problems.append(f"gender {gender} contradicts the gendered words of its target: {', '.join(wrong)}")
    elif set_name == "Set-N":
        if gender not in (None, ""):
            problems.append(f"a neutral demonstration has no gender, got {gender!r}")
        if words:
            problems.append("a neutral demonstration lists gendered words")
    for problem in problems:
        errors.append(DataError(problem, path, line, where))
    if problems:
        return None
    return Demonstration(
        set=set_name,
        gender=gender or None,
        source=source,
        translation=translation,
        europarl_id=str(item.get("europarl_id") or ""),
        gendered_words=tuple(words),
    )


def load_prompt_texts(lang: Language, prompts_dir: str | Path | None = None) -> PromptTexts:
    """Load and validate the prompt texts of one language; raise :class:`DataErrors` listing every defect."""
    directory = Path(prompts_dir) if prompts_dir else PROMPTS_DIR
    common_path, lang_path = directory / "common.yaml", directory / f"{lang}.yaml"
    common, common_lines = _load_yaml_with_lines(common_path)
    specific, lines = _load_yaml_with_lines(lang_path)
    errors: list[DataError] = []
    fill = {"lang": lang, "lang_name": LANGUAGE_NAMES[lang]}
    texts = {}
    for key, data, path, key_lines in (
        ("system", common, common_path, common_lines),
        ("preamble", common, common_path, common_lines),
        ("guidelines", specific, lang_path, lines),
    ):
        raw = _text({**data}, key, path, key_lines, errors)
        try:
            texts[key] = raw.format(**fill) if key != "guidelines" else raw
        except (KeyError, IndexError, ValueError) as exc:
            errors.append(DataError(f"bad placeholder in {key!r}: {exc}; allowed: {{lang}}, {{lang_name}}", path, key_lines.get(key), key))
    demos = []
    raw_demos = specific.get("demonstrations")
    if not isinstance(raw_demos, list):
        errors.append(DataError("missing list 'demonstrations'", lang_path, lines.get("demonstrations", 1), "demonstrations"))
        raw_demos = []
    for index, item in enumerate(raw_demos):
        where = f"demonstrations[{index}]"
        demo = _demonstration(item, where, lang_path, lines.get(where, 1), errors)
        if demo:
            demos.append(demo)
    if not errors:
        n_gendered = sum(d.set == "Set-G" for d in demos)
        n_neutral = len(demos) - n_gendered
        if n_gendered < 2 or n_neutral < 2:
            errors.append(
                DataError(
                    f"4-shot prompts need at least 2 gendered and 2 neutral demonstrations, found {n_gendered} and {n_neutral}",
                    lang_path, lines.get("demonstrations", 1), "demonstrations",
                )
            )
    if errors:
        raise DataErrors(errors)
    digest = hashlib.sha256((common_path.read_text("utf-8") + lang_path.read_text("utf-8")).encode()).hexdigest()[:16]
    return PromptTexts(lang, texts["system"], texts["preamble"], texts["guidelines"], tuple(demos), digest)


@lru_cache(maxsize=32)
def cached_prompt_texts(lang: Language, prompts_dir: str | None = None) -> PromptTexts:
    """:func:`load_prompt_texts` memoised per (language, directory): the texts are read once per process."""
    return load_prompt_texts(lang, prompts_dir)
