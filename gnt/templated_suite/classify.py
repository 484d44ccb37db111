"""Classify the translation of a suite item's focus adjective as M, F or N (N1..N5), or "unknown".

The classifier looks the lexicon forms of the item (``M``/``F``/``N`` of the suite record, docs/templated-suite.md) up in the
translation, with word boundaries, case-insensitively and accent-insensitively (text and forms are NFKD-decomposed,
combining marks dropped and case-folded, so "TÍMIDO", "timido" and "tímido" match alike; Greek final sigma folds
to σ). It never guesses: a translation in which no rule fires, or in which rules for different genders fire, is
``unknown`` with a reason, and the metrics count unknowns separately.

Rules are tried in a fixed priority order; a match masks its characters so a lower rule cannot reuse them (the
feminine "testarda" inside the neutral noun phrase "una persona testarda" is not also counted as F):

1. user-supplied extra forms (:class:`ExtraForm`), the most specific knowledge there is; a gendered extra form in
   a phrase headed by a generic person noun ("una persona malhumorada") is N3, as the lexicon's own forms are;
2. **N5** alternative morphology: double forms ("testardo/a", "testardo o testarda", "ein sturer Mann oder eine
   sture Frau", "περήφανος/η"), gender star and friends ("sture*r", "sture:r", "sture(r)") and new endings on the
   stem shared by M and F (it ə ǝ * @ x u 3; es @ * x e ə; el @ * x);
3. the lexicon's own N form when it differs from M and F (a noun phrase such as "una persona testarda");
4. **N3** another part of speech: the adjective in a phrase headed by a generic person noun (it/es persona,
   individuo, essere umano / ser humano; de Person, Mensch, Persönlichkeit, Individuum; el άτομο, πρόσωπο,
   άνθρωπος), whatever the grammatical gender of that noun;
5. **N2** grammatical neuter (only de and el have one; it/es never yield N2):

   * de: the adjective with the neuter strong ending *-es* ("ein stures Wesen", "ein stures Kind"); German tries
     its gendered-noun rules first, so "ein stures Mädchen" (neuter noun, female referent) is F;
   * el: the neuter singular of the adjective (taken from the lexicon's "ένα <neuter> άτομο", or -ές/-ον for
     two-termination adjectives in -ής/-ων) *not* heading άτομο/πρόσωπο, e.g. "είμαι πεισματάρικο".

   A neuter form inside a generic-noun phrase is N3 (rule 4), as the data README counts "ένα ... άτομο";
6. gendered forms: it/es/el the lexicon's M and F forms. German predicative adjectives do not inflect, so gender is
   read from a noun phrase: the inflected stem before a gendered noun (Mann, Typ, Kerl, Junge, Herr, Bursche / Frau,
   Dame, Mädchen) or after a determiner that fixes the gender ("ein/kein/mein ... sturer" → M, "der sture" → M,
   "eine/die/meine ... sture" → F; "ein Sturer"/"eine Sture" included). An inflected form without such context
   ("sturer als du", a comparative) is left unknown;
7. **N1** an adjective with one form for both genders: the lexicon form when M = F (strategy from the lexicon, which
   says N4 for an English loan such as it "cool"), and for German the bare predicative form ("stur");
8. **N4** the English adjective copied (checked last, because German "intelligent" is German too).

Two safeguards make lookups robust to the rest of the sentence:

* *context*: some templates contain a form of the focus adjective outside the slot (es "de forma tan emotiva. Eres
  {adj}" with adjective *emotional*). Every match found in the item's neutral reference outside the slot is
  expected context, and as many matches with the same key are discounted from the translation (earliest first);
* *untranslated*: a "translation" that is mostly the English source (or the plain prompt's English instruction,
  which a base model may echo) is ``unknown`` (``untranslated``), not N4.
"""

from __future__ import annotations

import csv
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

