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


# ------------------------------------------------------------------------------------------------ data build
def _build(argv: list[str]) -> int:
    from gnt.cli.build import main

    return main([*argv, "progress=false"])


def test_one_tsv_asked_for_two_languages_is_an_error(tmp_path: Path, capsys) -> None:
    from gnt.paths import SAMPLE_DIR

    tsv = SAMPLE_DIR / "en-it.tsv"
    assert _build([f"mgente={tsv}", "langs=it,es", f"out_dir={tmp_path / 'd'}", "templated_pairs=0"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "holds en-it rows only, and langs also asks for es" in line and "langs=it" in line
    assert not (tmp_path / "d").exists()
    # one TSV with the default languages is that file's language, as documented
    assert _build([f"mgente={tsv}", f"out_dir={tmp_path / 'd'}", "templated_pairs=0"]) == 0


def test_a_common_set_row_that_names_no_entry_is_an_error(tmp_path: Path, capsys) -> None:
    from gnt.paths import SAMPLE_DIR

    data = tmp_path / "mgente"
    (data / "common").mkdir(parents=True)
    (data / "en-it.tsv").write_bytes((SAMPLE_DIR / "en-it.tsv").read_bytes())
    lines = (SAMPLE_DIR / "common" / "en-it.tsv").read_text(encoding="utf-8").splitlines()
    cells = lines[1].split("\t")
    cells[0] = "no-such-id"
    lines.append("\t".join(cells))
    (data / "common" / "en-it.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert _build([f"mgente={data}", "langs=it", f"out_dir={tmp_path / 'd'}", "templated_pairs=0"]) == 2
    err = capsys.readouterr().err
    assert f"common/en-it.tsv:{len(lines)}:ID: ID 'no-such-id' is no row of en-it.tsv" in err and "Traceback" not in err
    assert not (tmp_path / "d").exists()


def test_more_templated_pairs_than_exist_is_said_and_recorded(tmp_path: Path, capsys) -> None:
    from gnt.io import read_json

    out = tmp_path / "d"
    assert _build(["langs=it", f"out_dir={out}", "templated_pairs=99999999"]) == 0
    manifest = read_json(out / "manifest.json")
    written = manifest["counts"]["templated_pairs"]["written"]
    assert 0 < written < 99999999 and manifest["counts"]["templated_pairs"]["asked"] == 99999999
    assert f"note: templated_pairs=99999999 asks for more pairs than the templates give for it: all {written} " \
           "written" in capsys.readouterr().out
    assert manifest["notes"]


def test_a_killed_build_leaves_nothing_a_later_build_keeps(tmp_path: Path) -> None:
    import os

    from gnt.io import atomic_directory

    target = tmp_path / "data"
    with atomic_directory(target) as tmp:
        (tmp / "a").write_text("first", encoding="utf-8")
    stale = tmp_path / ".data.tmp-abc123"  # a build killed while writing
    (stale / "sft").mkdir(parents=True)
    with atomic_directory(target) as tmp:
        (tmp / "a").write_text("second", encoding="utf-8")
    assert not stale.exists() and (target / "a").read_text() == "second"
    # killed between its two renames: the previous output is put back, not lost
    os.replace(target, tmp_path / ".data.old-99999")
    with atomic_directory(tmp_path / "other") as tmp:
        pass
    assert not target.exists()  # another target's writer leaves it alone
    with atomic_directory(target) as tmp:
        assert (target / "a").read_text() == "second"
        (tmp / "a").write_text("third", encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "other"]


# ------------------------------------------------------------------------------------------------ evaluation
EVAL_TINY = str(Path(__file__).resolve().parent.parent / "recipes" / "eval-tiny.yaml")


def test_a_shard_that_did_not_merge_does_not_name_a_summary_that_is_not_there(tmp_path: Path, monkeypatch,
                                                                            capsys) -> None:
    from gnt.cli.evaluate import main
    from gnt.pipeline import Pipeline

    monkeypatch.setattr(Pipeline, "run", lambda self, say=print: [])  # the worker's share: no summary merged yet
    out = tmp_path / "eval"
    assert main([EVAL_TINY, "steps=grid", "model=gnt:tiny", f"out_dir={out}", "shard=0/2", "progress=false"]) == 0
    printed = capsys.readouterr().out
    assert "results:" not in printed and f"shard 0/2 done; {out / 'summary.json'} is written when the last" in printed
    out.mkdir()
    monkeypatch.setattr(Pipeline, "run", lambda self, say=print: (out / "summary.json").write_text("{}"))
    assert main([EVAL_TINY, "steps=grid", "model=gnt:tiny", f"out_dir={out}", "shard=1/2", "progress=false"]) == 0
    assert f"results: {out / 'summary.json'}" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------------ secrets
def test_an_api_key_echoed_in_an_error_body_is_never_stored(tmp_path: Path, monkeypatch) -> None:
    from http_server import OpenAITestServer, Reply
    from test_judge_http import ITEMS

    from gnt.generation.http_backend import HTTPBackend
    from gnt.judge.llm_judge import JudgeCache, JudgeSettings, LLMJudge
    from gnt.redact import redact

    secret = "sk-test-0123456789abcdefSECRET"
    monkeypatch.setenv("GNT_TEST_JUDGE_KEY", secret)
    holder: dict = {}

    def echo_headers(body: dict) -> Reply:  # a server that quotes the request's headers in its 401 body
        return Reply(status=401, body={"error": {"message": "bad key", "headers": holder["server"].requests[-1]["headers"],
                                                 "hint": f"api_key={secret[::-1]}"}})

    with OpenAITestServer(responder=echo_headers) as server:
        holder["server"] = server
        backend = HTTPBackend(server.url, "judge-model", api_key_env="GNT_TEST_JUDGE_KEY", concurrency=1,
                              timeout_s=2.0, max_retries=0, backoff_s=0.01)
        cache = tmp_path / "judgments.jsonl"
        (result,) = LLMJudge(backend, JudgeSettings(judge_retries=2), JudgeCache(cache)).judge(ITEMS[:1])
        backend.close()
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {secret}"  # it was sent, and echoed
    assert result.error == "judge_error" and result.error_kind == "backend_error" and "HTTP 401" in result.error_detail
    stored = cache.read_text(encoding="utf-8")
    assert secret not in stored and secret[::-1] not in stored and "[REDACTED]" in stored
    assert secret not in str(result.to_record())
    assert redact("Authorization: Bearer abc.def-ghi tail") == "Authorization: Bearer [REDACTED] tail"
    assert redact("plain text about a bear") == "plain text about a bear"
