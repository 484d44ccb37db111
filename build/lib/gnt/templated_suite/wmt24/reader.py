"""Read the WMT24 gender-resolution segments from a WMT24 ``txt-ts`` folder and parse their structure.

Layout (as published in ``wmt-conference/wmt24-news-systems``)::

    txt-ts/documents/en-xx.docs             one "<domain>\\t<doc id>" per line; the suite's ids end in gender-res_NNNN
    txt-ts/sources/en-xx.txt                the English source of every line
    txt-ts/system-outputs/en-xx/<sys>.txt   each system's translation of every line

All three are aligned line by line. The suite is templated, so every segment is one of three shapes:

* two turns: ``<S1> smiled. "I think <Q1>," <p1> said. <S2> laughed back. "No[,] <Q2>," <p2> replied.``
* one turn to a named listener: ``<S1> smiled. "I think <Q1>," <p1> said to the <descriptor> <occupation>.``
* one turn with a manner adverb: ``"I think I'm <adj>," I said[ <adverb>].``

``S`` is ``I``, ``The man``/``The woman``, ``He``/``She`` or ``The <descriptor> <occupation>``, ``p`` the pronoun
that refers back to it. Inside a quote ``I`` is that turn's speaker and ``you`` its listener (in turn 2 the first
speaker). A character's gender is *determined* by the man/the woman/he/she, ambiguous by *omission* when it is the
narrator ``I`` or a listener never named by a pronoun, and ambiguous *actively* when the text calls them "they".
A segment that fits none of this is reported with its line and the reason, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from gnt.data.errors import DataError

SUITE_MARK = "gender-res_"
Ambiguity = Literal["omission", "active"]
AMBIGUITIES: tuple[str, ...] = ("omission", "active")


@dataclass(frozen=True)
class Character:
    """One person of a segment: how the text refers to them and what that says about their gender.

    ``how`` is ``narrator`` (I), ``noun`` (the man / the woman), ``pronoun`` (he / she introduced alone),
    ``occupation`` (the <descriptor> <occupation>, then he/she/they) or ``listener`` (named only as the one spoken
    to); ``gender`` is ``M``/``F`` when determined, else None with ``ambiguity`` omission or active.
    """

    how: str
    gender: str | None
    ambiguity: str | None
    pronoun: str | None = None
    descriptor: str | None = None
    occupation: str | None = None


@dataclass(frozen=True)
class Slot:
    """One adjective of a segment: in which turn, said of "I" or "you", and which character it describes."""

    turn: int
    person: str  # "I" or "you"
    adjective: str
    character: int  # 0 or 1, index into Segment.characters
    negated: bool = False

    @property
    def referent(self) -> str:
        """``speaker`` or ``listener`` of the slot's own turn."""
        return "speaker" if self.person == "I" else "listener"


@dataclass(frozen=True)
class Segment:
    """A parsed suite segment; ``line`` is its 1-based line in the sources file, ``seg_id`` the NNNN of its doc id."""

    seg_id: str
    doc_id: str
    line: int
    source: str
    family: str  # "dialogue", "occupation" or "adverb"
    turns: int
    characters: tuple[Character, ...]
    slots: tuple[Slot, ...]
    quotes: tuple[str, ...]
    adverb: str | None = None

    @property
    def adjectives(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.adjective for s in self.slots))


@dataclass(frozen=True)
class ParseProblem:
    """A segment the reader could not parse, located in the sources file."""

    path: str
    line: int
    seg_id: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: segment {self.seg_id}: {self.reason}"


@dataclass
class Suite:
    """Every suite line of one direction: the parsed segments and the ones that did not parse."""

    lang: str
    root: Path
    segments: list[Segment] = field(default_factory=list)
    problems: list[ParseProblem] = field(default_factory=list)
    line_indices: list[int] = field(default_factory=list)  # 0-based line of every suite doc (parsed or not)

    @property
    def total(self) -> int:
        return len(self.line_indices)


class ParseError(ValueError):
    """Why one segment does not fit the suite's templates."""