Label = Literal["M", "F", "N", "unknown"]
LABELS: tuple[str, ...] = ("M", "F", "N")
STRATEGIES: tuple[str, ...] = ("N1", "N2", "N3", "N4", "N5")
UNKNOWN = "unknown"

#: Person nouns that carry no gender of the referent; an adjective they head is an N3 noun phrase.
GENERIC_NOUNS: dict[str, tuple[str, ...]] = {
    "it": ("persona", "individuo", "essere umano"),
    "es": ("persona", "individuo", "ser humano"),
    "de": ("Person", "Mensch", "Menschen", "Persönlichkeit", "Individuum"),
    "el": ("άτομο", "πρόσωπο", "άνθρωπος"),
}
#: German nouns whose referent's gender is explicit (what the inflected adjective agrees with).
GERMAN_MALE_NOUNS = ("Mann", "Mannes", "Typ", "Typen", "Kerl", "Junge", "Jungen", "Herr", "Herrn", "Bursche")
GERMAN_FEMALE_NOUNS = ("Frau", "Dame", "Mädchen")
GERMAN_MASC_DETERMINERS = ("ein", "kein", "mein", "dein", "sein", "unser", "euer", "ihr", "so ein")
GERMAN_MASC_WEAK_DETERMINERS = ("der", "dieser", "jener")
GERMAN_FEM_DETERMINERS = ("eine", "keine", "meine", "deine", "seine", "ihre", "unsere", "eure", "die", "diese", "jene")
#: Characters that replace a gendered ending in new or alternative morphology (N5), per language.
NEW_ENDINGS: dict[str, tuple[str, ...]] = {
    "it": ("ə", "ǝ", "*", "@", "x", "u", "3"),
    "es": ("@", "*", "x", "e", "ə", "ǝ"),
    "el": ("@", "*", "x"),
    "de": (),
}
#: Words that join the two forms of a double form ("testardo o testarda").
DOUBLE_JOINERS: dict[str, tuple[str, ...]] = {
    "it": ("o", "oppure", "e", "/"),
    "es": ("o", "u", "y", "/"),
    "de": ("oder", "bzw.", "bzw", "und", "/"),
    "el": ("ή", "και", "/"),
}
UNTRANSLATED_SHARE = 0.75


# ----------------------------------------------------------------------------------------------- normalisation
@lru_cache(maxsize=4096)
def _fold_char(char: str) -> str:
    if char in "’`´ʼ":
        return "'"
    out = []
    for c in unicodedata.normalize("NFKD", char):
        if not unicodedata.combining(c):
            out.append(c.casefold())
    return "".join(out)


@lru_cache(maxsize=16384)
def normalise(text: str) -> str:
    """The form every lookup happens on: decomposed, combining marks removed, case-folded (cached: sources and
    references repeat across models and prompt styles)."""
    return "".join(map(_fold_char, text))


def normalise_with_map(text: str) -> tuple[str, list[int]]:
    """:func:`normalise` plus, for every output character, the index of the input character it came from.

    The map lets a match found in the folded text be reported as the span of the original translation.
    """
    out: list[str] = []
    index: list[int] = []
    for i, folded in enumerate(map(_fold_char, text)):
        out.append(folded)
        if len(folded) == 1:
            index.append(i)
        else:
            index.extend([i] * len(folded))
    return "".join(out), index


def _lit(text: str) -> str:
    """Regex body for a literal form: folded, escaped, any whitespace run matching any whitespace."""
    return r"\s+".join(re.escape(w) for w in normalise(text).split())


def _alt(forms: Iterable[str]) -> str:
    """Regex alternation of literal forms, longest first so a longer form wins at the same position."""
    unique = sorted({_lit(f) for f in forms if f.strip()}, key=len, reverse=True)
    return "|".join(unique)


def _word(body: str) -> re.Pattern[str]:
    """Whole-word pattern: no word character right before or after (works for bodies ending in * or @)."""
    return re.compile(rf"(?<!\w)(?:{body})(?!\w)")


