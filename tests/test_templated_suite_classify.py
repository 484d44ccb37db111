"""Classification of the focus adjective (gnt.templated_suite.classify) on hand-written translations.

Every language is checked for M, F, every neutral strategy it can express and the unknowns, on real suite items
(so the template context, e.g. es "de forma tan emotiva", is part of the test).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gnt.data.entry import LANGUAGES
from gnt.data.templated import generate_pairs, suite_records
from gnt.templated_suite.classify import (
    Classifier,
    ExtraForm,
    classify,
    load_extra_forms,
    looks_untranslated,
    normalise,
    normalise_with_map,
)


@pytest.fixture(scope="module")
def records() -> dict[tuple[str, str, str, str], dict]:
    recs = suite_records(generate_pairs(LANGUAGES))
    return {(r["lang"], r["adjective"], r["template_id"], r["variant"]): r for r in recs}


@pytest.fixture(scope="module")
def classifier() -> Classifier:
    return Classifier()


# (lang, adjective, template, variant, translation, label, strategy)
CASES = [
    # --- Italian ---------------------------------------------------------------------------------------------
    ("it", "stubborn", "they_said", "ambiguous", "«Sono testardo», disse.", "M", None),
    ("it", "stubborn", "they_said", "ambiguous", "«Sono testarda», disse.", "F", None),
    ("it", "stubborn", "they_said", "ambiguous", "«SONO TESTARDO», DISSE.", "M", None),
    ("it", "happy", "they_said", "ambiguous", "«Sono felice», disse.", "N", "N1"),
    ("it", "stubborn", "they_said", "ambiguous", "«Sono una persona testarda», disse.", "N", "N3"),
    ("it", "stubborn", "they_said", "ambiguous", "«Sono una persona molto testarda», disse.", "N", "N3"),
    ("it", "stubborn", "they_said", "ambiguous", "«Sono stubborn», disse.", "N", "N4"),
    ("it", "cool", "they_said", "ambiguous", "«Sono cool», disse.", "N", "N4"),  # the lexicon's English loan
    ("it", "stubborn", "they_said", "ambiguous", "«Sono testardo/a», disse.", "N", "N5"),
    ("it", "stubborn", "they_said", "ambiguous", "«Sono testardə», disse.", "N", "N5"),
    ("it", "stubborn", "they_said", "ambiguous", "«Sono testard*», disse.", "N", "N5"),
    ("it", "stubborn", "they_said", "ambiguous", "«Sono testardo o testarda», disse.", "N", "N5"),
    ("it", "emotional", "you_react_emotionally", "ambiguous",
     "«Reagisci sempre in modo così emotivo. Sei emotiva», dissi.", "F", None),  # context "emotivo" discounted
    # --- Spanish ---------------------------------------------------------------------------------------------
    ("es", "shy", "they_said", "ambiguous", "«Soy tímido», dijo.", "M", None),
    ("es", "shy", "they_said", "ambiguous", "«Soy timida», dijo.", "F", None),  # accent-insensitive
    ("es", "happy", "they_said", "ambiguous", "«Soy feliz», dijo.", "N", "N1"),
    ("es", "shy", "they_said", "ambiguous", "«Soy una persona tímida», dijo.", "N", "N3"),
    ("es", "shy", "they_said", "ambiguous", "«Soy shy», dijo.", "N", "N4"),
    ("es", "shy", "they_said", "ambiguous", "«Soy tímid@», dijo.", "N", "N5"),
    ("es", "shy", "they_said", "ambiguous", "«Soy tímide», dijo.", "N", "N5"),
    ("es", "shy", "they_said", "ambiguous", "«Soy tímido/a», dijo.", "N", "N5"),
    ("es", "emotional", "you_react_emotionally", "ambiguous",
     "«Siempre reaccionas de forma tan emotiva. Eres emotivo», dije.", "M", None),
    ("es", "emotional", "you_react_emotionally", "ambiguous",
     "«Siempre reaccionas de forma tan emotiva. Eres una persona emotiva», dije.", "N", "N3"),
    # --- German ----------------------------------------------------------------------------------------------
    ("de", "stubborn", "they_said", "ambiguous", "„Ich bin ein sturer Mann“, sagte er.", "M", None),
    ("de", "stubborn", "they_said", "ambiguous", "„Ich bin ein Sturer“, sagte er.", "M", None),
    ("de", "stubborn", "they_said", "ambiguous", "„Ich bin ein sehr sturer Typ“, sagte er.", "M", None),
    ("de", "stubborn", "they_said", "ambiguous", "„Ich bin eine sture Frau“, sagte sie.", "F", None),
    ("de", "stubborn", "they_said", "ambiguous", "„Ich bin eine Sture“, sagte sie.", "F", None),
    ("de", "stubborn", "they_said", "ambiguous", "„Ich bin ein stures Mädchen“, sagte sie.", "F", None),
    ("de", "stubborn", "they_said", "ambiguous", "„Ich bin stur“, sagte die Person.", "N", "N1"),
    ("de", "sensitive", "they_said", "ambiguous", "„Ich bin sensibel“, sagte die Person.", "N", "N1"),
    ("de", "sensitive", "they_said", "ambiguous", "„Ich bin ein sensibler Mann“, sagte er.", "M", None),
    ("de", "stubborn", "they_said", "ambiguous", "„Ich bin ein stures Wesen“, sagte die Person.", "N", "N2"),
    ("de", "stubborn", "they_said", "ambiguous", "„Ich bin eine sture Person“, sagte die Person.", "N", "N3"),
    ("de", "stubborn", "they_said", "ambiguous", "„Ich bin ein sturer Mensch“, sagte die Person.", "N", "N3"),
    ("de", "stubborn", "they_said", "ambiguous", "„Ich bin stubborn“, sagte die Person.", "N", "N4"),
    ("de", "stubborn", "they_said", "ambiguous", "„Ich bin sture*r“, sagte die Person.", "N", "N5"),
    ("de", "stubborn", "they_said", "ambiguous",
     "„Ich bin ein sturer Mann oder eine sture Frau“, sagte die Person.", "N", "N5"),
    ("de", "emotional", "they_react_emotionally", "ambiguous",
     "„Ich reagiere auf alles emotional. Ich bin eine emotionale Frau“, sagte sie.", "F", None),
    ("de", "emotional", "they_react_emotionally", "ambiguous",
     "„Ich reagiere auf alles emotional. Ich bin emotional“, sagte die Person.", "N", "N1"),
    # --- Greek -----------------------------------------------------------------------------------------------
    ("el", "stubborn", "they_said", "ambiguous", "«Είμαι πεισματάρης», είπε.", "M", None),
    ("el", "stubborn", "they_said", "ambiguous", "«Είμαι πεισματάρα», είπε.", "F", None),
    ("el", "stubborn", "they_said", "ambiguous", "«ΕΙΜΑΙ ΠΕΙΣΜΑΤΑΡΗΣ», ΕΙΠΕ.", "M", None),  # no accents, capitals
    ("el", "honest", "they_said", "ambiguous", "«Είμαι ειλικρινής», είπε.", "N", "N1"),
    ("el", "stubborn", "they_said", "ambiguous", "«Είμαι πεισματάρικο», είπε.", "N", "N2"),
    ("el", "honest", "they_said", "ambiguous", "«Είμαι ειλικρινές», είπε.", "N", "N2"),
    ("el", "stubborn", "they_said", "ambiguous", "«Είμαι ένα πεισματάρικο άτομο», είπε.", "N", "N3"),
    ("el", "stubborn", "they_said", "ambiguous", "«Είμαι ένας πεισματάρης άνθρωπος», είπε.", "N", "N3"),
    ("el", "honest", "they_said", "ambiguous", "«Είμαι ένα ειλικρινές άτομο», είπε.", "N", "N3"),
    ("el", "stubborn", "they_said", "ambiguous", "«Είμαι stubborn», είπε.", "N", "N4"),
    ("el", "cool", "they_said", "ambiguous", "«Είμαι κουλ», είπε.", "N", "N4"),
    ("el", "proud", "they_said", "ambiguous", "«Είμαι περήφανος/η», είπε.", "N", "N5"),
    ("el", "stubborn", "they_said", "ambiguous", "«Είμαι πεισματάρης ή πεισματάρα», είπε.", "N", "N5"),
]


@pytest.mark.parametrize(("lang", "adjective", "template", "variant", "translation", "label", "strategy"), CASES)
def test_hand_written_translations(records, classifier, lang, adjective, template, variant, translation, label, strategy):
    result = classifier.classify(translation, records[(lang, adjective, template, variant)])
    assert (result.label, result.strategy) == (label, strategy), result
    assert result.evidence and result.evidence in translation  # reported as written, not folded


UNKNOWN_CASES = [
    ("it", "stubborn", "«Sono cocciuto», disse.", "no_form"),  # a synonym the lexicon does not list
    ("it", "stubborn", "«Sono testardo, anzi testarda», disse.", "conflict"),
    ("it", "stubborn", "\"I'm stubborn,\" they said.", "untranslated"),
    ("it", "stubborn", "   ", "empty"),
    ("es", "shy", "«Soy vergonzoso», dijo.", "no_form"),
    ("de", "stubborn", "„Ich bin sturer als du“, sagte die Person.", "no_form"),  # a comparative, not an NP
    ("de", "stubborn", "„Ich bin dickköpfig“, sagte die Person.", "no_form"),
    ("el", "stubborn", "«Είμαι ξεροκέφαλος», είπε.", "no_form"),
    ("el", "stubborn", "«Είμαι πεισματάρης, όχι πεισματάρα», είπε.", "conflict"),
]


@pytest.mark.parametrize(("lang", "adjective", "translation", "reason"), UNKNOWN_CASES)
def test_unknowns_are_never_guessed(records, classifier, lang, adjective, translation, reason):
    result = classifier.classify(translation, records[(lang, adjective, "they_said", "ambiguous")])
    assert (result.label, result.reason) == ("unknown", reason), result


def test_none_translation_is_unknown(records):
    assert classify(None, records[("it", "happy", "they_said", "ambiguous")]).reason == "empty"


def test_every_reference_of_the_suite_classifies_as_built(classifier):
    """The suite's own targets are ground truth: gendered → the stated gender (masculine default → M), neutral → N
    with the lexicon's strategy; epicene adjectives are N1/N4 in every target."""
    for r in suite_records(generate_pairs(LANGUAGES, max_pairs=1200, seed=3)):
        marked = normalise(r["M"]) != normalise(r["F"])
        expected = (r["expected_gender"] if r["variant"] == "determined" else "M") if marked else "N"
        gendered = classifier.classify(r["ref_gendered"], r)
        neutral = classifier.classify(r["ref_neutral"], r)
        assert gendered.label == expected, (r["pair_id"], r["variant"], r["ref_gendered"], gendered)
        assert (neutral.label, neutral.strategy) == ("N", r["N_strategy"]), (r["pair_id"], r["ref_neutral"], neutral)


