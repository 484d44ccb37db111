"""The WMT24 suite's Italian, German and Greek lexicons (data/wmt24/lexicons/{it,de,el}.tsv).

Scores of a language rest on its lexicon, so these tests hold the files to what the scorer and a reader assume:
they pass the real validation, cover exactly the suite's adjectives (the Spanish file's list), give the adjectives
the templated suite also uses the same forms as that suite, and follow each language's neutral convention. The
last test scores a few hand-written Italian translations of a miniature suite with the Italian lexicon.
"""

from __future__ import annotations

import csv
import re
import runpy
from pathlib import Path

import pytest

from gnt.data.errors import DataError
from gnt.data.templated import LexiconEntry, load_lexicon
from gnt.templated_suite.classify import load_extra_forms
from gnt.templated_suite.wmt24.lexicon import LEXICON_DIR, check_coverage, load_suite_lexicon
from gnt.templated_suite.wmt24.reader import read_suite
from gnt.templated_suite.wmt24.score import score_translations

LANGS = ("it", "de", "el")
TEMPLATE_LEXICONS = Path(__file__).resolve().parents[1] / "data" / "templates" / "lexicons"
#: Adjectives shared with the templated suite whose WMT24 row deliberately differs, with the reason. None today:
#: both suites score a shared adjective with the same forms.
DELIBERATE_DIFFERENCES: dict[tuple[str, str], str] = {}


def _suite_adjectives() -> list[str]:
    return [e.en for e in load_lexicon("es", LEXICON_DIR / "es.tsv")]


def _rows(lang: str) -> list[LexiconEntry]:
    return load_lexicon(lang, LEXICON_DIR / f"{lang}.tsv")


# ------------------------------------------------------------------------------------------------- coverage
@pytest.mark.parametrize("lang", LANGS)
def test_lexicon_loads_and_covers_exactly_the_suite_adjectives_in_order(lang):
    lexicon = load_suite_lexicon(lang)
    suite = _suite_adjectives()
    assert len(suite) == 351
    missing = [a for a in suite if lexicon.entry(a) is None]
    extra = sorted(set(lexicon.entries) - {a.casefold() for a in suite})
    assert not missing, f"{lang}.tsv lacks suite adjectives: {', '.join(missing)}"
    assert not extra, f"{lang}.tsv has adjectives that are not in the suite: {', '.join(extra)}"
    assert [e.en for e in _rows(lang)] == suite  # same order as es.tsv, so the files read side by side
    check_coverage(lexicon, suite)
    assert all(e.stereotype is None for e in lexicon.entries.values())


def test_a_suite_adjective_missing_from_a_lexicon_is_named(tmp_path):
    text = (LEXICON_DIR / "it.tsv").read_text(encoding="utf-8")
    kept = [line for line in text.splitlines() if not line.startswith("lucky\t")]
    assert len(kept) == len(text.splitlines()) - 1
    (tmp_path / "it.tsv").write_text("\n".join(kept) + "\n", encoding="utf-8")
    lexicon = load_suite_lexicon("it", tmp_path)
    with pytest.raises(DataError, match=r"1 adjective\(s\) of the suite missing from the it lexicon: lucky"):
        check_coverage(lexicon, _suite_adjectives())


