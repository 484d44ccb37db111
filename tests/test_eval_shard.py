"""Sharded sweeps: concurrent writers on one generation cache, the split of the work, and merge == one process."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _eval_helpers import ScriptedBackend

from gnt.cli.evaluate import load_eval_config
from gnt.evaluation.cache import GenerationCache
from gnt.evaluation.config import Shard, parse_shard
from gnt.evaluation.results import load_summary
from gnt.evaluation.shard import ShardsIncomplete
from gnt.evaluation.sweep import run_sweep
from gnt.generation.base import Generation
from gnt.io import read_json, read_jsonl
from gnt.paths import PROJECT_ROOT, RECIPES_DIR, SAMPLE_DIR
from gnt.recipe import RecipeError

# 2 languages × 2 configurations × 2 shot counts, 2 rows per language: 16 requests per model, 2 chunks of 8.
GRID = [("steps", "grid"), ("langs", "it,de"), ("configs", "G+S,None"), ("shots", "0,2"), ("rows_per_lang", "2"),
        ("max_new_tokens", "16"), ("chunk_size", "8"), ("batch_size", "8"), ("bootstrap_samples", "200"),
        ("progress", "false")]
MODELS = ["base", "sft/checkpoint-1", "sft/checkpoint-2"]

# -- the cache under concurrent writers -------------------------------------------------------------------------

WRITERS, BATCHES, PER_BATCH = 2, 150, 8
BIG = "ü" * 6000  # 12 KB per record: one batch is several buffer-sized writes, which unlocked writers interleave


def _writer(path: str, writer: int, barrier) -> None:
    cache = GenerationCache(path)
    barrier.wait()  # both processes start appending at the same moment
    for batch in range(BATCHES):
        items = [(f"w{writer}-b{batch}-r{r}", Generation(f"{writer}/{batch}/{r} {BIG}", n_tokens=r))
                 for r in range(PER_BATCH)]
        cache.put_many(items, model_id=f"writer-{writer}")


def test_two_processes_appending_to_one_cache_lose_and_corrupt_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "generations.jsonl"
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(WRITERS)
    workers = [context.Process(target=_writer, args=(str(path), w, barrier)) for w in range(WRITERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
        assert worker.exitcode == 0
    lines = path.read_text(encoding="utf-8").splitlines()
    records = read_jsonl(path)  # strict: raises on any torn or interleaved line
    assert len(lines) == len(records) == WRITERS * BATCHES * PER_BATCH
    keys = [r["key"] for r in records]
    assert len(set(keys)) == len(keys), "no record written twice"
    cache = GenerationCache(path)
    for writer in range(WRITERS):
        for batch in range(BATCHES):
            for r in range(PER_BATCH):
                entry = cache.get(f"w{writer}-b{batch}-r{r}")
                assert entry is not None and entry.text == f"{writer}/{batch}/{r} {BIG}" and entry.n_tokens == r


def test_an_append_after_a_killed_writer_closes_its_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "generations.jsonl"
    GenerationCache(path).put_many([("a", Generation("first"))])
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"key": "torn", "te')  # a writer killed mid-line
    GenerationCache(path).put_many([("b", Generation("second"))])
    cache = GenerationCache(path)
    assert (cache.get("a").text, cache.get("b").text, cache.get("torn")) == ("first", "second", None)


# -- the split ----------------------------------------------------------------------------------------------------


def test_shard_values_are_checked() -> None:
    assert parse_shard("1/4") == Shard(1, 4) and parse_shard(None) is None and parse_shard("merge") == "merge"
    assert [Shard(1, 3).owns(k) for k in range(6)] == [False, True, False, False, True, False]
    for bad in ("4/4", "-1/2", "1/0", "1", "half"):
        with pytest.raises(RecipeError, match="shard must be i/n"):
            parse_shard(bad)
    with pytest.raises(RecipeError, match="shard must be i/n"):
        load_eval_config(RECIPES_DIR / "eval-tiny.yaml", [("steps", "grid"), ("shard", "2/2")])


def _scripted_config(out: Path, model: Path, shard: str | None):
    extra = [("steps", "grid"), ("langs", "it,de"), ("configs", "G+S,None"), ("shots", "0,4"), ("chunk_size", "5"),
             ("rows_per_lang", "6"), ("bootstrap_samples", "100"), ("progress", "false")]
    if shard is not None:
        extra.append(("shard", shard))
    return load_eval_config(RECIPES_DIR / "eval-tiny.yaml", extra, model=str(model), mgente=str(SAMPLE_DIR),
                            out_dir=str(out))


class _Recorder:
    """A backend factory whose backends answer deterministically and log every batch they receive."""

    def __init__(self) -> None:
        self.batches: list[tuple[str, ...]] = []

    def __call__(self, config, base_model, adapter_paths):
        recorder = self

        class Logged(ScriptedBackend):
            def generate(self, requests):
                recorder.batches.append(tuple(sorted(r.key(self.model_id) for r in requests)))
                return super().generate(requests)

        return Logged(lambda r: f"<{r.constraint.value[1:3]}> **NEUTRAL** [{len(r.messages[-1][1])}]")


def test_three_shards_send_exactly_the_single_process_batches_and_merge_to_its_results(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    single = _Recorder()
    run_sweep(_scripted_config(tmp_path / "single", tiny_model_dir, None), backend_factory=single)
    out = tmp_path / "sharded"
    workers = [_Recorder() for _ in range(3)]
    run_sweep(_scripted_config(out, tiny_model_dir, "2/3"), backend_factory=workers[2])
    run_sweep(_scripted_config(out, tiny_model_dir, "0/3"), backend_factory=workers[0])
    assert not (out / "summary.json").exists(), "workers only fill the cache until the last one has finished"
    with pytest.raises(ShardsIncomplete, match=r"rerun shard\(s\) 1/3"):
        run_sweep(_scripted_config(out, tiny_model_dir, "merge"), backend_factory=_Recorder())
    assert not (out / "base").exists(), "an incomplete merge writes nothing"
    run_sweep(_scripted_config(out, tiny_model_dir, "1/3"), backend_factory=workers[1])  # the last one merges

    assert all(w.batches for w in workers), "every worker got a share"
    assert sorted(b for w in workers for b in w.batches) == sorted(single.batches)
    single_folder, merged_folder = tmp_path / "single" / "base", out / "base"
    assert read_json(merged_folder / "metrics.json") == read_json(single_folder / "metrics.json")
    assert read_jsonl(merged_folder / "generations.jsonl") == read_jsonl(single_folder / "generations.jsonl")
    record = read_json(merged_folder / "record.json")
    assert record["counts"]["generated"] == 0 and set(record["sharded"]["by_shard"]) == {"0/3", "1/3", "2/3"}
    assert sum(c["generated"] for c in record["sharded"]["by_shard"].values()) == record["counts"]["requests"]
    # an explicit merge afterwards changes nothing and generates nothing
    again = _Recorder()
    run_sweep(_scripted_config(out, tiny_model_dir, "merge"), backend_factory=again)
    assert again.batches == [] and read_json(merged_folder / "metrics.json") == read_json(single_folder / "metrics.json")


# -- two real worker processes on the tiny model -----------------------------------------------------------------


@pytest.mark.slow
def test_two_worker_processes_merge_to_the_single_process_sweep(eval_tiny_run: Path, tmp_path: Path) -> None:
    single = tmp_path / "single"
    run_sweep(load_eval_config(RECIPES_DIR / "eval-tiny.yaml", GRID, runs=[str(eval_tiny_run)], out_dir=str(single)))
    out = tmp_path / "sharded"
    command = [sys.executable, str(PROJECT_ROOT / "eval" / "evaluate.py"), str(RECIPES_DIR / "eval-tiny.yaml"),
               "--run", str(eval_tiny_run), "--out", str(out), "--quiet", *(f"{k}={v}" for k, v in GRID)]
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    workers = [subprocess.Popen([*command, f"shard={i}/2"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True) for i in range(2)]
    logs = [w.communicate(timeout=600)[0] for w in workers]
    assert [w.returncode for w in workers] == [0, 0], logs

    assert [m["name"] for m in load_summary(out)["models"]] == MODELS
    for name in MODELS:
        for file in ("metrics.json",):
            assert read_json(out / name / file) == read_json(single / name / file), name
        assert read_jsonl(out / name / "generations.jsonl") == read_jsonl(single / name / "generations.jsonl")
    cache = read_jsonl(out / "cache" / "generations.jsonl")
    keys = [r["key"] for r in cache]
    assert len(keys) == len(set(keys)) == 3 * 16, "every generation exactly once: none twice, none missing"
    shards = [read_json(out / "shards" / f"{i}-of-2.json") for i in range(2)]
    generated = [sum(c["generated"] for c in s["models"].values()) for s in shards]
    assert all(generated) and sum(generated) == 48, generated


def test_the_slurm_array_script_gives_each_task_its_shard(tmp_path: Path) -> None:
    script = PROJECT_ROOT / "scripts" / "slurm" / "eval.sbatch"

    def launch(**slurm: int) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHON": "echo", "SLURM_SUBMIT_DIR": str(tmp_path),
               **{f"SLURM_ARRAY_TASK_{k.upper()}": str(v) for k, v in slurm.items()}}
        for k in ("ID", "MIN", "MAX", "COUNT"):
            if k.lower() not in slurm:
                env.pop(f"SLURM_ARRAY_TASK_{k}", None)
        return subprocess.run(["bash", str(script), "recipes/eval.yaml", "runs=runs/sft", "backend=vllm"],
                              env=env, capture_output=True, text=True)

    worker = launch(id=5, min=4, max=6, count=3)
    assert worker.returncode == 0 and worker.stdout.splitlines()[-1] == (
        "eval/evaluate.py recipes/eval.yaml progress=false runs=runs/sft backend=vllm shard=1/3")
    assert launch().stdout.splitlines()[-1].endswith("backend=vllm shard=merge"), "no array: the merge"
    gappy = launch(id=2, min=0, max=5, count=3)
    assert gappy.returncode == 2 and "contiguous" in gappy.stderr