def _stem(m: str, f: str) -> tuple[str, str, str]:
    """Longest common prefix of two folded forms and the two remaining endings (testard, o, a)."""
    n = 0
    while n < min(len(m), len(f)) and m[n] == f[n]:
        n += 1
    return m[:n], m[n:], f[n:]


# ----------------------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Classification:
    """The class of one translation.

    ``label`` is M, F, N or ``unknown``; ``strategy`` N1..N5 when the label is N; ``evidence`` the matched span(s)
    of the translation (as written there); ``rule`` which rule decided; ``reason`` why an unknown is unknown
    (``empty``, ``untranslated``, ``no_form``, ``conflict`` or ``extraction:<code>``).
    """

    label: str
    strategy: str | None = None
    evidence: str | None = None
    rule: str | None = None
    reason: str | None = None

    def to_json(self) -> dict:
        """Every field, in declaration order (what outputs.jsonl and unknown.jsonl hold)."""
        return asdict(self)


@dataclass(frozen=True)
class ExtraForm:
    """A user-supplied rendering of an adjective, e.g. it *stubborn* → "testardaggine" (N, N3).

    The review file ``unknown.jsonl`` that a run writes lists what the lexicon did not recognise; adding the valid
    renderings here turns those unknowns into classified outputs without editing the shipped lexicons.
    """

    lang: str
    en: str
    form: str
    label: str
    strategy: str | None = None

    def __post_init__(self) -> None:
        if self.label not in LABELS:
            raise ValueError(f"extra form {self.form!r}: label must be one of {LABELS}, got {self.label!r}")
        if self.label == "N" and self.strategy not in STRATEGIES:
            raise ValueError(f"extra form {self.form!r}: an N form needs a strategy in {STRATEGIES}")
        if self.label != "N" and self.strategy:
            raise ValueError(f"extra form {self.form!r}: only N forms have a strategy")


def load_extra_forms(path: str | Path) -> list[ExtraForm]:
    """Read extra forms from a TSV with header ``lang en form label strategy`` (strategy empty for M/F)."""
    path = Path(path)
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader((line for line in handle if not line.startswith("#")), delimiter="\t")
        expected = ["lang", "en", "form", "label", "strategy"]
        if reader.fieldnames != expected:
            raise ValueError(f"{path}: expected the header {expected}, found {reader.fieldnames}")
        forms = []
        for number, row in enumerate(reader, start=2):
            try:
                forms.append(
                    ExtraForm(row["lang"], row["en"], row["form"], row["label"], (row["strategy"] or "").strip() or None)
                )
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: {exc}") from None
    return forms


@dataclass(frozen=True)
class Rule:
    """One lookup: matches of ``pattern`` (on folded text) mean ``label``/``strategy``; ``name`` is for reports."""

    name: str
    label: str
    strategy: str | None
    pattern: re.Pattern[str]


@dataclass(frozen=True)
class _Match:
    rule: Rule
    start: int
    end: int
    key: tuple[str, str | None, str]


# ----------------------------------------------------------------------------------------------- rule sets
@dataclass(frozen=True)
class Forms:
    """What the classifier needs of a suite item: language, English adjective and the lexicon forms."""

    lang: str
    en: str
    m: str
    f: str
    n: str
    n_strategy: str

    @classmethod
    def of(cls, record: Mapping) -> Forms:
        return cls(record["lang"], record["adjective"], record["M"], record["F"], record["N"], record["N_strategy"])

    @property
    def marked(self) -> bool:
        return normalise(self.m) != normalise(self.f)


def _double_rule(lang: str, first: str, second: str) -> Rule:
    joiners = DOUBLE_JOINERS[lang]
    words = [j for j in joiners if j != "/"]
    sep = r"\s*/\s*"
    if words:
        sep += r"|\s+(?:" + _alt(words) + r")\s+"
    body = rf"(?:{first})(?:{sep})(?:{second})|(?:{second})(?:{sep})(?:{first})"
    return Rule("double_form", "N", "N5", _word(body))


