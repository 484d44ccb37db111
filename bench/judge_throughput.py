"""Judge throughput: the LLM judge over the HTTP backend against a local server with a fixed per-request latency.

Why: API judges are latency-bound, not compute-bound. A judge that sends one request at a time spends a full
round trip per judgment; the HTTP backend keeps ``concurrency`` requests in flight. This measures the concurrency
the server actually saw (peak requests in flight, and the mean: requests × latency / wall time) and judgments/s
at several concurrency limits against the sequential judge (concurrency 1), on the same items and replies.

The server is the project's test server (``tests/http_server.py``): every request sleeps ``latency`` seconds and
answers with a schema-valid CROSS-P+L judgment. Each run uses a fresh in-memory judgment cache, so every item is
a request. The server's handler sends with ``TCP_NODELAY`` here: the test server otherwise writes headers and body
separately and Nagle + delayed ACK add ~40 ms to every round trip (measured), and its listen backlog is raised
from socketserver's 5 (16 clients connecting at once had some connections retried after ~1 s). Neither is what
is measured here.
Concurrency levels alternate order each repeat; medians over the repeats.

    python bench/judge_throughput.py [--items 48] [--latency 0.1] [--repeats 3]
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from record import bench_command, conclude, tests_helper

from gnt.cli.command import Call

ROOT = Path(__file__).resolve().parent.parent

LANGS = ("it", "es", "de", "el")
LEVELS = (1, 4, 8, 16)
GOALS = {"achieved_concurrency": "at every level the peak requests in flight == the limit and the mean >= half of it, "
         "no judge errors (no numeric goal is set: judgments/s and the speedup are reported)"}


def judge_reply(body: dict) -> Any:
    """A schema-valid reply for the format the request's JSON schema describes, delayed by the server."""
    Reply = tests_helper("http_server").Reply

    from gnt.judge.schema import project

    props = body["response_format"]["json_schema"]["schema"]["properties"]
    fmt = ("CROSS" if "gender_correctness" in json.dumps(props) or len(props["label"].get("enum", [])) == 3
           else "MONO") + ("-P+L" if "phrases" in props else "-L")
    annotation = {"phrases": [{"phrase": "la persona", "gender": "N", "gender_correctness": "correct"}],
                  "label": "NEUTRAL"}
    return Reply(content=json.dumps(project(annotation, fmt)), delay_s=LATENCY_S[0])


LATENCY_S = [0.1]
"""The server's per-request latency (a list so the responder, built before parsing arguments, reads the value)."""


def items(count: int) -> list:
    """``count`` distinct items over the four languages (distinct translations: distinct cache keys)."""
    from gnt.judge.llm_judge import JudgeItem

    return [JudgeItem(LANGS[i % len(LANGS)], f"The citizens are tired ({i}).", f"La cittadinanza è stanca ({i}).")
            for i in range(count)]


def run_level(url: str, server: Any, batch: list, concurrency: int) -> dict[str, Any]:
    """Judge ``batch`` with a fresh judge and cache at one concurrency limit; what the server saw and the time."""
    from gnt.generation.http_backend import HTTPBackend
    from gnt.judge.llm_judge import JudgeCache, JudgeSettings, LLMJudge

    backend = HTTPBackend(url, "bench-judge", concurrency=concurrency, timeout_s=30.0, max_retries=0)
    judge = LLMJudge(backend, JudgeSettings(), JudgeCache())
    for lang in LANGS:
        judge.prompt(lang)  # prompt files are read once per judge: not part of the judging time
    with server._lock:
        server.max_in_flight = 0
        sent_before = len(server.requests)
    started = time.perf_counter()
    results = judge.judge(batch)
    wall = time.perf_counter() - started
    backend.close()
    requests = len(server.requests) - sent_before
    return {
        "concurrency": concurrency,
        "seconds": wall,
        "judgments": len(results),
        "ok": sum(r.ok for r in results),
        "requests": requests,
        "peak_in_flight": server.max_in_flight,
        "mean_in_flight": requests * LATENCY_S[0] / wall,
        "judgments_per_s": len(results) / wall,
    }


