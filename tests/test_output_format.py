"""Extraction of label and translation from raw outputs, including every documented error case."""

from __future__ import annotations

import re

import pytest

from gnt.output_format import extract, format_output, output_regex


def test_round_trip() -> None:
    text = format_output("it", "NEUTRAL", "La cittadinanza è stanca.")
    assert text == "<it> **NEUTRAL** [La cittadinanza è stanca.]"
    result = extract(text, "it")
    assert (result.label, result.translation, result.error) == ("NEUTRAL", "La cittadinanza è stanca.", None)
    assert re.fullmatch(output_regex("it"), text)


def test_brackets_inside_translation_are_kept() -> None:
    translation = 'La relazione [A6-0123/2009] della signora Lulling, "sulla tutela", è approvata.'
    text = format_output("it", "GENDERED", translation)
    assert extract(text, "it").translation == translation
    assert re.fullmatch(output_regex("it"), text)


def test_only_first_bracket_pair_after_the_label() -> None:
    result = extract("<es> **GENDERED** [Ella está cansada.] [otra cosa]", "es")
    assert result.translation == "Ella está cansada." and result.ok


@pytest.mark.parametrize(
    ("raw", "error", "label"),
    [
        ("", "empty", None),
        ("   \n", "empty", None),
        (None, "empty", None),
        ("<it> [Sono stanco.]", "no_label", None),
        ("<it> **NEUTRAL** Sono stanco.", "no_translation", "NEUTRAL"),
        ("<it> **NEUTRAL** [Siamo pronti a lavor", "unterminated", "NEUTRAL"),
        ("<it> **GENDERED** []", "empty_translation", "GENDERED"),
        ("<it> **GENDERED** [translation]", "placeholder", "GENDERED"),  # the answer template copied
        ("<it> **NEUTRAL** [ Translation. ]", "placeholder", "NEUTRAL"),
        ("<es> **GENDERED** [Estoy cansado.]", "wrong_lang_tag", "GENDERED"),
        ("**GENDERED** [Sono stanco.]", "wrong_lang_tag", "GENDERED"),
    ],
)
def test_errors_are_codes_not_crashes(raw, error: str, label) -> None:
    result = extract(raw, "it")
    assert result.error == error and result.label == label and not result.ok


def test_regex_rejects_unbalanced_and_accepts_spec_form() -> None:
    pattern = output_regex("de")
    assert re.fullmatch(pattern, "<de> **NEUTRAL** [Die Lehrkräfte sind müde.]")
    assert not re.fullmatch(pattern, "<de> **NEUTRAL** [Die ] Lehrkräfte]")
    assert not re.fullmatch(pattern, "<de> **MAYBE** [x]")
    with pytest.raises(ValueError):
        format_output("de", "MAYBE", "x")
