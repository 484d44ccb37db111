"""The four judge formats, their labels and the JSON schemas that constrain a judge's reply (docs/judge.md).

A format is two choices: whether the judge sees the source (CROSS) or only the target (MONO), and whether it lists
the phrases that refer to people before the label (P+L) or gives the label alone (L). CROSS labels say whether
gendered language is *correct* with respect to the source; MONO labels only say gendered or neutral.

Two schema variants exist because backends disagree on what JSON Schema they accept:

* ``full`` (vLLM structured outputs, xgrammar with transformers): 1–10 phrases and bounded phrase strings. The
  bounds matter on a local model: without them a weak model can write one endless string until the token limit.
* ``strict`` (the OpenAI-compatible ``response_format`` with ``strict: true``): the same shape without
  ``minItems``/``maxItems``/``minLength``/``maxLength``, which strict mode rejects; every object still has
  ``additionalProperties: false`` and lists every property as required, as strict mode demands.

Replies are always *validated* against the full schema, so an API reply with no phrases or with 11 is caught and
retried even though the API could not be told the bounds.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from jsonschema import Draft202012Validator

CORRECTLY_GENDERED = "CORRECTLY GENDERED"
WRONGLY_GENDERED = "WRONGLY GENDERED"
NEUTRAL = "NEUTRAL"
GENDERED = "GENDERED"
CROSS_LABELS: tuple[str, ...] = (CORRECTLY_GENDERED, WRONGLY_GENDERED, NEUTRAL)
MONO_LABELS: tuple[str, ...] = (GENDERED, NEUTRAL)
GENDERS: tuple[str, ...] = ("M", "F", "N")
CORRECTNESS: tuple[str, ...] = ("correct", "wrong")
MIN_PHRASES = 1
MAX_PHRASES = 10
MAX_PHRASE_CHARS = 100

FORMAT_NAMES: tuple[str, ...] = ("MONO-L", "MONO-P+L", "CROSS-L", "CROSS-P+L")
DEFAULT_FORMAT = "CROSS-P+L"

#: Short forms users and exemplar files may write for the labels (the paper's tables use CG/WG/N).
LABEL_ALIASES: dict[str, str] = {
    "CG": CORRECTLY_GENDERED,
    "WG": WRONGLY_GENDERED,
    "N": NEUTRAL,
    "G": GENDERED,
    "CORRECTLY_GENDERED": CORRECTLY_GENDERED,
    "WRONGLY_GENDERED": WRONGLY_GENDERED,
}

SchemaVariant = Literal["full", "strict"]


@dataclass(frozen=True)
class JudgeFormat:
    """One judge format: ``cross`` = the judge sees the source; ``phrases`` = phrase annotations before the label."""

    name: str
    cross: bool
    phrases: bool

    @property
    def labels(self) -> tuple[str, ...]:
        return CROSS_LABELS if self.cross else MONO_LABELS

    @property
    def slug(self) -> str:
        """File-name form: ``cross-pl``, ``mono-l``..."""
        return self.name.lower().replace("+", "")

    def __str__(self) -> str:
        return self.name


FORMATS: dict[str, JudgeFormat] = {
    "MONO-L": JudgeFormat("MONO-L", cross=False, phrases=False),
    "MONO-P+L": JudgeFormat("MONO-P+L", cross=False, phrases=True),
    "CROSS-L": JudgeFormat("CROSS-L", cross=True, phrases=False),
    "CROSS-P+L": JudgeFormat("CROSS-P+L", cross=True, phrases=True),
}


def judge_format(name: str | JudgeFormat) -> JudgeFormat:
    """Look a format up by name, forgiving case, ``_``/space for ``-`` and ``PL`` for ``P+L`` (``cross-pl``)."""
    if isinstance(name, JudgeFormat):
        return name
    key = str(name).strip().upper().replace("_", "-").replace(" ", "-")
    if key.endswith("-PL"):
        key = key[:-3] + "-P+L"
    if key not in FORMATS:
        raise ValueError(f"unknown judge format {name!r}; expected one of {', '.join(FORMAT_NAMES)}")
    return FORMATS[key]


def parse_formats(spec: str | list[str]) -> list[JudgeFormat]:
    """A comma-separated list (or ``all``) of formats, in the canonical order."""
    names = spec if isinstance(spec, list) else [s for s in str(spec).split(",") if s.strip()]
    if any(n.strip().lower() == "all" for n in names):
        return list(FORMATS.values())
    chosen = {judge_format(n).name for n in names}
    return [FORMATS[n] for n in FORMAT_NAMES if n in chosen]


def normalise_label(label: str) -> str:
    """Canonical label text (upper case, single spaces, aliases resolved); unknown labels come back unchanged."""
    text = " ".join(str(label).strip().upper().split())
    return LABEL_ALIASES.get(text, text)


def is_neutral(label: str) -> bool:
    """Binary neutrality for GNT accuracy: NEUTRAL vs any gendered label (CORRECTLY/WRONGLY GENDERED, GENDERED)."""
    return normalise_label(label) == NEUTRAL


def to_format_label(label: str, fmt: JudgeFormat) -> str:
    """Map a 3-way label into a format's label space (MONO only distinguishes GENDERED from NEUTRAL)."""
    label = normalise_label(label)
    if fmt.cross:
        return label
    return NEUTRAL if label == NEUTRAL else GENDERED


