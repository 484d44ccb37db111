"""Training on the tiny model, in this process: data and setup errors, template checks, packing isolation, W&B
mode, completion-only targets, QLoRA on CPU and merging. Multi-process launches are in test_training_launch.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from _training_helpers import RECIPES, tiny_overrides

from gnt.cli.train import DPO, SFT
from gnt.data.errors import DataError, DataErrors
from gnt.output_format import label_of
from gnt.training.config import TrainingError
from gnt.training.data import fit_rows, fits, load_training_data, read_rows, select_rows
from gnt.training.resume import last_complete_checkpoint, resume_checkpoint
from gnt.training.template_checks import VocabularyGuard, check_target_eos

TINY = str(RECIPES / "tiny.yaml")
TINY_DPO = str(RECIPES / "tiny-dpo.yaml")


def main(stage: str, argv: list[str]) -> int:
    return (SFT if stage == "sft" else DPO).main(argv)


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.fixture(scope="module")
def sft_row(training_data_dir: Path) -> dict:
    return read_rows(training_data_dir / "sft" / "train.jsonl", "sft")[0]


# ------------------------------------------------------------------------------------------------ documented errors


def test_missing_data_directory_is_one_clear_line(tmp_path: Path, tiny_model_dir: Path, capsys) -> None:
    code = main("sft", [TINY, *tiny_overrides(tiny_model_dir, tmp_path / "nowhere", tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert f"error: data_dir: {tmp_path / 'nowhere'} does not exist. Build it with `python data/build.py out_dir=" in err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()  # refused before the run takes (creates) its output folder


def test_dataset_in_the_wrong_format_names_the_missing_field(tmp_path: Path, training_data_dir: Path,
                                                            tiny_model_dir: Path, capsys) -> None:
    import shutil

    data = tmp_path / "data"
    shutil.copytree(training_data_dir, data)
    rows = (data / "sft" / "train.jsonl").read_text().splitlines()
    broken = json.loads(rows[2])
    broken["answer"] = broken.pop("completion")
    rows[2] = json.dumps(broken)
    (data / "sft" / "train.jsonl").write_text("\n".join(rows) + "\n")
    assert main("sft", [TINY, *tiny_overrides(tiny_model_dir, data, tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{data / 'sft' / 'train.jsonl'}:3:completion: missing field 'completion'" in err
    assert "SFT rows need prompt, completion" in err


def test_rows_are_validated_message_by_message(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(
        '{"prompt": [{"role": "user", "content": "hi"}], "chosen": [{"role": "assistant"}], "rejected": []}\n'
        "{not json\n"
        '{"prompt": "plain text", "chosen": [], "rejected": []}\n'
    )
    with pytest.raises(DataErrors) as caught:
        read_rows(path, "dpo")
    messages = [str(e) for e in caught.value.errors]
    assert messages[0].endswith("field 'chosen' message 0 has no string 'content'")
    assert ":2: not valid JSON" in messages[1]
    assert "field 'prompt' must be a non-empty list" in messages[2]


def test_dpo_recipe_pointing_to_a_missing_sft_adapter(tmp_path: Path, training_data_dir: Path, capsys) -> None:
    argv = [TINY_DPO, f"sft_adapter={tmp_path / 'no-sft'}", f"data_dir={training_data_dir}",
            f"output_dir={tmp_path / 'dpo'}"]
    assert main("dpo", argv) == 2
    err = capsys.readouterr().err
    assert f"sft_adapter: {tmp_path / 'no-sft'} does not exist" in err and "Run the SFT stage first" in err
    (tmp_path / "unfinished" / "checkpoint-2").mkdir(parents=True)
    (tmp_path / "unfinished" / "checkpoint-2" / "adapter_config.json").write_text("{}")
    assert main("dpo", [*argv[:1], f"sft_adapter={tmp_path / 'unfinished'}", *argv[2:]]) == 2
    err = capsys.readouterr().err
    assert "the SFT run has not finished" in err and "checkpoint-2" in err


def test_qlora_on_a_machine_without_4bit_kernels_suggests_lora(monkeypatch) -> None:
    import bitsandbytes.functional as bnbf
    from trl import ModelConfig

    from gnt.training.base_model import check_quantization_available

    def broken(*args, **kwargs):
        raise RuntimeError("no kernel image is available for execution on the device")

    monkeypatch.setattr(bnbf, "quantize_4bit", broken)
    with pytest.raises(TrainingError, match=r"QLoRA \(4-bit base model\).*do not run on this machine.*"
                                             r"no kernel image.*Train with LoRA instead"):
        check_quantization_available(ModelConfig(load_in_4bit=True), "cpu")
    check_quantization_available(ModelConfig(), "cpu")  # LoRA: nothing to check


def test_4bit_kernels_run_here() -> None:
    from trl import ModelConfig

    from gnt.training.base_model import check_quantization_available

    check_quantization_available(ModelConfig(load_in_4bit=True, use_bnb_nested_quant=True), "cpu")


# ------------------------------------------------------------------------------------------------ template checks


def test_targets_end_with_the_templates_end_of_turn(tokenizer, sft_row: dict) -> None:
    assert check_target_eos(tokenizer, sft_row, None) == "<|im_end|>"


def test_a_template_that_drops_the_end_of_turn_is_refused(tokenizer, sft_row: dict) -> None:
    import copy

    broken = copy.deepcopy(tokenizer)
    broken.chat_template = tokenizer.chat_template.replace("'<|im_end|>' + '\\n'", "'\\n'")
    assert broken.chat_template != tokenizer.chat_template
    with pytest.raises(TrainingError, match="never stops.*Set `eos_token:`"):
        check_target_eos(broken, sft_row, None)


def test_vocabulary_growth_and_resizing_are_refused(tokenizer, tiny_model_dir: Path) -> None:
    import copy

    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    guard = VocabularyGuard(tokenizer, model.config)
    guard.check(tokenizer, model)
    grown = copy.deepcopy(tokenizer)
    grown.add_tokens(["<new_token>"])
    model.resize_token_embeddings(len(grown))
    with pytest.raises(TrainingError, match="grew from 2048 to 2049 tokens.*resized from 2048 to 2049.*vLLM"):
        guard.check(grown, model)


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_packed_rows_do_not_attend_to_each_other(tiny_model_dir: Path, attention: str) -> None:
    """TRL's padding-free collator + the model: each packed row's loss equals its loss alone."""
    from transformers import AutoModelForCausalLM
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, attn_implementation=attention).eval()
    lengths = [9, 6, 11]
    rows = [list(range(5 + 7 * i, 5 + 7 * i + n)) for i, n in enumerate(lengths)]
    packed_row = {"input_ids": [t for row in rows for t in row], "seq_lengths": lengths}  # as BFD packing stores it
    batch = DataCollatorForLanguageModeling(pad_token_id=0, padding_free=True)([packed_row])
    assert batch["input_ids"].shape == (1, sum(lengths)) and "attention_mask" not in batch
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    with torch.no_grad():
        logits = model(**inputs, use_cache=False).logits  # what SFTTrainer.compute_loss runs
        start = 0
        for row in rows:
            alone = model(input_ids=torch.tensor([row]), use_cache=False).logits
            torch.testing.assert_close(logits[:, start:start + len(row)], alone, atol=1e-5, rtol=1e-4)
            start += len(row)


def test_attention_plan_packs_only_where_rows_stay_apart(monkeypatch) -> None:
    from types import SimpleNamespace

    from gnt.training import attention

    def plan(attn: str | None, packing: bool) -> tuple[str | None, bool, list[str]]:
        model, args = SimpleNamespace(attn_implementation=attn), SimpleNamespace(packing=packing)
        notes = attention.plan_attention(model, args)
        return model.attn_implementation, args.packing, notes

    monkeypatch.setattr(attention, "kernel_installed", lambda name: False)
    attn, packing, notes = plan("flash_attention_2", True)
    assert (attn, packing) == ("sdpa", False) and "flash_attn is not installed" in notes[0]
    monkeypatch.setattr(attention, "kernel_installed", lambda name: True)
    assert plan("flash_attention_2", True) == ("flash_attention_2", True, [])
    attn, packing, notes = plan("sdpa", True)
    assert packing and "square of the packed batch" in notes[0]
    assert plan("my_remote_kernel", True)[1] is False
    assert plan("eager", False) == ("eager", False, [])


# ------------------------------------------------------------------------------------------------ data handling


def test_system_turn_is_merged_for_templates_without_a_system_role(sft_row: dict) -> None:
    (merged,) = fit_rows([sft_row], system_role=False)
    if sft_row["prompt"][0]["role"] == "system":
        assert merged["prompt"][0]["role"] == "user"
        assert merged["prompt"][0]["content"].startswith(sft_row["prompt"][0]["content"])
    assert all(m["role"] != "system" for m in merged["prompt"])
    assert fit_rows([sft_row], system_role=True)[0] is sft_row


def test_rows_longer_than_max_length_are_dropped_not_truncated(tokenizer, training_data_dir: Path) -> None:
    rows = read_rows(training_data_dir / "dpo" / "train.jsonl", "dpo")
    kept, dropped = select_rows(rows, "dpo", tokenizer, 512, None, 0)
    assert dropped > 0 and len(kept) + dropped == len(rows)
    assert all(fits(row, "dpo", tokenizer, 512) for row in kept)
    sample, _ = select_rows(rows, "dpo", tokenizer, 512, 10, 0)
    assert len(sample) == 10 and sample == [row for row in kept if row in sample]  # a sample, in file order
    assert sample != kept[:10] and select_rows(rows, "dpo", tokenizer, 512, 10, 0)[0] == sample  # seeded
    data = load_training_data(training_data_dir, "sft", tokenizer=tokenizer, system_role=True, max_length=512,
                              max_train_samples=10, seed=1)
    assert len(data.train) == 10 and data.counts["train"]["dropped_too_long"] > 0
    assert len(data.manifest_sha256) == 64
    manifest = json.loads((training_data_dir / "manifest.json").read_text())
    assert data.source_keys == sorted(set(manifest["source_keys"]["train"]) | set(manifest["source_keys"]["dev"]))
    assert set(data.entry_ids) == set(manifest["ids"]["train"]) | set(manifest["ids"]["dev"])
    with pytest.raises(TrainingError, match="longer than max_length=8"):
        load_training_data(training_data_dir, "sft", tokenizer=tokenizer, system_role=True, max_length=8)


def test_pair_kinds_keep_only_those_preference_pairs(tokenizer, training_data_dir: Path, tmp_path: Path) -> None:
    path = training_data_dir / "dpo" / "train.jsonl"
    kinds = [json.loads(line)["kind"] for line in path.read_text().splitlines()]
    assert "label_decision" in kinds and len(set(kinds)) > 1
    decision = read_rows(path, "dpo", ["label_decision"])
    assert len(decision) == kinds.count("label_decision")
    assert all(set(row) <= {"prompt", "chosen", "rejected", "cell", "source_key"} for row in decision)
    # a label_decision pair differs in its label line alone: the translation after it is the same
    assert all(row["chosen"][0]["content"].split("[", 1)[1] == row["rejected"][0]["content"].split("[", 1)[1]
               and label_of(row["chosen"][0]["content"]) != label_of(row["rejected"][0]["content"])
               for row in decision)
    data = load_training_data(training_data_dir, "dpo", tokenizer=tokenizer, system_role=True, max_length=None,
                              pair_kinds=["label_decision", "label_coherence"])
    assert data.counts["train"]["file_rows"] == kinds.count("label_decision") + kinds.count("label_coherence")
    other = tmp_path / "coherence.jsonl"
    other.write_text("".join(line + "\n" for line in path.read_text().splitlines()
                             if json.loads(line)["kind"] == "label_coherence"))
    with pytest.raises(DataError, match="no rows of the kinds label_decision"):
        read_rows(other, "dpo", ["label_decision"])


def test_resume_skips_incomplete_checkpoints(tmp_path: Path) -> None:
    for step, complete in ((2, True), (4, True), (6, False)):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        (folder / "trainer_state.json").write_text("{}")
        if complete:
            (folder / "gnt_run.json").write_text("{}")
    assert last_complete_checkpoint(tmp_path) == tmp_path / "checkpoint-4"
    assert resume_checkpoint(None, tmp_path) == tmp_path / "checkpoint-4"
    assert resume_checkpoint("false", tmp_path) is None
    assert resume_checkpoint(str(tmp_path / "checkpoint-2"), tmp_path) == tmp_path / "checkpoint-2"
    with pytest.raises(TrainingError, match="not a checkpoint folder"):
        resume_checkpoint(str(tmp_path / "checkpoint-9"), tmp_path)


# ------------------------------------------------------------------------------------------------ W&B mode


def test_wandb_goes_offline_without_a_key_and_online_with_one(tmp_path: Path, monkeypatch) -> None:
    from gnt.training.wandb_setup import choose_mode

    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    assert choose_mode() == ("offline", "no API key found (WANDB_API_KEY or ~/.netrc)")
    (tmp_path / ".netrc").write_text("machine api.wandb.ai\n  login user\n  password secret-key-123\n")
    (tmp_path / ".netrc").chmod(0o600)
    assert choose_mode()[0] == "online"
    (tmp_path / ".netrc").unlink()
    monkeypatch.setenv("WANDB_API_KEY", "k" * 40)
    mode, reason = choose_mode()
    assert mode == "online" and "k" * 8 not in reason
    monkeypatch.setenv("WANDB_MODE", "disabled")
    assert choose_mode()[0] == "disabled"


# ------------------------------------------------------------------------------------------------ runs in-process


def test_sft_trains_on_the_completion_and_its_end_of_turn_only(tmp_path: Path, tiny_model_dir: Path,
                                                               training_data_dir: Path, tokenizer) -> None:
    """The trainer's own rows (packed, padding-free): only completion tokens carry labels, and each ends with EOS."""
    from gnt.training.runner import end_run
    from gnt.training.sft import prepare_sft

    run = prepare_sft(SFT.call([TINY, *tiny_overrides(tiny_model_dir, training_data_dir, tmp_path / "sft",
                                                      "report_to=none", "packing=true")]).recipe)
    try:
        dataset = run.trainer.train_dataset
        assert run.trainer.padding_free and "seq_lengths" in dataset.column_names
        completions = {row["completion"][0]["content"] for row in run.data.train}
        for example in dataset.select(range(3)):
            start = 0
            for length in example["seq_lengths"]:
                labels = example["labels"][start:start + length]
                trained = tokenizer.decode([t for t in labels if t != -100])
                assert trained.endswith("<|im_end|>\n")
                assert trained.removesuffix("<|im_end|>\n") in completions
                start += length
        assert not (tmp_path / "sft" / "checkpoint-1").exists()
    finally:
        end_run(run)


