"""The figure check: every figure README.md and docs/ quote from a benchmark record is that record's value, at the
rounding shown, and comes from a record written from a clean tree (bench/figures.py; docs/benchmarks.md says how a
figure is cited)."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from gnt.paths import PROJECT_ROOT


def _load_checker():
    spec = importlib.util.spec_from_file_location("bench_figures", PROJECT_ROOT / "bench" / "figures.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name while the file runs
    spec.loader.exec_module(module)
    return module


figures = _load_checker()

KNOWN_DIRTY: dict[str, str] = {}
"""Records that README.md or docs/ cite although they were written from a modified tree, each with what is to be
done. Empty: every cited record was written from a clean tree, and a newly cited dirty record fails the check."""


def _problems(kinds: set[str]) -> list:
    return [p for p in figures.check()[1] if p.kind in kinds]


def test_every_cited_figure_equals_its_record() -> None:
    cited, _ = figures.check()
    assert len(cited) >= 20  # README's CPU results and the docs pages cite their figures
    problems = _problems({"wrong", "unreadable", "undefined", "unused", "missing"})
    assert not problems, "\n".join(map(str, problems))


def test_cited_records_from_a_modified_tree_are_exactly_the_known_ones() -> None:
    dirty = {p.record.name for p in _problems({"dirty"})}
    assert dirty == set(KNOWN_DIRTY), (
        f"newly cited from a modified tree: {sorted(dirty - set(KNOWN_DIRTY))}; "
        f"no longer cited or now clean (take them off KNOWN_DIRTY): {sorted(set(KNOWN_DIRTY) - dirty)}")


# ------------------------------------------------------------------------------------------------ the checker itself


def _record(folder: Path, name: str, figures_: dict, dirty: bool | None = False) -> None:
    environment = {"git": {"commit": "abc", "dirty": dirty}} if dirty is not None else {}
    (folder / "bench" / "results").mkdir(parents=True, exist_ok=True)
    (folder / "bench" / "results" / name).write_text(json.dumps({"environment": environment, "figures": figures_}))


def _page(folder: Path, text: str) -> Path:
    page = folder / "docs" / "page.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text)
    return page


STAT = {"value": 0.804348, "ci": [0.681794, 0.910724], "n": 46}


@pytest.fixture
def site(tmp_path: Path) -> Path:
    _record(tmp_path, "q.json", {"models": {"sft/checkpoint-60": {"gnt": STAT}}, "seconds": 907.5,
                                 "pair": [0.367, 0.913], "ok": True})
    _record(tmp_path, "old.json", {"seconds": 12.0}, dirty=True)
    _record(tmp_path, "bare.json", {"seconds": 12.0}, dirty=None)
    return tmp_path


DEFINITIONS = """
[gnt]: ../bench/results/q.json "/figures/models/sft~1checkpoint-60/gnt ×100"
[secs]: ../bench/results/q.json "/figures/seconds"
[pair]: ../bench/results/q.json "/figures/pair"
"""


def _kinds(page: Path) -> list[tuple[str, int]]:
    return [(p.kind, p.line) for p in figures.check_page(page)[1]]


def test_figures_that_equal_their_record_at_the_rounding_shown_pass(site: Path) -> None:
    page = _page(site, "GNT [80.4 [68.2, 91.1]][gnt] %, in [908][secs] s (or [907.5 s][secs]); "
                       "[0.367 / 0.913][pair]; value alone: [80][gnt].\n" + DEFINITIONS)
    cited, problems = figures.check_page(page)
    assert problems == []
    assert [f.text for f in cited] == ["80.4 [68.2, 91.1]", "908", "907.5 s", "0.367 / 0.913", "80"]


@pytest.mark.parametrize("wrong", [
    "[82.2 [70.4, 92.9]][gnt]",  # the SFT figure the README quoted: the record says 80.4 [68.2, 91.1]
    "[80.4 [68.2, 91.2]][gnt]",  # one CI bound off by one in its last digit
    "[80.5][gnt]",
    "[0.30 / 0.86][pair]",  # a superseded record's figures
    "[909][secs]",
    "[80.4 [68.2]][gnt]",  # half a CI
    "[about][secs]",  # no number at all
])
def test_a_deliberately_wrong_figure_fails(site: Path, wrong: str) -> None:
    page = _page(site, f"text\n{wrong}\n" + DEFINITIONS)
    kinds = [k for k, _ in _kinds(page) if k != "unused"]
    assert kinds == ["wrong"]


def test_a_wrong_figure_in_the_real_readme_fails(tmp_path: Path) -> None:
    """A copy of README.md and the records it cites, one cited figure changed in its last digit: the check fails
    on that line and nowhere else."""
    shutil.copytree(PROJECT_ROOT / "bench" / "results", tmp_path / "bench" / "results")
    text = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    refs = figures.references(PROJECT_ROOT / "README.md", text)
    use = next(m for m in re.finditer(r"\[(\d+\.\d)\]\[([^\]]+)\]", text) if m.group(2).lower() in refs)
    shown = use.group(1)
    changed = shown[:-1] + str((int(shown[-1]) + 3) % 10)
    page = tmp_path / "README.md"
    page.write_text(text[:use.start(1)] + changed + text[use.end(1):], encoding="utf-8")
    wrong = [p for p in figures.check_page(page)[1] if p.kind == "wrong"]
    assert len(wrong) == 1 and wrong[0].line == text[:use.start()].count("\n") + 1
    assert f"[{changed}][{use.group(2)}]" in wrong[0].message


def test_records_that_are_missing_unreadable_or_from_a_modified_tree_are_flagged(site: Path) -> None:
    page = _page(site, "\n".join([
        "[12][old] s from a modified tree",
        "[12][bare] s from a record that does not say",
        "[1][gone] from no record",
        "[1][nokey] from a key that is not there",
        "[1][flag] from a boolean",
        "[1][nowhere] cited without a definition",
        "bench/results/train_lean.json is mentioned but does not exist; bench/results/q.json does",
        '[old]: ../bench/results/old.json "/figures/seconds"',
        '[bare]: ../bench/results/bare.json "/figures/seconds"',
        '[gone]: ../bench/results/gone.json "/figures/seconds"',
        '[nokey]: ../bench/results/q.json "/figures/models/sft/checkpoint-60/gnt"',
        '[flag]: ../bench/results/q.json "/figures/ok"',
        '[spare]: ../bench/results/q.json "/figures/seconds"',
    ]))
    assert _kinds(page) == [("dirty", 1), ("dirty", 2), ("unreadable", 3), ("unreadable", 4), ("unreadable", 5),
                            ("undefined", 6), ("missing", 7), ("unused", 13)]


def test_a_figure_in_a_code_block_is_not_a_citation(site: Path) -> None:
    page = _page(site, "```\n[82.2][gnt]\n```\n[80.4][gnt]\n" + DEFINITIONS)
    assert [k for k, _ in _kinds(page) if k != "unused"] == []