@dataclass
class JudgeThroughputOptions:
    """How many items, how slow the server is, how many times."""

    items: int = field(default=48, metadata={"help": "distinct items judged at every concurrency level"})
    latency: float = field(default=0.1, metadata={"help": "seconds the server waits per request"})
    repeats: int = field(default=3, metadata={"help": "repeats of every level (medians over them)"})


def _run(call: Call) -> None:
    """Every concurrency level on each repeat (order alternating) against one server; medians, table, record."""
    args = call.build(JudgeThroughputOptions)
    args.latency = float(args.latency)  # the layer keeps a whole number as an int (latency=1)
    LATENCY_S[0] = args.latency

    OpenAITestServer = tests_helper("http_server").OpenAITestServer

    batch = items(args.items)
    runs: dict[int, list[dict]] = {level: [] for level in LEVELS}
    server = OpenAITestServer(responder=judge_reply)
    server._server.RequestHandlerClass.disable_nagle_algorithm = True  # this server's own handler class only
    server._server.socket.listen(64)  # socketserver listens with a backlog of 5: 16 connecting at once stall ~1 s
    with server:
        run_level(server.url, server, batch[:4], 4)  # warm-up: imports, schema compile, first connections
        for repeat in range(args.repeats):
            for level in (LEVELS if repeat % 2 == 0 else tuple(reversed(LEVELS))):
                runs[level].append(run_level(server.url, server, batch, level))
            print(f"  repeat {repeat + 1}: " + ", ".join(
                f"c={lvl} {runs[lvl][-1]['judgments_per_s']:.1f}/s" for lvl in LEVELS), flush=True)

    def med(level: int, key: str) -> float:
        """Median of one figure over the repeats of one level."""
        return statistics.median(r[key] for r in runs[level])

    sequential = med(1, "judgments_per_s")
    table: dict[str, dict[str, float]] = {
        str(level): {
            "judgments_per_s": round(med(level, "judgments_per_s"), 2),
            "speedup_vs_sequential": round(med(level, "judgments_per_s") / sequential, 2),
            "peak_in_flight": int(max(r["peak_in_flight"] for r in runs[level])),
            "mean_in_flight": round(med(level, "mean_in_flight"), 2),
            "seconds": round(med(level, "seconds"), 3),
        }
        for level in LEVELS
    }
    errors = sum(r["judgments"] - r["ok"] for level in LEVELS for r in runs[level])
    figures: dict[str, Any] = {
        "items": args.items,
        "latency_s": args.latency,
        "repeats": args.repeats,
        "format": "CROSS-P+L",
        "levels": table,
        "ideal_judgments_per_s_sequential": round(1 / args.latency, 2),
        "speedup_at_8": table["8"]["speedup_vs_sequential"],
        "speedup_at_16": table["16"]["speedup_vs_sequential"],
        "judge_errors": errors,
    }
    met = {"achieved_concurrency": errors == 0 and all(
        table[str(lvl)]["peak_in_flight"] == lvl and table[str(lvl)]["mean_in_flight"] >= lvl / 2 for lvl in LEVELS)}
    figures["goals_met"] = met
    rows: list[tuple[str, Any, str]] = []
    for level in LEVELS:
        entry = table[str(level)]
        note = "sequential baseline" if level == 1 else f"x{entry['speedup_vs_sequential']} vs sequential"
        rows.append((f"concurrency {level}: judgments/s", entry["judgments_per_s"], note))
        reached = "met" if entry["peak_in_flight"] == level and entry["mean_in_flight"] >= level / 2 else "MISSED"
        rows.append((f"concurrency {level}: in flight peak/mean", f"{entry['peak_in_flight']} / {entry['mean_in_flight']}",
                     f"peak == {level}, mean >= {level / 2:g}  {reached}"))
    rows.append(("judge errors", errors, "0"))
    title = f"judge throughput (HTTP backend, {args.items} items, {args.latency * 1000:.0f} ms per request)"
    missed = [] if met["achieved_concurrency"] else ["a level did not reach its concurrency limit (or judges failed)"]
    conclude("judge_throughput", title, rows, figures, GOALS, missed)


COMMAND = bench_command(
    __name__, __file__, "benchmark: the LLM judge over the HTTP backend at several concurrency limits",
    JudgeThroughputOptions, _run, __doc__
)
