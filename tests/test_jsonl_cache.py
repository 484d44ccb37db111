"""The one JSONL cache every step keeps its expensive results in: a killed writer, two writers, a reload."""

from __future__ import annotations

import json
import logging
import multiprocessing
from pathlib import Path

import pytest

from gnt.comet.scoring import CometCache
from gnt.evaluation.cache import GenerationCache
from gnt.evaluation.preference import ScoreCache
from gnt.generation.base import Generation
from gnt.generation.scoring import CompletionScore
from gnt.jsonl_cache import JsonlCache
from gnt.judge.llm_judge import JudgeCache


def test_a_torn_last_line_is_skipped_counted_and_closed_by_the_next_append(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "cache.jsonl"
    GenerationCache(path).put_many([("a", Generation("uno", n_tokens=1)), ("b", Generation("due", n_tokens=1))])
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"key": "c", "text": "tr')  # a writer killed halfway through its line
    with caplog.at_level(logging.WARNING, logger="gnt.cache"):
        cache = GenerationCache(path)
    assert len(cache) == 2 and cache.skipped == 1 and "c" not in cache
    assert "skipped 1 unreadable line" in caplog.text and "torn last line" in caplog.text
    cache.put_many([("d", Generation("quattro"))])
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[-1])["key"] == "d"  # the new record starts on its own line
    again = GenerationCache(path)
    assert again.get("d").text == "quattro" and again.get("a").text == "uno" and again.skipped == 1


def test_damage_beyond_a_torn_line_is_reported_as_damage(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "cache.jsonl"
    path.write_text('not json\n{"key": "a", "logprob": -1.5, "n_tokens": 3}\n[1, 2]\n', encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="gnt.cache"):
        cache = ScoreCache(path)
    assert cache.get("a") == CompletionScore(-1.5, 3) and cache.skipped == 2
    assert "damaged" in caplog.text


def _append_from_another_process(path: str, start: int) -> None:
    cache = GenerationCache(path)
    for number in range(start, start + 50):
        cache.put_many([(f"k{number}", Generation(f"text {number}" * 20))])


def test_two_writing_processes_lose_nothing_and_a_reload_sees_both(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    mine = GenerationCache(path)
    context = multiprocessing.get_context("spawn")
    other = context.Process(target=_append_from_another_process, args=(str(path), 1000))
    other.start()
    _append_from_another_process(str(path), 0)
    other.join(timeout=120)
    assert other.exitcode == 0
    assert len(mine) == 0  # a loaded cache sees its own appends only ...
    assert mine.reload() == 100  # ... until it reads the file again
    assert mine.get("k1049").text == "text 1049" * 20 and mine.get("k0").text == "text 0" * 20
    assert all(json.loads(line) for line in path.read_text(encoding="utf-8").splitlines())  # no torn record


def test_last_record_wins_and_memory_only_caches_write_nothing(tmp_path: Path) -> None:
    path = tmp_path / "judge.jsonl"
    path.write_text(
        json.dumps({"cache_key": "x", "error": "judge_error"}) + "\n" + json.dumps({"cache_key": "x", "label": "NEUTRAL"}) + "\n",
        encoding="utf-8",
    )
    assert JudgeCache(path).get("x") == {"cache_key": "x", "label": "NEUTRAL"}  # a later retry that succeeded wins
    memory = CometCache(None)
    memory.put_many([{"cache_key": "s", "score": 0.5}])
    assert memory.get("s")["score"] == 0.5 and len(memory) == 1
    assert list(tmp_path.iterdir()) == [path]


def test_a_generation_cache_keeps_failures_out_and_its_line_format(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    cache = GenerationCache(path)
    cache.put_many([("ok", Generation("fine", n_tokens=2, finish_reason="stop")), ("bad", Generation("", error="boom"))],
                   model_id="m")
    assert "bad" not in GenerationCache(path)
    assert json.loads(path.read_text(encoding="utf-8")) == {
        "key": "ok", "model_id": "m", "text": "fine", "n_tokens": 2, "finish_reason": "stop"}
    assert isinstance(cache, JsonlCache)
