"""Where a scored translation comes from: a WMT24 system's output file, a user's TSV, or one of our models.

* WMT24 systems: ``txt-ts/system-outputs/en-<lang>/<system>.txt``, aligned line by line with the sources; a
  system that left every suite line empty (some WMT24 participants skipped the test suites) is reported, not scored;
* ``--outputs FILE``: ``seg_id<TAB>translation`` per line (``seg_id`` the suite's NNNN or its full doc id), any
  other system's translations;
* our models: :func:`translate_with_models` sends each segment to the base model and every checkpoint of the runs
  with the templated suite's plain prompt, through the sweep's backends and generation cache, so a rerun generates
  nothing and a new checkpoint is the only thing computed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gnt.data.errors import DataError
from gnt.evaluation.cache import CachedBackend, GenerationCache
from gnt.evaluation.config import EvalConfig
from gnt.evaluation.discovery import ModelUnderTest
from gnt.evaluation.results import cache_path
from gnt.generation.base import DecodingParams, GenerationBackend, GenerationRequest
from gnt.templated_suite.run import plain_messages, read_output
from gnt.templated_suite.wmt24.reader import SUITE_MARK, Segment, Suite, seg_key

log = logging.getLogger("gnt.templated_suite.wmt24")
BackendFactory = Callable[[EvalConfig, str, Sequence[str]], GenerationBackend]


@dataclass
class Translations:
    """One system's translations by segment key, and what it is (``wmt24``, ``file`` or ``model``)."""

    system: str
    kind: str
    by_seg: dict[str, str]
    source: str
    model: dict | None = None
    notes: list[str] = field(default_factory=list)


def system_folder(root: str | Path, lang: str) -> Path:
    return Path(root) / "system-outputs" / f"en-{lang}"


def available_systems(root: str | Path, lang: str) -> list[str]:
    return sorted(p.stem for p in system_folder(root, lang).glob("*.txt"))


def read_wmt24_system(suite: Suite, system: str) -> Translations:
    """The suite lines of one WMT24 system's output file (raises DataError when it is missing or misaligned)."""
    path = system_folder(suite.root, suite.lang) / f"{system}.txt"
    if not path.is_file():
        have = ", ".join(available_systems(suite.root, suite.lang)) or "none"
        raise DataError(f"no output file for system {system!r} (systems: {have})", path)
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    last = max(suite.line_indices) if suite.line_indices else -1
    if len(lines) <= last:
        raise DataError(f"{len(lines)} lines, but the suite's last segment is on line {last + 1}: not aligned", path)
    by_seg = {seg.seg_id: lines[seg.line - 1] for seg in suite.segments}
    return Translations(system, "wmt24", by_seg, str(path))


def read_outputs_file(path: str | Path, known: set[str]) -> dict[str, str]:
    """``seg_id<TAB>translation`` lines; every problem is reported as ``file:line:column`` at once."""
    from gnt.data.errors import DataErrors

    path = Path(path)
    if not path.is_file():
        raise DataError("outputs file not found", path)
    out: dict[str, str] = {}
    errors: list[DataError] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        if "\t" not in line:
            errors.append(DataError("expected seg_id<TAB>translation", path, number, 1))
            continue
        raw_id, translation = line.split("\t", 1)
        key = seg_key(raw_id) if SUITE_MARK in raw_id else raw_id.strip()
        if key not in known:
            errors.append(DataError(f"unknown segment id {raw_id!r}", path, number, 1))
        elif key in out:
            errors.append(DataError(f"segment {raw_id!r} given twice", path, number, 1))
        else:
            out[key] = translation
    if errors:
        raise errors[0] if len(errors) == 1 else DataErrors(errors)
    if not out:
        raise DataError("no translations", path)
    return out


def _default_factory(config: EvalConfig, base_model: str, adapter_paths: Sequence[str]) -> GenerationBackend:
    from gnt.evaluation.config import make_backend

    return make_backend(config, base_model, adapter_paths)


def translate_with_models(
    segments: Sequence[Segment],
    lang: str,
    models: Sequence[ModelUnderTest],
    evaluation: EvalConfig,
    backend_factory: BackendFactory | None = None,
) -> list[Translations]:
    """Translate every segment with each model (plain prompt, greedy), through the sweep's cached backends."""
    cache = GenerationCache(cache_path(evaluation.out_dir))
    factory = backend_factory or _default_factory
    params = DecodingParams(max_new_tokens=evaluation.max_new_tokens)
    results: list[Translations] = []
    by_base: dict[str, list[ModelUnderTest]] = {}
    for model in models:
        by_base.setdefault(model.base_model, []).append(model)
    for base_model, group in by_base.items():
        backend = CachedBackend(factory(evaluation, base_model, [m.adapter.path for m in group if m.adapter]), cache)
        try:
            for model in group:
                hits, misses = backend.hits, backend.misses
                requests = [
                    GenerationRequest.from_messages(plain_messages(s.source, lang), model.adapter, None, params)
                    for s in segments
                ]
                by_seg: dict[str, str] = {}
                for start in range(0, len(requests), evaluation.chunk_size):
                    chunk = requests[start : start + evaluation.chunk_size]
                    for segment, generation in zip(
                        segments[start : start + len(chunk)], backend.generate(chunk), strict=True
                    ):
                        translation, _, _ = read_output(generation, "plain", lang)
                        by_seg[segment.seg_id] = translation or ""
                log.info("%s: %d WMT24 segments (%d cached, %d generated)", model.name, len(requests),
                         backend.hits - hits, backend.misses - misses)
                info = model.describe() | {"model_id": backend.model_id, "backend": backend.describe()}
                results.append(Translations(model.name, "model", by_seg, base_model, model=info))
        finally:
            backend.close()
    return results