_ADJ = r"[A-Za-z][\w-]*"
_CHAR = rf"I|The man|The woman|He|She|The (?P<{{g}}d>{_ADJ}) (?P<{{g}}o>[A-Za-z][A-Za-z -]*?)"
_TWO = re.compile(
    rf'^(?P<s1>{_CHAR.format(g="a")}) smiled\. "I think (?P<q1>[^"]+)," (?P<p1>I|he|she|they) said\. '
    rf'(?P<s2>{_CHAR.format(g="b")}) laughed back\. "No(?P<comma>,?) (?P<q2>[^"]+)," (?P<p2>I|he|she|they) replied\.$'
)
_ONE_TO = re.compile(
    rf'^(?P<s1>{_CHAR.format(g="a")}) smiled\. "I think (?P<q1>[^"]+)," (?P<p1>I|he|she|they) said to the '
    rf"(?P<ld>{_ADJ}) (?P<lo>[A-Za-z][A-Za-z -]*?)\.$"
)
_ADVERB = re.compile(rf'^"I think I\'m (?P<adj>{_ADJ})," I said(?: (?P<adv>{_ADJ}))?\s*\.$')
_Q1 = [
    (re.compile(rf"^I'm (?P<a>{_ADJ}) and you're (?P<b>{_ADJ})$"), (("I", "a", False), ("you", "b", False))),
    (re.compile(rf"^I'm (?P<a>{_ADJ})$"), (("I", "a", False),)),
    (re.compile(rf"^you're (?P<a>{_ADJ})$"), (("you", "a", False),)),
]
_Q2 = [
    (re.compile(rf"^you're (?P<a>{_ADJ}), but I'm (?P<b>{_ADJ})$"), (("you", "a", False), ("I", "b", False))),
    (re.compile(rf"^you're not (?P<a>{_ADJ}), but you are (?P<b>{_ADJ})$"), (("you", "a", True), ("you", "b", False))),
    (re.compile(rf"^I'm not (?P<a>{_ADJ}), but I am (?P<b>{_ADJ})$"), (("I", "a", True), ("I", "b", False))),
    (re.compile(rf"^you're (?P<a>{_ADJ})$"), (("you", "a", False),)),
    (re.compile(rf"^I'm (?P<a>{_ADJ})$"), (("I", "a", False),)),
]
_NOUN_GENDER = {"The man": "M", "The woman": "F", "He": "M", "She": "F"}
_PRONOUN_GENDER = {"he": "M", "she": "F"}


def _character(mention: str, descriptor: str | None, occupation: str | None, pronoun: str) -> Character:
    """The character introduced by ``mention`` and referred back to by ``pronoun``; raise on a mismatch."""
    if mention == "I":
        if pronoun != "I":
            raise ParseError(f"the narrator 'I' is referred to as {pronoun!r}")
        return Character("narrator", None, "omission", pronoun="I")
    if mention in _NOUN_GENDER:
        gender = _NOUN_GENDER[mention]
        if _PRONOUN_GENDER.get(pronoun) != gender:
            raise ParseError(f"{mention!r} is referred to as {pronoun!r}")
        how = "noun" if mention.startswith("The") else "pronoun"
        return Character(how, gender, None, pronoun=pronoun)
    if pronoun == "I":
        raise ParseError(f"{mention!r} is referred to as 'I'")
    if pronoun == "they":
        return Character("occupation", None, "active", "they", descriptor, occupation)
    return Character("occupation", _PRONOUN_GENDER[pronoun], None, pronoun, descriptor, occupation)


def _slots(quote: str, patterns, turn: int, speaker: int, listener: int | None) -> list[Slot]:
    for pattern, roles in patterns:
        match = pattern.match(quote)
        if not match:
            continue
        slots = []
        for person, group, negated in roles:
            character = speaker if person == "I" else listener
            if character is None:
                raise ParseError(f"turn {turn} says 'you' but nobody is spoken to")
            slots.append(Slot(turn, person, match.group(group), character, negated))
        return slots
    raise ParseError(f"turn {turn} quote {quote!r} is not one of the suite's shapes")


