"""The offline tiny model as judge through the transformers backend: schema-valid JSON in every format/language.

The model is random, so its labels are noise; what is tested is the plumbing a real judge relies on: the full
prompt (system text, 8 exemplars) renders through the chat template and fits the model's context, the JSON schema
constrains decoding with xgrammar, and every reply parses and validates on the first try (no retry).

The 16 (format, language) requests go to the backend as one batch (xgrammar carries a different schema per row)
on one thread, which keeps this to seconds on two shared cores; the end-to-end :meth:`LLMJudge.judge` path runs
once more on MONO-L.
"""

from __future__ import annotations

import pytest

from gnt.judge.llm_judge import JudgeItem, JudgeSettings, LLMJudge, parse_reply
from gnt.judge.schema import FORMATS, schema_errors

ITEMS = [
    JudgeItem("it", "The citizens are tired.", "I cittadini sono stanchi."),
    JudgeItem("es", "The citizens are tired.", "La ciudadanía está cansada."),
    JudgeItem("de", "The citizens are tired.", "Die Bürgerinnen und Bürger sind müde."),
    JudgeItem("el", "The citizens are tired.", "Οι πολίτες είναι κουρασμένοι."),
]


@pytest.fixture(scope="module")
def tiny_backend(tiny_model_dir):
    import torch

    from gnt.generation.transformers_backend import TransformersBackend

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model gains nothing from threads; tests sharing two cores lose a lot
    backend = TransformersBackend(str(tiny_model_dir), batch_size=16)
    yield backend
    backend.close()
    torch.set_num_threads(threads)


def test_tiny_judge_replies_are_schema_valid_for_every_format_and_language(tiny_backend):
    cases = [(name, item) for name in FORMATS for item in ITEMS]
    judges = {name: LLMJudge(tiny_backend, JudgeSettings(format=name, max_new_tokens=768)) for name in FORMATS}
    requests = [judges[name].request(item, attempt=0) for name, item in cases]
    for (name, item), request in zip(cases, requests, strict=True):  # prompt + longest reply fit the context
        prompt_tokens = len(tiny_backend.tokenizer(tiny_backend.prompt_text(request))["input_ids"])
        assert len(request.messages) == 1 + 16 + 1
        assert prompt_tokens + request.params.max_new_tokens <= 4096, (name, item.lang, prompt_tokens)
    generations = tiny_backend.generate(requests)
    for (name, item), generation in zip(cases, generations, strict=True):
        assert generation.error is None, (name, item.lang, generation.error)
        parsed = parse_reply(generation.text, name)
        assert parsed.value is not None, (name, item.lang, parsed.error_kind, parsed.detail, generation.text[:200])
        assert schema_errors(parsed.value, name) == []
        assert generation.finish_reason == "stop"


def test_tiny_judge_end_to_end(tiny_backend):
    judge = LLMJudge(tiny_backend, JudgeSettings(format="MONO-L", judge_retries=0))
    assert judge.schema_variant == "full"
    judgments = judge.judge(ITEMS)
    assert all(j.ok and j.attempts == 1 and j.label in FORMATS["MONO-L"].labels for j in judgments)
    assert all(isinstance(j.neutral, bool) for j in judgments)
