"""The LLM judge with a scripted backend: parsing, retries with rising temperature, errors, cache, schema variant."""

from __future__ import annotations

import json

from _judge_fakes import RaisingBackend, ScriptedBackend, reply_for

from gnt.generation.base import Generation
from gnt.judge.llm_judge import JudgeCache, JudgeItem, JudgeSettings, LLMJudge, parse_reply
from gnt.judge.schema import json_schema

SRC = "The citizens are tired."
ITEMS = [
    JudgeItem("it", SRC, "I cittadini sono stanchi."),
    JudgeItem("it", SRC, "La cittadinanza è stanca."),
    JudgeItem("es", "Mrs Haug is right.", "La señora Haug tiene razón."),
]
LABELS = {
    "I cittadini sono stanchi.": "WRONGLY GENDERED",
    "La cittadinanza è stanca.": "NEUTRAL",
    "La señora Haug tiene razón.": "CORRECTLY GENDERED",
}


def test_parse_reply_cases():
    ok = parse_reply(reply_for("NEUTRAL", "CROSS-P+L"), "CROSS-P+L")
    assert ok.value["label"] == "NEUTRAL" and ok.error_kind is None
    fenced = parse_reply("```json\n" + reply_for("CG", "CROSS-P+L") + "\n```", "CROSS-P+L")
    assert fenced.value["label"] == "CORRECTLY GENDERED"
    assert parse_reply('{"label": "neutral"}', "MONO-L").value == {"label": "NEUTRAL"}
    assert parse_reply('{"label": "NEUT', "MONO-L").error_kind == "invalid_json"
    assert parse_reply("", "MONO-L").error_kind == "invalid_json"
    assert parse_reply('{"phrases": [], "label": "NEUTRAL"}', "CROSS-P+L").error_kind == "empty_phrases"
    assert parse_reply('{"label": "MAYBE"}', "CROSS-L").error_kind == "schema_violation"
    assert parse_reply('{"label": "NEUTRAL", "why": "x"}', "CROSS-L").error_kind == "schema_violation"


def test_judges_every_format_and_stores_phrases_label_and_neutrality():
    for fmt in ("MONO-L", "MONO-P+L", "CROSS-L", "CROSS-P+L"):
        backend = ScriptedBackend(LABELS)
        judge = LLMJudge(backend, JudgeSettings(format=fmt))
        out = judge.judge(ITEMS)
        assert [j.neutral for j in out] == [False, True, False]
        assert all(j.ok and j.attempts == 1 and j.error is None for j in out)
        if fmt.startswith("CROSS"):
            assert [j.label for j in out] == ["WRONGLY GENDERED", "NEUTRAL", "CORRECTLY GENDERED"]
        else:
            assert [j.label for j in out] == ["GENDERED", "NEUTRAL", "GENDERED"]
        if fmt.endswith("P+L"):
            assert all(j.phrases and {"phrase", "gender"} <= set(j.phrases[0]) for j in out)
        else:
            assert all(j.phrases is None for j in out)
        request = backend.requests[0]
        assert request.constraint.kind == "json_schema" and request.constraint.value == json_schema(fmt, "full")


def test_faults_are_retried_with_rising_temperature_then_recorded():
    faults = {
        "I cittadini sono stanchi.": ['{"phrases": [{"phrase": "I citt', '{"phrases": [], "label": "NEUTRAL"}'],
        "La cittadinanza è stanca.": [Generation("", error="timeout after 30s")],
        "La señora Haug tiene razón.": ["not json"] * 10,
    }
    backend = ScriptedBackend(LABELS, faults)
    judge = LLMJudge(backend, JudgeSettings(judge_retries=3, temperature_step=0.2))
    first, second, third = judge.judge(ITEMS)
    assert first.ok and first.attempts == 3 and first.attempt_errors == ["invalid_json", "empty_phrases"]
    assert second.ok and second.attempts == 2 and second.attempt_errors == ["backend_error"]
    assert not third.ok and third.error == "judge_error" and third.error_kind == "invalid_json"
    assert third.raw == "not json" and third.attempts == 4 and third.label is None and third.neutral is None
    assert len(set(third.request_keys)) == 4  # a new request key at every retry
    temps = [r.params.temperature for r in backend.requests if r.messages[-1][1].endswith('tiene razón."')]
    assert temps == [0.0, 0.2, 0.4, 0.6]
    stats = judge.stats.to_dict()
    assert stats["ok"] == 2 and stats["errors"] == 1 and stats["errors_by_kind"] == {"invalid_json": 1}
    assert stats["requests"] == 3 + 3 + 2 + 1  # the items still failing at each of the 4 rounds


