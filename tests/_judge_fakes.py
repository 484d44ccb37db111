"""Scripted stand-ins for a judge backend: replies chosen per translation, faults injected per call."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

from gnt.generation.base import Generation, GenerationBackend, GenerationRequest
from gnt.judge.prompts import unquoted
from gnt.judge.schema import NEUTRAL, judge_format, normalise_label, project

_TARGET = re.compile(r"^Target: (.*)\Z", re.S | re.M)


def format_of(request: GenerationRequest) -> str:
    """Which judge format a request is for, read from its JSON-schema constraint."""
    props = request.constraint.value["properties"]
    if "phrases" not in props:
        return "CROSS-L" if len(props["label"]["enum"]) == 3 else "MONO-L"
    return "CROSS-P+L" if "gender_correctness" in props["phrases"]["items"]["properties"] else "MONO-P+L"


def target_of(request: GenerationRequest) -> str:
    role, content = request.messages[-1]
    assert role == "user"
    match = _TARGET.search(content)
    assert match, content
    return unquoted(match.group(1))


def reply_for(label: str, fmt: str, target: str | None = None) -> str:
    """A schema-valid reply with the given 3-way (or 2-way) label, projected onto ``fmt``; its phrase is the first
    word of ``target`` when given (a judge's phrases are words of the translation)."""
    label = normalise_label(label)
    first = (target or "").split()[0] if (target or "").split() else None
    if label == NEUTRAL:
        phrase = {"phrase": first or "la persona", "gender": "N", "gender_correctness": "correct"}
    else:
        wrong = label == "WRONGLY GENDERED"
        phrase = {"phrase": first or "il signore", "gender": "M", "gender_correctness": "wrong" if wrong else "correct"}
    full_label = "CORRECTLY GENDERED" if label == "GENDERED" else label
    return json.dumps(project({"phrases": [phrase], "label": full_label}, judge_format(fmt)))


class ScriptedBackend(GenerationBackend):
    """Answers each request from ``labels[target]``; ``faults`` (a list per target) are served first, in order.

    A fault is a raw reply text, or ``Generation`` (e.g. with ``error``) returned as is. Every request is recorded.
    """

    def __init__(
        self,
        labels: dict[str, str] | Callable[[str], str],
        faults: dict[str, list] | None = None,
        model_id: str = "fake-judge",
    ) -> None:
        self.model_id = model_id
        self.labels = labels
        self.faults = {k: list(v) for k, v in (faults or {}).items()}
        self.requests: list[GenerationRequest] = []
        self.calls = 0

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        self.calls += 1
        out = []
        for request in requests:
            self.requests.append(request)
            target = target_of(request)
            queue = self.faults.get(target)
            if queue:
                fault = queue.pop(0)
                out.append(fault if isinstance(fault, Generation) else Generation(fault))
                continue
            label = self.labels(target) if callable(self.labels) else self.labels[target]
            out.append(Generation(reply_for(label, format_of(request), target)))
        return out


class RaisingBackend(GenerationBackend):
    """A backend that breaks its contract and raises."""

    model_id = "raising-judge"

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        raise RuntimeError("engine died")
