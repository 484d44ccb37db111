"""The lexical judge: word boundaries, case and Unicode handling, templated lexicon forms, agreement figures."""

from __future__ import annotations

import pytest

from gnt.data.entry import Entry
from gnt.judge.agreement import binary_agreement
from gnt.judge.lexical import LexicalJudge, find_gendered_words


def test_matching_rules():
    assert find_gendered_words("I cittadini sono preoccupati.", ["cittadini", "preoccupati"]) == [
        "cittadini", "preoccupati"]
    assert find_gendered_words("I concittadini sono qui.", ["cittadini"]) == []  # word boundary
    assert find_gendered_words("Il parere dell'avvocato.", ["avvocato"]) == ["avvocato"]  # elision
    assert find_gendered_words("SIGNORA Presidente", ["signora"]) == ["signora"]  # case
    assert find_gendered_words("ΟΙ ΠΟΛΙΤΕΣ", ["πολίτες"]) == []  # accents are kept (upper case drops the tonos)
    assert find_gendered_words("ΟΙ ΠΟΛΊΤΕΣ", ["πολίτες"]) == ["πολίτες"]  # final sigma folds with capital sigma
    assert find_gendered_words("Die Straße", ["STRASSE"]) == ["STRASSE"]  # ß case-folds to ss
    assert find_gendered_words("El presidente dijo que el acuerdo", ["él"]) == []  # él is not el
    assert find_gendered_words("ein  sturer\nMann", ["ein sturer Mann"]) == ["ein sturer Mann"]
    assert find_gendered_words("Cafe\u0301 des amis", ["café"]) == ["café"]  # NFC
    assert find_gendered_words("anything", ["", "  "]) == []


def test_judge_rows_from_mgente_and_templated_entries():
    judge = LexicalJudge(lexicons={"it": {"stubborn": ("testardo", "testarda"), "happy": ("felice", "felice")}})
    mgente = Entry("IT-1", "it", "Set-N", "The citizens are worried.", "I cittadini sono preoccupati.",
                   ("La cittadinanza è preoccupata.",), gendered_words=("cittadini", "preoccupati"))
    assert judge.judge_entry("I cittadini sono preoccupati.", mgente).label == "GENDERED"
    neutral = judge.judge_entry("La cittadinanza è preoccupata.", mgente)
    assert neutral.neutral and neutral.matched == () and neutral.known_words == 2
    templated = Entry("tpl-it-1-amb", "it", "Set-N", "'I think I'm stubborn,' I said.", "Penso di essere testardo.",
                      ("Penso di essere una persona testarda.",), gendered_words=("testardo",),
                      origin="templated", meta={"adjective": "stubborn"})
    feminine = judge.judge_entry("Penso di essere testarda.", templated)  # F form: from the lexicon, not the row
    assert feminine.label == "GENDERED" and feminine.matched == ("testarda",)
    assert judge.judge_entry("Penso di essere una persona testarda.", templated).label == "GENDERED"  # blind spot
    epicene = Entry("tpl-it-2-amb", "it", "Set-N", "'I think I'm happy,' I said.", "Penso di essere felice.",
                    ("Penso di essere felice.",), origin="templated", meta={"adjective": "happy"})
    assert judge.judge_entry("Penso di essere felice.", epicene).neutral  # epicene forms add nothing


def test_default_lexicons_load_on_demand():
    judge = LexicalJudge()
    assert "testardo" in judge.known_words("it", (), "stubborn")


def test_binary_agreement():
    figures = binary_agreement([True, True, False, False], [True, False, False, False])
    assert figures["agreement"] == pytest.approx(0.75)
    # p_o = .75; p_e = .5*.25 + .5*.75 = .5 -> kappa = .5
    assert figures["kappa"] == pytest.approx(0.5)


# ------------------------------------------------------------------ learned lexicon: judging text without annotations
def test_suffix_rules_derive_the_other_gender_form_of_an_annotated_word():
    from gnt.data.lexicon import other_form, suffix_rules

    rules = suffix_rules([("stanco", "stanca"), ("alto", "alta"), ("attore", "attrice"), ("felice", "felice")])
    assert rules == [("o", "a")]  # "ore"→"rice" is seen once: not trusted
    assert other_form("soddisfatto", "M", rules) == "soddisfatta"
    assert other_form("deputata", "F", rules) == "deputato"
    assert other_form("re", "M", rules) is None  # too short a stem


def test_learned_lexicon_uses_lexicons_annotations_and_derived_forms():
    from gnt.data.entry import Entry
    from gnt.data.lexicon import build_lexicon

    row = Entry(id="x", lang="it", set="Set-G", source="The Commissioner said he was satisfied.", ref_g="...",
                ref_n=("...",), gender="M", gendered_words=("commissario", "soddisfatto"))
    lexicon = build_lexicon("it", [row])
    assert lexicon.forms["orgogliosa"] == "F" and lexicon.forms["commissario"] == "M"
    assert lexicon.forms["commissaria"] == "F"  # derived: the feminine form of the same lemma
    assert "una persona orgogliosa" in lexicon.neutral
    assert lexicon.origin["derived_other_gender"] >= 1


def test_judge_text_gendered_neutral_or_abstains():
    from gnt.judge.lexical import ABSTAIN, LexicalJudge

    judge = LexicalJudge()
    gendered = judge.judge_text("È molto orgogliosa del risultato.", "it")
    assert gendered.label == "GENDERED" and gendered.matched == ("orgogliosa",) and gendered.genders == ("F",)
    # the neutral rewrite holds the F form: masked first, so the sentence is neutral
    assert judge.judge_text("È una persona orgogliosa del risultato.", "it").label == "NEUTRAL"
    unknown = judge.judge_text("Gli astronauti sono atterrati.", "it")  # no word it has learned
    assert unknown.label == ABSTAIN and unknown.abstained and unknown.matched == ()