def test_backend_that_raises_ends_in_counted_errors():
    judge = LLMJudge(RaisingBackend(), JudgeSettings(judge_retries=1))
    out = judge.judge(ITEMS)
    assert all(j.error == "judge_error" and j.error_kind == "backend_error" for j in out)
    assert "engine died" in out[0].error_detail and judge.stats.errors == 3


def test_cache_dedupes_and_a_rerun_judges_nothing(tmp_path):
    cache_path = tmp_path / "judge_cache.jsonl"
    faults = {"La señora Haug tiene razón.": ["bad"] * 10}
    backend = ScriptedBackend(LABELS, faults)
    judge = LLMJudge(backend, JudgeSettings(judge_retries=1), JudgeCache(cache_path))
    out = judge.judge(ITEMS + ITEMS)  # duplicates are judged once
    assert [j.neutral for j in out[:3]] == [j.neutral for j in out[3:]]
    assert judge.stats.unique == 3 and judge.stats.requests == 3 + 1
    records = [json.loads(line) for line in cache_path.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 3 and sum(r["error"] == "judge_error" for r in records) == 1

    rerun_backend = ScriptedBackend(LABELS)
    rerun = LLMJudge(rerun_backend, JudgeSettings(judge_retries=1), JudgeCache(cache_path))
    again = rerun.judge(ITEMS)
    assert rerun_backend.requests == [] and rerun.stats.cached == 3 and all(j.cached for j in again)
    assert [j.label for j in again] == [j.label for j in out[:3]]

    retry = LLMJudge(rerun_backend, JudgeSettings(judge_retries=1, retry_errors=True), JudgeCache(cache_path))
    fixed = retry.judge(ITEMS)
    assert len(rerun_backend.requests) == 1 and fixed[2].ok and fixed[2].label == "CORRECTLY GENDERED"
    assert JudgeCache(cache_path).get(fixed[2].cache_key)["error"] is None  # the later record wins


def test_cache_key_covers_model_format_and_prompt_but_mono_ignores_source(tmp_path):
    cache = JudgeCache()
    a = LLMJudge(ScriptedBackend(LABELS, model_id="judge-a"), JudgeSettings(), cache)
    b = LLMJudge(ScriptedBackend(LABELS, model_id="judge-b"), JudgeSettings(), cache)
    item = ITEMS[0]
    assert a.key(item) != b.key(item)
    assert a.key(item) != LLMJudge(a.backend, JudgeSettings(format="CROSS-L"), cache).key(item)
    assert a.key(item) != LLMJudge(a.backend, JudgeSettings(n_exemplars=2), cache).key(item)
    assert a.key(item) != a.key(JudgeItem("it", "Another source.", item.translation))
    mono = LLMJudge(a.backend, JudgeSettings(format="MONO-P+L"), cache)
    assert mono.key(item) == mono.key(JudgeItem("it", "Another source.", item.translation))


def test_schema_variant_follows_the_backend():
    backend = ScriptedBackend(LABELS)
    assert LLMJudge(backend).schema_variant == "full"
    backend.json_schema_strict = True
    strict = LLMJudge(backend)
    assert strict.schema_variant == "strict" and strict.constraint.value == json_schema("CROSS-P+L", "strict")
    assert LLMJudge(backend, JudgeSettings(schema_variant="full")).schema_variant == "full"
    strict.judge(ITEMS[:1])
    assert "minItems" not in json.dumps(backend.requests[-1].constraint.value)
