"""Find, in a translation of a suite segment, the stretch of text that renders each adjective slot.

One adjective may describe different people in one segment ("I'm fantastic and you're scared" / "No you're scared,
but I'm fantastic" swaps the referents between the turns), so a slot is classified on its own stretch only:

1. the translation's quotations ("…", “…”, «…», „…“, spaced asterisks "* … *", and dialogue dashes as Spanish
   writes them, "—Creo que soy feliz —dije—.") are matched to the segment's turns in order; a speech split by a
   short narrator incise ("No eres grosero," le respondió, "pero…") is one quotation; a translation whose
   quotations do not line up with the turns is not split, see 3.;
2. a quote that carries two slots is cut at its first joiner ("y"/"e" where the English says "and", "pero"/"sino"
   where it says "but"; per language), the first part for the first slot, unless (Spanish) the verbs show the
   clauses in the other order ("Creo que tú eres cobarde y yo soy bajo" for "I think I'm short and you're
   cowardly");
3. a slot whose adjective describes one person only in the segment may fall back to the whole quote or the whole
   translation; otherwise the slot is unknown with the reason ``unaligned`` (never guessed);
4. a translation cut short (:func:`is_truncated`) renders the first turns only: its quotes are matched to those,
   and the slots of the turns it never reached are ``cut``.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from gnt.templated_suite.wmt24.predicate import mentions
from gnt.templated_suite.wmt24.reader import Segment, Slot

_QUOTES = re.compile(
    r'"([^"]*)"|“([^”]*)”|«([^»]*)»|„([^“”]*)[“”]|‘([^’]*)’'
    # asterisks used as quotation marks ("* Creo que soy generoso *,"): spaced, so a gender star inside a word
    # ("amig*s") is never taken for one
    r"|(?:(?<=\s)|^)\*\s+([^*]+?)\s+\*(?=[\s,.;:!?]|$)"
)
#: A translation shorter than this share of its English source, or stopping without final punctuation while
#: lacking quotes for some turns, was cut short (complete Spanish translations of the suite measure at least
#: 0.78 of the English in every system whose outputs are whole).
TRUNCATED_SHARE = 0.6
_FINAL = re.compile(r"[.!?…\"”»)\]]\s*$")
#: An incise between two quotes of one speech ("No eres grosero," le respondió, "pero estoy delgado"): at most
#: this many words, no sentence end, and a comma before the speech goes on.
INCISE_WORDS = 4
#: Words that join the two clauses of a two-slot quote, per language: (for "and", for "but").
JOINERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "es": (("y", "e"), ("pero", "sino", "aunque")),
    "it": (("e", "ed"), ("ma", "però")),
    "de": (("und",), ("aber", "sondern")),
    "el": (("και",), ("αλλά",)),
}


def clean(text: str) -> str:
    """HTML entities decoded (some WMT24 outputs write ``&quot;``), whitespace runs collapsed, and a stray opening
    quotation mark before the narration dropped (``"Sonreí. "Creo que…``: with it, every quote is shifted)."""
    text = " ".join(html.unescape(text).split())
    if text.startswith('"') and text.count('"') % 2 == 1:
        text = text[1:].lstrip()
    return text


_DASH = re.compile(r"(?:^|(?<=[\s.,:;!?]))[—–-]\s*(?=[¿¡\"“«]?[A-ZÁÉÍÓÚÑÜ])")
_ANY_DASH = re.compile(r"\s[—–-]|[—–]")


def quotations(text: str) -> list[str]:
    """The quoted speeches of ``text`` in order: quotation marks, then dialogue dashes outside them.

    A dialogue dash opens a speech when a capital follows it ("—Creo", "- No,"); the speech runs to the next dash
    (the one before "dije" or "respondió"), so the narrator's incises are left out.
    """
    spans = [(m.start(), m.end(), next(g for g in m.groups() if g is not None)) for m in _QUOTES.finditer(text)]
    inside = [(a, b) for a, b, _ in spans]
    for m in _DASH.finditer(text):
        start = m.end()
        if any(a <= m.start() < b for a, b in inside):
            continue
        end_match = _ANY_DASH.search(text, start)
        end = end_match.start() if end_match else len(text)
        if any(a < end and start < b for a, b in inside):
            end = min(a for a, b in inside if a >= start) if any(a >= start for a, _ in inside) else end
        speech = text[start:end].strip()
        if speech:
            spans.append((m.start(), end, speech))
    return _join_incises(text, sorted(spans))


def _join_incises(text: str, spans: list[tuple[int, int, str]]) -> list[str]:
    """Quotes split by a short narrator incise are one speech: join them (the incise itself is left out)."""
    out: list[tuple[int, int, str]] = []
    for start, end, speech in spans:
        if out:
            between = text[out[-1][1] : start]
            words = re.findall(r"\w+", between)
            # the incise ends with the comma that continues the speech ("le respondió, 'pero..."), where a
            # new turn would follow a sentence end or a colon
            if 0 < len(words) <= INCISE_WORDS and not re.search(r"[.!?:]", between) and between.rstrip().endswith(","):
                out[-1] = (out[-1][0], end, f"{out[-1][2]} {speech}")
                continue
        out.append((start, end, speech))
    return [speech for _, _, speech in out]


def split_clauses(quote: str, lang: str, joiner: str) -> tuple[str, str] | None:
    """Cut ``quote`` at the first ``and``/``but`` joiner of ``lang``; None when there is none."""
    words = JOINERS.get(lang, ((), ()))[0 if joiner == "and" else 1]
    if not words:
        return None
    match = re.search(r"(?:,\s*|\s+)(?:" + "|".join(map(re.escape, words)) + r")\s+", quote, flags=re.IGNORECASE)
    if not match:
        return None
    return quote[: match.start()], quote[match.end() :]


def is_truncated(translation: str, segment: Segment) -> bool:
    """Whether a translation was cut short (far shorter than the source, or ending mid-sentence)."""
    text = clean(translation)
    if len(text) < TRUNCATED_SHARE * len(segment.source):
        return True
    return not _FINAL.search(text) and len(quotations(text)) < segment.turns


@dataclass(frozen=True)
class SlotText:
    """The text a slot is classified on (None when it cannot be told apart), and how it was found."""

    text: str | None
    english: str
    how: str  # "clause", "clause_swapped", "quote", "whole", "unaligned" or "cut" (its turn is past the cut)


def _joiner(segment: Segment, turn: int) -> str:
    return "and" if turn == 1 else "but"


def slot_texts(segment: Segment, translation: str, lang: str) -> list[SlotText]:
    """One :class:`SlotText` per slot of ``segment`` (in slot order)."""
    text = clean(translation)
    quotes = quotations(text)
    # A translation cut short renders the first turns: its quotes are those turns, the later ones are missing.
    cut = is_truncated(text, segment) and 0 < len(quotes) < segment.turns
    aligned = len(quotes) == segment.turns or cut
    single_referent = {
        adj: len({s.character for s in segment.slots if s.adjective == adj}) == 1 for adj in segment.adjectives
    }
    out: list[SlotText] = []
    for slot in segment.slots:
        english = segment.quotes[slot.turn - 1]
        turn_slots = [s for s in segment.slots if s.turn == slot.turn]
        position = turn_slots.index(slot)
        if cut and slot.turn > len(quotes):
            out.append(SlotText(None, english, "cut"))
            continue
        if aligned:
            quote = quotes[slot.turn - 1]
            if len(turn_slots) == 1:
                out.append(SlotText(quote, english, "quote"))
                continue
            parts = split_clauses(quote, lang, _joiner(segment, slot.turn))
            if parts is not None:
                if _swapped(parts, turn_slots, lang):
                    out.append(SlotText(parts[1 - position], english, "clause_swapped"))
                else:
                    out.append(SlotText(parts[position], english, "clause"))
                continue
            if _distinct_in_turn(turn_slots, slot):
                out.append(SlotText(quote, english, "quote"))
                continue
        if single_referent[slot.adjective] and _distinct_in_turn(turn_slots, slot):
            out.append(SlotText(text, english, "whole"))
        else:
            out.append(SlotText(None, english, "unaligned"))
    return out


def _swapped(parts: tuple[str, str], turn_slots: list[Slot], lang: str) -> bool:
    """Whether a two-clause quote renders its clauses in the other order, as its verbs show (Spanish only).

    "I think I'm short and you're cowardly" → "Creo que tú eres cobarde y yo soy bajo": the first clause speaks of
    "you" and the second of "I", so each slot takes the other clause.
    """
    if lang != "es" or len(parts) != 2 or len(turn_slots) != 2:
        return False
    first, second = (s.person for s in turn_slots)
    if first == second:
        return False
    return (mentions(parts[0], second) and not mentions(parts[0], first)
            and mentions(parts[1], first) and not mentions(parts[1], second))


def _distinct_in_turn(turn_slots: list[Slot], slot: Slot) -> bool:
    """Whether no other slot of the turn uses the same adjective for another person."""
    return all(s is slot or s.adjective != slot.adjective or s.character == slot.character for s in turn_slots)
