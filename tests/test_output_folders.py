"""One rule for output folders (gnt.output_folder): training, the data build, an evaluation and a report write only
into a new or empty folder or one the project wrote itself, of the same kind; a user's files are never overwritten
or deleted, and a link into a source tree is refused. Each refusal is one ``error:`` line, exit status 2, and
nothing written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _error_line import one_error_line

RECIPES = Path(__file__).resolve().parent.parent / "recipes"


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (links not followed) with its bytes: "nothing written" is this unchanged."""
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in files + [d for d in dirs if Path(root, d).is_symlink()]:
            path = Path(root, name)
            found[path.relative_to(folder).as_posix()] = b"link" if path.is_symlink() else path.read_bytes()
    return found


def _source_tree(tmp_path: Path) -> Path:
    """A repository root as a user has it: a README, docs/, a .git folder."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "docs").mkdir()
    (repo / "docs" / "guide.md").write_text("# guide\n", encoding="utf-8")
    (repo / "README.md").write_text("# my project\n", encoding="utf-8")
    return repo


def _sft(argv: list[str]) -> int:
    from gnt.cli.train import SFT

    return SFT.main(argv)


def _dpo(argv: list[str]) -> int:
    from gnt.cli.train import DPO

    return DPO.main(argv)


def _sft_args(tiny_model_dir: Path, data: Path, out: str | Path) -> list[str]:
    from _training_helpers import tiny_overrides

    return [str(RECIPES / "tiny.yaml"), *tiny_overrides(tiny_model_dir, data, Path(out), "report_to=none")]


# ------------------------------------------------------------------------------------------------ training
def test_sft_into_the_repository_root_is_refused_and_its_readme_kept(
        tmp_path: Path, monkeypatch, capsys, tiny_model_dir: Path, training_data_dir: Path) -> None:
    repo = _source_tree(tmp_path)
    before = _snapshot(repo)
    monkeypatch.chdir(repo)
    argv = [*_sft_args(tiny_model_dir, training_data_dir, "x"), "output_dir=."]
    assert _sft(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "output_dir=. already holds files this project did not write (.git, README.md, docs)" in line
    assert _snapshot(repo) == before  # no model card over README.md, no lock file, no adapter


def test_a_merged_model_is_never_swapped_in_over_a_users_folder(
        tmp_path: Path, monkeypatch, capsys, tiny_model_dir: Path, training_data_dir: Path) -> None:
    """The merged model replaces its folder whole: merged_dir=. would take the repository with it."""
    repo = _source_tree(tmp_path)
    before = _snapshot(repo)
    monkeypatch.chdir(repo)
    argv = [*_sft_args(tiny_model_dir, training_data_dir, tmp_path / "run"), "merge_adapter=true", "merged_dir=."]
    assert _sft(argv) == 2
    assert "merged_dir=. is the folder you are in" in one_error_line(capsys.readouterr().err)
    argv[-1] = f"merged_dir={repo / 'docs'}"
    assert _sft(argv) == 2
    assert "already holds files this project did not write (guide.md)" in one_error_line(capsys.readouterr().err)
    assert _snapshot(repo) == before and not (tmp_path / "run").exists()


def test_merging_checks_its_folder_again_and_marks_what_it_wrote(tmp_path: Path) -> None:
    from gnt.output_folder import OutputFolderError, folder_kind
    from gnt.training.merge import merge_adapter

    user = tmp_path / "mine"
    user.mkdir()
    (user / "notes.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(OutputFolderError, match="already holds files"):
        merge_adapter("unused-base", tmp_path / "adapter", user)  # refused before any model loads
    assert (user / "notes.txt").read_text(encoding="utf-8") == "keep me"
    assert folder_kind(tmp_path) is None


def test_sft_through_a_link_into_a_source_tree_is_refused(
        tmp_path: Path, capsys, tiny_model_dir: Path, training_data_dir: Path) -> None:
    repo = _source_tree(tmp_path)
    (repo / "docs" / "empty").mkdir()
    before = _snapshot(repo)
    (tmp_path / "to-docs").symlink_to(repo / "docs")
    (tmp_path / "to-empty").symlink_to(repo / "docs" / "empty")
    assert _sft(_sft_args(tiny_model_dir, training_data_dir, tmp_path / "to-docs")) == 2
    assert "leads through a symbolic link to" in one_error_line(capsys.readouterr().err)
    assert _sft(_sft_args(tiny_model_dir, training_data_dir, tmp_path / "to-empty")) == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"inside the source tree {repo}" in line
    assert _snapshot(repo) == before and not any((repo / "docs" / "empty").iterdir())


def test_dpo_into_its_own_sft_run_is_refused_and_the_sft_adapter_kept(
        tmp_path: Path, capsys, eval_tiny_run: Path, training_data_dir: Path) -> None:
    import shutil

    sft = tmp_path / "runs" / "sft"
    shutil.copytree(eval_tiny_run, sft)
    before = _snapshot(sft)
    for out in (sft, sft / "checkpoint-2"):
        argv = [str(RECIPES / "tiny-dpo.yaml"), f"data_dir={training_data_dir}", f"sft_adapter={sft}",
                f"output_dir={out}", "report_to=none", "max_steps=12"]
        assert _dpo(argv) == 2
        line = one_error_line(capsys.readouterr().err)
        assert f"output_dir={out} holds an SFT run (train/sft.py), not a DPO run (train/dpo.py)" in line
    assert _snapshot(sft) == before


def test_sft_into_a_dpo_run_is_refused(tmp_path: Path, capsys, tiny_model_dir: Path,
                                       training_data_dir: Path) -> None:
    dpo = tmp_path / "runs" / "dpo"
    (dpo / "checkpoint-4").mkdir(parents=True)
    (dpo / "gnt_run.json").write_text(json.dumps({"stage": "dpo", "status": "complete"}), encoding="utf-8")
    before = _snapshot(dpo)
    assert _sft(_sft_args(tiny_model_dir, training_data_dir, dpo)) == 2
    assert "holds a DPO run (train/dpo.py), not an SFT run" in one_error_line(capsys.readouterr().err)
    assert _snapshot(dpo) == before


def test_the_output_folder_rule_accepts_new_empty_and_own_folders(tmp_path: Path) -> None:
    from gnt.output_folder import (
        MARKER,
        OutputFolderError,
        check_output_folder,
        claim_output_folder,
        folder_kind,
    )

    assert claim_output_folder(tmp_path / "new" / "run", "sft") == (tmp_path / "new" / "run").resolve()
    assert folder_kind(tmp_path / "new" / "run") == "sft" and (tmp_path / "new" / "run" / MARKER).is_file()
    claim_output_folder(tmp_path / "new" / "run", "sft")  # again: its own
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / ".gnt-run.lock").write_text("", encoding="utf-8")  # bookkeeping: still empty
    check_output_folder(tmp_path / "empty", "dpo")
    racing = tmp_path / "racing"  # another process is writing the marker right now (its atomic write's temp file)
    racing.mkdir()
    (racing / f".{MARKER}.k2j9x1").write_text("{", encoding="utf-8")
    assert claim_output_folder(racing, "results") == racing.resolve()
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(OutputFolderError, match="did not write"):
        check_output_folder(tmp_path / "user", "results")
    with pytest.raises(OutputFolderError, match="holds an SFT run"):
        check_output_folder(tmp_path / "new" / "run", "report")
    legacy = tmp_path / "old-report"  # written before the marker existed: recognised by its files
    legacy.mkdir()
    for name in ("report.md", "report_data.json"):
        (legacy / name).write_text("{}", encoding="utf-8")
    check_output_folder(legacy, "report")


# ------------------------------------------------------------------------------------------------ report
def test_a_report_into_a_user_folder_is_refused_and_its_figures_kept(tmp_path: Path, capsys) -> None:
    from _report_fixtures import make_results

    from gnt.cli.report import main

    results = make_results(tmp_path / "results", steps=(2,), langs=("it",), rows_per_set=2, extras=False)
    paper = tmp_path / "paper"
    (paper / "figures").mkdir(parents=True)
    (paper / "figures" / "fig1.png").write_bytes(b"my figure")
    (paper / "report.md").write_text("# my draft\n", encoding="utf-8")
    before = _snapshot(paper)
    assert main([str(results), f"out_dir={paper}"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"out_dir={paper} already holds files this project did not write (figures, report.md)" in line
    assert _snapshot(paper) == before
    assert main([str(results), f"out_dir={tmp_path / 'report'}"]) == 0  # a new folder is fine, and again
    assert main([str(results), f"out_dir={tmp_path / 'report'}"]) == 0
    assert (tmp_path / "report" / "report.md").is_file()


# ------------------------------------------------------------------------------------------------ evaluation
def test_an_evaluation_into_a_user_folder_is_refused(tmp_path: Path, capsys) -> None:
    from gnt.cli.evaluate import main

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep\n", encoding="utf-8")
    argv = [str(RECIPES / "eval-tiny.yaml"), "steps=grid", "model=gnt:tiny", f"out_dir={mine}", "progress=false"]
    assert main(argv) == 2
    assert "already holds files this project did not write (notes.txt)" in one_error_line(capsys.readouterr().err)
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]


# ------------------------------------------------------------------------------------------------ data build
def test_a_data_build_into_the_current_empty_folder_is_one_error_and_leaves_nothing(
        tmp_path: Path, monkeypatch, capsys) -> None:
    from gnt.cli.build import main

    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["langs=it", "out_dir=.", "templated_pairs=0", "progress=false"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "out_dir=. is the folder you are in" in line and "out_dir=data" in line
    assert list(here.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["here"]
    assert main(["langs=it", "out_dir=data", "templated_pairs=0", "progress=false"]) == 0  # as the error says
    assert (here / "data" / "manifest.json").is_file()