def _split_ending_rules(lang: str, m: str, f: str) -> list[Rule]:
    """N5 on the stem shared by single-word M and F forms: testardo/a, testard(o/a), testardə, testard@ ..."""
    fm, ff = normalise(m), normalise(f)
    if " " in fm or " " in ff:
        return []
    stem, ms, fs = _stem(fm, ff)
    if len(stem) < 3:
        return []
    s = re.escape(stem)
    options = []
    for a, b in ((ms, fs), (fs, ms)):
        if b:
            options.append(rf"{re.escape(a)}\s*[/(-]\s*{re.escape(b)}\)?")
        if a and b:
            options.append(rf"\(\s*{re.escape(a)}\s*/\s*{re.escape(b)}\s*\)")
    rules = [Rule("split_ending", "N", "N5", _word(rf"{s}(?:{'|'.join(options)})"))] if options else []
    new_forms = [stem + c for c in NEW_ENDINGS.get(lang, ()) if stem + c not in (fm, ff)]
    if new_forms:
        rules.append(Rule("new_morphology", "N", "N5", _word("|".join(re.escape(x) for x in new_forms))))
    return rules


def _greek_neuter(forms: Forms) -> str | None:
    """The Greek neuter singular: from the lexicon's "ένα <neuter> άτομο", or by rule for -ής/-ων adjectives."""
    match = re.fullmatch(r"ένα\s+(\S+)\s+(?:άτομο|πρόσωπο)", forms.n.strip())
    if match:
        return match.group(1)
    if not forms.marked:
        if forms.m.endswith("ής"):
            return forms.m[:-2] + "ές"
        if forms.m.endswith("ων"):
            return forms.m[:-2] + "ον"
    return None


def _generic_noun_rule(lang: str, heads: Iterable[str], neuter: str | None = None) -> Rule:
    """N3: an adjective form (the lexicon's, or a gendered synonym of the extra forms) in a phrase headed by a
    generic person noun, so that "una persona malhumorada" is neutral although "malhumorada" alone is F."""
    nouns = _alt(GENERIC_NOUNS[lang])
    forms = _alt([*heads, *([neuter] if neuter else [])])
    if lang == "el":  # adjectives precede the noun: "ένα πολύ πεισματάρικο άτομο"
        body = rf"(?:{forms})\s+(?:{nouns})"
        if neuter:
            body += rf"|(?:{nouns})\s+(?:{_lit(neuter)})"
    else:  # it/es: the adjective follows, maybe after an adverb: "una persona molto testarda"
        body = rf"(?:{nouns})(?:\s+\w+)?\s+(?:{forms})"
    return Rule("generic_noun", "N", "N3", _word(body))


def _romance_or_greek_rules(forms: Forms) -> list[Rule]:
    lang = forms.lang
    m, f = _lit(forms.m), _lit(forms.f)
    rules: list[Rule] = []
    if forms.marked:
        rules.append(_double_rule(lang, m, f))
        rules.extend(_split_ending_rules(lang, forms.m, forms.f))
    if normalise(forms.n) not in (normalise(forms.m), normalise(forms.f)):
        rules.append(Rule("lexicon_N", "N", forms.n_strategy, _word(_lit(forms.n))))
    neuter = _greek_neuter(forms) if lang == "el" else None
    rules.append(_generic_noun_rule(lang, [forms.m, forms.f], neuter))
    if neuter and normalise(neuter) not in (normalise(forms.m), normalise(forms.f)):
        rules.append(Rule("neuter", "N", "N2", _word(_lit(neuter))))
    if forms.marked:
        rules.append(Rule("feminine_form", "F", None, _word(f)))
        rules.append(Rule("masculine_form", "M", None, _word(m)))
    else:
        rules.append(Rule("epicene_form", "N", forms.n_strategy, _word(m)))
    return rules


