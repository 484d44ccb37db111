"""The driver shared by the grid sweep, the templated and the WMT24 suites, with a small task plugged in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _eval_helpers import ScriptedBackend

from gnt.evaluation.cache import CachedBackend, GenerationCache
from gnt.evaluation.config import EvalConfig
from gnt.evaluation.discovery import ModelUnderTest
from gnt.evaluation.driver import (
    MAX_FAILED_CHUNKS,
    GenerationFailure,
    Outcome,
    raise_if_failed,
    run_folders,
    run_models,
    write_folder,
)
from gnt.generation.base import Adapter, DecodingParams, Generation, GenerationRequest
from gnt.io import read_json, read_jsonl, write_json, write_jsonl
from gnt.results.folder import ResultsFolder
from gnt.results.part import Record, check_part

WORDS = ["tre", "uno", "quattro", "due", "cinque"]


def _model(name: str, base: str, adapter: str | None = None) -> ModelUnderTest:
    if adapter is None:
        return ModelUnderTest(name, base)
    return ModelUnderTest(name, base, Adapter(adapter, f"/adapters/{adapter}", f"hash-{adapter}"), kind="adapter")


class WordTask:
    """Translates each word as its upper case; records in word order; writes ``words.jsonl`` and ``record.json``."""

    label = "words"

    def __init__(self, out: Path, chunk_size: int = 2) -> None:
        self.out = out
        self.chunk_size = chunk_size
        self.params = DecodingParams(max_new_tokens=8)

    def size(self, model=None) -> int:
        return len(WORDS)

    def chunks(self, model: ModelUnderTest, system_role: bool) -> Iterator[list[tuple[int, GenerationRequest]]]:
        items = [(i, GenerationRequest.from_messages([{"role": "user", "content": w}], model.adapter, None, self.params))
                 for i, w in enumerate(WORDS)]
        for start in range(0, len(items), self.chunk_size):
            yield items[start : start + self.chunk_size]

    @staticmethod
    def request(item):
        return item[1]

    @staticmethod
    def order(item):
        return item[0]

    @staticmethod
    def record(model, item, generation: Generation, model_id: str) -> dict:
        return {"model": model.name, "word": WORDS[item[0]], "text": generation.text, "error": generation.error}

    def write(self, outcome: Outcome, backend: CachedBackend, system_role: bool) -> dict:
        folder = self.out / outcome.model.name
        files = {} if outcome.failed else {"words.jsonl": lambda p: write_jsonl(p, outcome.records)}
        write_folder(folder, files, {"counts": outcome.counts.to_json(), "failed": outcome.failed})
        return {"name": outcome.model.name, "counts": outcome.counts.to_json()}


class Factory:
    """Builds one scripted backend per call; remembers what it was asked for and which backends were closed."""

    def __init__(self, reply=None) -> None:
        self.calls: list[tuple[str, list[str]]] = []
        self.backends: list[ScriptedBackend] = []
        self.closed: list[str] = []
        self.reply = reply or (lambda r: r.messages[-1][1].upper() + (f"@{r.adapter.name}" if r.adapter else ""))

    def __call__(self, config, base_model, adapter_paths):
        self.calls.append((base_model, list(adapter_paths)))
        factory = self

        class Closing(ScriptedBackend):
            def close(self) -> None:
                factory.closed.append(base_model)

        backend = Closing(self.reply, model_id=base_model)
        self.backends.append(backend)
        return backend


def _config(tmp_path: Path) -> EvalConfig:
    return EvalConfig(out_dir=str(tmp_path), progress=False)


def test_models_are_grouped_by_base_and_each_base_is_loaded_once_with_all_its_adapters(tmp_path):
    models = [_model("base-a", "org/a"), _model("a/one", "org/a", "one"), _model("base-b", "org/b"),
              _model("a/two", "org/a", "two")]
    factory = Factory()
    entries = run_models(WordTask(tmp_path), _config(tmp_path), models, factory, GenerationCache(tmp_path / "c.jsonl"))

    assert factory.calls == [("org/a", ["/adapters/one", "/adapters/two"]), ("org/b", [])]
    assert factory.closed == ["org/a", "org/b"], "every backend is closed once its group is done"
    assert [e["name"] for e in entries] == ["base-a", "a/one", "a/two", "base-b"]
    records = read_jsonl(tmp_path / "a" / "two" / "words.jsonl")
    assert [r["word"] for r in records] == WORDS, "records in the task's order, not the chunks'"
    assert [r["text"] for r in records] == [w.upper() + "@two" for w in WORDS], "the adapter of the model is used"
    assert all(e["status"] == "ok" and e["counts"]["generated"] == len(WORDS) for e in entries)


def test_cached_items_are_not_generated_again_and_the_counts_say_so(tmp_path):
    models = [_model("base", "org/a"), _model("a/one", "org/a", "one")]
    cache_path = tmp_path / "cache.jsonl"
    run_models(WordTask(tmp_path), _config(tmp_path), models, Factory(), GenerationCache(cache_path))
    first = read_jsonl(tmp_path / "a" / "one" / "words.jsonl")

    again = Factory()
    entries = run_models(WordTask(tmp_path), _config(tmp_path), models, again, GenerationCache(cache_path))
    assert again.backends[0].requests == [], "a rerun sends nothing to the backend"
    assert [e["counts"] for e in entries] == [{"requests": 5, "cache_hits": 5, "generated": 0, "failed": 0}] * 2
    assert read_jsonl(tmp_path / "a" / "one" / "words.jsonl") == first
    assert read_json(tmp_path / "a" / "one" / "record.json")["counts"]["cache_hits"] == 5


def test_a_model_whose_every_item_failed_is_a_run_error_after_the_others_are_written(tmp_path):
    def reply(request):  # the adapter "broken" fails everything, the rest works
        if request.adapter is not None and request.adapter.name == "broken":
            return Generation("", error="adapter weights truncated")
        return request.messages[-1][1]

    models = [_model("base", "org/a"), _model("a/broken", "org/a", "broken")]
    task = WordTask(tmp_path, chunk_size=len(WORDS))  # one chunk: the stop after consecutive failed chunks stays out
    entries = run_models(task, _config(tmp_path), models, Factory(reply), GenerationCache(tmp_path / "c.jsonl"))

    assert [e["status"] for e in entries] == ["ok", "failed"]
    assert entries[1]["error"] == "adapter weights truncated"
    assert (tmp_path / "base" / "words.jsonl").is_file()
    assert read_json(tmp_path / "a" / "broken" / "record.json")["failed"] is True
    assert not (tmp_path / "a" / "broken" / "words.jsonl").exists()
    with pytest.raises(GenerationFailure, match=r"1 of 2 model\(s\) failed.*a/broken \(adapter weights truncated\)"):
        raise_if_failed(entries)
    raise_if_failed(entries[:1])  # a run whose models all worked is not an error


def test_consecutive_chunks_that_fail_entirely_stop_the_run_and_close_the_backend(tmp_path):
    factory = Factory(lambda r: Generation("", error="connection refused"))
    task = WordTask(tmp_path, chunk_size=1)
    with pytest.raises(GenerationFailure, match=f"{MAX_FAILED_CHUNKS} consecutive chunks failed.*connection refused"):
        run_models(task, _config(tmp_path), [_model("base", "org/a")], factory, GenerationCache(tmp_path / "c.jsonl"))
    assert len(factory.backends[0].requests) == MAX_FAILED_CHUNKS, "stopped without trying the remaining chunks"
    assert factory.closed == ["org/a"]
    assert not (tmp_path / "base").exists()


def test_the_record_is_written_after_every_other_file_and_not_at_all_when_one_fails(tmp_path):
    folder = tmp_path / "model"
    seen = []

    def metrics(path: Path) -> None:
        seen.append((path.name, (folder / "record.json").exists()))
        write_json(path, {"n": 1})

    write_json(folder / "stale.json", {})
    write_folder(folder, {"metrics.json": metrics}, {"status": "ok"}, remove=["stale.json"])
    assert seen == [("metrics.json", False)]
    record = read_json(folder / "record.json")
    assert record["status"] == "ok" and not (folder / "stale.json").exists()
    assert record["files"]["metrics.json"]["bytes"] == (folder / "metrics.json").stat().st_size  # it vouches for it

    other = tmp_path / "killed"

    def dies(path: Path) -> None:
        raise KeyboardInterrupt("killed while writing")

    with pytest.raises(KeyboardInterrupt):
        write_folder(other, {"generations.jsonl": dies}, {"status": "ok"})
    assert not (other / "record.json").exists(), "a folder without its record is an unfinished one"


def test_a_folder_step_sees_every_folders_items_in_one_batch_and_writes_each_record_last(tmp_path):
    for name in ("base", "run/checkpoint-1"):
        write_jsonl(tmp_path / name / "items.jsonl", [{"x": 1}, {"x": 2}] if name == "base" else [{"x": 2}])

    class Summing:
        part = None  # its own records among its files

        def __init__(self) -> None:
            self.batches: list[list[dict]] = []

        def load(self, folder):
            return read_jsonl(folder.path / "items.jsonl")

        def run_batch(self, items):
            self.batches.append(items)
            return len(items)

        def score(self, folder, items, batch):
            total = sum(i["x"] for i in items)
            assert not (folder.path / "sum.json").exists() and batch == 3
            return ({"doubled.json": lambda p: write_json(p, {"v": 2 * total}), "sum.json": Record({"sum": total})},
                    {}, {"name": folder.name, "sum": total})

    task = Summing()
    names = ("base", "run/checkpoint-1")
    summaries = run_folders(task, ResultsFolder(tmp_path, names), names)
    assert task.batches == [[{"x": 1}, {"x": 2}, {"x": 2}]]
    assert summaries == {"base": {"name": "base", "sum": 3}, "run/checkpoint-1": {"name": "run/checkpoint-1", "sum": 2}}
    assert read_json(tmp_path / "base" / "sum.json")["sum"] == 3
    assert check_part(tmp_path / "base", "sum.json").ok
    assert read_json(tmp_path / "run" / "checkpoint-1" / "doubled.json") == {"v": 4}
