"""Injected faults from a local OpenAI-compatible server: invalid JSON, empty phrases, timeout and 429."""

from __future__ import annotations

import json

from _judge_fakes import reply_for
from http_server import OpenAITestServer, Reply

from gnt.generation.http_backend import HTTPBackend
from gnt.judge.llm_judge import JudgeCache, JudgeItem, JudgeSettings, LLMJudge
from gnt.judge.prompts import unquoted

ITEMS = [
    JudgeItem("it", "The citizens are tired.", "I cittadini sono stanchi."),
    JudgeItem("de", "Mrs Haug is right.", "Frau Haug hat recht."),
]
LABELS = {"I cittadini sono stanchi.": "WRONGLY GENDERED", "Frau Haug hat recht.": "CORRECTLY GENDERED"}


def responder(body: dict) -> Reply:
    target = unquoted(body["messages"][-1]["content"].split("Target: ", 1)[1])
    props = body["response_format"]["json_schema"]["schema"]["properties"]
    fmt = "CROSS-P+L" if "phrases" in props else "CROSS-L"
    return Reply(content=reply_for(LABELS[target], fmt, target))


def _backend(server: OpenAITestServer) -> HTTPBackend:
    return HTTPBackend(server.url, "judge-model", concurrency=1, timeout_s=2.0, max_retries=1, backoff_s=0.01)


def test_http_faults_end_as_retried_successes_or_counted_errors(tmp_path):
    script = [
        Reply(content='{"phrases": [{"phrase": "I citt'),  # item 1, try 1: invalid JSON (truncated)
        Reply(status=429, headers={"Retry-After": "0"}),  # item 2, try 1: 429, backed off by the backend ...
        Reply(content='{"phrases": [], "label": "NEUTRAL"}'),  # ... then an empty P+L reply
        # round 2 (temperature 0.2): item 1 times out twice (the backend gives up), item 2 succeeds
        Reply(delay_s=2.5), Reply(delay_s=2.5),
    ]
    with OpenAITestServer(script, responder) as server:
        backend = _backend(server)
        cache = tmp_path / "judgments.jsonl"
        judge = LLMJudge(backend, JudgeSettings(judge_retries=2), JudgeCache(cache))
        assert judge.schema_variant == "strict"
        first, second = judge.judge(ITEMS)
        assert first.ok and first.label == "WRONGLY GENDERED" and first.neutral is False
        assert first.attempt_errors == ["invalid_json", "backend_error"] and first.attempts == 3
        assert second.ok and second.label == "CORRECTLY GENDERED" and second.attempt_errors == ["empty_phrases"]
        assert backend.stats["retries"] >= 2  # the 429 and the first timeout were retried inside the backend
        bodies = [r["body"] for r in server.requests]
        response_format = bodies[0]["response_format"]
        assert response_format["type"] == "json_schema" and response_format["json_schema"]["strict"] is True
        schema_text = json.dumps(response_format["json_schema"]["schema"])
        assert "minItems" not in schema_text and "maxItems" not in schema_text
        assert sorted({b["temperature"] for b in bodies}) == [0.0, 0.2, 0.4]
        n_requests = len(server.requests)
        # a rerun through the same server judges nothing
        again = LLMJudge(backend, JudgeSettings(judge_retries=2), JudgeCache(cache)).judge(ITEMS)
        assert [j.label for j in again] == [first.label, second.label] and len(server.requests) == n_requests
        backend.close()


def test_http_persistent_failure_is_a_counted_judge_error(tmp_path):
    with OpenAITestServer([Reply(status=429)] * 2 + [Reply(content="I cannot answer that.")] * 5, responder) as server:
        backend = _backend(server)
        judge = LLMJudge(backend, JudgeSettings(judge_retries=1))
        (result,) = judge.judge(ITEMS[:1])
        assert result.error == "judge_error" and result.error_kind == "invalid_json"
        assert result.raw == "I cannot answer that." and result.attempt_errors == ["backend_error", "invalid_json"]
        assert judge.stats.errors == 1 and judge.stats.errors_by_kind == {"invalid_json": 1}
        backend.close()
