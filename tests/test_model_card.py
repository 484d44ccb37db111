"""Model cards: every adapter folder a run writes gets a Hugging Face README.md (gnt/model_card.py), and an
evaluation adds that checkpoint's GNT metrics as model-index results. Parsed with huggingface_hub itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _training_helpers import RECIPES, tiny_overrides
from huggingface_hub import ModelCard, metadata_load

from gnt.model_card import TAG, render, write_run_cards

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def evaluated_run(tmp_path_factory, tiny_model_dir: Path, training_data_dir: Path) -> tuple[Path, Path]:
    """A tiny SFT run (checkpoints 1 and 2) trained by train/sft.py, then evaluated with a grid and a report."""
    from gnt.cli.evaluate import main as evaluate
    from gnt.cli.train import SFT

    root = tmp_path_factory.mktemp("cards")
    run = root / "runs" / "tiny-sft"
    assert SFT.main([str(RECIPES / "tiny.yaml"), *tiny_overrides(tiny_model_dir, training_data_dir, run,
                                                                 "max_steps=2", "save_steps=1",
                                                                 "report_to=none")]) == 0
    results = root / "eval"
    assert evaluate([str(RECIPES / "eval-tiny.yaml"), f"runs={run}", f"out_dir={results}", "langs=it",
                     "configs=None", "rows_per_lang=4", "steps=grid,report", "report.wandb=false",
                     "progress=false"]) == 0
    return run, results


def test_every_adapter_folder_of_a_run_has_a_hub_model_card(evaluated_run) -> None:
    run, _ = evaluated_run
    for folder in (run, run / "checkpoint-1", run / "checkpoint-2"):
        card = ModelCard.load(folder / "README.md")
        assert card.data.library_name == "peft" and TAG in card.data.tags and "sft" in card.data.tags
        record = json.loads((folder / "gnt_run.json").read_text())
        assert record["data_manifest_sha256"] in card.text  # the data build it was trained on
        assert "recipes/tiny.yaml" in card.text and "AutoPeftModelForCausalLM" in card.text
        assert f"optimizer step {record['global_step']}" in card.text
        assert "This model is a fine-tuned version of" not in card.text  # TRL's generic card is gone
        assert "bundled with gnt-align" in card.text and card.data.datasets is None  # the sample is not mGeNTE


def test_an_evaluated_checkpoint_card_holds_its_metrics_as_model_index_results(evaluated_run) -> None:
    run, results = evaluated_run
    metrics = json.loads((results / "tiny-sft" / "checkpoint-2" / "metrics.json").read_text())
    for folder in (run / "checkpoint-2", run):  # the run ended at step 2: its final adapter is checkpoint-2's
        index = metadata_load(folder / "README.md")["model-index"]
        assert index[0]["name"] in ("tiny-sft/checkpoint-2", "tiny-sft")
        by_type = {r.metric_type: r for r in ModelCard.load(folder / "README.md").data.eval_results}
        expected = round(metrics["overall"]["label_balanced_accuracy"]["value"], 4)
        assert by_type["label_balanced_accuracy"].metric_value == expected
        assert by_type["label_balanced_accuracy"].dataset_split == "test"
        assert by_type["extraction_error_rate"].metric_value == round(metrics["overall"]["extraction_errors"]["rate"]["value"], 4)
        assert by_type["label_balanced_accuracy"].metric_config == "langs=it configs=None shots=4"
        assert "gnt_accuracy_set_n" not in by_type  # no judge step ran: no GNT accuracy is claimed
    checkpoint_1 = ModelCard.load(run / "checkpoint-1" / "README.md").data.eval_results
    assert checkpoint_1 and all(r.metric_args["results"] == "eval/tiny-sft/checkpoint-1" for r in checkpoint_1)
    ci = metrics["overall"]["label_balanced_accuracy"]["ci"]
    assert by_type["label_balanced_accuracy"].metric_args["ci95"] == [round(x, 4) for x in ci]


def test_rewriting_the_cards_at_the_end_of_a_resumed_run_keeps_the_results(evaluated_run) -> None:
    run, _ = evaluated_run
    before = ModelCard.load(run / "checkpoint-2" / "README.md").data.eval_results
    write_run_cards(run)
    after = ModelCard.load(run / "checkpoint-2" / "README.md").data.eval_results
    assert [(r.metric_type, r.metric_value) for r in after] == [(r.metric_type, r.metric_value) for r in before]


def test_an_evaluation_never_overwrites_a_card_it_did_not_write(evaluated_run, tmp_path: Path) -> None:
    from gnt.model_card import record_evaluation_in_cards

    run, results = evaluated_run
    own = run / "checkpoint-1" / "README.md"
    saved = own.read_text()
    try:
        own.write_text("---\nlicense: mit\n---\n# my own card\n")
        record_evaluation_in_cards(results)
        assert own.read_text() == "---\nlicense: mit\n---\n# my own card\n"
    finally:
        own.write_text(saved)


def test_a_hub_base_model_is_named_with_its_licence_and_a_dpo_adapter_with_its_sft_adapter(tmp_path: Path) -> None:
    sft = tmp_path / "qwen-sft"
    sft.mkdir()
    (sft / "gnt_run.json").write_text(json.dumps({"base_model_spec": "Qwen/Qwen2.5-7B-Instruct"}))
    record = {"stage": "dpo", "base_model": "Qwen/Qwen2.5-7B-Instruct", "base_model_spec": "Qwen/Qwen2.5-7B-Instruct",
              "sft_adapter": str(sft), "global_step": 25, "recipe_path": "recipes/qwen-dpo.yaml",
              "recipe": {"beta": 0.1, "pair_kinds": ["label_decision"]}, "data_manifest_sha256": "ab" * 32,
              "data_dir": str(tmp_path / "missing"), "model_config": {"load_in_4bit": True}}
    card = ModelCard(str(render(record, "qwen-dpo/checkpoint-25")))
    assert card.data.base_model == "Qwen/Qwen2.5-7B-Instruct" and card.data.license == "apache-2.0"
    assert {"dpo", "qlora", TAG} <= set(card.data.tags)
    assert str(sft) in card.text and "`beta: 0.1`" in card.text
    gemma = ModelCard(str(render({**record, "base_model_spec": "gnt:gemma", "sft_adapter": None}, "g")))
    assert gemma.data.base_model == "google/gemma-3-270m" and gemma.data.license == "gemma"
    local = ModelCard(str(render({**record, "base_model_spec": str(tmp_path), "sft_adapter": None}, "l")))
    assert local.data.base_model is None and local.data.license is None  # a folder is no hub id; no licence guessed
