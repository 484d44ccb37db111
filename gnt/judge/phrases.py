"""Whether the phrases a P+L judge lists are words of the translation it judged.

A P+L reply lists "the words exactly as they appear in the translation". A phrase that does not occur there is
invented, or copied from text that told the judge what to answer (a translation can carry such text: it is written
by the model under test). Either way the reply is not about this translation, so the judge is asked again
(:func:`gnt.judge.llm_judge.parse_reply`, error kind ``phrase_not_in_translation``).

The check is on words, not on the exact string: a phrase may gather words that agree with each other but stand
apart ("i cittadini ... stanchi"), and a judge may change case or the kind of apostrophe. Every word of a phrase must
be a word of the translation, after Unicode normalisation and case folding.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

_WORD = re.compile(r"\w+")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'", "\u00b4": "'"})


def words(text: str) -> list[str]:
    """The words of ``text``, normalised (NFKC, case-folded, one kind of apostrophe)."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).casefold())


def phrase_missing(reply: dict[str, Any], translation: str) -> str | None:
    """The first phrase of ``reply`` with a word that the translation does not hold (or no word at all), or None."""
    vocabulary = set(words(translation))
    for item in reply.get("phrases") or ():
        phrase = item.get("phrase") if isinstance(item, dict) else None
        if not isinstance(phrase, str):
            continue  # the schema check reports it
        found = words(phrase)
        if not found or any(word not in vocabulary for word in found):
            return phrase
    return None
