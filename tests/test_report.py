"""The post-training report: numbers match the metrics files, images are real PNGs, the HTML parses and embeds them,
missing steps say "not run", and the paired test behaves (no difference for identical outputs)."""

from __future__ import annotations

import base64
import io
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from _report_fixtures import make_results, make_run, metrics_of

from gnt.bootstrap import BootstrapSettings
from gnt.io import read_json, write_json
from gnt.report.config import ReportConfig
from gnt.report.markdown import unescape_cell

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
VOID = {"meta", "img", "br", "hr", "input", "link"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A results folder (base + sft checkpoints 4 and 8, judged, with templated/attribution PNGs) and its report."""
    from gnt.report import build_report

    root = tmp_path_factory.mktemp("report")
    run = make_run(root, "sft", [4, 8])
    results = make_results(root / "eval", run_dir=run)
    report = build_report(results, ReportConfig(bootstrap_samples=300))
    return results, report


def md_tables(text: str) -> dict[str, list[dict[str, str]]]:
    """Markdown tables keyed by the heading above them: rows as {header: unescaped cell}."""
    tables: dict[str, list[dict[str, str]]] = {}
    heading = ""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.startswith("| ") and index + 1 < len(lines) and lines[index + 1].startswith("|---"):
            header = [unescape_cell(h.strip()) for h in re.split(r"(?<!\\)\|", line)[1:-1]]
            rows = []
            index += 2
            while index < len(lines) and lines[index].startswith("| "):
                cells = [unescape_cell(c.strip()) for c in re.split(r"(?<!\\)\|", lines[index])[1:-1]]
                rows.append(dict(zip(header, cells, strict=True)))
                index += 1
            tables.setdefault(heading, []).extend(rows)
            continue
        index += 1
    return tables


def parse_stat(text: str) -> tuple[float, float | None, float | None]:
    match = re.match(r"^(-?[\d.]+)(?: \[(-?[\d.]+), (-?[\d.]+)\])?", text)
    assert match, text
    lo = float(match.group(2)) if match.group(2) else None
    hi = float(match.group(3)) if match.group(3) else None
    return float(match.group(1)), lo, hi


HEADLINE = {
    "Label bal. acc.": ("label_balanced_accuracy", None),
    "Label macro-F1": ("label_macro_f1", None),
    "Adequate": ("adequacy", "adequate"),
    "GNT acc. Set-N, inadequate = wrong": ("gnt_accuracy_adequate", "Set-N"),
    "Label acc. Set-G": ("label_accuracy", "Set-G"),
    "Label acc. Set-N": ("label_accuracy", "Set-N"),
    "GNT acc. Set-N": ("gnt_accuracy", "Set-N"),
    "GNT acc. Set-G": ("gnt_accuracy", "Set-G"),
    "Coherence (NEUTRAL label)": ("coherence", "NEUTRAL"),
    "GNT acc. Set-G F": ("gnt_accuracy_by_gender", "F"),  # a metric declared in the catalog alone
    "GNT acc. Set-G M": ("gnt_accuracy_by_gender", "M"),
}


def test_headline_numbers_match_metrics_files(built: tuple[Path, Path]) -> None:
    results, report = built
    tables = md_tables(report.read_text(encoding="utf-8"))
    checked = 0
    for heading, block in (("en→it", "it"), ("en→es", "es"), ("en→de", "de"), ("All languages", None)):
        *rows, baseline = tables[heading]
        assert [r["model"] for r in rows] == ["base", "sft/checkpoint-4", "sft/checkpoint-8"]
        base_scope = metrics_of(results, "base")
        base_scope = base_scope["languages"][block] if block else base_scope["overall"]
        constant = base_scope["label_baselines"]
        assert baseline["model"] == f"best constant label ({constant['label']})"
        assert float(baseline["Label bal. acc."]) == 50.0
        assert float(baseline["Label macro-F1"]) == pytest.approx(constant["macro_f1"] * 100, abs=0.051)
        for row in rows:
            metrics = metrics_of(results, row["model"])
            scope = metrics["languages"][block] if block else metrics["overall"]
            chrf = parse_stat(row["chrF++"])
            assert chrf[0] == pytest.approx(scope["adequacy"]["chrf"]["value"], abs=0.051)
            for column, (metric, group) in HEADLINE.items():
                value, lo, hi = parse_stat(row[column])
                stat = scope[metric] if group is None else scope[metric][group]
                assert value == pytest.approx(stat["value"] * 100, abs=0.051), (heading, row["model"], column)
                assert lo == pytest.approx(stat["ci"][0] * 100, abs=0.051)
                assert hi == pytest.approx(stat["ci"][1] * 100, abs=0.051)
                checked += 1
            errors = scope["extraction_errors"]
            rate = errors["rate"]
            assert row["Extraction errors"].startswith(
                f"{errors['n']} ({rate['value'] * 100:.1f}%) [{rate['ci'][0] * 100:.1f}, {rate['ci'][1] * 100:.1f}]"
            )
            assert row["xCOMET"] == "—"  # not run in this fixture
    assert checked == 4 * 3 * len(HEADLINE)


def test_report_data_json_matches_markdown(built: tuple[Path, Path]) -> None:
    results, report = built
    data = read_json(report.with_name("report_data.json"))
    entry = next(e for e in data["headline"] if e["lang"] == "it" and e["model"] == "sft/checkpoint-8")
    metrics = metrics_of(results, "sft/checkpoint-8")["languages"]["it"]
    assert entry["gnt_n"]["value"] == pytest.approx(metrics["gnt_accuracy"]["Set-N"]["value"])
    assert entry["gnt_n"]["p_value"] is not None and entry["gnt_n"]["delta"] > 0


def test_checkpoint_improvement_is_marked_significant(built: tuple[Path, Path]) -> None:
    """The fixture's step-8 checkpoint is far more neutral on Set-N than the base: ▲ with p < 0.05."""
    _, report = built
    rows = md_tables(report.read_text(encoding="utf-8"))["All languages"]
    assert "▲" in rows[2]["GNT acc. Set-N"] and "▲" in rows[2]["Label acc. Set-N"]
    assert "▲" not in rows[0]["GNT acc. Set-N"] and "▼" not in rows[0]["GNT acc. Set-N"]  # the base itself


def test_images_exist_and_are_valid_pngs(built: tuple[Path, Path]) -> None:
    import matplotlib.image as mpimg
    from PIL import Image

    _, report = built
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", report.read_text(encoding="utf-8"))
    names = {Path(link).name for link in links}
    assert {"decision.png", "fig3_label_vs_gnt.png", "fig4_coherence.png", "fig5_setn_by_config.png",
            "learning_curves_sft.png", "deltas_plain.png", "parts_top10.png"} <= names
    for link in links:
        path = report.parent / link
        assert path.is_file(), link
        assert path.read_bytes()[:8] == PNG_MAGIC
        with Image.open(path) as image:
            image.verify()
        assert mpimg.imread(path).ndim == 3


class Checker(HTMLParser):
    """Collects images and tables and checks that every non-void tag is closed in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.images: list[str] = []
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "img":
            self.images.append(attributes.get("src") or "")
        if tag == "table":
            self._table = attributes.get("data-name")
            if self._table:
                self.tables[self._table] = []
        if tag == "tr" and self._table:
            self.tables[self._table].append([])
        if tag == "td" and self._table:
            self._cell = []
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}> (open: {self.stack[-3:]})")
            return
        self.stack.pop()
        if tag == "td" and self._cell is not None and self._table:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None
        if tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def test_html_parses_and_embeds_every_image(built: tuple[Path, Path]) -> None:
    import matplotlib.image as mpimg

    _, report = built
    html = report.with_name("report.html").read_text(encoding="utf-8")
    checker = Checker()
    checker.feed(html)
    checker.close()
    assert not checker.errors, checker.errors[:5]
    assert checker.stack == []
    assert len(checker.images) >= 6
    for src in checker.images:
        assert src.startswith("data:image/png;base64,"), src[:40]
        data = base64.b64decode(src.split(",", 1)[1])
        assert data[:8] == PNG_MAGIC
        assert mpimg.imread(io.BytesIO(data), format="png").ndim == 3
    # the HTML shows the same headline numbers as the Markdown
    md_rows = md_tables(report.read_text(encoding="utf-8"))["en→it"]
    html_rows = [r for r in checker.tables["headline:it"] if r]
    assert [r[0] for r in html_rows] == [r["model"] for r in md_rows]
    assert html_rows[1][3:] == [md_rows[1][c] for c in list(md_rows[1])[3:]]


def test_sample_browser_judge_and_traceability(built: tuple[Path, Path]) -> None:
    _, report = built
    text = report.read_text(encoding="utf-8")
    tables = md_tables(text)
    samples = [r for heading, rows in tables.items() if heading == "Sample browser" for r in rows]
    assert samples, "sample browser is empty"
    first = samples[0]
    assert first["source"].startswith("The member 0 | said [x]")  # a | inside a cell survives
    assert re.match(r"^<it> \*\*(GENDERED|NEUTRAL)\*\* \[", next(r["output"] for r in samples if r["output"]))
    assert any("membro (" in r["judge"] for r in samples)
    assert "Judge validation: lexical / CROSS-P+L: accuracy 83.0%, κ 0.710" in text
    runs = {r["model"]: r for r in tables["Run records"]}
    assert runs["sft/checkpoint-8"]["seed"] == "42"
    assert runs["sft/checkpoint-8"]["commit"].startswith("0123456789ab")
    assert runs["sft/checkpoint-8"]["W&B run"] == "fixrun01"
    assert runs["sft/checkpoint-8"]["recipe"] == "recipes/tiny.yaml"
    templated = tables["sft/checkpoint-8"]  # the templated-suite table under the checkpoint's heading
    assert [(r["lang"], r["ΔN"], r["N_det"]) for r in templated][:2] == [
        ("it", "+0.200 [+0.150, +0.250]", "0.050 [0.000, 0.100]"), ("es", "+0.300 [+0.250, +0.350]", "0.050 [0.000, 0.100]")]
    leakage = {r["model"]: r["status"] for r in tables["Leakage"]}
    assert leakage == {"base": "not_applicable", "sft/checkpoint-4": "clean", "sft/checkpoint-8": "clean"}


def test_missing_parts_are_reported_as_not_run_and_leakage_is_shouted(tmp_path: Path) -> None:
    from gnt.report import build_report

    results = make_results(tmp_path / "eval", steps=(2,), judge=False, validation=False, extras=False,
                           langs=("it",), rows_per_set=4)
    record = read_json(results / "sft/checkpoint-2/record.json")
    record["leakage"] = {"status": "leak", "overlap": 3, "source": "manifest", "allowed": True}
    write_json(results / "sft/checkpoint-2/record.json", record)
    report = build_report(results, ReportConfig(out_dir=str(tmp_path / "out"), bootstrap_samples=50))
    text = report.read_text(encoding="utf-8")
    assert report.parent == tmp_path / "out"
    assert "GNT accuracy and coherence: judge not run." in text
    assert "Templated suite: not run." in text and "Attribution: not run." in text
    assert "Not drawn: judge not run for any model." in text  # Fig. 4 and 5 need judgments
    status = md_tables(text)["What was evaluated"]
    assert status[0]["judge"] == "not run" and status[0]["metrics"] == "✓"
    assert (tmp_path / "out/figures/fig3_label_vs_gnt.png").is_file()
    assert not (tmp_path / "out/figures/fig4_coherence.png").exists()
    assert "LEAKAGE in sft/checkpoint-2" in text


def test_paired_bootstrap_identical_and_different() -> None:
    from gnt.report.significance import holm, paired_bootstrap

    same = {f"it|{i}|c": float(i % 2) for i in range(40)}
    result = paired_bootstrap(same, dict(same), bootstrap=BootstrapSettings(200))
    assert result is not None and result.delta == 0 and result.p_value == 1.0 and result.marker() == ""
    better = {k: 1.0 for k in same}
    result = paired_bootstrap(same, better, bootstrap=BootstrapSettings(200))
    assert result is not None and result.delta == pytest.approx(0.5) and result.p_value < 0.05
    assert result.lo <= result.delta <= result.hi and result.marker() == "▲"
    wide = paired_bootstrap(same, better, bootstrap=BootstrapSettings(200, alpha=0.01))  # the configured alpha sets the interval
    assert wide is not None and wide.lo <= result.lo and wide.hi >= result.hi and (wide.lo, wide.hi) != (result.lo, result.hi)
    assert paired_bootstrap(same, {"other|1|c": 1.0}) is None
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def test_flatten_metrics_reads_the_stat_shape_the_project_writes() -> None:
    from gnt.report.collect import flatten_metrics, parse_stat

    assert parse_stat(0.5) == (0.5, None, None, None)
    assert parse_stat({"value": 0.5, "ci": [0.4, 0.6], "n": 10}) == (0.5, 0.4, 0.6, 10)
    assert parse_stat({"value": None, "ci": None, "n": 0}) is None
    assert parse_stat({"mean": 0.7, "lo": 0.6, "hi": 0.8}) is None  # no producer writes this: not a stat
    rows = flatten_metrics({
        "cells": {"it/G+S/4": {"n": 4, "label_accuracy": {"Set-N": {"value": 0.25, "ci": [0.0, 0.5], "n": 4}}}},
        "languages": {"it": {"xcomet": {"matching": {"value": 0.81, "ci": [0.8, 0.82], "n": 4}}}},
        "overall": {"extraction_errors": {"n": 2, "rate": {"value": 0.1, "ci": [0, 0.2], "n": 20}}},
        "per_language": {"es": {"xcomet": {"matching": {"value": 0.5, "ci": [0.4, 0.6], "n": 4}}}},
    }, "m")
    found = {(r.scope, r.lang, r.cell, r.metric, r.group): (r.value, r.lo, r.hi) for r in rows}
    assert found[("cell", "it", "it/G+S/4", "label_accuracy", "Set-N")] == (0.25, 0.0, 0.5)
    assert found[("language", "it", None, "xcomet", "matching")] == (0.81, 0.8, 0.82)
    assert found[("overall", None, None, "extraction_errors", "n")] == (2, None, None)
    assert found[("overall", None, None, "extraction_errors", "rate")] == (0.1, 0, 0.2)
    assert not any(r.lang == "es" for r in rows)  # a section name no producer writes is not guessed at


def test_cli_writes_report_elsewhere_with_xcomet_and_validation(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("report_cli", Path(__file__).parent.parent / "eval/report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = make_results(tmp_path / "results", steps=(2,), extras=False, langs=("it",), rows_per_set=4,
                           xcomet=True, validation=False)
    validation = tmp_path / "judge-validation.json"  # as eval/judge.py validate writes it, outside the results
    write_json(validation, {"kind": "references", "judge": "lexical", "format": "MONO-L", "accuracy": 0.75,
                            "macro_f1": 0.7, "kappa": 0.5, "n": 40})
    assert module.main([str(results), "--out", str(tmp_path / "r"), "--bootstrap-samples", "50",
                        "--judge-validation", str(validation)]) == 0
    assert f"report: {tmp_path / 'r' / 'report.md'}" in capsys.readouterr().out
    text = (tmp_path / "r/report.md").read_text(encoding="utf-8")
    *rows, baseline = md_tables(text)["en→it"]
    assert baseline["stage"] == "baseline" and baseline["xCOMET"] == ""
    for row in rows:
        xcomet = metrics_of(results, row["model"])["languages"]["it"]["xcomet"]["matching"]
        value, lo, hi = parse_stat(row["xCOMET"])
        assert (value, lo, hi) == pytest.approx((xcomet["value"], xcomet["ci"][0], xcomet["ci"][1]), abs=0.0006)
    assert "lexical (MONO-L)" in text and "Agreement with the lexical judge: 90.0% (κ 0.800)" in text
    assert "lexical / MONO-L: accuracy 75.0%, macro-F1 0.700, κ 0.500 (" in text
    status = md_tables(text)["What was evaluated"]
    assert status[1]["xcomet"] == "✓"
    assert module.main([str(tmp_path / "nothing")]) == 2


def test_the_report_quotes_what_the_judge_got_wrong_by_kind_of_error(tmp_path: Path) -> None:
    from gnt.report.build import build_report
    from gnt.report.config import ReportConfig

    results = make_results(tmp_path / "results", steps=(2,), extras=False, langs=("it",), rows_per_set=4,
                           validation=False)
    wrong = [{"id": f"IT-{i}", "lang": "it", "origin": "mgente", "cell": "Set-N/Ref-G", "translation": f"I cittadini {i}",
              "gold": "GENDERED", "judged": "NEUTRAL"} for i in range(6)]
    wrong += [{"id": "IT-9", "lang": "it", "origin": "mgente", "cell": "Set-G/Ref-N", "gold": "NEUTRAL",
               "translation": "La cittadinanza", "judged": "GENDERED"},
              {"id": "IT-10", "lang": "it", "origin": "mgente", "cell": "Set-G/Ref-N", "gold": "NEUTRAL",
               "translation": "Chi vota", "judged": "ERROR"}]
    write_json(results / "judge_validation.json", {
        "kind": "references", "judge": "llm", "format": "MONO-L", "misjudged": wrong,
        "results": [{"format": "MONO-L", "lang": "all", "binary": {"n": 80, "accuracy": 0.9}}]})
    text = build_report(results, ReportConfig(out_dir=str(tmp_path / "r"), bootstrap_samples=50)).read_text(
        encoding="utf-8")
    assert "What the judge got wrong in judge_validation.json: 8 references of 80" in text
    assert "gendered called neutral (6): it «I cittadini 0»; it «I cittadini 1»; it «I cittadini 2»; it «I cittadini 3»" in text
    assert "I cittadini 4" not in text, "a few are quoted, not all"
    assert "neutral called gendered (1): it «La cittadinanza»" in text and "no verdict (a judge error or abstention): 1" in text


def test_fewer_extraction_errors_is_marked_better_and_more_is_marked_worse() -> None:
    from gnt.report.significance import PairedResult
    from gnt.report.tables import Cell

    fewer = PairedResult(delta=-0.3, lo=-0.4, hi=-0.2, p_value=0.001, n_pairs=40)
    more = PairedResult(delta=0.3, lo=0.2, hi=0.4, p_value=0.001, n_pairs=40)
    assert fewer.marker(higher_is_better=False) == "▲" and more.marker(higher_is_better=False) == "▼"
    assert more.marker() == "▲"  # accuracies: higher is better
    cell = Cell(value=0.1, lo=0.05, hi=0.2, count=4, test=fewer, p_adjusted=0.004, kind="errors", higher_is_better=False)
    assert cell.text() == "4 (10.0%) [5.0, 20.0] ▲ p=0.004"
    worse = Cell(value=0.7, lo=0.6, hi=0.8, count=28, test=more, p_adjusted=0.004, kind="errors", higher_is_better=False)
    assert worse.text().endswith("▼ p=0.004")


# ----------------------------------------------------------------------------------------------------------------
# The report lists model folders itself; damaged results files are errors, never "not run" or a made-up model
# ----------------------------------------------------------------------------------------------------------------


def test_a_model_missing_from_the_summary_is_still_reported(tmp_path: Path) -> None:
    from gnt.report.collect import collect

    out = make_results(tmp_path / "eval", steps=(4, 8), extras=False, rows_per_set=2)
    summary = read_json(out / "summary.json")
    summary["models"] = [m for m in summary["models"] if m["name"] != "sft/checkpoint-8"]
    summary["models"].append({"name": "sft/checkpoint-99"})  # its folder is gone
    write_json(out / "summary.json", summary)
    results = collect(out)
    assert [m.name for m in results.models] == ["base", "sft/checkpoint-4", "sft/checkpoint-8"]
    assert any("sft/checkpoint-99" in w for w in results.warnings)


def test_a_truncated_summary_is_a_warning_and_invents_no_model(tmp_path: Path) -> None:
    from gnt.report.collect import collect

    out = make_results(tmp_path / "eval", steps=(4,), extras=False, rows_per_set=2)
    (out / "cache").mkdir()
    (out / "cache" / "generations.jsonl").write_text('{"key": "k", "text": "x"}\n')  # the sweep's cache
    text = (out / "summary.json").read_text()
    (out / "summary.json").write_text(text[: len(text) // 2])
    results = collect(out)
    assert [m.name for m in results.models] == ["base", "sft/checkpoint-4"]
    assert any("summary.json is unreadable" in w for w in results.warnings)


@pytest.mark.parametrize("damage", ["truncated", "emptied"])
def test_a_damaged_metrics_file_is_named_in_the_report_with_the_command_that_rewrites_it(tmp_path: Path,
                                                                                        damage: str) -> None:
    """metrics.json cut short or replaced by ``{}``: the model is left out with a warning naming the file and the
    command that writes it again (which the grid step, seeing the damage, really does), never read as a result."""
    import importlib.util

    out = make_results(tmp_path / "eval", steps=(4,), extras=False, rows_per_set=2)
    metrics = out / "sft" / "checkpoint-4" / "metrics.json"
    metrics.write_text(metrics.read_text()[:100] if damage == "truncated" else "{}")
    spec = importlib.util.spec_from_file_location("report_cli", Path(__file__).parent.parent / "eval/report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    assert module.main([str(out)]) == 0
    report = (out / "report" / "report.md").read_text(encoding="utf-8")
    warning = next(line for line in report.splitlines() if str(metrics) in line)
    assert "was changed after it was written" in warning and "rerun eval/evaluate.py with the same recipe" in warning
    assert [r["model"] for r in md_tables(report)["All languages"][:-1]] == ["base"]


def test_a_recorded_stage_and_step_are_read_as_written_not_guessed(tmp_path) -> None:
    from gnt.report.collect import ModelResult

    record = {"format": "gnt-align/eval-record/2", "step": "grid", "kind": "checkpoint", "stage": "dpo",
              "global_step": 7, "model": {"name": "myrun/checkpoint-9", "kind": "checkpoint", "run_dir": None}}
    model = ModelResult(name="myrun/checkpoint-9", directory=tmp_path, record=record)
    assert (model.is_base, model.stage, model.global_step) == (False, "dpo", 7)


def test_a_model_folder_without_a_current_record_is_left_out_with_a_warning(tmp_path) -> None:
    """Nothing is guessed from folder names: an old-format or missing record.json is named, and the rest reported."""
    import json

    from gnt.report.collect import ResultsError, collect

    out = make_results(tmp_path / "results")
    old = json.loads((out / "sft/checkpoint-4/record.json").read_text())
    (out / "sft/checkpoint-4/record.json").write_text(json.dumps({**old, "format": "gnt-align/eval-record/1"}))
    (out / "sft/checkpoint-8/record.json").unlink()
    results = collect(out)
    assert [m.name for m in results.models] == ["base"]
    assert any("sft/checkpoint-4: left out:" in w and "record.json is of format 'gnt-align/eval-record/1', written by "
               "an older gnt-align; rerun eval/evaluate.py" in w for w in results.warnings)
    assert any("sft/checkpoint-8: left out: it holds no readable record.json" in w and "rerun eval/evaluate.py" in w
               for w in results.warnings)
    (out / "base/record.json").unlink()
    with pytest.raises(ResultsError, match="no model folder whose results are whole"):
        collect(out)


def test_a_metrics_file_of_an_unknown_format_is_refused_not_read_as_another(tmp_path) -> None:
    """``eval-metrics/99`` (a later gnt-align, a hand edit) is never read as the version this code knows."""
    import json

    from gnt.report.collect import collect
    from gnt.results.model_folder import GRID, ModelFolder

    out = make_results(tmp_path / "results", steps=(4,), extras=False, rows_per_set=2)
    folder = ModelFolder(out, "sft/checkpoint-4")
    metrics = json.loads((folder.path / "metrics.json").read_text())
    record = {k: v for k, v in json.loads((folder.path / "record.json").read_text()).items() if k not in ("files",)}
    folder.write(GRID, {"generations.jsonl": folder.generations(),
                        "metrics.json": {**metrics, "format": "gnt-align/eval-metrics/99"}}, record)
    assert folder.check(GRID).ok, "whole, but of a format this code does not read"
    results = collect(out)
    assert [m.name for m in results.models] == ["base", "sft/checkpoint-4"]
    assert results.model("sft/checkpoint-4").metrics is None
    assert any("metrics.json is not of format 'gnt-align/eval-metrics/2'" in w for w in results.warnings)


def _staged_model(tmp_path: Path, name: str, stage: str, step: int, set_n_label: str) -> object:
    """A model of ``stage`` that gets every Set-G label right and answers ``set_n_label`` on every Set-N row."""
    from gnt.report.collect import ModelResult

    rows = []
    for set_name in ("Set-G", "Set-N"):
        for r in range(30):
            label = "GENDERED" if set_name == "Set-G" else set_n_label
            rows.append({"lang": "it", "id": f"{set_name}-{r}", "cell": "it/None/0", "key": f"{name}-{set_name}-{r}",
                         "set": set_name, "label": label, "error": None, "chrf": 50.0})
    record = {"format": "gnt-align/eval-record/2", "step": "grid", "stage": stage, "global_step": step,
              "kind": "base" if stage == "base" else "checkpoint", "model": {"name": name}}
    return ModelResult(name=name, directory=tmp_path / name, record=record, generations=rows)


def test_a_later_stage_that_loses_the_decision_is_said_in_words(tmp_path: Path) -> None:
    from gnt.report.collect import Results
    from gnt.report.document import meaning_warnings

    base = _staged_model(tmp_path, "base", "base", 0, "GENDERED")
    sft = _staged_model(tmp_path, "sft/checkpoint-60", "sft", 60, "NEUTRAL")
    dpo = _staged_model(tmp_path, "dpo/checkpoint-10", "dpo", 10, "GENDERED")
    results = Results(tmp_path, {}, [base, sft, dpo], [], [], {})
    warnings = [w for w in meaning_warnings(results) if w.startswith("Stage regression")]
    assert len(warnings) == 1
    assert "`dpo/checkpoint-10` (dpo) loses label balanced accuracy against `sft/checkpoint-60` (sft)" in warnings[0]
    assert "-50.0 points" in warnings[0]
    # the same DPO labels as the SFT's: no sentence
    kept = _staged_model(tmp_path, "dpo/checkpoint-10", "dpo", 10, "NEUTRAL")
    assert not [w for w in meaning_warnings(Results(tmp_path, {}, [base, sft, kept], [], [], {}))
                if w.startswith("Stage regression")]


def test_the_judge_is_named_once_when_its_format_repeats_its_name() -> None:
    from gnt.report.document import _judge_name

    assert _judge_name("lexical", "LEXICAL") == "the lexical judge"  # not "lexical (LEXICAL)"
    assert _judge_name("lexical", "MONO-L") == "lexical (MONO-L)"
    assert _judge_name("Qwen/Qwen2.5-72B-Instruct", None) == "Qwen/Qwen2.5-72B-Instruct"


def test_models_of_one_stage_and_step_get_labels_that_tell_them_apart() -> None:
    """Alignment variants all stop at the same DPO step: "dpo@8" on every bar would name none of them."""
    from types import SimpleNamespace

    from gnt.report.plots import model_labels

    def model(name: str, stage: str | None, step: int | None) -> SimpleNamespace:
        return SimpleNamespace(name=name, stage=stage, global_step=step, is_base=stage is None and step is None)

    models = [model("base", None, None), model("runs/sft-42", "sft", 150),
              model("k8-42/round-1", "dpo", 8), model("setn_k8-42/round-1", "dpo", 8)]
    labels = model_labels(models)  # type: ignore[arg-type]
    assert labels == {"base": "base", "runs/sft-42": "sft@150", "k8-42/round-1": "k8-42/round-1",
                      "setn_k8-42/round-1": "setn_k8-42/round-1"}
