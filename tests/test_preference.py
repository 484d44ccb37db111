"""Preference accuracy on held-out DPO pairs: exact log-probabilities, per-kind metrics in the sweep, cached reruns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _eval_helpers import ScriptedBackend

from gnt.bootstrap import BootstrapSettings
from gnt.cli.evaluate import load_eval_config
from gnt.evaluation.preference import PREFERENCE, SCORE_CACHE, pairs_path, preference_metrics, select_pairs
from gnt.evaluation.sweep import run_sweep
from gnt.generation.base import Adapter
from gnt.generation.scoring import ScoreRequest, ScoringUnsupported, score_completions
from gnt.io import read_json, read_jsonl
from gnt.paths import RECIPES_DIR

GRID = [("steps", "grid"), ("langs", "it,es"), ("configs", "None"), ("shots", "0"), ("rows_per_lang", "2"), ("max_new_tokens", "8"),
        ("bootstrap_samples", "100"), ("progress", "false"), ("preference", "true")]


def _manual_logprob(model_dir: Path, request: ScoreRequest) -> tuple[float, int]:
    """Sum of the completion's token log-probabilities from one unpadded forward pass of the whole conversation."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    turns = [{"role": r, "content": c} for r, c in request.prompt]
    prompt = tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
    full = tokenizer.apply_chat_template([*turns, {"role": "assistant", "content": request.completion}], tokenize=False)
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    completion_ids = tokenizer(full[len(prompt):].rstrip("\n"), add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt_ids + completion_ids])
    with torch.no_grad():
        logprobs = torch.log_softmax(model(ids).logits[0, :-1].float(), -1)
    picked = [logprobs[len(prompt_ids) - 1 + i, t].item() for i, t in enumerate(completion_ids)]
    return sum(picked), len(completion_ids)


def test_batched_scores_equal_one_unpadded_forward_per_request(tiny_model_dir: Path) -> None:
    from gnt.generation.transformers_backend import TransformersBackend

    prompt = (("system", "You translate."), ("user", "<en> Hello"))
    long_prompt = (("user", "<en> " + "The citizens of Europe expect a great deal from this Parliament. " * 3),)
    requests = [
        ScoreRequest(prompt, "<it> **NEUTRAL** [Ciao]"),
        ScoreRequest(long_prompt, "<it> **GENDERED** [I cittadini europei si aspettano molto.]"),
        ScoreRequest(prompt, "<it> **GENDERED** [Ciao a tutti i presenti in Aula]"),
    ]
    backend = TransformersBackend(str(tiny_model_dir), device="cpu")
    scores = score_completions(backend, requests, batch_size=3)  # one padded batch of unequal lengths
    for request, score in zip(requests, scores, strict=True):
        expected, n_tokens = _manual_logprob(tiny_model_dir, request)
        assert score.error is None
        assert score.n_tokens == n_tokens > 3
        assert score.logprob == pytest.approx(expected, abs=1e-3)
        assert score.mean == pytest.approx(expected / n_tokens, abs=1e-4)


def test_an_adapter_changes_the_scores(tiny_model_dir: Path, eval_tiny_run: Path) -> None:
    from gnt.generation.transformers_backend import TransformersBackend

    adapter_dir = eval_tiny_run / "checkpoint-1"
    adapter = Adapter("sft/checkpoint-1", str(adapter_dir), "hash-1")
    request = ScoreRequest((("user", "<en> Hello"),), "<it> **NEUTRAL** [Ciao]")
    backend = TransformersBackend(str(tiny_model_dir), device="cpu")
    base, tuned, base_again = score_completions(
        backend, [request, ScoreRequest(request.prompt, request.completion, adapter), request]
    )
    assert tuned.logprob != pytest.approx(base.logprob, abs=1e-3)
    assert base_again.logprob == pytest.approx(base.logprob, abs=1e-5), "the base must run with adapters disabled"


def test_other_backends_say_they_cannot_score() -> None:
    with pytest.raises(ScoringUnsupported, match="transformers backend"):
        score_completions(ScriptedBackend(lambda r: "x"), [ScoreRequest((("user", "hi"),), "x")])


def test_metrics_count_wins_per_kind_and_language_with_intervals() -> None:
    records = [
        {"id": f"r{i}", "lang": "it" if i < 6 else "es", "kind": "a" if i % 2 else "b", "won": i < 4,
         "margin": 0.5 if i < 4 else -0.5, "error": None}
        for i in range(10)
    ] + [{"id": "r10", "lang": "es", "kind": "a", "won": None, "margin": None, "error": "boom"}]
    block = preference_metrics(records, BootstrapSettings(200, 0, 0.05))
    assert block["all"]["value"] == pytest.approx(4 / 11)  # an error counts as a pair lost
    assert block["all"]["n"] == 11 and block["n_errors"] == 1
    assert block["by_kind"]["b"]["value"] == pytest.approx(2 / 5)  # r0, r2 won of r0 r2 r4 r6 r8
    assert block["by_lang"]["it"]["value"] == pytest.approx(4 / 6)
    lo, hi = block["all"]["ci"]
    assert lo <= block["all"]["value"] <= hi and hi > lo


@pytest.fixture(scope="module")
def preference_sweep(tmp_path_factory, eval_tiny_run: Path) -> Path:
    out = tmp_path_factory.mktemp("pref") / "eval"
    run_sweep(load_eval_config(RECIPES_DIR / "eval-tiny.yaml", GRID, runs=[str(eval_tiny_run)], out_dir=str(out)))
    return out


