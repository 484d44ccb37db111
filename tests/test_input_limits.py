"""Inputs that would be silently wrong: a source longer than the model's context, control characters in a source, an
HTTP server that ignores max_tokens, trickles its reply or answers as another model, a ``gnt:`` model sent to a
server by its cache path; and files written with the group's permissions (the umask), not private ones."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest
from _error_line import one_error_line

RECIPES = Path(__file__).resolve().parent.parent / "recipes"


# ------------------------------------------------------------------------------------------------ context length
@pytest.mark.usefixtures("one_torch_thread")
def test_a_prompt_beyond_the_model_context_is_a_counted_error_not_a_generation(tiny_model_dir: Path, caplog) -> None:
    from gnt.generation.base import DecodingParams, GenerationRequest
    from gnt.generation.transformers_backend import TransformersBackend

    backend = TransformersBackend(str(tiny_model_dir), device="cpu", dtype="float32", batch_size=2, cpu_threads=1)
    try:
        limit = backend.context_length()
        assert isinstance(limit, int) and limit > 0
        params = DecodingParams(max_new_tokens=8)
        long = "The citizens of the Union are tired of waiting. " * (limit // 4)
        requests = [GenerationRequest.from_messages([{"role": "user", "content": text}], params=params)
                    for text in ("Hello there.", long)]
        short, refused = backend.generate(requests)
    finally:
        backend.close()
    assert short.error is None
    assert refused.error.startswith("context_exceeded: a ") and f"the model has {limit}" in refused.error
    assert refused.text == ""
    assert "1 of 2 requests do not fit the model's" in caplog.text


# ------------------------------------------------------------------------------------------------ mGeNTE text
def test_a_nul_byte_in_a_source_is_a_validation_error_with_file_line_and_column(tmp_path: Path, capsys) -> None:
    from gnt.cli.build import main
    from gnt.paths import SAMPLE_DIR

    lines = (SAMPLE_DIR / "en-it.tsv").read_text(encoding="utf-8").split("\n")
    header = lines[0].split("\t")
    cells = lines[3].split("\t")
    cells[header.index("SRC")] = cells[header.index("SRC")][:5] + "\x00" + cells[header.index("SRC")][5:]
    lines[3] = "\t".join(cells)
    cells = lines[5].split("\t")
    cells[header.index("REF-N")] += "\x1b[31m"
    lines[5] = "\t".join(cells)
    data = tmp_path / "en-it.tsv"
    data.write_text("\n".join(lines), encoding="utf-8")
    out = tmp_path / "d"
    assert main([f"mgente={data}", "langs=it", f"out_dir={out}", "templated_pairs=0", "progress=false"]) == 2
    err = capsys.readouterr().err
    assert f"{data}:4:SRC: control character U+0000 (NUL) at character 6" in err
    assert f"{data}:6:REF-N: control character U+001B" in err and "Traceback" not in err
    assert not out.exists()


# ------------------------------------------------------------------------------------------------ HTTP servers
def _backend(server, **kwargs):
    from gnt.generation.http_backend import HTTPBackend

    options = {"concurrency": 1, "timeout_s": 5.0, "max_retries": 0, "backoff_s": 0.01, **kwargs}
    return HTTPBackend(server.url, "test-model", **options)


def _request(max_new_tokens: int = 16):
    from gnt.generation.base import DecodingParams, GenerationRequest

    return GenerationRequest.from_messages([{"role": "user", "content": "<en> Hi"}],
                                           params=DecodingParams(max_new_tokens=max_new_tokens))


def test_a_reply_far_beyond_max_tokens_is_an_error_not_kept() -> None:
    from http_server import OpenAITestServer, Reply, completion

    from gnt.generation.http_backend import reply_limit

    huge = completion("x " * (reply_limit(16) // 2 + 1000))  # ignores max_tokens=16: megabytes of text
    with OpenAITestServer([Reply(body=huge), Reply(content="<it> **NEUTRAL** [Ciao]")]) as server:
        http = _backend(server)
        first, second = http.generate([_request(), _request()])
        http.close()
    assert first.text == "" and "larger than" in first.error and "the server ignores max_tokens" in first.error
    assert second.error is None and second.text == "<it> **NEUTRAL** [Ciao]"


def test_a_trickling_server_cannot_hold_a_request_past_timeout_s() -> None:
    from http_server import OpenAITestServer, Reply

    with OpenAITestServer([Reply(content="<it> **NEUTRAL** [" + "ciao " * 200 + "]", drip_s=0.05)]) as server:
        http = _backend(server, timeout_s=1.0)  # the reply takes ~1 s per 1.3 KB: more than 1 s in all
        [generation] = http.generate([_request()])
        http.close()
    assert generation.text == "" and "no whole reply within timeout_s=1 s" in generation.error


def test_a_reply_from_another_model_is_said_once_and_recorded(caplog) -> None:
    from http_server import OpenAITestServer, Reply, completion

    caplog.set_level(logging.WARNING)
    other = completion("<it> **NEUTRAL** [Ciao]", model="some-other-model")
    dated = completion("<it> **NEUTRAL** [Ciao]", model="test-model-2025-01-01")
    with OpenAITestServer([Reply(body=other), Reply(body=other), Reply(body=dated)]) as server:
        http = _backend(server)
        generations = http.generate([_request(), _request(), _request()])
        described = http.describe()
        http.close()
    assert all(g.error is None for g in generations)  # kept: the user decides
    assert caplog.text.count("answered a request for model 'test-model' as model 'some-other-model'") == 1
    assert described["replied_models"] == {"some-other-model": 2}  # a dated snapshot of the name is the same model


def test_a_gnt_model_without_served_model_is_refused_for_a_server(tmp_path: Path, capsys, monkeypatch,
                                                                   tiny_model_dir: Path) -> None:
    from http_server import OpenAITestServer

    import gnt.models.tiny as tiny
    from gnt.cli.evaluate import main
    from gnt.paths import SAMPLE_DIR

    monkeypatch.setattr(tiny, "default_cache_dir", lambda: tiny_model_dir.parent)
    with OpenAITestServer() as server:
        argv = [str(RECIPES / "eval-tiny.yaml"), "steps=grid", "model=gnt:tiny", "backend=http",
                f"base_url={server.url}", f"out_dir={tmp_path / 'eval'}", "langs=it", "rows_per_lang=2",
                f"mgente={SAMPLE_DIR}", "progress=false"]
        assert main(argv) == 2
        assert server.requests == []  # nothing sent under the cache path's name
    line = one_error_line(capsys.readouterr().err)
    assert "backend http: the model is a build of this machine's model cache" in line
    assert "give served_model=NAME" in line


# ------------------------------------------------------------------------------------------------ permissions
def test_written_files_and_folders_follow_the_umask(tmp_path: Path) -> None:
    from gnt.io import atomic_directory, write_json, write_text_atomic
    from gnt.models.cache import build_cached

    def mode(path: Path) -> int:
        return stat.S_IMODE(path.stat().st_mode)

    before = os.umask(0o002)  # a group that shares a results folder on a cluster
    try:
        write_json(tmp_path / "record.json", {"a": 1})
        write_text_atomic(tmp_path / "report.md", "# r\n")
        with atomic_directory(tmp_path / "data") as folder:
            (folder / "x").write_text("x", encoding="utf-8")

        def builder(folder: Path) -> None:
            (folder / "gnt_model.json").write_text("{}", encoding="utf-8")

        model = build_cached(tmp_path / "models" / "tiny-x", builder)
    finally:
        os.umask(before)
    assert mode(tmp_path / "record.json") == mode(tmp_path / "report.md") == 0o664
    assert mode(tmp_path / "data") == mode(model) == 0o775