def json_schema(fmt: str | JudgeFormat, variant: SchemaVariant = "full") -> dict[str, Any]:
    """The JSON schema a judge reply must follow in ``fmt``; ``variant="strict"`` for OpenAI strict mode."""
    fmt = judge_format(fmt)
    schema = copy.deepcopy(_full_schema(fmt.name))
    if variant == "strict":
        _strip_bounds(schema)
    elif variant != "full":
        raise ValueError(f"unknown schema variant {variant!r}; expected 'full' or 'strict'")
    return schema


@cache
def _full_schema(name: str) -> dict[str, Any]:
    fmt = FORMATS[name]
    properties: dict[str, Any] = {}
    if fmt.phrases:
        phrase_props: dict[str, Any] = {
            "phrase": {"type": "string", "minLength": 1, "maxLength": MAX_PHRASE_CHARS},
            "gender": {"type": "string", "enum": list(GENDERS)},
        }
        if fmt.cross:
            phrase_props["gender_correctness"] = {"type": "string", "enum": list(CORRECTNESS)}
        properties["phrases"] = {
            "type": "array",
            "minItems": MIN_PHRASES,
            "maxItems": MAX_PHRASES,
            "items": {
                "type": "object",
                "properties": phrase_props,
                "required": list(phrase_props),
                "additionalProperties": False,
            },
        }
    properties["label"] = {"type": "string", "enum": list(fmt.labels)}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


_BOUND_KEYS = ("minItems", "maxItems", "minLength", "maxLength")


def _strip_bounds(node: Any) -> None:
    if isinstance(node, dict):
        for key in _BOUND_KEYS:
            node.pop(key, None)
        for value in node.values():
            _strip_bounds(value)
    elif isinstance(node, list):
        for value in node:
            _strip_bounds(value)


@cache
def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(_full_schema(name))


def schema_errors(obj: Any, fmt: str | JudgeFormat) -> list[str]:
    """Human-readable schema violations of ``obj`` in ``fmt`` (empty when valid), each prefixed by its JSON path."""
    fmt = judge_format(fmt)
    errors = sorted(_validator(fmt.name).iter_errors(obj), key=lambda e: list(e.absolute_path))
    return [f"{e.json_path}: {e.message}" for e in errors]


def project(annotation: dict[str, Any], fmt: str | JudgeFormat) -> dict[str, Any]:
    """Project a full CROSS-P+L annotation onto ``fmt`` (what an exemplar's assistant turn shows in that format).

    MONO drops ``gender_correctness`` and folds both gendered labels into GENDERED; L drops the phrases.
    """
    fmt = judge_format(fmt)
    out: dict[str, Any] = {}
    if fmt.phrases:
        out["phrases"] = [
            {"phrase": p["phrase"], "gender": p["gender"]}
            | ({"gender_correctness": p["gender_correctness"]} if fmt.cross else {})
            for p in annotation.get("phrases", [])
        ]
    out["label"] = to_format_label(annotation["label"], fmt)
    return out


def consistency_problems(annotation: dict[str, Any]) -> list[str]:
    """Ways a CROSS-P+L annotation contradicts itself (the label must follow from the phrases).

    A neutral phrase is always correct; NEUTRAL means every phrase is neutral; WRONGLY GENDERED means at least one
    phrase is wrong; CORRECTLY GENDERED means some phrase is gendered and none is wrong.
    """
    phrases = annotation.get("phrases") or []
    label = normalise_label(annotation.get("label", ""))
    problems = [
        f"phrase {i + 1} ({p.get('phrase')!r}) is neutral but marked wrong"
        for i, p in enumerate(phrases)
        if p.get("gender") == "N" and p.get("gender_correctness") == "wrong"
    ]
    gendered = any(p.get("gender") in ("M", "F") for p in phrases)
    wrong = any(p.get("gender_correctness") == "wrong" for p in phrases)
    if label == NEUTRAL and gendered:
        problems.append("label NEUTRAL but some phrase is gendered (M/F)")
    elif label == WRONGLY_GENDERED and not wrong:
        problems.append("label WRONGLY GENDERED but no phrase is marked wrong")
    elif label == CORRECTLY_GENDERED and (wrong or not gendered):
        problems.append("label CORRECTLY GENDERED but " + ("a phrase is marked wrong" if wrong else "no phrase is gendered"))
    return problems
