"""One redaction path (gnt.redact) for everything written or logged: an API key echoed JSON-escaped in an error
body, a key across the error-text cut, and the password of a ``base_url`` never reach a results file, a report or
a log line (httpx's own included)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

SECRET = "sk-live/0123456789abcdefXYZ"
PASSWORD = "pa55word"


def _leaks(folder: Path, *texts: str) -> list[str]:
    """Every file under ``folder`` and every text that holds a piece of a secret."""
    pieces = (SECRET, SECRET.replace("/", "\\/"), "sk-live", "abcdefXYZ", PASSWORD)
    found = []
    for root, _, files in os.walk(folder):
        for name in files:
            data = Path(root, name).read_bytes().decode("utf-8", errors="replace")
            found += [f"{Path(root, name)}: {p}" for p in pieces if p in data]
    for number, text in enumerate(texts):
        found += [f"output {number}: {p}" for p in pieces if p in text]
    return found


def test_no_key_or_url_password_reaches_a_file_or_a_log_line(tmp_path: Path, monkeypatch, capsys, caplog) -> None:
    from http_server import OpenAITestServer, Reply, grid_answer

    from gnt.cli.evaluate import main
    from gnt.paths import RECIPES_DIR, SAMPLE_DIR

    monkeypatch.setenv("GNT_TEST_REDACT_KEY", SECRET)
    caplog.set_level(logging.INFO)
    count = {"n": 0}

    def responder(body: dict) -> Reply:
        count["n"] += 1
        if count["n"] == 1:  # the key echoed JSON-escaped, with no "Bearer" or "api_key" before it
            return Reply(status=401, body='{"error": "the key ' + SECRET.replace("/", "\\/") + ' is not valid"}')
        if count["n"] == 2:  # the key across the cut of the stored error text
            return Reply(status=403, body="x" * 280 + " key " + SECRET + " tail")
        return grid_answer(body)

    out = tmp_path / "eval"
    with OpenAITestServer(responder=responder) as server:
        url = server.url.replace("http://", f"http://alice:{PASSWORD}@")
        argv = [str(RECIPES_DIR / "eval-tiny.yaml"), "steps=grid,report", "backend=http", f"base_url={url}",
                "served_model=test-model", "model=test-model", "api_key_env=GNT_TEST_REDACT_KEY", "langs=it",
                "configs=None", "shots=0", "rows_per_lang=4", f"mgente={SAMPLE_DIR}", f"out_dir={out}",
                "progress=false", "http_retries=0", "concurrency=1", "report.wandb=false"]
        assert main(argv) == 0
    captured = capsys.readouterr()
    assert count["n"] == 4 and any("HTTP Request: POST" in r.getMessage() for r in caplog.records)  # httpx logged
    assert _leaks(out, captured.out, captured.err, caplog.text) == []
    generations = (out / "base" / "generations.jsonl").read_text(encoding="utf-8")
    assert "HTTP 401" in generations and "HTTP 403" in generations and "[REDACTED]" in generations
    assert "[REDACTED]@127.0.0.1" in (out / "base" / "record.json").read_text(encoding="utf-8")


def test_redaction_comes_before_the_cut_and_covers_escaped_and_quoted_spellings() -> None:
    from gnt.redact import clip, redact, redact_url, scrub

    text = "y" * 290 + " " + SECRET
    assert clip(text, 300, [SECRET]) == ("y" * 290 + " [REDACTED]")[:300]
    assert "sk-live" not in clip(text, 300, [SECRET])
    assert redact("echo sk-live\\/0123456789abcdefXYZ!", [SECRET]) == "echo [REDACTED]!"
    assert redact("to https://u:p%2Fq@example.org/v1") == "to https://u:[REDACTED]@example.org/v1"
    assert redact_url("http://user:pass@host:8000/v1") == "http://[REDACTED]@host:8000/v1"
    assert scrub("the standard-bearer of the party") == "the standard-bearer of the party"  # written text kept
    assert scrub('{"url": "http:\\/\\/me:secret@h\\/v1"}') == '{"url": "http:\\/\\/me:[REDACTED]@h\\/v1"}'


def test_a_registered_secret_is_scrubbed_from_every_written_file(tmp_path: Path) -> None:
    from gnt.io import append_jsonl, write_json
    from gnt.redact import register_secret

    register_secret("tok-9f8e7d6c5b4a")
    write_json(tmp_path / "a.json", {"note": "tok-9f8e7d6c5b4a"})
    append_jsonl(tmp_path / "b.jsonl", [{"text": "x tok-9f8e7d6c5b4a y"}])
    for name in ("a.json", "b.jsonl"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert "tok-9f8e7d6c5b4a" not in text and "[REDACTED]" in text