@pytest.mark.slow
def test_qlora_4bit_on_cpu_then_merge_into_the_unquantized_base(tmp_path: Path, tiny_model_dir: Path,
                                                                training_data_dir: Path) -> None:
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from gnt.training.runner import end_run, train_run
    from gnt.training.sft import prepare_sft

    out = tmp_path / "qlora"
    run = prepare_sft(SFT.call([TINY, *tiny_overrides(
        tiny_model_dir, training_data_dir, out, "load_in_4bit=true", "use_bnb_nested_quant=true",
        "max_steps=2", "save_steps=2", "report_to=none", "merge_adapter=true", "merge_dtype=float32",
        f"eval_queue_dir={tmp_path / 'queue'}",
    )]).recipe)
    try:
        layer = run.trainer.model.get_base_model().model.layers[0].self_attn.q_proj.base_layer
        assert type(layer).__name__ == "Linear4bit"
        train_run(run)
    finally:
        end_run(run)
    record = json.loads((out / "gnt_run.json").read_text())
    assert record["status"] == "complete" and record["merged_dir"] == str(out / "merged")
    from gnt.output_folder import folder_kind

    assert folder_kind(out / "merged") == "merged"  # marked: a rerun may replace it, nothing else may
    queued = tmp_path / "queue" / "qlora"  # gnt.report's evaluation queue got the checkpoint with its record
    assert json.loads((queued / "checkpoint-2" / "gnt_run.json").read_text())["global_step"] == 2
    assert (queued / "checkpoint-2" / "adapter_model.safetensors").is_file() and (queued / "TRAINING_DONE.json").is_file()
    merged = AutoModelForCausalLM.from_pretrained(out / "merged")
    assert getattr(merged.config, "quantization_config", None) is None
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    with_adapter = PeftModel.from_pretrained(base, out).eval()
    ids = torch.tensor([[5, 17, 33, 2]])
    with torch.no_grad():
        torch.testing.assert_close(merged(ids).logits, with_adapter(ids).logits, atol=1e-4, rtol=1e-4)


