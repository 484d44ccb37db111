"""The OpenAI-compatible HTTP backend against the local scripted server: retries, timeouts, limits, bodies."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from http_server import OpenAITestServer, Reply, grid_answer

from gnt.generation.base import Adapter, Constraint, DecodingParams, GenerationRequest
from gnt.generation.http_backend import HTTPBackend
from gnt.output_format import extract, output_regex
from gnt.recipe import RecipeError


def request(text: str = "<en> The citizens are tired.", **kwargs) -> GenerationRequest:
    return GenerationRequest.from_messages([{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}],
                                           **kwargs)


def backend(server: OpenAITestServer, **kwargs) -> HTTPBackend:
    options = {"concurrency": 1, "timeout_s": 1.0, "max_retries": 3, "backoff_s": 0.01, "backoff_max_s": 0.05}
    return HTTPBackend(server.url, "base-model", **{**options, **kwargs})


def test_retries_a_429_and_a_timeout_then_succeeds() -> None:
    script = [Reply(status=429, headers={"Retry-After": "0"}), Reply(delay_s=1.6), Reply(content="<it> **NEUTRAL** [ok]")]
    with OpenAITestServer(script) as server:
        http = backend(server)
        [generation] = http.generate([request()])
        http.close()
    assert generation.error is None and generation.text == "<it> **NEUTRAL** [ok]"
    assert generation.finish_reason == "stop"
    assert len(server.requests) == 3 and http.stats == {"requests": 1, "retries": 2, "errors": 0}


def test_retries_5xx_and_dropped_connections() -> None:
    with OpenAITestServer([Reply(status=503), Reply(drop=True), Reply(status=500), Reply(content="fine")]) as server:
        http = backend(server)
        assert http.generate([request()])[0].text == "fine"
        http.close()
    assert len(server.requests) == 4


def test_gives_up_after_max_retries_with_an_error_not_an_exception() -> None:
    with OpenAITestServer([Reply(status=429)] * 3) as server:
        http = backend(server, max_retries=2)
        [generation] = http.generate([request()])
        http.close()
    assert generation.text == "" and "gave up after 3 attempts" in generation.error and "429" in generation.error


@pytest.mark.parametrize(
    "reply",
    [Reply(body="<html>Bad gateway page</html>"), Reply(body={"choices": []}), Reply(body={"choices": [{"message": {}}]}),
     Reply(status=400, body={"error": {"message": "unknown model"}})],
    ids=["not-json", "no-choices", "no-content", "client-error"],
)
def test_bad_replies_become_errors_without_retrying(reply: Reply) -> None:
    with OpenAITestServer([reply, Reply(content="never reached")]) as server:
        http = backend(server)
        [generation] = http.generate([request()])
        http.close()
    assert generation.error and generation.text == ""
    assert len(server.requests) == 1


def test_request_bodies_carry_adapter_constraints_and_params() -> None:
    adapter = Adapter("sft/checkpoint-8", "/x", "abc")
    schema = {"type": "object", "properties": {"label": {"enum": ["A", "B"]}}, "required": ["label"]}
    requests = [
        request(adapter=adapter, constraint=Constraint("regex", output_regex("de")), params=DecodingParams(max_new_tokens=32)),
        request(constraint=Constraint("json_schema", schema)),
    ]
    with OpenAITestServer([Reply(content="a"), Reply(content='{"label": "A"}')]) as server:
        http = backend(server)
        http.generate(requests)
        http.close()
    first, second = (r["body"] for r in server.requests)
    assert first["model"] == "sft/checkpoint-8" and second["model"] == "base-model"
    assert first["structured_outputs"] == {"regex": output_regex("de")}
    assert first["max_tokens"] == 32 and first["temperature"] == 0.0
    assert first["messages"][0] == {"role": "system", "content": "Be brief."}
    assert second["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "output", "schema": schema, "strict": True}
    }
    assert "structured_outputs" not in second


def test_older_servers_and_templates_without_system_role() -> None:
    with OpenAITestServer() as server:
        http = backend(server, regex_field="guided_regex", system_role=False)
        [generation] = http.generate([request(constraint=Constraint("regex", output_regex("es")))])
        http.close()
    body = server.requests[0]["body"]
    assert body["guided_regex"] == output_regex("es") and "structured_outputs" not in body
    assert [m["role"] for m in body["messages"]] == ["user"]  # system text folded into the user turn
    assert body["messages"][0]["content"].startswith("Be brief.")
    assert extract(generation.text, "es").error is None  # the default responder answers in the grid format


def test_concurrency_limit_is_respected_and_order_is_kept() -> None:
    def slow(body: dict) -> Reply:
        time.sleep(0.15)
        return grid_answer(body)

    with OpenAITestServer(responder=slow) as server:
        http = backend(server, concurrency=3)
        requests = [request(f"<en> sentence {i}", constraint=Constraint("regex", output_regex("it"))) for i in range(9)]
        generations = http.generate(requests)
        http.close()
    assert server.max_in_flight == 3  # ran in parallel, never more at once (the seconds: bench/waits.py)
    assert [g.text for g in generations] == [f"<it> **NEUTRAL** [sentence {i}]" for i in range(9)]


def test_the_run_record_opens_with_backend_model_and_identity_like_every_backend() -> None:
    http = HTTPBackend("http://127.0.0.1:9/v1", "served-model", concurrency=2)
    described = http.describe()
    http.close()
    assert list(described)[:3] == ["backend", "model", "model_id"]
    assert (described["backend"], described["model"], described["model_id"]) == ("http", "served-model", "served-model|http")
    assert described["base_url"] == "http://127.0.0.1:9/v1" and described["concurrency"] == 2


def test_api_key_comes_from_the_environment_and_is_never_logged(monkeypatch, caplog) -> None:
    secret = "sk-test-" + "x" * 20
    monkeypatch.setenv("GNT_TEST_KEY", secret)
    caplog.set_level(logging.DEBUG)
    with OpenAITestServer([Reply(status=429, headers={"Retry-After": "0"}), Reply(content="ok")]) as server:
        http = backend(server, api_key_env="GNT_TEST_KEY")
        http.generate([request()])
        described = http.describe()
        http.close()
    assert server.requests[-1]["headers"]["Authorization"] == f"Bearer {secret}"
    assert secret not in repr(described) and described["api_key_env"] == "GNT_TEST_KEY"
    assert secret not in caplog.text
    monkeypatch.delenv("GNT_TEST_KEY")
    with pytest.raises(RecipeError, match="GNT_TEST_KEY"):
        HTTPBackend("http://127.0.0.1:9/v1", "m", api_key_env="GNT_TEST_KEY")


def test_one_failing_request_does_not_lose_the_batch() -> None:
    lock = threading.Lock()
    seen: list[str] = []

    def responder(body: dict) -> Reply:
        text = body["messages"][-1]["content"]
        with lock:
            seen.append(text)
        return Reply(status=400) if "bad" in text else Reply(content=f"echo {text}")

    with OpenAITestServer(responder=responder) as server:
        http = backend(server, concurrency=2)
        out = http.generate([request("<en> good 1"), request("<en> bad"), request("<en> good 2")])
        http.close()
    assert out[0].text == "echo <en> good 1" and out[2].text == "echo <en> good 2"
    assert out[1].error.startswith("HTTP 400")
