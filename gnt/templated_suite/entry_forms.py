"""The adjective of a templated build entry, as the suite's classifier reads it in a translation.

Why one module: the alignment reward ``adjective_form`` and the alignment bench's judge-free reading of templated
outputs ask the same question, which form (M, F or N) a translation gives the entry's lexicon adjective. The build
keeps the forms in the entry's meta (``form_m``, ``form_f``, ``form_n``, ``n_strategy``), and the classifier that
scores the suite (accent folding, German attributive stems, the neutral reference's expected context) reads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gnt.templated_suite.classify import UNKNOWN, Classifier

if TYPE_CHECKING:
    from gnt.data.entry import Entry

CLASSIFIER = Classifier()
"""One classifier for every caller: its rules are built once per adjective and kept."""


def gender_marked(entry: Entry) -> bool:
    """A templated entry whose adjective has distinct masculine and feminine forms (an epicene one has one form,
    which tells nothing about gender)."""
    return entry.origin == "templated" and entry.meta.get("gender_marked") == "true"


def adjective_class(translation: str | None, entry: Entry) -> str:
    """``M``, ``F``, ``N`` or ``unknown`` (no translation, an untranslated echo, or no form of the adjective found):
    the class the suite's classifier gives the entry's adjective in ``translation``."""
    if not translation:
        return UNKNOWN
    meta = entry.meta
    item = {"lang": entry.lang, "adjective": meta.get("adjective", ""), "M": meta.get("form_m", ""),
            "F": meta.get("form_f", ""), "N": meta.get("form_n", ""), "N_strategy": meta.get("n_strategy", ""),
            "source": entry.source, "ref_neutral": entry.ref_n[0] if entry.ref_n else None}
    return CLASSIFIER.classify(translation, item).label