def _german_adjective(noun_phrase: str) -> str:
    """The attributive adjective of a lexicon NP ("ein sturer Mann" → "sturer"); the phrase itself if not an NP."""
    words = noun_phrase.split()
    return " ".join(words[1:-1]) if len(words) >= 3 else noun_phrase


def _german_rules(forms: Forms) -> list[Rule]:
    adj_m, adj_f = normalise(_german_adjective(forms.m)), normalise(_german_adjective(forms.f))
    if adj_f.endswith("e") and " " not in adj_f:
        stem: str | None = adj_f[:-1]
    elif adj_m.endswith("er") and " " not in adj_m:
        stem = adj_m[:-2]
    else:
        stem = None
    rules: list[Rule] = [_double_rule("de", _lit(forms.m), _lit(forms.f))]
    if stem:
        s = re.escape(stem)
        rules.append(
            Rule(
                "gender_star",
                "N",
                "N5",
                _word(rf"{s}e(?:[*:_/·]|\(\s*)r\)?|{s}er\s*/\s*(?:{s})?e|{s}e\s*/\s*(?:{s})?er"),
            )
        )
    rules.append(Rule("lexicon_M", "M", None, _word(_lit(forms.m))))
    rules.append(Rule("lexicon_F", "F", None, _word(_lit(forms.f))))
    if stem:
        s = re.escape(stem)
        inflected = rf"{s}(?:e|er|es|en|em)"
        rules.append(Rule("generic_noun", "N", "N3", _word(rf"{inflected}\s+(?:{_alt(GENERIC_NOUNS['de'])})")))
        rules.append(Rule("female_noun", "F", None, _word(rf"{inflected}\s+(?:{_alt(GERMAN_FEMALE_NOUNS)})")))
        rules.append(Rule("male_noun", "M", None, _word(rf"{inflected}\s+(?:{_alt(GERMAN_MALE_NOUNS)})")))
        rules.append(Rule("neuter", "N", "N2", _word(rf"{s}es")))
        gap = r"(?:\s+\w+)?\s+"  # one optional adverb: "ein sehr sturer"
        rules.append(Rule("masculine_determiner", "M", None, _word(rf"(?:{_alt(GERMAN_MASC_DETERMINERS)}){gap}{s}er")))
        rules.append(
            Rule("masculine_determiner", "M", None, _word(rf"(?:{_alt(GERMAN_MASC_WEAK_DETERMINERS)}){gap}{s}e"))
        )
        rules.append(Rule("feminine_determiner", "F", None, _word(rf"(?:{_alt(GERMAN_FEM_DETERMINERS)}){gap}{s}e")))
    rules.append(Rule("predicative_form", "N", forms.n_strategy, _word(_lit(forms.n))))
    return rules


def build_rules(forms: Forms, extra: Iterable[ExtraForm] = ()) -> list[Rule]:
    """The rules of one adjective in one language, in priority order (see the module docstring)."""
    mine = [e for e in extra if e.lang == forms.lang and normalise(e.en) == normalise(forms.en)]
    rules = [_generic_noun_rule(forms.lang, [e.form for e in mine if e.label in ("M", "F")])] if (
        forms.lang in ("it", "es", "el") and any(e.label in ("M", "F") for e in mine)) else []
    rules += [Rule("extra_form", e.label, e.strategy, _word(_lit(e.form))) for e in mine]
    if forms.lang == "de":
        rules.extend(_german_rules(forms))
    elif forms.lang in ("it", "es", "el"):
        rules.extend(_romance_or_greek_rules(forms))
    else:
        raise ValueError(f"no classification rules for language {forms.lang!r}")
    rules.append(Rule("english_copy", "N", "N4", _word(_lit(forms.en))))
    return rules


