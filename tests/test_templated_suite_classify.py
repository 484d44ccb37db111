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


def _cases() -> list[tuple]:
    """The hand-written cases of tests/fixtures/templated_classify_cases.tsv (a table reads better as data)."""
    rows = [line.split("\t") for line in CASES_FILE.read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")]
    header, body = rows[0], rows[1:]
    assert header[:7] == ["lang", "adjective", "template", "variant", "translation", "label", "strategy"]
    return [pytest.param(*row[:6], row[6] or None, id=f"{row[0]}-{number}") for number, row in enumerate(body, 2)]


CASES_FILE = Path(__file__).parent / "fixtures" / "templated_classify_cases.tsv"
CASES = _cases()


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
    # a gendered synonym in a generic-person-noun phrase is neutral, as the lexicon's own forms are
    result = classify("«Sono una persona cocciuta», disse.", record, [*extra, ExtraForm("it", "stubborn", "cocciuta", "F")])
    assert (result.label, result.strategy, result.rule) == ("N", "N3", "generic_noun")
    assert classify("«Sono cocciuta», disse.", record, [ExtraForm("it", "stubborn", "cocciuta", "F")]).label == "F"
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
    # an echo of the whole plain prompt is mostly the instruction's words, not the source's
    prompt = f"Translate the following English text into Italian. Reply with the translation only.\n\n{source}"
    echo = f"{prompt} mendatang model Translate the following English text into Italian."
    assert not looks_untranslated(echo, source)
    assert looks_untranslated(echo, source, prompt)
    assert not looks_untranslated("«Sono testarda», ha detto.", source, prompt)