def test_an_fsdp_launch_without_gpu_is_refused_but_its_dry_run_validates(monkeypatch) -> None:
    from gnt.training.world import FSDPNeedsGPU, adapt_to_launch, has_accelerator

    if has_accelerator():
        pytest.skip("FSDP runs for real where a GPU is visible")  # only on GPU machines, never on CI's CPU
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")
    with pytest.raises(FSDPNeedsGPU, match="would train plain DDP"):
        adapt_to_launch({"bf16": False})
    kwargs = {"bf16": False}
    notes = adapt_to_launch(kwargs, dry_run=True)
    assert any("FSDP itself needs GPUs" in n for n in notes) and kwargs["use_cpu"] is True


def test_dpo_over_a_corrupt_sft_adapter_is_one_error_line(tmp_path: Path, training_data_dir: Path, capsys) -> None:
    sft = tmp_path / "sft"
    sft.mkdir()
    (sft / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "gnt:tiny", "peft_type": "LORA"}))
    (sft / "adapter_model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{\"a\":")  # truncated copy
    argv = [TINY_DPO, f"sft_adapter={sft}", f"data_dir={training_data_dir}", f"output_dir={tmp_path / 'dpo'}"]
    assert main("dpo", argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"error: sft_adapter: {sft / 'adapter_model.safetensors'} is unreadable")
    assert "Traceback" not in "\n".join(err)