def parse_segment(text: str, seg_id: str = "", doc_id: str = "", line: int = 0) -> Segment:
    """Parse one English suite segment (see the module docstring); raise :class:`ParseError` with the reason."""
    text = text.strip()
    if match := _ADVERB.match(text):
        narrator = Character("narrator", None, "omission", pronoun="I")
        slot = Slot(1, "I", match.group("adj"), 0)
        quote = f"I think I'm {match.group('adj')}"
        return Segment(seg_id, doc_id, line, text, "adverb", 1, (narrator,), (slot,), (quote,), match.group("adv"))
    if match := _TWO.match(text):
        first = _character(match.group("s1"), match.group("ad"), match.group("ao"), match.group("p1"))
        second = _character(match.group("s2"), match.group("bd"), match.group("bo"), match.group("p2"))
        if first.how == "narrator" and second.how == "narrator":
            raise ParseError("both turns are spoken by the narrator 'I'")
        slots = _slots(match.group("q1"), _Q1, 1, 0, 1) + _slots(match.group("q2"), _Q2, 2, 1, 0)
        family = "occupation" if "occupation" in (first.how, second.how) else "dialogue"
        quotes = (f"I think {match.group('q1')}", f"No{match.group('comma')} {match.group('q2')}")
        return Segment(seg_id, doc_id, line, text, family, 2, (first, second), tuple(slots), quotes)
    if match := _ONE_TO.match(text):
        first = _character(match.group("s1"), match.group("ad"), match.group("ao"), match.group("p1"))
        listener = Character("listener", None, "omission", None, match.group("ld"), match.group("lo"))
        slots = _slots(match.group("q1"), _Q1, 1, 0, 1)
        quotes = (f"I think {match.group('q1')}",)
        return Segment(seg_id, doc_id, line, text, "occupation", 1, (first, listener), tuple(slots), quotes)
    raise ParseError("does not match the two-turn, one-turn-to-a-listener or adverb template")


def _read_lines(path: Path) -> list[str]:
    if not path.is_file():
        raise DataError("file not found", path)
    try:
        return path.read_text(encoding="utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 (byte {exc.start})", path) from None


def seg_key(doc_id: str) -> str:
    """The suite's segment key: the NNNN after ``gender-res_`` (``tsuite_en-es_gender-res_..._0042`` → ``0042``)."""
    return doc_id.rsplit(SUITE_MARK, 1)[-1].strip()


def direction_files(root: str | Path, lang: str) -> tuple[Path, Path]:
    root = Path(root)
    return root / "documents" / f"en-{lang}.docs", root / "sources" / f"en-{lang}.txt"


def read_suite(root: str | Path, lang: str) -> Suite:
    """Every gender-res segment of ``en-<lang>`` in the ``txt-ts`` folder ``root``, parsed or reported.

    Raises :class:`DataError` when the folder lacks the files, the documents and sources are not aligned, or the
    direction has no suite lines; a segment that does not parse is kept in ``problems`` (path, line, reason).
    """
    root = Path(root)
    docs_path, src_path = direction_files(root, lang)
    docs = _read_lines(docs_path)
    sources = _read_lines(src_path)
    if docs and docs[-1] == "":
        docs.pop()
    if sources and sources[-1] == "":
        sources.pop()
    if len(docs) != len(sources):
        raise DataError(f"{len(docs)} document lines but {len(sources)} source lines ({src_path}): not aligned", docs_path)
    suite = Suite(lang, root)
    for index, doc_line in enumerate(docs):
        doc_id = doc_line.split("\t")[-1].strip()
        if SUITE_MARK not in doc_id:
            continue
        suite.line_indices.append(index)
        key = seg_key(doc_id)
        try:
            suite.segments.append(parse_segment(sources[index], key, doc_id, index + 1))
        except ParseError as exc:
            suite.problems.append(ParseProblem(str(src_path), index + 1, key, str(exc)))
    if not suite.line_indices:
        raise DataError(f"no gender-resolution documents (ids containing {SUITE_MARK!r})", docs_path)
    return suite