def test_the_sweep_scores_every_held_out_pair_for_every_model(preference_sweep: Path, eval_data_dir: Path) -> None:
    pairs = select_pairs(read_jsonl(pairs_path(eval_data_dir, "test")), ["it", "es"])
    assert pairs, "the data build writes held-out preference pairs"
    kinds = {p["kind"] for p in pairs}
    margins = {}
    for name in ("base", "sft/checkpoint-1", "sft/checkpoint-2"):
        records = list(read_jsonl(preference_sweep / name / PREFERENCE))
        assert len(records) == len(pairs)
        assert all(r["won"] == (r["chosen"] > r["rejected"]) for r in records)
        block = read_json(preference_sweep / name / "metrics.json")["preference_accuracy"]
        assert set(block["by_kind"]) == kinds and block["all"]["n"] == len(pairs)
        assert block["split"] == "test"
        margins[name] = [r["margin"] for r in records]
    assert margins["base"] != margins["sft/checkpoint-1"], "each checkpoint is scored with its own adapter"
    summary = read_json(preference_sweep / "summary.json")
    assert all(m["headline"]["preference_accuracy"] is not None for m in summary["models"])


def test_a_rerun_scores_nothing_again(preference_sweep: Path, eval_tiny_run: Path) -> None:
    cache = preference_sweep / SCORE_CACHE
    lines = cache.read_text(encoding="utf-8").count("\n")
    before = read_json(preference_sweep / "base" / "metrics.json")["preference_accuracy"]
    run_sweep(load_eval_config(RECIPES_DIR / "eval-tiny.yaml", GRID, runs=[str(eval_tiny_run)],
                               out_dir=str(preference_sweep)))
    assert cache.read_text(encoding="utf-8").count("\n") == lines
    assert read_json(preference_sweep / "base" / "metrics.json")["preference_accuracy"] == before


def test_a_build_without_pairs_warns_instead_of_failing(eval_tiny_run: Path, tmp_path: Path, caplog) -> None:
    run = tmp_path / "sft"
    data = tmp_path / "data"
    record = json.loads((eval_tiny_run / "gnt_run.json").read_text())
    import shutil

    shutil.copytree(Path(record["data_dir"]), data)
    (data / "dpo" / "test.jsonl").unlink()
    shutil.copytree(eval_tiny_run, run)
    for path in run.rglob("gnt_run.json"):
        path.write_text(json.dumps({**json.loads(path.read_text()), "data_dir": str(data)}))
    out = tmp_path / "eval"
    with caplog.at_level("WARNING"):
        run_sweep(load_eval_config(RECIPES_DIR / "eval-tiny.yaml", GRID, runs=[str(run)], out_dir=str(out)))
    assert "no dpo/test.jsonl pairs" in caplog.text
    assert read_json(out / "base" / "metrics.json").get("preference_accuracy") is None


def test_a_pair_budget_takes_each_kind_from_both_sets_in_turn(eval_data_dir: Path) -> None:
    everything = select_pairs(read_jsonl(pairs_path(eval_data_dir, "test")), ["it", "es"])
    two = select_pairs(read_jsonl(pairs_path(eval_data_dir, "test")), ["it", "es"], per_kind=2)
    groups = {(p["lang"], p["kind"]) for p in everything}
    assert len(two) == sum(min(2, sum((p["lang"], p["kind"]) == g for p in everything)) for g in groups)
    assert two == select_pairs(read_jsonl(pairs_path(eval_data_dir, "test")), ["it", "es"], per_kind=2), "a fixed subset"
    assert any(p["kind"] == "label_decision" and p["set"] == "Set-N" for p in two)
    assert any(p["kind"] == "label_decision" and p["set"] == "Set-G" for p in two)
    for group in groups:
        sets_in_kind = {p["set"] for p in everything if (p["lang"], p["kind"]) == group}
        chosen = [p for p in two if (p["lang"], p["kind"]) == group]
        if len(sets_in_kind) == 2:
            assert {p["set"] for p in chosen} == sets_in_kind, f"{group}: a small budget still covers both sets"
        for name in sets_in_kind:  # within a set, the first pairs in file order
            in_file = [p for p in everything if (p["lang"], p["kind"], p["set"]) == (*group, name)]
            picked = [p for p in chosen if p["set"] == name]
            assert in_file[: len(picked)] == picked


def test_scores_with_a_shared_prompt_prefix_equal_those_without(tiny_model_dir: Path, eval_tiny_run: Path) -> None:
    """Rows of one grid cell share a long prefix: scoring reuses its cache per adapter, with the same numbers."""
    from gnt.generation.transformers_backend import TransformersBackend
    from gnt.prompts.grid import Cell, PromptGrid

    grid = PromptGrid(["it"])
    sources = ["The citizens expect answers.", "I am tired of waiting, I said.", "She thanked the rapporteur."]
    adapter = Adapter("sft/checkpoint-1", str(eval_tiny_run / "checkpoint-1"), "hash-1")
    requests = [
        ScoreRequest(tuple((m["role"], m["content"]) for m in grid.render(src, Cell("it", "G+S", 2)).messages),
                     f"<it> **NEUTRAL** [{src}]", chosen_adapter)
        for src in sources for chosen_adapter in (None, adapter)
    ]
    reused = TransformersBackend(str(tiny_model_dir), device="cpu", prefix_reuse=True)
    plain = TransformersBackend(str(tiny_model_dir), device="cpu", prefix_reuse=False)
    with_prefix = score_completions(reused, requests, batch_size=2)
    without = score_completions(plain, requests, batch_size=2)
    assert reused.stats.prefix_builds == 2, "one prefix per adapter (base and checkpoint)"
    for a, b in zip(with_prefix, without, strict=True):
        assert a.error is None and a.n_tokens == b.n_tokens
        assert a.logprob == pytest.approx(b.logprob, abs=1e-3)
