"""Read the gender of a slot from the predicate the system wrote, when the lexicon knows none of its words.

The suite's slots are predicates of one person ("I'm fierce", "you're scared"), and Spanish marks the referent's
gender on whatever word a system puts after the copula, whether or not it is the word the lexicon expects:
"creo que soy fiera", "eres un maleducado", "soy el que regaña" say F, M and M of the referent as clearly as
"soy feroz" says nothing. The lexicon and its extra forms cannot list every synonym and mistranslation of 351
adjectives in 20 systems, so this module is the scorer's last resort for an item the classifier left ``no_form``:

1. find the copulas of the slot's person in the slot's own text (``soy``/``estoy``/``me siento``... for "I",
   ``eres``/``estás``/``usted es``... for "you"; ``somos``... only to tell a predicate of the wrong person,
   :func:`read_other_person`); adverbs such as "muy", "un poco", "tan" may follow;
2. read what comes next: "una persona"/"un ser humano" + anything is N3, "de" + a phrase ("de mente abierta") is
   N3, a determiner fixes the gender ("un"/"el" M, "una"/"la" F), else the ending of the word does (-o/-os, -or,
   -ón, -án M; -a/-as, -ora, -ona, -ana F; -e, -l, -z, -ble, -ista... one form for both genders, N1);
3. every reading of the text must agree, otherwise the item stays unknown (``conflict``); a word whose ending
   says nothing (a verb, a noun of another shape) gives no reading.

It runs on a quote or a clause only (never on the whole translation, where other people's predicates are), and
only for Spanish; other languages keep the classifier's answer. Items it decides carry the rule name
``predicate_morphology``, so a summary can tell them from lexicon matches.
"""

from __future__ import annotations

import re

from gnt.templated_suite.classify import Classification, normalise

RULE = "predicate_morphology"
OTHER_PERSON_RULE = "other_person"
#: Copulas and verbs of state that introduce the predicate, per person of the slot (folded: no accents).
_COPULAS = {
    "I": ("soy", "estoy", "sea", "este", "me siento", "me veo", "me encuentro", "parezco", "me considero",
          "me quedo", "me quede", "sigo", "ando", "me he vuelto", "me vuelvo"),
    "we": ("somos", "estamos", "nos sentimos", "nos vemos"),
    "you": ("eres", "estas", "seas", "estes", "usted es", "usted esta", "ustedes son", "ustedes estan", "sois",
            "estais", "te sientes", "te ves", "te encuentras", "pareces", "te consideras", "sigues", "andas",
            "te has vuelto", "te vuelves"),
}
_ADVERBS = ("muy", "tan", "bastante", "algo", "un poco", "un tanto", "demasiado", "realmente", "mas", "super",
            "verdaderamente", "increiblemente", "extremadamente", "totalmente", "completamente", "bien",
            "francamente", "tambien", "si", "mucho", "todo un", "toda una", "de verdad", "siempre", "yo", "tu", "no")
_GENERIC = r"una persona|un ser humano|un individuo|alguien"
_MASC_DETERMINERS = ("un", "el", "todo un", "uno")
_FEM_DETERMINERS = ("una", "la", "toda una")
#: Epicene words ending in -a or -o, and comparatives in -or, that the ending rule would misread.
_EPICENE = frozenset({
    "idiota", "hipocrita", "psicopata", "cosmopolita", "nomada", "homicida", "suicida", "atleta", "agricola",
    "mejor", "peor", "mayor", "menor", "superior", "inferior", "interior", "exterior", "anterior", "posterior",
    "alerta", "maya", "rosa", "naranja", "lila", "violeta", "persona",
})
#: Words that may follow a copula without being the predicate's head.
_NOT_PREDICATE = frozenset({"que", "en", "con", "a", "por", "para", "lo", "los", "las", "le", "les", "se", "como",
                            "no", "nada", "muy", "asi", "aqui", "alli", "ahora", "hoy", "y", "o", "pero"})
_WORD = r"[^\W\d_]+"


def _alt(words: tuple[str, ...] | frozenset[str]) -> str:
    return "|".join(sorted((re.escape(w).replace(r"\ ", r"\s+") for w in words), key=len, reverse=True))


_PATTERNS = {
    person: re.compile(
        rf"(?<!\w)(?:{_alt(copulas)})(?:\s+(?:{_alt(_ADVERBS)}))*\s+(?P<rest>{_WORD}(?:\s+{_WORD}){{0,2}})"
    )
    for person, copulas in _COPULAS.items()
}
_PRO_FORM = re.compile(rf"(?<!\w)lo\s+(?:{_alt(_COPULAS['I'] + _COPULAS['you'] + _COPULAS['we'])})(?!\w)")


def _gender_of_word(word: str) -> tuple[str, str | None] | None:
    """(label, strategy) of a bare predicate word from its ending; None when the ending says nothing."""
    if word in _NOT_PREDICATE or len(word) < 3 or word.endswith(("ando", "iendo", "yendo")):  # gerunds
        return None
    if word in _EPICENE or word.endswith(("ista", "istas")):
        return "N", "N1"
    if word.endswith(("ora", "oras", "ona", "onas", "ana", "anas")) or word.endswith(("a", "as")):
        return "F", None
    if word.endswith(("o", "os", "or", "ores", "on", "an")):
        return "M", None
    if word.endswith(("e", "es", "l", "les", "z", "ces", "ble", "i", "u", "ar", "ares", "en")):
        return "N", "N1"
    return None