def test_extra_forms_extend_the_lexicon(records, tmp_path: Path):
    record = records[("it", "stubborn", "they_said", "ambiguous")]
    path = tmp_path / "extra.tsv"
    path.write_text(
        "lang\ten\tform\tlabel\tstrategy\n"
        "# reviewed from unknown.jsonl\n"
        "it\tstubborn\tcocciuto\tM\t\n"
        "it\tstubborn\tuna testa dura\tN\tN3\n",
        encoding="utf-8",
    )
    extra = load_extra_forms(path)
    assert classify("«Sono cocciuto», disse.", record, extra).label == "M"
    result = classify("«Sono una testa dura», disse.", record, extra)
    assert (result.label, result.strategy, result.rule) == ("N", "N3", "extra_form")
    with pytest.raises(ValueError, match="needs a strategy"):
        ExtraForm("it", "stubborn", "x", "N", None)
    bad = tmp_path / "bad.tsv"
    bad.write_text("lang\ten\tform\tlabel\tstrategy\nit\tstubborn\tx\tQ\t\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.tsv:2"):
        load_extra_forms(bad)


def test_normalisation_maps_back_to_the_original_text():
    folded, index = normalise_with_map("ΕΊΜΑΙ Tímida")
    assert folded == "ειμαι timida"
    assert len(index) == len(folded)
    assert normalise("Süß") == "suss"


def test_untranslated_detection_spares_single_copied_words():
    source = '"I\'m stubborn," they said.'
    assert looks_untranslated(source, source)
    assert not looks_untranslated("«Sono stubborn», disse.", source)
    assert not looks_untranslated("„Ich bin intelligent“, sagte die Person.", '"I\'m intelligent," they said.')
