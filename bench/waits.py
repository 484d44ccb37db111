"""Waits: the three figures that tests used to assert as wall time, measured here instead.

- the HTTP backend at concurrency 3 against ``tests/http_server.py`` answering in 150 ms: 9 requests take about
  3 round trips, not 9 (goal: ≤ 6 × 150 ms, i.e. at least 1.5× faster than one at a time);
- a second ``ensure_tiny_model`` on a warm cache: a lookup, not a rebuild (goal: ≤ 1 s);
- the checkpoint-queue watcher with ``timeout_s=0.3`` and no queue: it waits out the timeout and stops (goal:
  0.3 s ≤ time < 5 s).

The tests check the behaviour without a clock (requests in flight, the builder not called, the watcher's own
clock); these are the seconds. ``python bench/waits.py``.
"""

from __future__ import annotations

import logging
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from record import Timer, bench_command, conclude, tests_helper

from gnt.checkpoint_queue.watch import watch
from gnt.cli.command import Call
from gnt.generation.base import Constraint, GenerationRequest
from gnt.generation.http_backend import HTTPBackend
from gnt.models.tiny import ensure_tiny_model
from gnt.output_format import output_regex

DELAY_S = 0.15
REQUESTS = 9
CONCURRENCY = 3


def _http_seconds() -> float:
    server_module = tests_helper("http_server")

    def slow(body: dict):
        time.sleep(DELAY_S)
        return server_module.grid_answer(body)

    requests = [GenerationRequest.from_messages([{"role": "user", "content": f"<en> sentence {i}"}],
                                                constraint=Constraint("regex", output_regex("it")))
                for i in range(REQUESTS)]
    with server_module.OpenAITestServer(responder=slow) as server:
        backend = HTTPBackend(server.url, "base-model", concurrency=CONCURRENCY, timeout_s=5.0)
        with Timer() as timer:
            backend.generate(requests)
        backend.close()
    return timer.seconds


@dataclass
class WaitsOptions:
    """How many times the HTTP figure is measured."""

    repeats: int = field(default=3, metadata={"help": "repeats of the HTTP measurement (median over them)"})


def _run(call: Call) -> None:
    args = call.build(WaitsOptions)
    logging.getLogger().setLevel(logging.WARNING)  # as before: INFO lines are not the figures
    http = statistics.median(_http_seconds() for _ in range(args.repeats))
    with tempfile.TemporaryDirectory() as tmp:
        ensure_tiny_model(Path(tmp))  # the first build, not timed
        with Timer() as lookup:
            ensure_tiny_model(Path(tmp))
        with Timer() as waited:
            watch(Path(tmp) / "no-queue", lambda item: None, poll_s=0.05, timeout_s=0.3)
    serial = REQUESTS * DELAY_S
    figures = {"http_seconds": round(http, 3), "http_speedup": round(serial / http, 2),
               "tiny_lookup_seconds": round(lookup.seconds, 3), "watch_timeout_seconds": round(waited.seconds, 3)}
    goals = {"http_speedup": ">= 1.5", "tiny_lookup_seconds": "<= 1", "watch_timeout_seconds": ">= 0.3 and < 5"}
    figures["goals_met"] = {"http_speedup": serial / http >= 1.5, "tiny_lookup_seconds": lookup.seconds <= 1,
                            "watch_timeout_seconds": 0.3 <= waited.seconds < 5}
    missed = [f"http speed-up {figures['http_speedup']} < 1.5"] if serial / http < 1.5 else []
    missed += [f"tiny lookup {lookup.seconds:.2f} s > 1 s"] if lookup.seconds > 1 else []
    missed += [f"watch stopped after {waited.seconds:.2f} s"] if not 0.3 <= waited.seconds < 5 else []
    rows = [
        (f"HTTP, {REQUESTS} requests at concurrency {CONCURRENCY}, s", http, f"serial {serial:.2f} s"),
        ("HTTP speed-up over one at a time", serial / http, "≥ 1.5"),
        ("second ensure_tiny_model, s", lookup.seconds, "≤ 1"),
        ("watcher with timeout_s=0.3 and no queue, s", waited.seconds, "0.3 ≤ t < 5"),
    ]
    conclude("waits", "Waits (seconds that tests no longer assert)", rows, figures, goals, missed)


COMMAND = bench_command(
    __name__, __file__, "benchmark: the seconds of the waits tests no longer time",
    WaitsOptions, _run, __doc__
)
