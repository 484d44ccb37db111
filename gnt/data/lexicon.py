"""Gendered words a judge (or a prompt file's check) can use on any target text: learned once from the project's
own resources, and found in a text whole-word and case-folded (:func:`find_gendered_words`).

The lexical judge used to know only the words annotated on each row, so it could not judge a translation that
comes without annotations (a gold set of the field, a demonstration of a paper's prompt file). This module builds,
per language, a lexicon of word forms that mark a person's social gender, with the gender each form marks:

* the templated adjective lexicons (``data/templates/lexicons``): the M and F forms of every adjective whose two
  forms differ (epicene adjectives mark nothing), and their neutral rewrites (N forms that differ from both,
  e.g. ``una persona testaruda``) as known *neutral* phrases;
* the mGeNTE annotations of Ref-G (``G-WORDS`` / ``REF-G_ann``) of the rows given, by default the training side of
  the bundled sample (never its held-out rows, which the judge is scored on): on a Set-G row each annotated word
  marks the row's gender; on a Set-N row it is a generic masculine (gendered, gender taken as M);
* the other-gender form of each annotated word of a Set-G row, derived with the suffix alternations that the
  language's masculine/feminine pairs show: the adjective lexicon's M/F forms and the annotated words that are two
  forms of one lemma (``Berichterstatter``/``Berichterstatterin``: German ``""``→``-in``; Italian ``-o``→``-a``;
  Greek ``-ος``→``-η``...). An alternation is used only when it occurs at least twice, the longest matching suffix
  wins, and a derived form never overrides one already known with another gender.

Known blind spots (why the lexical judge abstains rather than guessing, see :mod:`gnt.judge.lexical`): words
outside these resources, gender carried only by an article on an epicene noun (``la dietista``), inflections the
suffix rules do not produce. Matching is whole-word and case-folded, as for row annotations.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from gnt.data.entry import LANGUAGES, Entry


def fold(text: str) -> str:
    """A text as gendered words are matched in it: NFC-normalised and case-folded."""
    return unicodedata.normalize("NFC", text).casefold()


@lru_cache(maxsize=65536)
def word_pattern(word: str) -> re.Pattern[str]:
    """Word-boundary pattern of one (possibly multi-word) gendered term: internal whitespace matches any run."""
    parts = [re.escape(p) for p in fold(word).split()]
    return re.compile(r"(?<![\w])" + r"\s+".join(parts) + r"(?![\w])")


def find_gendered_words(translation: str, words: Iterable[str]) -> list[str]:
    """The known gendered words that occur in ``translation`` (each once, in the order given)."""
    text = fold(translation)
    found: list[str] = []
    for word in dict.fromkeys(w.strip() for w in words if w and w.strip()):
        if word_pattern(word).search(text):
            found.append(word)
    return found


#: A suffix alternation must occur this often in the lexicon before it is used to derive forms.
MIN_RULE_SUPPORT = 2
#: The stem left after removing a suffix must keep this many characters (short words derive nonsense).
MIN_STEM = 3


@dataclass
class GenderLexicon:
    """Gendered word forms of one language (form → ``M``/``F``) and known neutral phrases, with their origins."""

    lang: str
    forms: dict[str, str] = field(default_factory=dict)
    neutral: set[str] = field(default_factory=set)
    origin: Counter = field(default_factory=Counter)

    def add(self, form: str, gender: str, origin: str) -> None:
        key = form.strip()
        if not key or len(key.split()) > 3:
            return
        known = self.forms.get(key.casefold())
        if known is None:
            self.forms[key.casefold()] = gender
            self.origin[origin] += 1

    def describe(self) -> dict[str, int | str]:
        return {"lang": self.lang, "gendered_forms": len(self.forms), "neutral_phrases": len(self.neutral), **dict(self.origin)}


def suffix_rules(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """(masculine suffix, feminine suffix) alternations seen at least :data:`MIN_RULE_SUPPORT` times, most frequent first."""
    counts: Counter = Counter()
    for m, f in pairs:
        m, f = m.casefold(), f.casefold()
        if m == f or " " in m or " " in f:
            continue
        i = 0
        while i < min(len(m), len(f)) and m[i] == f[i]:
            i += 1
        counts[(m[i:], f[i:])] += 1
    return [rule for rule, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n >= MIN_RULE_SUPPORT]


def other_form(word: str, gender: str, rules: list[tuple[str, str]]) -> str | None:
    """The other-gender form of ``word`` by the longest applicable suffix rule, the most frequent among equally long
    ones (None when no rule applies)."""
    w = word.casefold()
    candidates = [
        (have, want)
        for have, want in (((m, f) if gender == "M" else (f, m)) for m, f in rules)
        if w.endswith(have) and len(w) - len(have) >= MIN_STEM
    ]
    if not candidates:
        return None
    # the longest matching suffix wins ("cansado": o→a, not ""→a); max keeps the most frequent of equal length
    have, want = max(candidates, key=lambda r: len(r[0]))
    return w[: len(w) - len(have)] + want


def annotated_pairs(words: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """(masculine, feminine) pairs of annotated words that look like two forms of one lemma: a shared stem of at
    least :data:`MIN_STEM` + 1 characters and endings of at most 4 characters (``Berichterstatter`` /
    ``Berichterstatterin``, ``deputato`` / ``deputata``)."""
    masculine = sorted({w.casefold() for w, g in words if g == "M" and " " not in w})
    feminine = sorted({w.casefold() for w, g in words if g == "F" and " " not in w})
    pairs = []
    for m in masculine:
        for f in feminine:
            i = 0
            while i < min(len(m), len(f)) and m[i] == f[i]:
                i += 1
            if i > MIN_STEM and len(m) - i <= 4 and len(f) - i <= 4 and m != f:
                pairs.append((m, f))
    return pairs


def build_lexicon(lang: str, entries: Iterable[Entry] = ()) -> GenderLexicon:
    """The lexicon of ``lang`` from the adjective lexicon and the annotated gendered words of ``entries``."""
    from gnt.data.templated import load_lexicon

    lexicon = GenderLexicon(lang)
    adjectives = load_lexicon(lang)
    pairs = [(a.m, a.f) for a in adjectives]
    for a in adjectives:
        if a.m.casefold() != a.f.casefold():
            lexicon.add(a.m, "M", "adjective_lexicon")
            lexicon.add(a.f, "F", "adjective_lexicon")
            if a.n.casefold() not in (a.m.casefold(), a.f.casefold()):
                lexicon.neutral.add(a.n.casefold())
    annotated: list[tuple[str, str]] = []
    stated: list[tuple[str, str]] = []  # words of a Set-G row: their gender is the one the source states
    for entry in entries:
        if entry.lang != lang or entry.origin != "mgente":
            continue
        gender = entry.gender if entry.set == "Set-G" and entry.gender in ("M", "F") else "M"
        annotated.extend((w, gender) for w in entry.gendered_words)
        if entry.set == "Set-G" and entry.gender in ("M", "F"):
            stated.extend((w, entry.gender) for w in entry.gendered_words)
    for word, gender in annotated:
        lexicon.add(word, gender, "mgente_annotations")
    pairs.extend(annotated_pairs(annotated))
    rules = suffix_rules(pairs)
    for word, gender in stated:
        other = other_form(word, gender, rules)
        if other:
            lexicon.add(other, "F" if gender == "M" else "M", "derived_other_gender")
    return lexicon


def training_entries(langs: Iterable[str] = LANGUAGES) -> list[Entry]:
    """The training side of the bundled sample (the build's default split): what the lexicon may learn from."""
    from gnt.data.mgente import load_mgente
    from gnt.data.splits import split_entries
    from gnt.paths import SAMPLE_DIR

    return split_entries(load_mgente(SAMPLE_DIR, tuple(langs))).train


@lru_cache(maxsize=8)
def default_lexicon(lang: str) -> GenderLexicon:
    """The lexicon of ``lang`` learned from the project's resources (built once per process)."""
    return build_lexicon(lang, training_entries((lang,)))
