"""Everything the project hands to vLLM 0.33, built by the project's own code and constructed with vLLM's classes.

The stand-in ``vllm`` module of ``tests/test_eval_backends.py`` checks behaviour (batching, adapters, the cache);
these check names and values against the real package: the engine arguments of the evaluation and judge recipes,
``SamplingParams`` + ``StructuredOutputsParams`` for the grid regexes and every judge JSON schema (compiled by vLLM's
own xgrammar validation), ``LoRARequest``, the ``LLM.generate`` call and its outputs, the chat-completions bodies
the HTTP backend sends to ``vllm serve`` and the ``vllm serve`` command line the HTTP recipe documents.
"""

from __future__ import annotations

import inspect
import re
import shlex
from pathlib import Path

import pytest
from contract import UnknownKeys, check_llm_kwargs, check_request_body, check_structured_outputs

from gnt.data.entry import LANGUAGES
from gnt.generation.base import Adapter, Constraint, DecodingParams, GenerationRequest
from gnt.paths import RECIPES_DIR, SAMPLE_DIR


def grid_requests(model_dir: Path, recipe: str = "eval-vllm.yaml") -> list[GenerationRequest]:
    """The sweep's own requests (its renderer, regex constraint and decoding) for a few sample rows per cell."""
    from gnt.cli.evaluate import load_eval_config
    from gnt.data.mgente import load_mgente
    from gnt.evaluation.discovery import discover_models
    from gnt.evaluation.sweep import GridTask
    from gnt.prompts.grid import PromptGrid

    config = load_eval_config(RECIPES_DIR / recipe, model=str(model_dir))
    grid = PromptGrid(config.langs, config.prompts_dir, seed=config.grid_seed)
    entries = [e for lang in config.langs for e in [x for x in load_mgente(SAMPLE_DIR, (lang,))][:2]]
    evaluation = GridTask(config, grid, tuple(entries), tuple(config.cells()), statuses={}, rows_info={})
    model = discover_models([], [], str(model_dir))[0]
    return [request for cell in config.cells() for _, _, request in evaluation.requests_for(model, cell, True)]


def test_eval_recipe_engine_arguments_are_real_engine_args(tiny_model_dir: Path, adapter_dirs: list[Path]) -> None:
    from vllm.config import LoRAConfig

    from gnt.cli.evaluate import load_eval_config
    from gnt.evaluation.driver import default_backend_factory as make_backend
    from gnt.generation.vllm_backend import SUPPORTED_LORA_RANKS

    config = load_eval_config(RECIPES_DIR / "eval-vllm.yaml", [("tensor_parallel_size", "2"), ("max_model_len", "512"),
                              ("engine_extra", "{enforce_eager: true, max_num_seqs: 64}")])
    backend = make_backend(config, str(tiny_model_dir), [str(p) for p in adapter_dirs])
    args = check_llm_kwargs(backend.engine_kwargs)
    assert (args.model, args.dtype, args.tensor_parallel_size, args.max_model_len) == (str(tiny_model_dir), "bfloat16", 2, 512)
    assert args.enable_lora and args.enable_prefix_caching and args.max_loras == config.max_loras
    assert args.max_lora_rank == 16, "the smallest supported rank that fits both adapters (r=4, r=16)"
    assert args.enforce_eager and args.max_num_seqs == 64, "engine_extra reaches EngineArgs"
    lora = LoRAConfig(max_lora_rank=args.max_lora_rank, max_loras=args.max_loras)
    assert lora.max_lora_rank == 16
    for rank in SUPPORTED_LORA_RANKS:  # every rank the backend may pick is one vLLM accepts
        LoRAConfig(max_lora_rank=rank)
    # vLLM's own model configuration from these arguments: dtype and length checked against the model's config
    model_config = args.create_model_config()
    assert str(model_config.dtype) == "torch.bfloat16" and model_config.max_model_len == 512


def test_judge_recipe_engine_arguments_are_real_engine_args(tiny_model_dir: Path) -> None:
    from gnt.judge.config import load_judge_recipe, make_backend

    recipe_file = RECIPES_DIR / "judge-vllm.yaml"
    hub = make_backend(load_judge_recipe(recipe_file)).engine_kwargs  # a hub id: gnt itself downloads nothing
    assert hub["model"] == "Qwen/Qwen2.5-72B-Instruct"
    # vLLM's EngineArgs looks a hub id up on the hub when it is constructed, which fails under HF_HUB_OFFLINE=1 (the
    # usual setting on compute nodes): the recipe's arguments are constructed over the local tiny model instead,
    # and they are the same arguments but for the model
    local = make_backend(load_judge_recipe(recipe_file, [("judge_model", str(tiny_model_dir))])).engine_kwargs
    assert {k: v for k, v in local.items() if k != "model"} == {k: v for k, v in hub.items() if k != "model"}
    args = check_llm_kwargs(local)
    assert (args.model, args.tensor_parallel_size, args.dtype) == (str(tiny_model_dir), 4, "bfloat16")


