"""Prompt texts as data: system prompt, preamble, per-language guidelines and demonstrations.

The texts live in ``data/prompts/`` (``common.yaml`` + ``{lang}.yaml``) and a user can point at another directory
with the same layout, or at one in the layout of the mGeNTE paper's release (``prompt_en-{lang}.yaml``, directly or
under ``config/``: ``system_prompt``, ``preamble``, ``gender_neutral_guidelines``, each with a ``content``, and
``demonstrations`` of ``user`` / ``assistant`` / ``type`` turns), read as it is.

Loading validates what it reads, because the public prompt files of the field have known defects (Greek
demonstrations whose target genders the referent opposite to its source): every problem is reported with file,
line and key, all at once. A gendered demonstration's gender is checked against its source's English cues and the
gendered words of its target: those it lists (our layout) or, when it lists none (the release's layout never does),
the gendered words the judge's lexicon knows for the language (:mod:`gnt.data.lexicon`). A contradiction is an
error; a demonstration whose target has no gendered word known to either is a *warning* that says its gender could
not be verified (kept on :attr:`PromptTexts.warnings` and logged), never a silent pass.
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from gnt.data.entry import LANGUAGE_NAMES, Language, SourceKeyed
from gnt.data.errors import DataError, DataErrors
from gnt.data.lexicon import default_lexicon, find_gendered_words, word_pattern
from gnt.output_format import extract, format_output
from gnt.paths import PROMPTS_DIR

log = logging.getLogger(__name__)
#: The file name of one language in the mGeNTE paper's release layout.
RELEASE_FILE = "prompt_en-{lang}.yaml"

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
class Demonstration(SourceKeyed):
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


@dataclass(frozen=True)
class PromptTexts:
    """Everything the grid needs to render prompts of one language."""

    lang: Language
    system: str
    preamble: str
    guidelines: str
    demonstrations: tuple[Demonstration, ...]
    content_hash: str
    warnings: tuple[DataError, ...] = field(default=(), compare=False)

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


def _lexicon_words(lang: str, translation: str) -> list[tuple[str, str]]:
    """Gendered words the judge's learned lexicon finds in ``translation``, with their gender."""
    lexicon = default_lexicon(lang)
    folded = unicodedata.normalize("NFC", translation).casefold()
    same_length = len(folded) == len(translation)
    found = []
    for word in find_gendered_words(translation, lexicon.forms):
        match = word_pattern(word).search(folded)
        shown = translation[match.start():match.end()] if match and same_length else word  # as the text writes it
        found.append((shown, lexicon.forms[word]))
    return found


def verify_gender(
    lang: str, gender: str, source: str, translation: str, words: list[tuple[str, str]]
) -> tuple[list[str], list[str]]:
    """``(problems, warnings)`` of a gendered demonstration: its gender against its source and its target's words.

    ``words`` are the gendered words the file lists; when it lists none, the learned lexicon's words are used, and
    when that finds none either the gender cannot be verified (a warning saying so).
    """
    problems: list[str] = []
    warnings: list[str] = []
    cues = source_gender_cues(source)
    other = "M" if gender == "F" else "F"
    if cues[other] and not cues[gender]:
        problems.append(f"gender {gender} contradicts its source, whose cues say {other} ({', '.join(sorted(cues[other]))})")
    if words:
        wrong = [w for w, g in words if g != gender]
        if wrong:
            problems.append(f"gender {gender} contradicts the gendered words of its target: {', '.join(wrong)}")
        return problems, warnings
    found = _lexicon_words(lang, translation) if lang else []
    if found and all(g == other for _, g in found):  # the lexicon is noisy: only an all-other-gender target counts
        problems.append(
            f"gender {gender} contradicts the gendered words the {lang} lexicon finds in its target: "
            + ", ".join(f"{w} ({g})" for w, g in found)
        )
    elif not found:
        warnings.append(
            f"gender {gender} could not be verified: its target has no gendered word listed or known to the {lang} lexicon"
        )
    return problems, warnings


