"""The suite's template types, as Dawkins et al. (2025, Appendix A) number them, and which table reads which.

The published segments are instances of a few templates; the paper reports each table as the macro-average of its
template types, so a segment's type decides where its slots count:

* ``1``: a two-turn dialogue between two characters of stated gender (the man / the woman / he / she), one
  adjective in the first quote ("I think I'm A" or "I think you're A"), the reply about the same person ("No,
  you're A", "No, you're not A, but you are B"...);
* ``2``: the same dialogue with two adjectives in the first quote ("I think I'm A and you're B") and the reply
  swapping them ("No you're B, but I'm A"): four slots, two per character;
* ``3`` and ``4``: templates 1 and 2 with one of the two characters the narrator "I", whose gender is left out
  (ambiguity by *omission*); the other character's slots stay determined;
* ``5``: a character described by a stereotyped adjective and an occupation ("The suave developer") says "I think
  I'm A" to another, described by an adjective of the other stereotype, and is referred to as he, she or they;
  he/she instances are determined, "they" instances are the *active* ambiguity;
* ``7``: "I think I'm A," I said, with no adverb or with a masculine- or feminine-stereotyped one ("I said
  suavely"): the stereotype analysis;
* ``5-listener``: template 5 with "I think you're A": the slot is about the listener, whose gender is never said;
* ``occupation-dialogue``: two occupation characters, both "they", in the two-turn dialogue.

The last two are in the published suite but in none of the paper's tables (it defines no pair for them); their
items are scored and counted like the others and shown per template, never mixed into the tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from gnt.templated_suite.wmt24.reader import Segment

TEMPLATES: tuple[str, ...] = ("1", "2", "3", "4", "5", "7", "5-listener", "occupation-dialogue")
SIDES: tuple[str, ...] = ("determined", "ambiguous")


@dataclass(frozen=True)
class Table:
    """One of the paper's tables: which template types give its determined and its ambiguous side.

    Each side is the unweighted mean, over its template types, of the M/F/N shares among the classified items of
    that type (the paper's macro-average "over each template type as applicable").
    """

    name: str
    paper: str
    determined: tuple[str, ...]
    ambiguous: tuple[str, ...]
    description: str


TABLES: dict[str, Table] = {
    "omission": Table("omission", "Table 4", ("1", "2", "3", "4"), ("3", "4"),
                      "ambiguity by omission (I / you): determined items of templates 1-4, ambiguous of 3-4"),
    "active": Table("active", "Table 5", ("5",), ("5",),
                    "active ambiguity: template 5, he/she determined, they ambiguous"),
    "strategies": Table("strategies", "Table 6", ("1", "2", "3", "4", "5"), (),
                        "neutral strategies N1-N5 among the determined items of templates 1-5"),
}
STEREOTYPE_TABLE = "Table 7"
#: Items per template and side in the paper's Appendix A (Spanish, per system); template 7 by adverb stereotype.
PAPER_COUNTS: dict[str, dict[str, int]] = {
    "1": {"determined": 2400},
    "2": {"determined": 3840},
    "3": {"determined": 1200, "ambiguous": 1200},
    "4": {"determined": 1920, "ambiguous": 1920},
    "5": {"determined": 352, "ambiguous": 176},
    "7": {"none": 130, "M": 390, "F": 390},
}


def template_of(segment: Segment) -> str:
    """The template type of a parsed segment (see the module docstring)."""
    if segment.family == "adverb":
        return "7"
    if segment.family == "occupation":
        if segment.turns == 2:
            return "occupation-dialogue"
        return "5" if segment.slots[0].person == "I" else "5-listener"
    two_adjectives = sum(slot.turn == 1 for slot in segment.slots) == 2
    narrated = any(c.how == "narrator" for c in segment.characters)
    return ("4" if narrated else "2") if two_adjectives else ("3" if narrated else "1")


def tables_of(template: str) -> tuple[str, ...]:
    """The names of the tables a template's items count in (stereotype for template 7)."""
    names = tuple(name for name, table in TABLES.items() if template in table.determined + table.ambiguous)
    return names + (("stereotype",) if template == "7" else ())