def _reading(rest: str) -> tuple[str, str | None] | None:
    """(label, strategy) of what follows a copula (folded words), or None when it is not readable."""
    if re.match(rf"(?:{_GENERIC})(?!\w)", rest):
        return "N", "N3"
    words = rest.split()
    if words[0] == "de" and len(words) > 1:
        return "N", "N3"
    for determiners, label in ((_MASC_DETERMINERS, "M"), (_FEM_DETERMINERS, "F")):
        for det in sorted(determiners, key=len, reverse=True):
            det_words = det.split()
            if words[: len(det_words)] == det_words and len(words) > len(det_words):
                return label, None
    return _gender_of_word(words[0])


def read_predicate(text: str, person: str) -> Classification | None:
    """The class of ``text`` read from the predicates of ``person`` ("I" or "you"); None when there is none."""
    folded = normalise(text)
    readings = [r for m in _PATTERNS[person].finditer(folded) if (r := _reading(m.group("rest")))]
    if not readings:
        return None
    labels = {label for label, _ in readings}
    if len(labels) > 1:
        return Classification("unknown", reason="conflict", rule=RULE)
    label, strategy = readings[0]
    return Classification(label, strategy, None, RULE)


def read_other_person(text: str, person: str) -> Classification | None:
    """The class of a predicate that ``text`` gives another person only ("no somos rudos" for "you're not rude").

    The system rendered the slot's adjective but said it of "we" or of the wrong one of I / you. The suite
    measures the gender a system gives the adjective, not whether its sentence is right (as for a mistranslation,
    "soy feta" for *fancy*), so the predicate is read by its gender all the same, under the rule name
    ``other_person`` so a summary counts such items apart. None when ``text`` has a predicate of ``person`` itself,
    or none readable of anyone; an unknown ``conflict`` when the readings disagree.
    """
    folded = normalise(text)
    if any(_PATTERNS[person].finditer(folded)):
        return None
    readings = [r for other in _PATTERNS if other != person for m in _PATTERNS[other].finditer(folded)
                if (r := _reading(m.group("rest")))]
    if not readings:
        return None
    if len({label for label, _ in readings}) > 1:
        return Classification("unknown", reason="conflict", rule=OTHER_PERSON_RULE)
    label, strategy = readings[0]
    return Classification(label, strategy, None, OTHER_PERSON_RULE)


def mentions(text: str, person: str) -> bool:
    """Whether ``text`` has a copula of ``person`` ("I", "you" or "we") followed by a word: "yo soy bajo" for "I"."""
    return any(_PATTERNS[person].finditer(normalise(text)))


def marked_by_relative(text: str, person: str) -> Classification | None:
    """M or F when ``text`` says "soy el que ..." / "eres la que ...": the relative's article marks the referent,
    whatever gender-free phrase follows ("yo soy la que tiene suerte")."""
    copulas = _alt(_COPULAS[person])
    found = {match.group(1) for match in re.finditer(rf"(?<!\w)(?:{copulas})\s+(?:yo\s+|tu\s+)?(el|la|los|las)\s+"
                                                      rf"(?:que|quien|quienes)(?!\w)", normalise(text))}
    genders = {"M" if article in ("el", "los") else "F" for article in found}
    if len(genders) != 1:
        return None
    return Classification(genders.pop(), None, None, "relative")


def is_pro_form(text: str) -> bool:
    """Whether ``text`` answers with a pro-form ("no, no lo soy"): the adjective is not rendered at all."""
    return bool(_PRO_FORM.search(normalise(text)))


#: Nouns of a person whose gender is fixed, and the gender they give an epicene word after them ("un hombre valiente").
_GENDERED_NOUNS = {"hombre": "M", "chico": "M", "tipo": "M", "senor": "M", "muchacho": "M", "varon": "M",
                   "mujer": "F", "chica": "F", "tipa": "F", "senora": "F", "muchacha": "F", "dama": "F"}
_DETERMINERS = {"un": "M", "el": "M", "uno": "M", "una": "F", "la": "F"}


def marked_by_determiner(text: str, evidence: str) -> Classification | None:
    """M or F when the N word ``evidence`` is marked in ``text`` by the determiner or gendered noun before it.

    Spanish epicene adjectives used as nouns, and nouns of common gender, show the referent's gender on their
    determiner only: "soy un cobarde" / "soy una cobarde", "tú eres la alegre", "un sinvergüenza", "un hombre
    elegante". A noun of fixed gender ("soy un encanto", "una persona alegre") says nothing of the referent and is
    left alone: its determiner belongs to the phrase the lexicon lists, or "persona" stands between. "un poco" is an
    adverb, not a determiner. Every marking of the word must agree (else the reading stays as it was).
    """
    folded, word = normalise(text), normalise(evidence)
    if word.split()[0] in _DETERMINERS or word.split()[0] == "persona":
        return None
    nouns = "|".join(_GENDERED_NOUNS)
    pattern = re.compile(rf"(?<!\w)(?:(?P<det>un|una|el|la|uno)\s+)?(?:(?P<noun>{nouns})\s+)?"
                         rf"(?:(?:muy|tan|mas)\s+)?{re.escape(word)}(?!\w)")
    genders = set()
    for match in pattern.finditer(folded):
        if match.group("noun"):
            genders.add(_GENDERED_NOUNS[match.group("noun")])
        elif match.group("det") and word.split()[0] != "poco":  # "un poco importante": an adverb
            genders.add(_DETERMINERS[match.group("det")])
    if len(genders) != 1:
        return None
    return Classification(genders.pop(), None, evidence, "determiner")
