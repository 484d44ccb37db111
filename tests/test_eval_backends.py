"""Generation backends on the tiny model (transformers, for real) and vLLM (exact arguments, with a stand-in module)."""

from __future__ import annotations

import json
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gnt.generation.base import Adapter, Constraint, DecodingParams, GenerationRequest
from gnt.generation.identity import adapter_weights_hash, model_identity
from gnt.output_format import output_regex
from gnt.paths import RECIPES_DIR

SCHEMA = {
    "type": "object",
    "properties": {"label": {"enum": ["NEUTRAL", "GENDERED"]}, "ok": {"type": "boolean"}},
    "required": ["label", "ok"],
    "additionalProperties": False,
}


def chat(text: str, system: str | None = None) -> list[dict[str, str]]:
    turns = [{"role": "system", "content": system}] if system else []
    return [*turns, {"role": "user", "content": text}]


@pytest.fixture(scope="module")
def tiny_backend(tiny_model_dir: Path):
    from gnt.generation.transformers_backend import TransformersBackend

    backend = TransformersBackend(str(tiny_model_dir), batch_size=4, device="cpu", cpu_threads=1)
    yield backend
    backend.close()


def adapter_of(folder: Path) -> Adapter:
    return Adapter(f"sft/{folder.name}", str(folder), adapter_weights_hash(folder))


def test_regex_and_json_constraints_and_eos(tiny_backend) -> None:
    params = DecodingParams(max_new_tokens=64)
    requests = [
        GenerationRequest.from_messages(chat("<en> The citizens are tired."), constraint=Constraint("regex", output_regex(lang)),
                                        params=DecodingParams(max_new_tokens=24))
        for lang in ("it", "de")
    ] + [
        GenerationRequest.from_messages(chat(f"Label this {i}", system="Answer in JSON."), constraint=Constraint("json_schema", SCHEMA),
                                        params=params)
        for i in range(3)
    ]
    out = tiny_backend.generate(requests)
    for lang, generation in zip(("it", "de"), out[:2], strict=True):
        assert generation.error is None
        # cut at the token cap, but every character so far is a prefix the grid regex allows
        assert generation.text.startswith(f"<{lang}>") and re.search(r"\*\*(GENDERED|NEUTRAL)\*\*", generation.text)
        assert generation.n_tokens <= 24
    for generation in out[2:]:
        assert generation.finish_reason == "stop", "generation must stop at EOS once the grammar is complete"
        value = json.loads(generation.text)
        assert set(value) == {"label", "ok"} and value["label"] in ("NEUTRAL", "GENDERED")
    assert tiny_backend._grammars.compilations == 3  # it, de, schema: each compiled once
    tiny_backend.generate(requests[:1])
    assert tiny_backend._grammars.compilations == 3


def test_adapters_swap_in_place_and_base_is_restored(tiny_backend, eval_tiny_run: Path) -> None:
    from gnt.generation.transformers_backend import TransformersBackend

    loads = TransformersBackend.loads
    one, two = (adapter_of(eval_tiny_run / f"checkpoint-{s}") for s in (1, 2))
    params = DecodingParams(max_new_tokens=8)
    prompt = chat("<en> The doctor told the patient to rest.")

    def run(adapter):
        return tiny_backend.generate([GenerationRequest.from_messages(prompt, adapter=adapter, params=params)])[0].text

    base_before = run(None)
    first, second = run(one), run(two)
    assert run(None) == base_before, "base requests must run with every adapter disabled"
    assert run(one) == first
    assert len({base_before, first, second}) == 3, "the perturbed adapters must change the output"
    assert TransformersBackend.loads == loads, "adapters are attached to the loaded base, never a reload"
    # a mixed batch is grouped per adapter and answered in request order
    mixed = [GenerationRequest.from_messages(prompt, adapter=a, params=params) for a in (two, None, one)]
    assert [g.text for g in tiny_backend.generate(mixed)] == [second, base_before, first]


def test_model_and_adapter_identities_are_content_hashes(tiny_model_dir: Path, eval_tiny_run: Path) -> None:
    assert model_identity(tiny_model_dir) == model_identity(str(tiny_model_dir))
    assert model_identity("Qwen/Qwen2.5-7B-Instruct", "abc") == "Qwen/Qwen2.5-7B-Instruct@abc"
    one, two = (adapter_weights_hash(eval_tiny_run / f"checkpoint-{s}") for s in (1, 2))
    assert one != two and len(one) == 16