def _demonstration(
    item: object, where: str, path: Path, line: int, errors: list[DataError], lang: str = "", warnings: list[DataError] | None = None
) -> Demonstration | None:
    warnings = warnings if warnings is not None else []
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
        elif translation and not problems:
            gender_problems, gender_warnings = verify_gender(lang, gender, source, translation, words)
            problems.extend(gender_problems)
            warnings.extend(DataError(w, path, line, where) for w in gender_warnings)
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


def release_file(directory: Path, lang: str) -> Path | None:
    """The language's file when ``directory`` is in the mGeNTE release layout (directly or under ``config/``)."""
    for candidate in (directory / RELEASE_FILE.format(lang=lang), directory / "config" / RELEASE_FILE.format(lang=lang)):
        if candidate.is_file():
            return candidate
    return None


def load_prompt_texts(lang: Language, prompts_dir: str | Path | None = None) -> PromptTexts:
    """Load and validate the prompt texts of one language; raise :class:`DataErrors` listing every defect."""
    directory = Path(prompts_dir) if prompts_dir else PROMPTS_DIR
    release = release_file(directory, lang) if not (directory / "common.yaml").is_file() else None
    if release is not None:
        return _load_release(lang, release)
    common_path, lang_path = directory / "common.yaml", directory / f"{lang}.yaml"
    common, common_lines = _load_yaml_with_lines(common_path)
    specific, lines = _load_yaml_with_lines(lang_path)
    errors: list[DataError] = []
    warnings: list[DataError] = []
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
        demo = _demonstration(item, where, lang_path, lines.get(where, 1), errors, lang, warnings)
        if demo:
            demos.append(demo)
    content = (common_path.read_text("utf-8") + lang_path.read_text("utf-8")).encode()
    return _finished_texts(lang, texts, demos, content, lang_path, lines, errors, warnings)


def _check_counts(demos: list[Demonstration], path: Path, lines: dict[str, int], errors: list[DataError]) -> None:
    if errors:
        return
    n_gendered = sum(d.set == "Set-G" for d in demos)
    n_neutral = len(demos) - n_gendered
    if n_gendered < 2 or n_neutral < 2:
        errors.append(
            DataError(
                f"4-shot prompts need at least 2 gendered and 2 neutral demonstrations, found {n_gendered} and {n_neutral}",
                path, lines.get("demonstrations", 1), "demonstrations",
            )
        )


def _log_warnings(warnings: list[DataError]) -> None:
    for warning in warnings:
        log.warning("prompt texts: %s", warning)


def _finished_texts(
    lang: Language,
    texts: dict[str, str],
    demos: list[Demonstration],
    content: bytes,
    path: Path,
    lines: dict[str, int],
    errors: list[DataError],
    warnings: list[DataError],
) -> PromptTexts:
    """The last step of both loaders (our layout and the release's): check the demonstration counts, then fail with
    every error found or build the texts. Warnings are logged either way, and ``content`` (the bytes read) is hashed
    so a prompt change shows in every cache key and run record."""
    _check_counts(demos, path, lines, errors)
    _log_warnings(warnings)
    if errors:
        raise DataErrors(errors)
    digest = hashlib.sha256(content).hexdigest()[:16]
    return PromptTexts(
        lang, texts["system"], texts["preamble"], texts["guidelines"], tuple(demos), digest, tuple(warnings)
    )


_RELEASE_TEXTS = (("system", "system_prompt"), ("preamble", "preamble"), ("guidelines", "gender_neutral_guidelines"))
_RELEASE_TYPES = {"gendered": "Set-G", "neutral": "Set-N"}