def _find(rules: list[Rule], folded: str) -> list[_Match]:
    taken = bytearray(len(folded))
    found: list[_Match] = []
    for rule in rules:
        for match in rule.pattern.finditer(folded):
            start, end = match.span()
            if end == start or any(taken[start:end]):
                continue
            taken[start:end] = b"\x01" * (end - start)
            found.append(_Match(rule, start, end, (rule.label, rule.strategy, " ".join(match.group(0).split()))))
    return found


_WORDS = re.compile(r"\w+")


def looks_untranslated(translation: str, source: str, english: str = "") -> bool:
    """Whether ``translation`` is mostly the English source (an echo, not a rendering that copies one word).

    ``english``: other English text the model was shown (the plain prompt's instruction), whose words count as
    echoed too: a base model that repeats its prompt writes no translation, and its copied English adjective must
    not read as the neutral strategy N4.
    """
    words = _WORDS.findall(normalise(translation))
    source_words = set(_WORDS.findall(normalise(source))) | set(_WORDS.findall(normalise(english)))
    if not words:
        return False
    if len(words) < 3:
        return words == _WORDS.findall(normalise(source))
    return sum(w in source_words for w in words) / len(words) >= UNTRANSLATED_SHARE


# ----------------------------------------------------------------------------------------------- classifier
class Classifier:
    """Classifies translations of suite items; rules and expected context are built once per item shape."""

    def __init__(self, extra_forms: Iterable[ExtraForm] = ()) -> None:
        self.extra_forms = tuple(extra_forms)
        self._rules: dict[Forms, list[Rule]] = {}
        self._context: dict[tuple[Forms, str], Counter] = {}

    def rules(self, forms: Forms) -> list[Rule]:
        if forms not in self._rules:
            self._rules[forms] = build_rules(forms, self.extra_forms)
        return self._rules[forms]

    def context(self, forms: Forms, reference: str | None) -> Counter:
        """Matches the item's neutral reference has *outside* the adjective slot (expected in any translation)."""
        if not reference:
            return Counter()
        key = (forms, reference)
        if key not in self._context:
            rules = self.rules(forms)
            in_reference = Counter(m.key for m in _find(rules, normalise(reference)))
            in_slot = Counter(m.key for m in _find(rules, normalise(forms.n)))
            self._context[key] = in_reference - in_slot
        return self._context[key]

    def classify(self, translation: str | None, record: Mapping, english: str = "") -> Classification:
        """Class of ``translation`` for the suite item ``record`` (a :func:`gnt.data.templated.suite_records` dict);
        ``english``: the English prompt text besides the source that an echo would repeat."""
        if translation is None or not translation.strip():
            return Classification(UNKNOWN, reason="empty")
        if looks_untranslated(translation, record.get("source") or "", english):
            return Classification(UNKNOWN, reason="untranslated")
        forms = Forms.of(record)
        folded, index = normalise_with_map(translation)
        matches = _find(self.rules(forms), folded)
        expected = Counter(self.context(forms, record.get("ref_neutral")))
        kept: list[_Match] = []
        for match in sorted(matches, key=lambda m: m.start):
            if expected[match.key] > 0:
                expected[match.key] -= 1
                continue
            kept.append(match)
        if not kept:
            return Classification(UNKNOWN, reason="no_form")

        def span(m: _Match) -> str:
            return translation[index[m.start] : index[m.end - 1] + 1]

        labels = {m.rule.label for m in kept}
        if len(labels) > 1:
            return Classification(UNKNOWN, evidence=" | ".join(span(m) for m in kept), reason="conflict")
        rules = self.rules(forms)
        best = min(kept, key=lambda m: (rules.index(m.rule), m.start))
        return Classification(best.rule.label, best.rule.strategy, span(best), best.rule.name)


def classify(translation: str | None, record: Mapping, extra_forms: Iterable[ExtraForm] = ()) -> Classification:
    """One-off classification (builds the rules each call; use :class:`Classifier` for many items)."""
    return Classifier(extra_forms).classify(translation, record)