def test_an_adapter_keeps_its_identity_whatever_order_its_target_modules_were_written_in(
        eval_tiny_run: Path, tmp_path: Path) -> None:
    """PEFT writes target_modules (a set) in a per-process order: the same adapter trained twice is one identity."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(eval_tiny_run / "checkpoint-1", copy)
    config_file = copy / "adapter_config.json"
    config = json.loads(config_file.read_text())
    assert len(config["target_modules"]) > 1
    config["target_modules"] = list(reversed(config["target_modules"]))
    config_file.write_text(json.dumps(config, indent=4))  # another order and layout, the same meaning
    assert adapter_weights_hash(copy) == adapter_weights_hash(eval_tiny_run / "checkpoint-1")
    config["r"] = config["r"] * 2
    config_file.write_text(json.dumps(config))
    assert adapter_weights_hash(copy) != adapter_weights_hash(eval_tiny_run / "checkpoint-1")


# ---- vLLM: exact engine arguments and per-request parameters, against a stand-in module ----------------------


@dataclass
class FakeCompletion:
    text: str
    token_ids: list = field(default_factory=lambda: [1, 2, 3])
    finish_reason: str = "stop"


class FakeLLM:
    instances: list = []

    def __init__(self, **kwargs) -> None:
        self.kwargs = kwargs
        self.calls: list = []
        FakeLLM.instances.append(self)

    def get_tokenizer(self):
        return FakeLLM.tokenizer

    def generate(self, prompts, sampling_params, lora_request=None, use_tqdm=True):
        self.calls.append((prompts, sampling_params, lora_request))
        return [types.SimpleNamespace(outputs=[FakeCompletion(f"out {i}")]) for i in range(len(prompts))]


class FakeSamplingParams:
    def __init__(self, **kwargs) -> None:
        self.kwargs = kwargs


class FakeStructuredOutputsParams:
    def __init__(self, **kwargs) -> None:
        self.kwargs = kwargs


@dataclass
class FakeLoRARequest:
    lora_name: str
    lora_int_id: int
    lora_path: str


@pytest.fixture
def fake_vllm(monkeypatch, tiny_model_dir: Path):
    from transformers import AutoTokenizer

    FakeLLM.instances = []
    FakeLLM.tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    vllm = types.ModuleType("vllm")
    vllm.LLM, vllm.SamplingParams = FakeLLM, FakeSamplingParams
    sampling = types.ModuleType("vllm.sampling_params")
    sampling.SamplingParams, sampling.StructuredOutputsParams = FakeSamplingParams, FakeStructuredOutputsParams
    lora = types.ModuleType("vllm.lora")
    lora_request = types.ModuleType("vllm.lora.request")
    lora_request.LoRARequest = FakeLoRARequest
    for name, module in {"vllm": vllm, "vllm.sampling_params": sampling, "vllm.lora": lora,
                         "vllm.lora.request": lora_request}.items():
        monkeypatch.setitem(sys.modules, name, module)
    return vllm


def test_vllm_engine_arguments_and_request_parameters(fake_vllm, tiny_model_dir: Path, eval_tiny_run: Path) -> None:
    from gnt.cli.evaluate import load_eval_config
    from gnt.evaluation.driver import default_backend_factory as make_backend

    config = load_eval_config(RECIPES_DIR / "eval-vllm.yaml", [("tensor_parallel_size", "2"), ("max_model_len", "4096")])
    paths = [str(eval_tiny_run / "checkpoint-1"), str(eval_tiny_run / "checkpoint-2")]
    backend = make_backend(config, str(tiny_model_dir), paths)
    one, two = (adapter_of(Path(p)) for p in paths)
    regex = Constraint("regex", output_regex("it"))
    requests = [
        GenerationRequest.from_messages(chat("<en> a", system="S"), adapter=one, constraint=regex),
        GenerationRequest.from_messages(chat("<en> b"), adapter=two, constraint=Constraint("json_schema", SCHEMA)),
        GenerationRequest.from_messages(chat("<en> c"), adapter=one),
        GenerationRequest.from_messages(chat("<en> d")),
    ]
    assert FakeLLM.instances == [], "the engine starts lazily, on the first generation"
    out = backend.generate(requests)
    backend.generate(requests[:1])
    [llm] = FakeLLM.instances  # one engine for the base model, reused
    assert llm.kwargs == {
        "model": str(tiny_model_dir), "revision": None, "dtype": "bfloat16", "tensor_parallel_size": 2,
        "enable_prefix_caching": True, "gpu_memory_utilization": 0.9, "seed": 0,
        "enable_lora": True, "max_loras": 4, "max_lora_rank": 8, "max_model_len": 4096,
    }  # rank 8: the smallest vLLM rank that fits the test adapters' r=4
    prompts, params, loras = llm.calls[0]
    assert [g.text for g in out] == ["out 0", "out 1", "out 2", "out 3"] and out[0].n_tokens == 3
    tokenizer = FakeLLM.tokenizer
    expected = tokenizer.apply_chat_template(requests[0].chat(), tokenize=False, add_generation_prompt=True)
    assert prompts[0] == {"prompt_token_ids": tokenizer(expected, add_special_tokens=False)["input_ids"]}
    greedy = {"max_tokens": 256, "temperature": 0.0, "top_p": 1.0, "seed": 0, "skip_special_tokens": True}
    assert {k: v for k, v in params[0].kwargs.items() if k != "structured_outputs"} == greedy
    assert params[0].kwargs["structured_outputs"].kwargs == {"regex": output_regex("it")}
    assert params[1].kwargs["structured_outputs"].kwargs == {"json": SCHEMA, "disable_any_whitespace": True}
    assert "structured_outputs" not in params[2].kwargs
    assert loras[0] == FakeLoRARequest("sft/checkpoint-1", 1, one.path)
    assert loras[1] == FakeLoRARequest("sft/checkpoint-2", 2, two.path)
    assert loras[2] == loras[0] and loras[3] is None  # stable int id per adapter; base requests have none
    assert llm.calls[1][2][0].lora_int_id == 1
    assert backend.describe()["engine_kwargs"]["enable_prefix_caching"] is True