def test_grid_requests_become_real_sampling_params_with_a_regex_vllm_compiles(tiny_model_dir: Path) -> None:
    from vllm import SamplingParams
    from vllm.sampling_params import SamplingType, StructuredOutputsParams
    from vllm.v1.structured_output.backend_xgrammar import validate_xgrammar_grammar

    from gnt.generation.vllm_backend import VLLMBackend, sampling_kwargs
    from gnt.output_format import output_regex

    requests = grid_requests(tiny_model_dir)
    backend = VLLMBackend(str(tiny_model_dir))
    assert {r.constraint.value for r in requests} == {output_regex(lang) for lang in LANGUAGES}
    compiled: set[str] = set()
    for request in requests:
        check_structured_outputs(sampling_kwargs(request)["structured_outputs"])
        params = backend.sampling_params(request)
        assert isinstance(params, SamplingParams) and isinstance(params.structured_outputs, StructuredOutputsParams)
        assert params.structured_outputs.regex == request.constraint.value
        assert (params.max_tokens, params.sampling_type, params.skip_special_tokens) == (256, SamplingType.GREEDY, True)
        if params.structured_outputs.regex not in compiled:  # one compile per language
            validate_xgrammar_grammar(params)
            compiled.add(params.structured_outputs.regex)
    assert len(compiled) == len(LANGUAGES)


@pytest.mark.parametrize("variant", ["full", "strict"])
def test_every_judge_request_becomes_real_sampling_params_with_a_schema_vllm_compiles(
    tiny_model_dir: Path, variant: str
) -> None:
    from vllm.v1.structured_output.backend_xgrammar import validate_xgrammar_grammar

    from gnt.generation.vllm_backend import VLLMBackend, sampling_kwargs
    from gnt.judge.config import load_judge_recipe
    from gnt.judge.llm_judge import JudgeItem, LLMJudge
    from gnt.judge.schema import FORMATS

    recipe = load_judge_recipe(RECIPES_DIR / "judge-vllm.yaml", [("schema_variant", variant)])
    backend = VLLMBackend(str(tiny_model_dir))
    for name in FORMATS:
        judge = LLMJudge(backend, recipe.judge_settings(name))
        for attempt in (0, 1):  # a retry samples: temperature > 0 brings top_p
            request = judge.request(JudgeItem("it", "The doctors arrived.", "Il personale medico è arrivato."), attempt)
            check_structured_outputs(sampling_kwargs(request)["structured_outputs"])
            params = backend.sampling_params(request)
            assert params.structured_outputs.json == judge.constraint.value
            assert params.structured_outputs.disable_any_whitespace
            assert params.max_tokens == recipe.max_new_tokens and params.temperature == request.params.temperature
            validate_xgrammar_grammar(params)


def test_lora_requests_the_generate_call_and_its_outputs_match_vllm(tiny_model_dir: Path, adapter_dirs) -> None:
    from vllm import LLM
    from vllm.inputs import TokensPrompt
    from vllm.lora.request import LoRARequest
    from vllm.outputs import CompletionOutput, RequestOutput

    from gnt.generation.vllm_backend import VLLMBackend

    backend = VLLMBackend(str(tiny_model_dir), adapter_paths=adapter_dirs)
    adapters = [Adapter(f"sft/{p.name}", str(p), f"hash{i}") for i, p in enumerate(adapter_dirs)]
    lora = backend.lora_request(adapters[1])
    assert isinstance(lora, LoRARequest) and (lora.lora_name, lora.lora_int_id, lora.lora_path) == (
        "sft/checkpoint-2", 1, str(adapter_dirs[1]))
    assert backend.lora_request(adapters[0]).lora_int_id == 2 and backend.lora_request(adapters[1]).lora_int_id == 1
    assert hasattr(LLM, "get_tokenizer")

    signature = inspect.signature(LLM.generate)
    calls = []

    class Engine:  # the real LLM.generate signature, answering with real RequestOutput objects
        def generate(self, *args, **kwargs):
            bound = signature.bind(self, *args, **kwargs)
            prompts, params = bound.arguments["prompts"], bound.arguments["sampling_params"]
            calls.append(bound.arguments)
            for prompt in prompts:
                assert set(prompt) <= set(TokensPrompt.__annotations__) and prompt["prompt_token_ids"]
            assert len(params) == len(prompts) == len(bound.arguments["lora_request"])
            return [RequestOutput(str(i), None, p["prompt_token_ids"], None,
                                  [CompletionOutput(0, "<it> **NEUTRAL** [x]", [1, 2, 3], None, None, finish_reason="stop")],
                                  True) for i, p in enumerate(prompts)]

    assert backend.tokenizer is not None  # the backend's own tokenizer (an engine would hand out the same one)
    backend._llm = Engine()
    constraint = Constraint("regex", r"<it> .*")
    requests = [GenerationRequest.from_messages([{"role": "user", "content": "Ciao"}], adapter, constraint,
                                                DecodingParams(max_new_tokens=8)) for adapter in (None, *adapters)]
    generations = backend.generate(requests)
    assert [(g.text, g.n_tokens, g.finish_reason, g.error) for g in generations] == [
        ("<it> **NEUTRAL** [x]", 3, "stop", None)] * 3
    assert calls[0]["use_tqdm"] is False and calls[0]["lora_request"][0] is None


