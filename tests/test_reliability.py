"""Reliability: bad inputs and faults end in one clear ``error:`` line and a non-zero exit before any work where
that can be known, nothing is silently wrong, nothing is overwritten and no secret is stored.

One test (or a few) per failure case; the numbers in the comments are the cases of the README's Reliability
section. Each runs in-process on small fixtures.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def _one_error_line(err: str) -> str:
    """The last line of stderr, checked to be an ``error:`` line with no traceback before it."""
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert lines and lines[-1].startswith("error: "), err
    return lines[-1]


# ------------------------------------------------------------------------------------------------ judge
def _judge_results(tmp_path: Path) -> Path:
    from test_judge_apply import GENDERED_WORDS, _results

    from gnt.io import read_jsonl, write_jsonl

    out = _results(tmp_path)
    records = read_jsonl(out / "base" / "generations.jsonl")
    for record in records:
        record["gendered_words"] = list(GENDERED_WORDS.get(record["id"], ()))
    write_jsonl(out / "base" / "generations.jsonl", records)
    return out


def test_a_missing_or_unreadable_validation_report_is_one_error_before_judging(tmp_path: Path, capsys) -> None:
    from gnt.cli.judge import main

    out = _judge_results(tmp_path)
    assert main([str(out), "judge=lexical", "models=base", f"validation={tmp_path / 'nonexist.json'}"]) == 2
    assert "nonexist.json: no such file" in _one_error_line(capsys.readouterr().err)
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    assert main([str(out), "judge=lexical", "models=base", f"validation={tmp_path / 'bad.json'}"]) == 2
    assert "not a readable JSON report" in _one_error_line(capsys.readouterr().err)
    assert not (out / "base" / "judgments-lexical.jsonl").exists()  # nothing judged


def test_a_negative_n_exemplars_is_refused(capsys) -> None:
    from gnt.cli.judge import main
    from gnt.judge.prompts import load_prompt

    assert main(["check", "n_exemplars=-1"]) == 2
    assert "n_exemplars must be >= 0" in _one_error_line(capsys.readouterr().err)
    with pytest.raises(ValueError, match="n_exemplars"):
        load_prompt("it", "CROSS-L", n_exemplars=-1)
    assert len(load_prompt("it", "CROSS-L", n_exemplars=2).exemplars) == 2
