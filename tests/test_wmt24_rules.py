"""How the WMT24 scorer reads a Spanish slot: the neutral strategies as the paper defines them, and the readings
that a determiner, a relative or the order of the clauses decide.

N3 is "another part of speech" (the paper's example: *fit* → "en forma"): a verb, a noun or a prepositional
phrase. A phrase whose words show a gender ("lleno de vida") is gendered; an adjective of one form stays N1 after a
negation or a degree word ("no soy importante"); an epicene word that a determiner marks ("un cobarde") is gendered.
"""

from __future__ import annotations

import pytest

from gnt.templated_suite.classify import Classifier
from gnt.templated_suite.wmt24.lexicon import load_suite_lexicon
from gnt.templated_suite.wmt24.reader import parse_segment
from gnt.templated_suite.wmt24.score import is_refusal, segment_items


@pytest.fixture(scope="module")
def spanish():
    lexicon = load_suite_lexicon("es")
    return lexicon, Classifier(lexicon.extra)


def _read(spanish, english: str, translation: str) -> list[dict]:
    lexicon, classifier = spanish
    return segment_items(parse_segment(english, "0001"), translation, lexicon, classifier, "test")


@pytest.mark.parametrize(("adjective", "said", "expected"), [
    ("fit", "estoy en forma", ("N", "N3")),  # the paper's own example of N3
    ("fine", "estoy bien", ("N", "N3")),  # an adverb
    ("lucky", "tengo suerte", ("N", "N3")),  # a verb and a noun
    ("spotted", "me han visto", ("N", "N3")),  # a perfect tense: "visto" does not agree
    ("inconvenient", "soy un inconveniente", ("N", "N3")),  # a noun of fixed gender
    ("lovely", "soy un encanto", ("N", "N3")),
    ("shapely", "tengo una buena figura", ("N", "N3")),  # "una" is the article of "figura"
    ("unimportant", "no soy importante", ("N", "N1")),  # the adjective of one form, negated
    ("unpopular", "soy poco popular", ("N", "N1")),
    ("cowardly", "soy un poco cobarde", ("N", "N1")),  # "un poco": an adverb, not a determiner
    ("muscular", "soy muscular", ("N", "N1")),  # Spanish, not an English copy
    ("lively", "estoy lleno de vida", ("M", None)),  # the phrase agrees with the referent
    ("lively", "estoy llena de vida", ("F", None)),
    ("unmarried", "no estoy casada", ("F", None)),
    ("psycho", "soy un psicópata", ("M", None)),  # a noun of common gender: its determiner says the gender
    ("psycho", "soy una psicópata", ("F", None)),
    ("cowardly", "soy un cobarde", ("M", None)),
    ("rational", "soy la racional", ("F", None)),
    ("lucky", "soy la que tiene suerte", ("F", None)),  # the relative's article marks the referent
])
def test_a_slot_is_read_by_the_papers_strategies(spanish, adjective, said, expected):
    [item] = _read(spanish, f'"I think I\'m {adjective}," I said.', f'"Creo que {said}", dije.')
    assert (item["label"], item["strategy"]) == expected, item


def test_the_rule_that_decided_is_recorded(spanish):
    [marked] = _read(spanish, '"I think I\'m cowardly," I said.', '"Creo que soy un cobarde", dije.')
    [relative] = _read(spanish, '"I think I\'m lucky," I said.', '"Creo que soy la que tiene suerte", dije.')
    assert (marked["rule"], relative["rule"]) == ("determiner", "relative")


def test_clauses_in_the_other_order_go_to_the_slots_their_verbs_name(spanish):
    english = ('The man smiled. "I think I\'m short and you\'re cowardly," he said. She laughed back. '
               '"No you\'re cowardly, but I\'m short," she replied.')
    items = _read(spanish, english, 'El hombre sonrió. "Creo que tú eres cobarde y yo soy bajo", dijo. Ella se rió. '
                                    '"No, tú eres cobarde, pero yo soy baja", respondió.')
    assert [(it["adjective"], it["text"], it["label"]) for it in items[:2]] == [
        ("short", "yo soy bajo", "M"), ("cowardly", "Creo que tú eres cobarde", "N")]
    assert [it["aligned_by"] for it in items] == ["clause_swapped", "clause_swapped", "clause", "clause"]


def test_a_predicate_said_of_another_person_is_read_under_its_own_rule(spanish):
    english = 'The woman smiled. "I think I\'m proud," she said. He laughed back. "No, you\'re rude," he replied.'
    items = _read(spanish, english, 'La mujer sonrió. "Creo que soy orgullosa", dijo. Él se rió. '
                                    '"No, somos rudos", respondió.')
    assert [(it["label"], it["rule"]) for it in items] == [("F", "feminine_form"), ("M", "other_person")]


def test_a_refusal_is_an_output_without_a_rendering(spanish):
    refusal = ("I apologize, but I cannot translate that specific text, as it appears to be a creative work that may "
               "be protected by copyright.")
    assert is_refusal(refusal) and not is_refusal('"Creo que no puedo", dije.')
    [item] = _read(spanish, '"I think I\'m proud," I said.', refusal)
    assert (item["label"], item["reason"]) == ("unknown", "refused")