def test_http_bodies_are_valid_vllm_serve_chat_completion_requests(tiny_model_dir: Path) -> None:
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

    from gnt.generation.http_backend import HTTPBackend
    from gnt.judge.llm_judge import JudgeItem, JudgeSettings, LLMJudge

    backend = HTTPBackend("http://localhost:8000/v1", "Qwen/Qwen2.5-7B-Instruct")
    adapter = Adapter("sft/checkpoint-8", "runs/sft/checkpoint-8", "abc")
    for request in grid_requests(tiny_model_dir)[:4]:
        for body in (backend.body(request), backend.body(GenerationRequest(request.messages, adapter,
                                                                           request.constraint, request.params))):
            parsed = check_request_body(body, ChatCompletionRequest)
            params = parsed.to_sampling_params(max_tokens=body["max_tokens"], default_sampling_params={})
            assert params.structured_outputs.regex == request.constraint.value and params.temperature == 0
    assert backend.body(GenerationRequest(request.messages, adapter))["model"] == "sft/checkpoint-8"

    judge = LLMJudge(backend, JudgeSettings())  # over HTTP: the strict schema in response_format
    body = backend.body(judge.request(JudgeItem("de", "The teachers", "Die Lehrkräfte"), 1))
    parsed = check_request_body(body, ChatCompletionRequest)
    params = parsed.to_sampling_params(max_tokens=body["max_tokens"], default_sampling_params={})
    assert params.structured_outputs.json == judge.constraint.value and params.temperature > 0

    # `regex_field: guided_regex` is for servers before vLLM 0.12; 0.33 drops the field unconstrained
    old = HTTPBackend("http://localhost:8000/v1", "m", regex_field="guided_regex").body(request)
    with pytest.raises(UnknownKeys, match="guided_regex"):
        check_request_body(old, ChatCompletionRequest)


def test_the_vllm_serve_command_of_the_http_recipe_parses(monkeypatch) -> None:
    from vllm.entrypoints.common.cli_args import make_arg_parser
    from vllm.platforms import current_platform
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    # the parser's defaults build a DeviceConfig, which needs a device type; without a GPU there is none
    monkeypatch.setattr(current_platform, "device_type", "cuda", raising=False)

    text = (RECIPES_DIR / "eval-http.yaml").read_text(encoding="utf-8")
    lines = re.findall(r"^#\s*(vllm serve .*?)$\n(?:^#\s*(.*)$)?", text, flags=re.M)
    assert lines, "eval-http.yaml documents its vllm serve command"
    command = " ".join(part for part in lines[0] if part).replace("\\", " ")
    args = make_arg_parser(FlexibleArgumentParser()).parse_args(shlex.split(command)[2:])
    assert args.model_tag == "Qwen/Qwen2.5-7B-Instruct" and args.enable_lora and args.max_lora_rank == 64
    assert [(m.name, m.path) for m in args.lora_modules] == [
        ("qwen-sft/checkpoint-500", "runs/qwen-sft/checkpoint-500")]


def test_a_misspelt_key_fails_each_check(tiny_model_dir: Path) -> None:
    """The guard works: one wrong name in each kind of object the project builds is refused by vLLM's classes."""
    from vllm import EngineArgs, SamplingParams
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.sampling_params import StructuredOutputsParams

    from gnt.generation.http_backend import HTTPBackend
    from gnt.generation.vllm_backend import VLLMBackend, sampling_kwargs

    engine = VLLMBackend(str(tiny_model_dir), engine_extra={"enable_prefix_cachng": False}).engine_kwargs
    with pytest.raises(UnknownKeys, match="enable_prefix_cachng"):
        check_llm_kwargs(engine)
    with pytest.raises(TypeError, match="max_lora_rnk"):
        EngineArgs(model=str(tiny_model_dir), max_lora_rnk=8)
    request = grid_requests(tiny_model_dir)[0]
    kwargs = sampling_kwargs(request)
    structured = kwargs.pop("structured_outputs")
    SamplingParams(**kwargs, structured_outputs=StructuredOutputsParams(**structured))  # as built: fine
    with pytest.raises(TypeError, match="max_token"):
        SamplingParams(**{**kwargs, "max_token": 8})
    with pytest.raises(UnknownKeys, match="disable_any_whitspace"):  # vLLM itself would drop it silently
        check_structured_outputs({**structured, "disable_any_whitspace": True})
    assert not StructuredOutputsParams(**structured, disable_any_whitspace=True).disable_any_whitespace
    body = HTTPBackend("http://localhost:8000/v1", "m").body(request)
    body["structured_output"] = body.pop("structured_outputs")
    with pytest.raises(UnknownKeys, match="structured_output"):
        check_request_body(body, ChatCompletionRequest)
