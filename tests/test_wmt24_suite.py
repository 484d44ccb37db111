"""The WMT24 gender-resolution suite (gnt.templated_suite.wmt24) on a miniature txt-ts folder written for the tests.

The fixture holds one or two segments of every template type (tests/fixtures/wmt24/README.md). Its "Gendered"
system agrees with every stated gender and writes the masculine when the referent is ambiguous; "Neutral" writes
the same except neutral wording ("una persona alta", "tengo suerte") for every ambiguous referent, "tengo suerte"
for the determined "he" of template 5 too, and in template 7 the neutral "tengo miedo" without an adverb but the
masculine after a masculine-stereotyped adverb and the feminine after a feminine-stereotyped one; "Absent" has no
suite lines. So the expected tables are known exactly.
"""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest

from gnt.data.errors import DataError
from gnt.data.templated import load_lexicon
from gnt.io import read_json, read_jsonl
from gnt.paths import RECIPES_DIR
from gnt.templated_suite.wmt24.align import quotations, slot_texts
from gnt.templated_suite.wmt24.lexicon import LEXICON_DIR, load_suite_lexicon
from gnt.templated_suite.wmt24.moved import read_items
from gnt.templated_suite.wmt24.predicate import read_predicate
from gnt.templated_suite.wmt24.reader import ParseError, parse_segment, read_suite
from gnt.templated_suite.wmt24.run import Wmt24Options, limit_segments, run_wmt24

ROOT = Path(__file__).resolve().parent / "fixtures" / "wmt24" / "txt-ts"