def test_a_bad_row_is_located_by_line_and_column(tmp_path):
    lines = (LEXICON_DIR / "el.tsv").read_text(encoding="utf-8").splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith("honest\t"))
    lines[index] = "honest\tειλικρινής\tειλικρινής\tένα ειλικρινές άτομο\tN3\t"
    (tmp_path / "el.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"el.tsv:{index + 1}:N: M and F are the same form"):
        load_suite_lexicon("el", tmp_path)


# ------------------------------------------------------------------------------------- same as the templated suite
@pytest.mark.parametrize("lang", LANGS)
def test_adjectives_shared_with_the_templated_suite_have_its_forms(lang):
    ours = {e.en: e for e in _rows(lang)}
    theirs = {e.en: e for e in load_lexicon(lang, TEMPLATE_LEXICONS / f"{lang}.tsv")}
    shared = sorted(set(ours) & set(theirs))
    assert len(shared) >= 30  # proud, shy, brave, ...: the two suites share 35 adjectives
    differ = [
        f"{a}: {(ours[a].m, ours[a].f, ours[a].n, ours[a].n_strategy)} vs "
        f"{(theirs[a].m, theirs[a].f, theirs[a].n, theirs[a].n_strategy)}"
        for a in shared
        if (lang, a) not in DELIBERATE_DIFFERENCES
        and (ours[a].m, ours[a].f, ours[a].n, ours[a].n_strategy)
        != (theirs[a].m, theirs[a].f, theirs[a].n, theirs[a].n_strategy)
    ]
    assert not differ, f"{lang}: rows that differ from data/templates/lexicons/{lang}.tsv: " + "; ".join(differ)


# ------------------------------------------------------------------------------------------ neutral conventions
def _agree_o_a(m: str, f: str) -> bool:
    pairs = list(zip(m.split(), f.split(), strict=False))
    changed = [(a, b) for a, b in pairs if a != b]
    return (len(m.split()) == len(f.split()) and bool(changed)
            and all(a[:-1] == b[:-1] and a[-1] == "o" and b[-1] == "a" for a, b in changed))


def test_italian_gendered_rows_have_una_persona_with_the_feminine():
    rows = _rows("it")
    gendered = [e for e in rows if e.m != e.f]
    assert len(gendered) > 150
    wrong = [e.en for e in gendered if (e.n, e.n_strategy) != (f"una persona {e.f}", "N3")]
    assert not wrong, f"gendered rows without 'una persona <F>' N3: {wrong}"
    # M and F differ only in the agreeing endings (-o → -a, "sicuro di sé" / "sicura di sé", "ben fatto" / "ben fatta")
    disagree = [e.en for e in gendered if not _agree_o_a(e.m, e.f)]
    assert not disagree, f"gendered rows whose M/F do not end in -o/-a: {disagree}"
    epicene = [e for e in rows if e.m == e.f]
    assert {e.n_strategy for e in epicene} <= {"N1", "N3", "N4"}
    assert [e.en for e in epicene if e.n_strategy == "N4"] == ["cool", "gay", "sexy"]
    # another part of speech, not an adjective of one form: "in forma", "bene", "di classe", "di talento"
    assert sorted(e.en for e in epicene if e.n_strategy == "N3") == ["classy", "fine", "fit", "talented"]


def test_greek_gendered_rows_have_a_neuter_atomo_phrase():
    rows = _rows("el")
    frame = re.compile(r"ένα (\S+ )?\S+ άτομο")
    gendered = [e for e in rows if e.m != e.f]
    assert len(gendered) > 250
    wrong = [e.en for e in gendered if e.n_strategy != "N3" or not frame.fullmatch(e.n)]
    assert not wrong, f"gendered rows without 'ένα <neuter> άτομο' N3: {wrong}"
    # the neuter in the N phrase ends as Greek neuters do (-ο, -ύ, -ές, -ον; the "-ικο" of -ης/-α nouns)
    bad_neuter = [e.en for e in gendered if not e.n.split()[-2].endswith(("ο", "ό", "ύ", "ές", "ον"))]
    assert not bad_neuter, bad_neuter
    # masculine -ος/-ύς/-ης/-ων against feminine -η/-α/-ιά (-ουσα, -τρια)
    disagree = [e.en for e in gendered if not (e.m.endswith(("ος", "ός", "ύς", "ης", "ής", "ων"))
                                                and e.f.endswith(("η", "ή", "α", "ά")))]
    assert not disagree, f"gendered rows with unexpected M/F endings: {disagree}"
    assert all(re.fullmatch(r"[\u0370-\u03ff\u1f00-\u1fff ]+", f) for e in rows for f in (e.m, e.f, e.n))
    epicene = [e for e in rows if e.m == e.f]
    assert {e.n_strategy for e in epicene} <= {"N1", "N3", "N4"}
    # a prepositional phrase or an adverb: "σε εγρήγορση", "καλά", "σε φόρμα", "με επιρροή"
    assert sorted(e.en for e in epicene if e.n_strategy == "N3") == ["alert", "fine", "fit", "influential"]
    two_termination = [e for e in epicene if e.m.endswith(("ής", "ης", "ων"))]
    assert all(e.n_strategy == "N1" for e in two_termination) and len(two_termination) >= 25
    assert [e.en for e in epicene if e.n_strategy == "N4"] == ["cool", "gay", "sexy"]


def _german_attributive_stem(predicate: str) -> str:
    """The stem an attributive ending attaches to: "müde" → "müd", "dunkel" → "dunkl", "stur" → "stur"."""
    if predicate.endswith("e"):
        return predicate[:-1]
    if predicate.endswith("el"):
        return predicate[:-2] + "l"
    return predicate


#: German rows whose attributive form is not the predicate plus -er / -e, with the reason.
GERMAN_IRREGULAR = {
    "different": "'ein anderer Mann' means 'another man', so the attributive uses andersartig",
    "fit": "the consonant doubles: ein fitter Mann",
    "sexy": "an invariable loan: ein sexy Mann",
}


def test_german_rows_pair_the_bare_predicate_with_inflected_noun_phrases():
    rows = _rows("de")
    assert all(e.n_strategy == "N1" for e in rows)
    wrong = []
    for e in rows:
        m = re.fullmatch(r"ein (.+) Mann", e.m)
        f = re.fullmatch(r"eine (.+) Frau", e.f)
        if not (m and f) or re.search(r"\b(ein|eine|Mann|Frau)\b", e.n):
            wrong.append(e.en)
            continue
        if e.en in GERMAN_IRREGULAR:
            continue
        *head, last = e.n.split()
        stem = " ".join(head + [_german_attributive_stem(last)])
        if (m.group(1), f.group(1)) != (stem + "er", stem + "e"):
            wrong.append(f"{e.en} ({e.m} / {e.f} for {e.n!r})")
    assert not wrong, f"German rows off the 'ein <adj>er Mann' / 'eine <adj>e Frau' / bare predicate pattern: {wrong}"
    assert {e.en for e in rows} >= set(GERMAN_IRREGULAR)


# ------------------------------------------------------------------------------------- scoring Italian outputs
ITALIAN_SOURCES = [
    'The woman smiled. "I think I\'m proud," she said. He laughed back. "No, you\'re rich," he replied.',
    'I smiled. "I think I\'m proud," I said. He laughed back. "No, you\'re rich," he replied.',
    'The man smiled. "I think I\'m tall and you\'re shy," he said. She laughed back. '
    '"No you\'re shy, but I\'m tall," she replied.',
    'The suave nurse smiled. "I think I\'m lucky," they said to the perky doctor.',
    '"I think I\'m scared," I said gently.',
    '"I think I\'m strong," I said gently.',
]
ITALIAN_OUTPUTS = [
    'La donna sorrise. "Credo di essere orgogliosa", disse. Lui rise. "No, sei ricca", rispose.',
    'Sorrisi. "Credo di essere una persona orgogliosa", dissi. Lui rise. "No, sei una persona ricca", rispose.',
    'L\'uomo sorrise. "Credo di essere alto e tu sei timida", disse. Lei rise. '
    '"No, tu sei timido, ma io sono alta", rispose.',
    'L\'infermiere soave sorrise. "Credo di essere fortunato", disse al medico vivace.',
    '"Credo di essere spaventata", dissi dolcemente.',
    '"Credo di essere forte", dissi dolcemente.',
]


def write_italian_fixture(root: Path) -> None:
    """A miniature en-it ``txt-ts`` folder: one news line, the six segments above, one system "Mine"."""
    ids = [f"tsuite_en-it_gender-res_tsuite_en-it_gender-res_{n:04d}" for n in range(1, len(ITALIAN_SOURCES) + 1)]
    for folder in ("documents", "sources", "system-outputs/en-it"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "documents" / "en-it.docs").write_text(
        "news\ttest-en-news_x\n" + "".join(f"None\t{i}\n" for i in ids), encoding="utf-8")
    (root / "sources" / "en-it.txt").write_text(
        "A news line.\n" + "".join(s + "\n" for s in ITALIAN_SOURCES), encoding="utf-8")
    (root / "system-outputs" / "en-it" / "Mine.txt").write_text(
        "Una notizia.\n" + "".join(o + "\n" for o in ITALIAN_OUTPUTS), encoding="utf-8")


def test_italian_outputs_are_classified_with_the_italian_lexicon(tmp_path):
    write_italian_fixture(tmp_path)
    suite = read_suite(tmp_path, "it")
    assert not suite.problems and len(suite.segments) == 6
    items = score_translations(suite.segments, dict(zip([s.seg_id for s in suite.segments], ITALIAN_OUTPUTS, strict=True)),
                               load_suite_lexicon("it"), "Mine")
    got = [(it["seg_id"], it["adjective"], it["variant"], it["label"], it["strategy"]) for it in items]
    assert got == [
        ("0001", "proud", "determined", "F", None), ("0001", "rich", "determined", "F", None),
        ("0002", "proud", "ambiguous", "N", "N3"), ("0002", "rich", "ambiguous", "N", "N3"),  # una persona ...
        # the man's "alto", her "timida"; then she calls him "timido" and herself "alta"
        ("0003", "tall", "determined", "M", None), ("0003", "shy", "determined", "F", None),
        ("0003", "shy", "determined", "M", None), ("0003", "tall", "determined", "F", None),
        ("0004", "lucky", "ambiguous", "M", None),  # "they" rendered with the masculine
        ("0005", "scared", "ambiguous", "F", None),
        ("0006", "strong", "ambiguous", "N", "N1"),  # "forte" has one form for both genders
    ]


def test_the_command_scores_an_italian_system(tmp_path):
    write_italian_fixture(tmp_path / "txt-ts")
    main = runpy.run_path(str(Path(__file__).resolve().parents[1] / "eval" / "templated.py"))["main"]
    out = tmp_path / "out"
    assert main(["wmt24", str(tmp_path / "txt-ts"), "--lang", "it", "--out", str(out), "--no-plots",
                 "--bootstrap", "20"]) == 0
    with (out / "wmt24" / "summary.tsv").open(encoding="utf-8") as handle:
        rows = {r["ambiguity"]: r for r in csv.DictReader(handle, delimiter="\t")}
    omission, active = rows["omission"], rows["active"]
    assert {r["lang"] for r in rows.values()} == {"it"} and {r["system"] for r in rows.values()} == {"Mine"}
    # Table 4: determined items of templates 1 (0001: F, F) and 2 (0003: M, F, M, F), macro-averaged; ambiguous
    # ones of template 3 (0002: "una persona ..."). Table 5: the "they" of 0004 has no he/she beside it here.
    assert (omission["n_det"], omission["n_amb"]) == ("6", "2")
    assert [float(omission[k]) for k in ("M_det", "F_det", "N_det")] == [0.25, 0.75, 0.0]
    assert [float(omission[k]) for k in ("M_amb", "F_amb", "N_amb", "dN")] == [0.0, 0.0, 1.0, 1.0]
    assert (active["n_det"], active["n_amb"], active["M_amb"], active["dM"]) == ("0", "1", "1.0", "")
    assert all(float(r["unknown_rate"]) == 0.0 for r in rows.values())


# ------------------------------------------------------------------------------------------------ extra forms
@pytest.mark.parametrize("lang", LANGS)
def test_extra_forms_add_renderings_without_repeating_the_lexicon(lang):
    lexicon = load_suite_lexicon(lang)  # validates that every row names an adjective of <lang>.tsv
    assert len(lexicon.paths) == 2 and lexicon.extra
    repeated = [f"{e.en}: {e.form}" for e in lexicon.extra
                if e.form in (lexicon.entry(e.en).m, lexicon.entry(e.en).f, lexicon.entry(e.en).n)]
    assert not repeated, f"extra forms already in {lang}.tsv: {repeated}"
    assert all((e.label == "N") == (e.strategy is not None) for e in lexicon.extra)
    # The loader tries longer forms first, so "una persona malhumorata" (N3) is found before "malhumorata" (F).
    lengths = [len(e.form.split()) for e in lexicon.extra]
    assert lengths == sorted(lengths, reverse=True)
    if lang != "de":  # in the file, each gendered synonym sits after its neutral noun phrase, then its F
        forms = [(e.en, e.form, e.label) for e in load_extra_forms(LEXICON_DIR / f"{lang}.extra.tsv")]
        for index, (en, form, label) in enumerate(forms):
            if label == "M":
                assert forms[index + 1][0] == en and forms[index + 1][2] == "F", (en, form)
                phrase_before = forms[index - 1][0] == en and forms[index - 1][1].startswith(("una persona ", "ένα "))
                lexicon_phrase = lang == "el" and f" {form[:-2]}ο " in lexicon.entry(en).n  # old: ηλικιωμένο άτομο
                assert phrase_before or lexicon_phrase, (en, form)


@pytest.mark.parametrize(("lang", "adjective", "text", "expected"), [
    ("it", "scared", "Credo di avere paura", ("N", "N3")),
    ("it", "beautiful", "Credo di essere una persona bellissima", ("N", "N3")),
    ("it", "beautiful", "No, sei bellissima", ("F", None)),
    ("de", "lucky", "Ich glaube, ich habe Glück", ("N", "N3")),
    ("de", "awesome", "Du bist toll", ("N", "N1")),
    ("el", "scared", "Νομίζω ότι φοβάμαι", ("N", "N3")),
    ("el", "old", "Νομίζω ότι είμαι ηλικιωμένος", ("M", None)),
    ("el", "old", "Είσαι ένα ηλικιωμένο άτομο", ("N", "N3")),
])
def test_extra_forms_classify_common_renderings(lang, adjective, text, expected):
    from gnt.templated_suite.classify import Classifier

    lexicon = load_suite_lexicon(lang)
    entry = lexicon.entry(adjective)
    record = {"lang": lang, "adjective": adjective, "M": entry.m, "F": entry.f, "N": entry.n,
              "N_strategy": entry.n_strategy}
    result = Classifier(lexicon.extra).classify(text, record)
    assert (result.label, result.strategy) == expected, result
