"""Tests of the templated ambiguous inputs (gnt.data.templated): data files, generation, entries and the suite file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gnt.data.entry import LANGUAGES
from gnt.data.errors import DataError
from gnt.data.templated import (
    KINDS,
    SUITE_FIELDS,
    generate_pairs,
    load_lexicon,
    load_templates,
    pairs_to_entries,
    read_suite,
    render,
    suite_records,
    write_suite,
)

GREEK = re.compile(r"[\u0370-\u03ff]")


@pytest.fixture(scope="module")
def pairs_10k():
    return generate_pairs(LANGUAGES, max_pairs=10_000, seed=0)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_lexicons_load_with_enough_complete_entries(lang):
    entries = load_lexicon(lang)
    assert len(entries) >= 40
    for e in entries:
        assert all(v.strip() for v in (e.en, e.m, e.f, e.n, e.n_strategy))
        assert e.n_strategy in {"N1", "N2", "N3", "N4", "N5"}
        assert e.stereotype in (None, "F", "M")
        if not e.gender_marked:
            assert e.n == e.m
    # Both stereotype directions are represented, so the suite can compare them.
    assert {e.stereotype for e in entries} >= {"F", "M"}


def test_lexicons_share_the_english_adjectives():
    sets = {lang: [e.en for e in load_lexicon(lang)] for lang in LANGUAGES}
    assert all(v == sets["it"] for v in sets.values())


def test_greek_lexicon_is_in_greek_script():
    for e in load_lexicon("el"):
        assert GREEK.search(e.m) and GREEK.search(e.f) and GREEK.search(e.n), e


def test_malformed_lexicon_line_names_file_and_line(tmp_path: Path):
    path = tmp_path / "it.tsv"
    path.write_text(
        "en\tM\tF\tN\tN_strategy\tstereotype\n"
        "stubborn\ttestardo\ttestarda\tuna persona testarda\tN3\t\n"
        "proud\torgoglioso\torgogliosa\tN3\n",
        encoding="utf-8",
    )
    with pytest.raises(DataError) as info:
        load_lexicon("it", path)
    assert str(info.value).startswith(f"{path}:3:")
    assert "6 tab-separated fields" in str(info.value)


@pytest.mark.parametrize(
    ("row", "column"),
    [
        ("happy\tfelice\tfelice\tuna persona felice\tN1\t", "N"),
        ("happy\tfelice\tfelice\tfelice\tN9\t", "N_strategy"),
        ("happy\tfelice\tfelice\tfelice\tN1\tX", "stereotype"),
        ("happy\t\tfelice\tfelice\tN1\t", "M"),
    ],
)
def test_bad_lexicon_cells_name_the_column(tmp_path: Path, row: str, column: str):
    path = tmp_path / "it.tsv"
    path.write_text("en\tM\tF\tN\tN_strategy\tstereotype\n" + row + "\n", encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_lexicon("it", path)
    assert str(info.value).startswith(f"{path}:2:{column}:")


def test_bad_lexicon_header(tmp_path: Path):
    path = tmp_path / "de.tsv"
    path.write_text("en\tM\tF\tN\n", encoding="utf-8")
    with pytest.raises(DataError, match=r":1: expected the header"):
        load_lexicon("de", path)


def test_templates_cover_all_kinds_cues_and_genders():
    templates = load_templates()
    assert len(templates) >= 10
    assert {t.kind for t in templates} == set(KINDS)
    for kind in KINDS:
        kinds = [t for t in templates if t.kind == kind]
        assert any(t.stereotype_cue for t in kinds) and any(not t.stereotype_cue for t in kinds)
    assert {t.cue_stereotype for t in templates} >= {"F", "M"}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_templates_render_without_leftover_slots(lang):
    lexicon = load_lexicon(lang)
    for template in load_templates():
        texts = [render(template.en.ambiguous, "N", "stubborn")]
        for gender in ("F", "M"):
            texts.append(render(template.en.determined, gender, "stubborn"))
        for entry in lexicon:
            target = template.targets[lang]
            texts += [render(target.determined, g, entry.form(g)) for g in ("F", "M")]
            texts += [render(target.ambiguous, "N", entry.n), render(target.ambiguous, "M", entry.m)]
        for text in texts:
            assert "{" not in text and "}" not in text, text


def test_determined_english_differs_by_gender_and_ambiguous_states_none():
    for template in load_templates():
        he = render(template.en.determined, "M", "x")
        she = render(template.en.determined, "F", "x")
        assert he != she
        assert not re.search(r"\b(he|she|him|her|man|woman)\b", template.en.ambiguous, re.I), template.id


def test_bad_template_is_located(tmp_path: Path):
    load_templates()  # the shipped file loads
    text = (Path(__file__).resolve().parents[1] / "data/templates/templates.yaml").read_text(encoding="utf-8")
    broken = text.replace("'«Penso di essere {adj}», dissi.'", "'«Penso di essere {ajd}», dissi.'", 1)
    assert broken != text
    path = tmp_path / "templates.yaml"
    path.write_text(broken, encoding="utf-8")
    line = next(i for i, row in enumerate(broken.splitlines(), start=1) if "{ajd}" in row)
    with pytest.raises(DataError) as info:
        load_templates(path)
    assert str(info.value).startswith(f"{path}:{line}:")


def test_ambiguous_target_alternation_needs_a_neutral_option(tmp_path: Path):
    text = (Path(__file__).resolve().parents[1] / "data/templates/templates.yaml").read_text(encoding="utf-8")
    broken = text.replace(
        "{g:Il mio vicino|La mia vicina|La persona che abita accanto a me}", "{g:Il mio vicino|La mia vicina}"
    )
    path = tmp_path / "templates.yaml"
    path.write_text(broken, encoding="utf-8")
    with pytest.raises(DataError, match="neutral alternative"):
        load_templates(path)


def test_10k_pairs_even_and_deterministic(pairs_10k):
    """(How long 10,000 pairs take is measured in bench/data_build.py, not asserted here.)"""
    again = generate_pairs(LANGUAGES, max_pairs=10_000, seed=0)
    assert len(again) == 10_000
    assert again == pairs_10k
    other = generate_pairs(LANGUAGES, max_pairs=10_000, seed=1)
    assert [p.pair_id for p in other] != [p.pair_id for p in pairs_10k]
    assert len({p.pair_id for p in pairs_10k}) == 10_000  # sampled without replacement
    per_lang = {lang: sum(p.lang == lang for p in pairs_10k) for lang in LANGUAGES}
    assert set(per_lang.values()) == {2500}
    templates = {p.template_id for p in pairs_10k}
    assert len(templates) == len(load_templates())
    assert abs(sum(p.gender == "F" for p in pairs_10k) - 5000) <= len(templates) * len(LANGUAGES)


def test_small_cap_spreads_over_languages_and_templates():
    pairs = generate_pairs(["it", "de"], max_pairs=100, seed=3)
    assert len(pairs) == 100
    assert sum(p.lang == "it" for p in pairs) == 50
    counts = {}
    for p in pairs:
        counts[(p.lang, p.template_id)] = counts.get((p.lang, p.template_id), 0) + 1
    assert max(counts.values()) - min(counts.values()) <= 1


def test_pair_ids_are_stable_across_samples(pairs_10k):
    full = {p.pair_id: p for p in generate_pairs(["es"])}
    for p in pairs_10k:
        if p.lang == "es":
            assert full[p.pair_id] == p


def test_uncapped_product_is_complete():
    pairs = generate_pairs(["el"])
    assert len(pairs) == len(load_templates()) * len(load_lexicon("el")) * 2


def test_entries_have_documented_sets_and_refs(pairs_10k):
    pairs = pairs_10k[::37]
    entries = pairs_to_entries(pairs)
    assert len(entries) == 2 * len(pairs)
    for pair, det, amb in zip(pairs, entries[0::2], entries[1::2], strict=True):
        assert det.id == f"{pair.pair_id}-det" and amb.id == f"{pair.pair_id}-amb"
        assert re.fullmatch(r"tpl-(it|es|de|el)-\d{6}-(det|amb)", det.id)
        assert det.set == "Set-G" and det.gender == pair.gender and det.origin == "templated"
        assert amb.set == "Set-N" and amb.gender is None and amb.origin == "templated"
        assert det.ref_g == pair.determined_target and det.ref_n == (pair.determined_neutral_target,)
        assert amb.ref_g == pair.ambiguous_masculine_target and amb.ref_n == (pair.ambiguous_neutral_target,)
        assert det.source_key != amb.source_key
        form = pair.form_f if pair.gender == "F" else pair.form_m
        assert form in det.ref_g and pair.form_m in amb.ref_g and pair.form_n in amb.ref_n[0]
        if pair.gender_marked:
            assert det.gendered_words == (form,) and amb.gendered_words == (pair.form_m,)
            assert amb.ref_g != amb.ref_n[0]
        else:
            assert det.gendered_words == () and amb.gendered_words == ()
        for entry in (det, amb):
            assert entry.meta["template_id"] == pair.template_id
            assert entry.meta["adjective"] == pair.adjective
            assert entry.meta["pair_id"] == pair.pair_id
            assert entry.meta["kind"] == pair.kind
            assert entry.meta["stereotype_cue"] == (pair.stereotype_cue or "")
            assert entry.to_record()["source_key"] == entry.source_key


def test_same_english_source_has_same_key_across_languages():
    pairs = generate_pairs(LANGUAGES)
    by_id = {}
    for entry in pairs_to_entries(pairs):
        number = entry.id.split("-")[2]
        by_id.setdefault((number, entry.id[-3:]), set()).add(entry.source_key)
    assert all(len(keys) == 1 for keys in by_id.values())


def test_suite_round_trips(tmp_path: Path, pairs_10k):
    pairs = pairs_10k[:200]
    path = write_suite(pairs, tmp_path / "suite" / "templated.jsonl")
    records = read_suite(path)
    assert records == suite_records(pairs)
    assert len(records) == 400
    for record in records:
        assert set(record) == set(SUITE_FIELDS)
        if record["variant"] == "determined":
            assert record["expected_gender"] in ("F", "M")
        else:
            assert record["variant"] == "ambiguous" and record["expected_gender"] is None
    assert "«" in path.read_text(encoding="utf-8")  # written as UTF-8 text, not escaped


def test_read_suite_reports_bad_line(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"pair_id": "x"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}:1: missing field"):
        read_suite(path)
    path.write_text('\n{"pair_id": \n', encoding="utf-8")  # a blank line, then a cut-off object
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}:2: not valid JSON: .* \(character \d+\)"):
        read_suite(path)
    path.write_text('["a list"]\n', encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}:1: expected a JSON object, found list"):
        read_suite(path)