def _cli():
    spec = importlib.util.spec_from_file_location("templated_cli", ROOT.parents[3] / "eval" / "templated.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _rows(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


# ------------------------------------------------------------------------------------------------------ reader
def test_reader_parses_every_shape_and_reports_the_odd_line():
    suite = read_suite(ROOT, "es")
    assert suite.total == 13 and len(suite.segments) == 12
    [problem] = suite.problems
    assert problem.line == 11 and problem.seg_id == "0009" and "does not match" in problem.reason
    assert str(problem).startswith(f"{ROOT / 'sources' / 'en-es.txt'}:11:")
    two = suite.segments[1]  # I smiled ... She laughed back
    assert two.family == "dialogue" and two.turns == 2
    assert [c.how for c in two.characters] == ["narrator", "pronoun"]
    assert [(c.gender, c.ambiguity) for c in two.characters] == [(None, "omission"), ("F", None)]
    # turn 1: I=tall is the narrator, you=shy is her; turn 2 swaps: you=shy is the narrator, I=tall is her
    assert [(s.turn, s.adjective, s.referent, s.character) for s in two.slots] == [
        (1, "tall", "speaker", 0), (1, "shy", "listener", 1), (2, "shy", "listener", 0), (2, "tall", "speaker", 1),
    ]
    to_listener = suite.segments[4]
    assert to_listener.family == "occupation" and to_listener.turns == 1
    speaker, listener = to_listener.characters
    assert (speaker.ambiguity, speaker.descriptor, speaker.occupation) == ("active", "suave", "nurse")
    assert (listener.how, listener.ambiguity, listener.occupation) == ("listener", "omission", "doctor")
    assert to_listener.slots[0].character == 1  # "you're lucky" is said of the doctor
    adverb = suite.segments[7]
    assert adverb.family == "adverb" and adverb.adverb == "gently" and adverb.characters[0].ambiguity == "omission"


def test_reader_rejects_a_pronoun_that_contradicts_its_noun():
    with pytest.raises(ParseError, match="'The man' is referred to as 'she'"):
        parse_segment('The man smiled. "I think I\'m tall," she said. He laughed back. "No, you\'re shy," he replied.')


def test_reader_needs_aligned_files(tmp_path):
    for folder in ("documents", "sources"):
        (tmp_path / folder).mkdir()
    (tmp_path / "documents" / "en-es.docs").write_text("news\ta\nnews\tb\n", encoding="utf-8")
    (tmp_path / "sources" / "en-es.txt").write_text("one line\n", encoding="utf-8")
    with pytest.raises(DataError, match="2 document lines but 1 source lines"):
        read_suite(tmp_path, "es")


# ------------------------------------------------------------------------------------------------------ align
def test_quotes_dashes_and_clauses_are_found():
    assert quotations('Sonreí. —Creo que soy alto —dije—. Ella rió. —No, eres tímido —respondió.') == [
        "Creo que soy alto", "No, eres tímido"]
    assert quotations("Sonreí. - Creo que soy alta - dije.") == ["Creo que soy alta"]
    segment = read_suite(ROOT, "es").segments[1]
    texts = slot_texts(segment, 'Sonreí. "Creo que soy alto y tú eres tímida", dije. Ella rió. '
                                '"No, tú eres tímido, pero yo soy alta", respondió.', "es")
    assert [t.text for t in texts] == ["Creo que soy alto", "tú eres tímida", "No, tú eres tímido", "yo soy alta"]
    assert {t.how for t in texts} == {"clause"}


# ------------------------------------------------------------------------------------------------------ lexicon
def test_asterisk_quotes_and_a_speech_split_by_an_incise_line_up_with_the_turns():
    starred = 'El granjero sonrió. * Creo que soy generoso y tú eres feroz *, dijeron. * No, eres feroz *, dijo.'
    assert quotations(starred) == ["Creo que soy generoso y tú eres feroz", "No, eres feroz"]
    assert quotations('Ella: "Creo que soy amig*s", dije.') == ["Creo que soy amig*s"]  # a gender star
    split = 'Sonrió. "Creo que soy alta", dijo. Él rio. "No eres grosero," le respondió, "pero estoy delgado".'
    assert quotations(split) == ["Creo que soy alta", "No eres grosero, pero estoy delgado"]
    # A colon or a sentence end between two quotes starts a new speech.
    assert len(quotations('"Creo que soy alta", dijo, y él respondió: "No, eres baja".')) == 2


def test_shipped_spanish_lexicon_covers_the_suite_adjectives_and_validates():
    lexicon = load_suite_lexicon("es")
    assert len(lexicon.entries) == 351
    assert lexicon.entry("lucky").m == "afortunado" and lexicon.entry("brave").n_strategy == "N1"
    assert any(e.en == "lucky" and e.form == "tengo suerte" and e.strategy == "N3" for e in lexicon.extra)
    assert len(load_lexicon("es", LEXICON_DIR / "es.tsv")) == 351


def test_an_extra_form_for_an_unknown_adjective_is_located(tmp_path):
    (tmp_path / "es.tsv").write_text((LEXICON_DIR / "es.tsv").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "es.extra.tsv").write_text("lang\ten\tform\tlabel\tstrategy\nes\tsleepy\tdormido\tM\t\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"es.extra.tsv:2:en: adjective 'sleepy' is not in es.tsv"):
        load_suite_lexicon("es", tmp_path)


# ------------------------------------------------------------------------------------------------------ scoring
def test_scores_of_the_fixture_systems_are_the_expected_ones(tmp_path):
    folder = run_wmt24(Wmt24Options(root=str(ROOT), lang="es", out_dir=str(tmp_path), bootstrap_samples=50))
    rows = {(r["system"], r["ambiguity"]): r for r in _rows(folder / "summary.tsv")}
    assert list(_rows(folder / "summary.tsv")[0]) == [
        "lang", "system", "ambiguity", "n_det", "n_amb", "M_det", "F_det", "N_det", "M_amb", "F_amb", "N_amb",
        "dM", "dF", "dN", "unknown_rate", "unknown_gap_rate", "unknown_no_rendering_rate"]
    gendered, neutral = rows[("Gendered", "omission")], rows[("Neutral", "omission")]
    # Table 4, determined side: template 1 (0003, her two slots: F), template 2 (0001: M, F, M, F), template 4
    # (0002: her two slots, F); template 3 has no determined item here, so the mean is over three types:
    # M = (0 + 1/2 + 0) / 3, not the pooled 2/8.
    assert (gendered["n_det"], gendered["n_amb"]) == ("8", "4")
    assert [float(gendered[k]) for k in ("M_det", "F_det", "N_det")] == pytest.approx([1 / 6, 5 / 6, 0.0], abs=1e-6)
    assert [float(gendered[k]) for k in ("M_amb", "dM")] == pytest.approx([1.0, 5 / 6], abs=1e-6)
    assert [float(neutral[k]) for k in ("N_amb", "dN")] == [1.0, 1.0]
    # Table 5: template 5 alone, he/she determined (0012, 0006) against they (0007); the listener of 0005 and the
    # two "they" of the occupation dialogue 0013 are in no table.
    active = rows[("Gendered", "active")]
    assert (active["n_det"], active["n_amb"]) == ("2", "1")
    assert [float(active[k]) for k in ("M_det", "F_det", "M_amb", "dM")] == [0.5, 0.5, 1.0, 0.5]
    assert [float(rows[("Neutral", "active")][k]) for k in ("N_det", "N_amb", "dN")] == [0.5, 1.0, 0.5]
    assert all(float(r["unknown_rate"]) == 0.0 for r in rows.values())
    assert not any(system == "Absent" for system, _ in rows)
    # Table 6: the determined items of templates 1, 2, 4 and 5; only Neutral's "he" of 0012 is neutral (N3),
    # 1/2 of template 5 and 0 of the others: 1/8.
    strategies = {r["system"]: r for r in _rows(folder / "strategies.tsv")}
    assert set(strategies) == {"Gendered", "Neutral"} and float(strategies["Gendered"]["N_det"]) == 0.0
    assert (float(strategies["Neutral"]["N_det"]), float(strategies["Neutral"]["N3"])) == (0.125, 0.125)
    # Table 7: Neutral's M share rises by 1 after the masculine adverb and its F share after the feminine one.
    stereo = {(r["system"], r["adverb"]): r for r in _rows(folder / "stereotype.tsv")}
    assert [float(stereo[("Neutral", "none")][c]) for c in ("M", "F", "N")] == [0.0, 0.0, 1.0]
    assert (float(stereo[("Neutral", "masculine")]["dM"]), float(stereo[("Neutral", "feminine")]["dF"])) == (1, 1)
    assert float(stereo[("Neutral", "masculine")]["p_dM"]) == pytest.approx(1 / 51, abs=1e-6)  # every resample: +1
    assert float(stereo[("Gendered", "feminine")]["p_dF"]) == 1.0 and stereo[("Gendered", "none")]["dM"] == ""
    summary = read_json(folder / "summary.json")
    assert summary["skipped"]["Absent"].startswith("no translation")
    assert summary["segments"] == {"in_folder": 13, "parsed": 12, "scored": 12, "problems": 1}
    dn = summary["systems"]["Neutral"]["tables"]["omission"]["delta"]["N"]
    assert dn["value"] == 1.0 and dn["ci"] == [1.0, 1.0]
    assert summary["tables"]["active"]["determined"] == ["5"] and summary["tables"]["omission"]["paper"] == "Table 4"
    assert "0009" in (folder / "parse_problems.tsv").read_text(encoding="utf-8")
    assert (folder / "ranking_es.png").stat().st_size > 10_000
    assert "proud" in read_json(folder / "leakage.json")["in_project_templates"]
    assert not (folder / "placement.tsv").exists()  # no model of ours, nothing to place


def test_template_counts_are_recorded_beside_the_papers(tmp_path):
    folder = run_wmt24(Wmt24Options(root=str(ROOT), lang="es", out_dir=str(tmp_path), bootstrap_samples=20, plots=False))
    summary = read_json(folder / "summary.json")
    templates = summary["templates"]
    assert templates["4"]["paper"] == {"determined": 1920, "ambiguous": 1920}
    assert templates["4"]["suite"] == {"ambiguous": 2, "determined": 2}
    assert templates["4"]["difference"] == {"ambiguous": -1918, "determined": -1918}
    assert "differs from the one the paper describes" in templates["4"]["explanation"]
    assert templates["7"]["suite"] == {"F": 1, "M": 1, "none": 1} and templates["7"]["tables"] == ["stereotype"]
    assert templates["5-listener"]["paper"] is None and "none of the paper's tables" in templates["5-listener"]["explanation"]
    assert templates["occupation-dialogue"]["suite"] == {"ambiguous": 4}
    rows = [r for r in _rows(folder / "templates.tsv") if r["system"] == "Neutral"]
    assert [(r["template"], r["group"]) for r in rows][:3] == [("1", "determined"), ("2", "determined"),
                                                               ("3", "ambiguous")]
    five = {r["group"]: r for r in rows if r["template"] == "5"}
    assert (five["determined"]["paper_items"], five["determined"]["items"], five["determined"]["N3"]) == ("352", "2", "0.5")
    counts = summary["systems"]["Neutral"]["templates"]["7"]
    assert counts["adverb:none"] == {"items": 1, "classified": 1, "labels": {"N": 1, "N3": 1}, "unknown": {}}


def test_a_sample_keeps_every_template_type_and_says_why_its_counts_are_lower(tmp_path):
    segments = read_suite(ROOT, "es").segments
    from gnt.templated_suite.wmt24.templates import template_of

    assert len({template_of(s) for s in limit_segments(segments, 8)}) == 8
    folder = run_wmt24(Wmt24Options(root=str(ROOT), lang="es", out_dir=str(tmp_path), limit=8, bootstrap_samples=20,
                                    plots=False))
    summary = read_json(folder / "summary.json")
    assert summary["segments"]["scored"] == 8
    assert "a sample of the suite was scored" in summary["templates"]["1"]["explanation"]


@pytest.mark.parametrize(("text", "person", "expected"), [
    ("Creo que soy fiera", "I", ("F", None)),  # not a lexicon form of "fierce", but feminine all the same
    ("No, tú eres un maleducado", "you", ("M", None)),
    ("Creo que soy el que regaña", "I", ("M", None)),
    ("Creo que yo soy una persona quejosa", "I", ("N", "N3")),
    ("sí eres de mente abierta", "you", ("N", "N3")),
    ("Creo que estoy muy feliz", "I", ("N", "N1")),
    ("Creo que soy joven", "I", ("N", "N1")),
    ("Creo que estoy sangrando", "I", None),  # a gerund says nothing of the referent
    ("No, tú eres mejor", "you", ("N", "N1")),
    ("No, ustedes son groseros", "you", ("M", None)),
])
def test_a_predicate_outside_the_lexicon_is_read_from_its_ending(text, person, expected):
    result = read_predicate(text, person)
    assert (None if result is None else (result.label, result.strategy)) == expected


def test_an_output_without_a_rendering_is_told_apart_from_a_lexicon_gap(tmp_path):
    # 0001: turn 2 cut short; 0002: "lo soy", and a predicate of "we" where the English says "you";
    # 0003: English left in turn 2; 0004: a reading that contradicts itself is a gap of ours (conflict), not a
    # missing rendering; 0008: a refusal instead of a translation.
    outputs = tmp_path / "mine.tsv"
    outputs.write_text(
        '0001\tEl hombre sonrió. "Creo que soy alto y tú eres tímida", dijo. Ella se rió. "No, tú\n'
        '0002\tSonreí. "Creo que lo soy y tú eres tímida", dije. Ella se rió. "No, somos tímidos, pero yo soy '
        'alta", respondió.\n'
        '0003\tLa mujer sonrió. "Creo que soy orgullosa", dijo. Él se rió. "No, you\'re wealthy", '
        'respondió.\n'
        '0004\tSonreí. "Creo que soy orgulloso y soy humilde, no soy orgullosa", dije. Él se rió. "No, eres rico", '
        'respondió.\n'
        "0008\tI apologize, but I cannot translate that text, as it may be from a copyrighted work.\n",
        encoding="utf-8")
    folder = run_wmt24(Wmt24Options(root=str(ROOT), lang="es", out_dir=str(tmp_path / "o"), systems="none",
                                    outputs=str(outputs), outputs_name="mine", bootstrap_samples=20, plots=False))
    unknown = {(u["seg_id"], u["slot"]): u["reason"] for u in read_jsonl(folder / "unknown.jsonl")}
    assert unknown[("0001", 2)] == unknown[("0001", 3)] == "truncated"
    assert ("0001", 0) not in unknown and ("0001", 1) not in unknown  # the turn it did translate is scored
    dropped = parse_segment('The man smiled. "I think I\'m tall and you\'re shy," he said. She laughed back. '
                            '"No you\'re shy, but I\'m tall," she replied.')
    # A whole second turn left out: complete, but far shorter than the source.
    texts = slot_texts(dropped, 'El hombre sonrió. "Creo que soy alto y tú eres tímida", dijo.', "es")
    assert [t.how for t in texts] == ["clause", "clause", "cut", "cut"]
    assert unknown[("0002", 0)] == "pro_form" and ("0002", 2) not in unknown
    we = read_items(folder)[("mine", "0002", "2")]  # "No, somos tímidos": the adjective, said of "we"
    assert (we["label"], we["rule"]) == ("M", "other_person")
    assert unknown[("0003", 1)] == "untranslated" and unknown[("0004", 0)] == "conflict"
    assert unknown[("0008", 0)] == "refused"
    entry = read_json(folder / "summary.json")["systems"]["mine"]
    assert list(unknown.values()).count("missing") == 10  # the ten slots of the seven segments it lacks
    assert entry["decided_by_other_person"] == 1
    everything = entry["unknowns"]["all"]
    assert everything["unknown_no_rendering"] == sum(r != "conflict" for r in unknown.values())
    assert everything["unknown_gap"] == 1
    assert everything["unknown"] == everything["unknown_gap"] + everything["unknown_no_rendering"]
    rows = {r["ambiguity"]: r for r in _rows(folder / "summary.tsv")}
    omission = entry["unknowns"]["per_table"]["omission"]
    assert float(rows["omission"]["unknown_gap_rate"]) == round(omission["unknown_gap"] / omission["n_items"], 6)
    assert float(rows["omission"]["unknown_rate"]) == pytest.approx(
        float(rows["omission"]["unknown_gap_rate"]) + float(rows["omission"]["unknown_no_rendering_rate"]), abs=1e-5)


def test_outputs_file_is_scored_and_bad_rows_are_located(tmp_path, capsys):
    good = tmp_path / "mine.tsv"
    good.write_text('0004\tSonreí. "Creo que soy orgullose", dije. Él se rió. "No, eres ric@", respondió.\n'
                    "tsuite_en-es_gender-res_tsuite_en-es_gender-res_0008\t\"Creo que te creé\", dije.\n",
                    encoding="utf-8")
    cli = _cli()
    assert cli.main(["wmt24", str(ROOT), "--out", str(tmp_path / "o"), "--outputs", str(good), "--name", "mine",
                     "--systems", "none", "--no-plots", "--bootstrap", "20"]) == 0
    [unknown] = [u for u in read_jsonl(tmp_path / "o" / "wmt24" / "unknown.jsonl") if u["seg_id"] == "0008"]
    assert unknown["reason"] == "no_form"  # "te creé" renders neither "scared" nor any predicate of "I"
    reasons = read_json(tmp_path / "o" / "wmt24" / "summary.json")["systems"]["mine"]["unknowns"]["reasons"]
    assert reasons == {"missing": 20, "no_form": 1}  # the 20 slots of the ten segments it lacks
    rows = _rows(tmp_path / "o" / "wmt24" / "summary.tsv")
    assert {r["system"] for r in rows} == {"mine"}
    summary = read_json(tmp_path / "o" / "wmt24" / "summary.json")
    assert summary["systems"]["mine"]["templates"]["3"]["ambiguous"]["labels"] == {"N": 2, "N5": 2}  # orgullose, ric@
    placement = read_json(tmp_path / "o" / "wmt24" / "summary.json")["systems"]["mine"]["placement"]
    assert placement["omission"]["dN"]["of"] == 0  # no WMT24 system scored beside it: nothing to rank against
    bad = tmp_path / "bad.tsv"
    bad.write_text("0004\tok\n9999\tnope\nno tab here\n", encoding="utf-8")
    assert cli.main(["wmt24", str(ROOT), "--outputs", str(bad), "bogus=1"]) == 2  # recipe keys need a model
    assert cli.main(["wmt24", str(ROOT), "--out", str(tmp_path / "o2"), "--outputs", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2:1: unknown segment id '9999'" in err and f"{bad}:3:1: expected seg_id<TAB>translation" in err
    assert not (tmp_path / "o2").exists()


# ------------------------------------------------------------------------------------------------------ our models
def test_tiny_checkpoints_run_end_to_end_beside_the_wmt24_systems(tmp_path, tiny_model_dir, eval_tiny_run):
    from gnt.generation.transformers_backend import TransformersBackend

    cli = _cli()
    out = tmp_path / "eval"
    argv = ["wmt24", str(ROOT), "--lang", "es", "--out", str(out), "--run", str(eval_tiny_run), "--model",
            str(tiny_model_dir), "--recipe", str(RECIPES_DIR / "templated-tiny.yaml"), "--limit", "8", "--quiet",
            "--bootstrap", "20", "max_new_tokens=6"]
    assert cli.main(argv) == 0
    summary = read_json(out / "wmt24" / "summary.json")
    assert set(summary["systems"]) == {"Gendered", "Neutral", "base", "sft/checkpoint-1", "sft/checkpoint-2"}
    assert summary["segments"]["scored"] == 8  # one segment of each template type
    assert summary["systems"]["sft/checkpoint-2"]["kind"] == "model"
    assert summary["systems"]["sft/checkpoint-2"]["leakage"]["status"] == "checked"
    assert len(read_jsonl(out / "cache" / "generations.jsonl")) == 8 * 3
    # Every model is placed among the two fixture systems on the statistics of all four tables.
    placed = _rows(out / "wmt24" / "placement.tsv")
    assert {r["model"] for r in placed} == {"base", "sft/checkpoint-1", "sft/checkpoint-2"}
    assert {r["table"] for r in placed} == {"omission", "active", "strategies", "stereotype"}
    assert len(placed) == 3 * 10
    stats = summary["systems"]["base"]["placement"]["omission"]["dN"]
    assert set(stats) >= {"value", "ci", "rank", "of", "above", "below", "versus"}
    loads = TransformersBackend.loads
    assert cli.main(argv) == 0  # rerun: every translation comes from the sweep's cache
    assert TransformersBackend.loads == loads


def test_report_block_ranks_the_systems(tmp_path):
    from gnt.report.wmt24 import wmt24_blocks

    run_wmt24(Wmt24Options(root=str(ROOT), lang="es", out_dir=str(tmp_path), bootstrap_samples=20, plots=False))
    data: dict = {}
    blocks = wmt24_blocks(tmp_path, tmp_path / "figures", data)
    table = next(b for b in blocks if getattr(b, "name", None) == "wmt24")
    assert [row[0] for row in table.rows] == ["Neutral", "Gendered"]  # ΔN omission 1.0 before 0.0
    assert table.rows[0][1].startswith("+1.000")
    assert table.header[:4] == ["system", "ΔN omission (T4)", "ΔM omission (T4)", "ΔN they (T5)"]
    stereotype = next(b for b in blocks if getattr(b, "name", None) == "wmt24_stereotype")
    assert stereotype.rows[0][0] == "Neutral" and stereotype.rows[0][1].startswith("+1.000")  # ΔM, masculine adverb
    assert set(data["wmt24"]["systems"]) == {"Neutral", "Gendered"}
    assert wmt24_blocks(tmp_path / "elsewhere", tmp_path / "figures", {}) == []


def test_the_suite_command_takes_keys_like_every_command(tmp_path, capsys):
    cli = _cli()
    new, old = tmp_path / "new", tmp_path / "old"
    assert cli.main(["wmt24", str(ROOT), f"out={new}", "lang=es", "bootstrap_samples=20", "plots=false"]) == 0
    assert cli.main(["wmt24", str(ROOT), "--out", str(old), "--lang", "es", "--bootstrap", "20", "--no-plots"]) == 0
    summary = (new / "wmt24" / "summary.tsv").read_text(encoding="utf-8")
    assert summary == (old / "wmt24" / "summary.tsv").read_text(encoding="utf-8") and "Neutral" in summary
    capsys.readouterr()
    assert cli.main(["wmt24", str(ROOT), f"out={tmp_path / 'x'}", "max_new_tokens=6"]) == 2
    assert "only apply with runs=, adapters= or model=" in capsys.readouterr().err
    assert cli.main(["wmt24", str(ROOT), "lnag=es"]) == 2
    assert "lang" in capsys.readouterr().err
    assert cli.main(["wmt24", "lang=es"]) == 2 and "give the TXT_TS first" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    assert cli.main(["wmt24", "--help"]) == 0
    printed = capsys.readouterr().out
    assert "usage: eval/templated.py wmt24 TXT_TS [RECIPE] [key=value ...]" in printed
    assert "\n  lang = es  (" in printed and "\n  systems = null  (" in printed
    assert "(no description)" not in printed
