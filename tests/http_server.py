"""A small local OpenAI-compatible chat-completions server for tests (stdlib ``http.server`` in a thread).

Behaviour is scripted: each incoming request takes the next :class:`Reply` of ``script`` (in arrival order); when
the script is used up, ``responder(body)`` answers (default: :func:`grid_answer`, a valid translation-grid answer
echoing the source). A reply can be delayed (to trigger client timeouts), carry any status (429, 500...) and
headers (``Retry-After``), return a raw non-JSON or malformed body, or drop the connection. Every request is
recorded (path, headers, JSON body) together with the peak number of requests in flight, so tests can check what a
client sent, how often it retried and that it respected its concurrency limit.

    with OpenAITestServer([Reply(status=429), Reply(content="hi")]) as server:
        backend = HTTPBackend(server.url, "tiny")
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer. ``body``: a dict (sent as JSON) or a str (sent raw); if None, a normal completion
    whose message is ``content`` (or the responder's answer when ``content`` is None too)."""

    status: int = 200
    content: str | None = None
    body: Any = None
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False
    drip_s: float = 0.0
    """Send the body 64 bytes at a time, this many seconds apart (a server that trickles its reply)."""


def completion(content: str, model: str = "test-model", finish_reason: str = "stop") -> dict:
    """An OpenAI chat-completions response carrying ``content``."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 1, "completion_tokens": max(1, len(content.split())), "total_tokens": 2},
    }


def grid_answer(body: dict) -> Reply:
    """A correct-looking grid answer: the language from the regex constraint, NEUTRAL, the source echoed."""
    regex = (body.get("structured_outputs") or {}).get("regex") or body.get("guided_regex") or ""
    match = re.match(r"<(\w\w)>", regex)
    lang = match.group(1) if match else "it"
    last = next((m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
    source = last.rsplit("<en>", 1)[-1].strip().replace("[", "(").replace("]", ")") or "x"
    return Reply(content=f"<{lang}> **NEUTRAL** [{source}]")


class OpenAITestServer:
    """Scripted ``/v1/chat/completions`` (and ``/v1/models``) on 127.0.0.1 with a free port."""

    def __init__(
        self, script: Iterable[Reply] = (), responder: Callable[[dict], Reply] | None = None
    ) -> None:
        self.script = list(script)
        self.responder = responder or grid_answer
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> OpenAITestServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> OpenAITestServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _next_reply(self, body: dict) -> Reply:
        with self._lock:
            scripted = self.script.pop(0) if self.script else None
        return scripted if scripted is not None else self.responder(body)

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep test output clean
                return

            def _send(self, status: int, payload: bytes, headers: dict[str, str], content_type: str,
                      drip_s: float = 0.0) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    if not drip_s:
                        self.wfile.write(payload)
                    for start in range(0, len(payload), 64) if drip_s else ():
                        self.wfile.write(payload[start : start + 64])
                        self.wfile.flush()
                        time.sleep(drip_s)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and went away: that is what the test wanted

            def do_GET(self) -> None:  # noqa: N802 - http.server naming
                payload = json.dumps({"object": "list", "data": [{"id": "test-model", "object": "model"}]}).encode()
                self._send(200, payload, {}, "application/json")

            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                with server._lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    reply = server._next_reply(body)
                    if reply.delay_s:
                        time.sleep(reply.delay_s)
                    if reply.drop:
                        self.close_connection = True
                        return
                    if isinstance(reply.body, str):
                        payload, kind = reply.body.encode(), "text/plain"
                    elif reply.body is not None:
                        payload, kind = json.dumps(reply.body).encode(), "application/json"
                    elif reply.status >= 400:
                        error = {"error": {"message": f"scripted {reply.status}", "code": reply.status}}
                        payload, kind = json.dumps(error).encode(), "application/json"
                    else:
                        content = reply.content if reply.content is not None else server.responder(body).content
                        payload = json.dumps(completion(content or "", body.get("model", "test-model"))).encode()
                        kind = "application/json"
                    self._send(reply.status, payload, reply.headers, kind, reply.drip_s)
                finally:
                    with server._lock:
                        server.in_flight -= 1

        return Handler
