"""Validators that hold what the project builds against vLLM's own classes, naming any key vLLM does not know."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any


class UnknownKeys(AssertionError):
    """Keys that the real vLLM class does not accept (or would silently ignore)."""


def engine_arg_names() -> set[str]:
    from vllm import EngineArgs

    return {f.name for f in dataclasses.fields(EngineArgs)}


def check_llm_kwargs(kwargs: dict[str, Any]):
    """``vllm.LLM(**kwargs)`` without starting an engine: every key is an ``LLM`` parameter or an ``EngineArgs``
    field (LLM forwards the rest to EngineArgs); returns the ``EngineArgs`` built from them."""
    from vllm import LLM, EngineArgs

    named = {n for n, p in inspect.signature(LLM.__init__).parameters.items() if p.kind is p.KEYWORD_ONLY or
             p.kind is p.POSITIONAL_OR_KEYWORD} - {"self"}
    unknown = sorted(set(kwargs) - named - engine_arg_names())
    if unknown:
        raise UnknownKeys(f"not vllm.LLM / EngineArgs arguments: {unknown}")
    return EngineArgs(**kwargs)  # the dataclass itself rejects unknown names and checks nothing else here


def request_field_names(model: type) -> set[str]:
    names = set()
    for name, field in model.model_fields.items():
        names.add(name)
        if field.alias:
            names.add(field.alias)
    return names


def check_request_body(body: dict[str, Any], model: type):
    """A JSON body of ``vllm serve`` validated by its pydantic request ``model``.

    vLLM's request models accept extra fields and only log them (an unknown or removed field such as
    ``guided_regex`` is dropped and the output is NOT constrained), so unknown keys are refused here first.
    """
    unknown = sorted(set(body) - request_field_names(model))
    if unknown:
        raise UnknownKeys(f"fields {model.__name__} of vLLM would ignore: {unknown}")
    return model.model_validate(body)


def check_structured_outputs(kwargs: dict[str, Any]):
    """``StructuredOutputsParams(**kwargs)``, refusing names it does not have: vLLM's class ignores unknown keyword
    arguments (a misspelt ``disable_any_whitespace`` would be dropped without a word)."""
    from vllm.sampling_params import StructuredOutputsParams

    unknown = sorted(set(kwargs) - {f.name for f in dataclasses.fields(StructuredOutputsParams) if f.init})
    if unknown:
        raise UnknownKeys(f"not StructuredOutputsParams fields: {unknown}")
    return StructuredOutputsParams(**kwargs)
