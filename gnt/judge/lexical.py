"""The lexical judge: an offline, free proxy for neutrality, and a cross-check beside an LLM judge.

A translation is *gendered* when it contains a gendered word known for its row, *neutral* otherwise. The words
known for a row are mGeNTE's annotated gendered words of Ref-G (``Entry.gendered_words``, from ``G-WORDS`` or the
``REF-G_ann`` tags) and, for templated rows, the masculine and feminine lexicon forms of the row's focus adjective
(``data/templates/lexicons``; epicene adjectives, whose M and F forms coincide, contribute nothing). Matching is
case-insensitive (Unicode case folding, so Greek final sigma and German ß match), NFC-normalised, and on word
boundaries defined by Unicode letters and digits, so ``cittadini`` does not match inside ``concittadini`` and an
Italian elision (``dell'avvocato``) still matches ``avvocato``. Accents are kept: Spanish ``él`` is not ``el``.

It is a proxy with known blind spots, which is why the evaluator reports its agreement with an LLM judge:

* gendered words not in the annotation: Ref-G's annotation lists the words *that reference* used; a translation
  that genders the referent with other words (a synonym, another construction, a pronoun, an agreeing adjective
  the reference did not have) is called neutral. In particular the *other* gender is invisible: a masculine
  translation of a Set-G row whose Ref-G is feminine contains none of the feminine annotated words;
* neutral rewrites that keep an annotated word: a word that is gendered in Ref-G may appear in a neutral
  translation in a different, ungendered role (``persone`` in ``le persone interessate``, a name, a quotation),
  and is then wrongly called gendered;
* morphology variation: an inflected or differently spelled form of an annotated word (plural for singular,
  another case in German or Greek, a clitic attached in Italian or Spanish) does not match, nor does a word
  written without its accents (Greek in capitals drops the tonos);
* rows without annotations (``gendered_words`` empty, no templated adjective) are always called neutral; the
  number of such rows is reported so a user can see how much of a score rests on them.

A translation that comes with no row at all (a gold set of the field) is judged by :meth:`LexicalJudge.judge_text`
against the gendered words *learned* for its language (:mod:`gnt.data.lexicon`: the adjective lexicons, the
mGeNTE annotations of the training rows and the other-gender forms derived from them): GENDERED when one occurs,
NEUTRAL when none does but a known neutral rewrite does, and otherwise it *abstains* (``label`` ``ABSTAIN``):
not finding a word it knows is no evidence of neutrality. A model's translation that does not translate its source
at all (chrF++ below the adequacy threshold against every reference, :mod:`gnt.evaluation.adequacy`) is not
judged either: fluent nonsense holds no gendered word and would otherwise count as neutral. Abstentions are counted
and reported, never hidden.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gnt.data.lexicon import find_gendered_words, fold, word_pattern
from gnt.judge.schema import GENDERED, NEUTRAL

ABSTAIN = "ABSTAIN"
NO_KNOWN_WORD = "no known gendered or neutral word"
INADEQUATE = "inadequate translation"


@dataclass(frozen=True)
class LexicalJudgment:
    """``label`` GENDERED/NEUTRAL, the words that matched, and whether the row had any known words at all."""

    label: str
    neutral: bool | None  # None when the judge abstains
    matched: tuple[str, ...]
    known_words: int
    genders: tuple[str, ...] = ()
    reason: str | None = None  # why it abstained: no known word, or the text does not translate its source

    @property
    def abstained(self) -> bool:
        return self.label == ABSTAIN

    def to_record(self) -> dict[str, Any]:
        record = {
            "label": self.label,
            "neutral": self.neutral,
            "matched": list(self.matched),
            "known_words": self.known_words,
        }
        if self.genders:
            record["genders"] = list(self.genders)
        if self.reason:
            record["abstained"] = self.reason
        return record


class LexicalJudge:
    """Classifies translations from the gendered words known for each row (see the module docstring).

    ``lexicons`` maps a language to ``{english adjective: (M form, F form)}``; by default the project's templated
    lexicons are loaded on first use for the languages that need them.
    """

    def __init__(self, lexicons: Mapping[str, Mapping[str, tuple[str, str]]] | None = None) -> None:
        self._lexicons: dict[str, Mapping[str, tuple[str, str]]] = dict(lexicons or {})
        self._learned: dict[str, Any] = {}

    def learned(self, lang: str) -> Any:
        """The lexicon :meth:`judge_text` uses for ``lang``: one given to :meth:`learn`, else the default one."""
        from gnt.data.lexicon import default_lexicon

        return self._learned.get(lang) or default_lexicon(lang)

    def learn(self, lexicon: Any) -> None:
        """Use ``lexicon`` (a :class:`~gnt.data.lexicon.GenderLexicon`) for :meth:`judge_text` in its language."""
        self._learned[lexicon.lang] = lexicon

    def lexicon(self, lang: str) -> Mapping[str, tuple[str, str]]:
        if lang not in self._lexicons:
            from gnt.data.templated import load_lexicon

            self._lexicons[lang] = {e.en.casefold(): (e.m, e.f) for e in load_lexicon(lang)}
        return self._lexicons[lang]

    def known_words(self, lang: str, gendered_words: Sequence[str] = (), adjective: str | None = None) -> list[str]:
        """The gendered words of a row: its annotation plus the M/F forms of its templated adjective, if any."""
        words = [w for w in gendered_words if w and w.strip()]
        if adjective:
            forms = self.lexicon(lang).get(adjective.casefold())
            if forms and forms[0] != forms[1]:
                words.extend(forms)
        return list(dict.fromkeys(words))

    def judge(
        self, translation: str, lang: str, gendered_words: Sequence[str] = (), adjective: str | None = None
    ) -> LexicalJudgment:
        words = self.known_words(lang, gendered_words, adjective)
        matched = find_gendered_words(translation, words)
        neutral = not matched
        return LexicalJudgment(NEUTRAL if neutral else GENDERED, neutral, tuple(matched), len(words))

    def judge_text(self, translation: str, lang: str) -> LexicalJudgment:
        """Judge a translation that has no row annotations, with the gendered words learned for ``lang``.

        GENDERED (with the genders of the words found) when a known gendered form occurs; NEUTRAL when none does
        but a known neutral rewrite does; otherwise ABSTAIN.
        """
        lexicon = self.learned(lang)
        text, neutral_found = fold(translation), False
        for phrase in lexicon.neutral:  # "una persona ambiziosa" holds the F form "ambiziosa": mask it first
            text, hits = word_pattern(phrase).subn(" ", text)
            neutral_found = neutral_found or hits > 0
        matched = find_gendered_words(text, lexicon.forms)
        if matched:
            genders = tuple(sorted({lexicon.forms[w] for w in matched}))
            return LexicalJudgment(GENDERED, False, tuple(matched), len(lexicon.forms), genders)
        if neutral_found:
            return LexicalJudgment(NEUTRAL, True, (), len(lexicon.forms))
        return LexicalJudgment(ABSTAIN, None, (), len(lexicon.forms), reason=NO_KNOWN_WORD)

    def judge_record(self, translation: str, lang: str, references: Sequence[str],
                     gendered_words: Sequence[str] = (), adjective: str | None = None) -> LexicalJudgment:
        """:meth:`judge` for a model's translation of a row, abstaining when it does not translate the row's
        source (chrF++ below the adequacy threshold against every reference): finding no gendered word in text
        that is not a translation says nothing about neutrality."""
        from gnt.evaluation.adequacy import chrf_pp, is_adequate

        if not is_adequate(chrf_pp(translation, references)):
            return LexicalJudgment(ABSTAIN, None, (), len(self.known_words(lang, gendered_words, adjective)),
                                   reason=INADEQUATE)
        return self.judge(translation, lang, gendered_words, adjective)

    def judge_entry(self, translation: str, entry: Any) -> LexicalJudgment:
        """Judge a translation of an :class:`~gnt.data.entry.Entry` (mGeNTE or templated)."""
        adjective = entry.meta.get("adjective") if entry.origin == "templated" else None
        return self.judge(translation, entry.lang, entry.gendered_words, adjective)

    @staticmethod
    def describe() -> dict[str, Any]:
        return {"kind": "lexical", "format": "LEXICAL", "judge_model": "lexical"}