def _load_release(lang: Language, path: Path) -> PromptTexts:
    """One ``prompt_en-{lang}.yaml`` of the mGeNTE release, mapped onto our texts and demonstrations.

    Each demonstration's ``user`` turn is ``<en> source`` and its ``assistant`` turn the answer in the grid's output
    format; ``type`` (gendered/neutral) gives the set and must agree with the answer's label. The file states no
    gender: a gendered demonstration gets the gender its source's English cues state (an error when they state
    none or both), which its target is then checked against (see :func:`verify_gender`).
    """
    data, lines = _load_yaml_with_lines(path)
    errors: list[DataError] = []
    warnings: list[DataError] = []
    texts: dict[str, str] = {}
    for ours, key in _RELEASE_TEXTS:
        node = data.get(key)
        content = node.get("content") if isinstance(node, dict) else node
        if not isinstance(content, str) or not content.strip():
            errors.append(DataError(f"missing or empty {key}.content", path, lines.get(key, 1), key))
            continue
        texts[ours] = content.strip()
    user = data.get("user_prompt")
    user_content = user.get("content") if isinstance(user, dict) else user
    if isinstance(user_content, str) and user_content.strip() != "<en> {input}":
        warnings.append(
            DataError(f"user_prompt {user_content.strip()!r} differs from the grid's '<en> {{source}}' turn, which is used", path,
                      lines.get("user_prompt", 1), "user_prompt")
        )
    raw_demos = data.get("demonstrations")
    if not isinstance(raw_demos, list):
        errors.append(DataError("missing list 'demonstrations'", path, lines.get("demonstrations", 1), "demonstrations"))
        raw_demos = []
    demos = []
    for index, item in enumerate(raw_demos):
        where = f"demonstrations[{index}]"
        line = lines.get(where, 1)
        converted = _release_demonstration(item, lang, where, path, line, errors)
        if converted is None:
            continue
        demo = _demonstration(converted, where, path, line, errors, lang, warnings)
        if demo:
            demos.append(demo)
    return _finished_texts(lang, texts, demos, path.read_bytes(), path, lines, errors, warnings)


def _release_demonstration(item: object, lang: str, where: str, path: Path, line: int, errors: list[DataError]) -> dict | None:
    """A release demonstration as our demonstration mapping (set, gender, source, translation), or None on errors."""
    if not isinstance(item, dict):
        errors.append(DataError("a demonstration must be a mapping with user, assistant and type", path, line, where))
        return None
    problems = []
    user, answer, kind = str(item.get("user") or "").strip(), str(item.get("assistant") or "").strip(), item.get("type")
    source = user[len("<en>"):].strip() if user.startswith("<en>") else user
    if not user.startswith("<en>"):
        problems.append(f"user turn must start with '<en> ', got {user[:30]!r}")
    if kind not in _RELEASE_TYPES:
        problems.append(f"type must be gendered or neutral, got {kind!r}")
    parsed = extract(answer, lang)
    if not parsed.ok:
        problems.append(f"assistant turn is not '<{lang}> **LABEL** [translation]' ({parsed.error})")
    elif kind in _RELEASE_TYPES and parsed.label != ("GENDERED" if kind == "gendered" else "NEUTRAL"):
        problems.append(f"type {kind} but the answer is labelled {parsed.label}")
    gender = None
    if kind == "gendered":
        cues = source_gender_cues(source)
        stated = [g for g in ("F", "M") if cues[g]]
        if len(stated) != 1:
            problems.append(
                "the file states no gender and the source's English cues "
                + ("state none" if not stated else f"state both ({', '.join(sorted(cues['F'] | cues['M']))})")
                + ": cannot tell which gender the demonstration shows"
            )
        else:
            gender = stated[0]
    errors.extend(DataError(p, path, line, where) for p in problems)
    if problems:
        return None
    return {"set": _RELEASE_TYPES[kind], "gender": gender, "source": source, "translation": parsed.translation}


@lru_cache(maxsize=32)
def cached_prompt_texts(lang: Language, prompts_dir: str | None = None) -> PromptTexts:
    """:func:`load_prompt_texts` memoised per (language, directory): the texts are read once per process."""
    return load_prompt_texts(lang, prompts_dir)
