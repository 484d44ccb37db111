"""Judge formats and JSON schemas (docs/judge.md): shape, the OpenAI-strict variant, validation and projection."""

from __future__ import annotations

import pytest

from gnt.judge.schema import (
    FORMATS,
    consistency_problems,
    is_neutral,
    json_schema,
    judge_format,
    parse_formats,
    project,
    schema_errors,
)

FULL = {
    "phrases": [
        {"phrase": "la signora", "gender": "F", "gender_correctness": "correct"},
        {"phrase": "i cittadini", "gender": "M", "gender_correctness": "wrong"},
    ],
    "label": "WRONGLY GENDERED",
}


def _objects(node):
    if isinstance(node, dict):
        if node.get("type") == "object":
            yield node
        for value in node.values():
            yield from _objects(value)
    elif isinstance(node, list):
        for value in node:
            yield from _objects(value)


@pytest.mark.parametrize("name", list(FORMATS))
def test_schema_shape_per_format(name):
    fmt = judge_format(name)
    schema = json_schema(fmt)
    assert schema["additionalProperties"] is False
    assert schema["required"] == (["phrases", "label"] if fmt.phrases else ["label"])
    assert schema["properties"]["label"]["enum"] == list(fmt.labels)
    if fmt.phrases:
        array = schema["properties"]["phrases"]
        assert (array["minItems"], array["maxItems"]) == (1, 10)
        item = array["items"]
        expected = ["phrase", "gender"] + (["gender_correctness"] if fmt.cross else [])
        assert item["required"] == expected and list(item["properties"]) == expected
        assert item["properties"]["gender"]["enum"] == ["M", "F", "N"]


@pytest.mark.parametrize("name", list(FORMATS))
def test_strict_variant_follows_openai_strict_rules(name):
    """Strict mode: every object closed and fully required; no minItems/maxItems/minLength/maxLength anywhere."""
    schema = json_schema(name, "strict")
    text = str(schema)
    for key in ("minItems", "maxItems", "minLength", "maxLength"):
        assert key not in text
    for obj in _objects(schema):
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])
    # the full variant is untouched by building the strict one
    assert "minItems" in str(json_schema(name)) or not judge_format(name).phrases


def test_validation_catches_each_violation():
    assert schema_errors(FULL, "CROSS-P+L") == []
    assert schema_errors({**FULL, "phrases": []}, "CROSS-P+L")
    assert schema_errors({**FULL, "phrases": FULL["phrases"] * 6}, "CROSS-P+L")  # 12 > 10
    assert schema_errors({**FULL, "extra": 1}, "CROSS-P+L")
    assert schema_errors({"phrases": FULL["phrases"]}, "CROSS-P+L")  # no label
    assert schema_errors({**FULL, "label": "GENDERED"}, "CROSS-P+L")  # MONO label in a CROSS format
    bad_phrase = {"phrase": "x", "gender": "X", "gender_correctness": "correct"}
    assert schema_errors({**FULL, "phrases": [bad_phrase]}, "CROSS-P+L")
    assert schema_errors(FULL, "MONO-P+L")  # gender_correctness is not a MONO key
    assert schema_errors({"label": "NEUTRAL"}, "CROSS-L") == []
    assert schema_errors({"label": "NEUTRAL", "phrases": []}, "CROSS-L")


def test_projection_onto_each_format_is_valid():
    for fmt in FORMATS.values():
        projected = project(FULL, fmt)
        assert schema_errors(projected, fmt) == [], fmt
    assert project(FULL, "MONO-L") == {"label": "GENDERED"}
    assert project(FULL, "MONO-P+L")["phrases"][0] == {"phrase": "la signora", "gender": "F"}
    assert project({"phrases": [], "label": "NEUTRAL"}, "CROSS-L") == {"label": "NEUTRAL"}


def test_format_names_labels_and_neutrality():
    assert judge_format("cross-pl").name == "CROSS-P+L"
    assert judge_format("MONO_L").name == "MONO-L"
    assert judge_format("cross-p+l").slug == "cross-pl"
    with pytest.raises(ValueError, match="unknown judge format"):
        judge_format("CROSS-X")
    assert [f.name for f in parse_formats("all")] == ["MONO-L", "MONO-P+L", "CROSS-L", "CROSS-P+L"]
    assert [f.name for f in parse_formats("cross-pl,mono-l")] == ["MONO-L", "CROSS-P+L"]
    assert is_neutral("NEUTRAL") and is_neutral(" neutral ") and is_neutral("N")
    assert not is_neutral("CORRECTLY GENDERED") and not is_neutral("WRONGLY GENDERED") and not is_neutral("GENDERED")


def test_consistency_rules():
    assert consistency_problems(FULL) == []
    assert consistency_problems({"phrases": [{"phrase": "x", "gender": "M", "gender_correctness": "wrong"}],
                                 "label": "NEUTRAL"})
    assert consistency_problems({"phrases": [{"phrase": "x", "gender": "N", "gender_correctness": "wrong"}],
                                 "label": "WRONGLY GENDERED"})
    assert consistency_problems({"phrases": [{"phrase": "x", "gender": "N", "gender_correctness": "correct"}],
                                 "label": "CORRECTLY GENDERED"})