def test_a_recipe_callback_is_loaded_by_its_import_path_and_a_bad_one_is_a_recipe_error(monkeypatch) -> None:
    from gnt.recipe import RecipeError
    from gnt.training.callbacks import load_callback, standard_callbacks

    monkeypatch.syspath_prepend(str(Path(__file__).parent / "hooks"))
    callbacks = standard_callbacks(dict, None, ["crash_after_save:CrashAfterSaveCallback"])
    assert type(callbacks[-1]).__name__ == "CrashAfterSaveCallback"
    assert type(load_callback("crash_after_save.CrashAfterSaveCallback")).__name__ == "CrashAfterSaveCallback"
    for path, says in [("crash_after_save:Nope", "cannot import"), ("no_such_module_xyz:Cb", "cannot import"),
                       ("Callback", "not an import path"), ("collections:OrderedDict", "not a transformers")]:
        with pytest.raises(RecipeError, match=says):
            load_callback(path)


def test_decision_token_only_keeps_each_pairs_first_differing_token() -> None:
    from trl.trainer.dpo_trainer import DataCollatorForPreference

    from gnt.training.decision_pairs import DecisionTokenCollator, first_difference

    assert first_difference([1, 2, 3], [1, 4, 3]) == 1
    assert first_difference([1, 2], [1, 2, 9]) == 2
    assert first_difference([5], [5]) is None
    collate = DecisionTokenCollator(DataCollatorForPreference(pad_token_id=0))
    examples = [  # prompt, then "<it> **LABEL** [translation]" as token ids: the label is the second token
        {"prompt_ids": [7, 8, 9], "chosen_ids": [11, 21, 31, 32, 2], "rejected_ids": [11, 22, 31, 32, 2]},
        {"prompt_ids": [7, 8], "chosen_ids": [11, 22, 40, 2], "rejected_ids": [11, 21, 41, 42, 2]},
        {"prompt_ids": [7], "chosen_ids": [11, 21, 2], "rejected_ids": [11, 21, 2]},  # identical: no token
    ]
    plain = DataCollatorForPreference(pad_token_id=0)(examples)
    batch = collate(examples)
    assert batch["input_ids"].tolist() == plain["input_ids"].tolist()  # only the mask changes
    mask = batch["completion_mask"]
    kept = [(row, col) for row, col in mask.nonzero().tolist()]
    # pair 0: chosen row 0 and rejected row 3 at the label (prompt 3 + 1); pair 1: rows 1 and 4 at 2 + 1
    assert kept == [(0, 4), (1, 3), (3, 4), (4, 3)]
    assert batch["input_ids"][0, 4] == 21 and batch["input_ids"][3, 4] == 22
    assert (collate.pairs, collate.identical) == (3, 1)
