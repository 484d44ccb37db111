"""Preference accuracy on held-out preference pairs: does the model itself prefer the answer DPO should teach?

A data build writes ``dpo/{train,dev,test}.jsonl``; the held-out pairs (``test``, or ``dev`` while choosing
settings) are never trained on. For each pair and each model (base, every SFT and DPO checkpoint) the chosen and
the rejected answer are scored by their length-normalised log-probability (mean log-probability per token) after
the pair's prompt; the pair is *won* when the chosen answer scores higher. Preference accuracy is the share of pairs
won, per pair kind, per language and overall, with a bootstrap CI over rows. No generation is needed: one forward
pass per side. Scores are content-addressed (model, adapter weights, prompt, completion) in one cache file beside the
generation cache, so a rerun or a second sweep over the same checkpoints scores nothing twice.

Per model folder: ``preference.jsonl`` (one line per pair) and a ``preference_accuracy`` block in ``metrics.json``.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gnt.bootstrap import BootstrapSettings, mean_ci
from gnt.filenames import PREFERENCE as PREFERENCE  # re-exported: sweep.py and the report import it from here
from gnt.filenames import PREFERENCE_CACHE
from gnt.generation.base import Adapter, GenerationBackend
from gnt.generation.scoring import CompletionScore, ScoreRequest, score_completions
from gnt.io import hash_json
from gnt.jsonl_cache import JsonlCache
from gnt.results_schema import PREFERENCE_FORMAT

log = logging.getLogger("gnt.evaluation")

SCORE_CACHE = PREFERENCE_CACHE  # the name sweep.py imports


def pairs_path(data_dir: str | Path, split: str) -> Path:
    return Path(data_dir) / "dpo" / f"{split}.jsonl"


def select_pairs(pairs: Sequence[dict], langs: Sequence[str], per_kind: int | None = None) -> list[dict]:
    """The pairs of the selected languages.

    ``per_kind`` keeps N pairs of each language and kind, taken in turn from each mGeNTE set (Set-G, Set-N, Set-G,
    ...) in file order: a fixed, reproducible subset. Taking the first N in file order would let one set fill a
    kind that holds both (``label_decision`` opens with Set-G rows), so a small subset would measure one set only.
    """
    wanted = set(langs)
    if per_kind is None:
        return [pair for pair in pairs if pair.get("lang") in wanted]
    groups: dict[tuple, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for pair in pairs:
        if pair.get("lang") in wanted:
            groups[(pair.get("lang"), pair.get("kind"))][str(pair.get("set", ""))].append(pair)
    selected = []
    for by_set in groups.values():
        queues = [by_set[name] for name in sorted(by_set)]
        taken, turn = 0, 0
        while taken < per_kind and any(turn < len(q) for q in queues):
            for queue in queues:
                if turn < len(queue) and taken < per_kind:
                    selected.append(queue[turn])
                    taken += 1
            turn += 1
    return selected


def _text(turns: Sequence[Mapping]) -> str:
    return "".join(str(m.get("content", "")) for m in turns)


def _prompt(turns: Sequence[Mapping]) -> tuple[tuple[str, str], ...]:
    return tuple((str(m["role"]), str(m["content"])) for m in turns)


class ScoreCache(JsonlCache[CompletionScore]):
    """``key -> CompletionScore`` in one append-only JSONL (failed scores are not stored: a rerun retries them)."""

    def decode(self, record: dict[str, Any]) -> CompletionScore | None:
        """A cached score; None (ignored and warned about, scored again) for a line whose numbers are not numbers."""
        logprob, n_tokens = record.get("logprob"), record.get("n_tokens")
        if isinstance(logprob, bool) or not isinstance(logprob, (int, float)) or type(n_tokens) is not int:
            return None
        return CompletionScore(float(logprob), n_tokens)

    def put_many(self, items: Sequence[tuple[str, CompletionScore]]) -> None:
        self.append(
            {"key": k, "logprob": s.logprob, "n_tokens": s.n_tokens} for k, s in items if s.error is None and k not in self
        )


def score_key(model_id: str, request: ScoreRequest) -> str:
    return hash_json({
        "model": model_id,
        "adapter": request.adapter.weights_hash if request.adapter else None,
        "prompt": request.prompt,
        "completion": request.completion,
        "score": "sum-logprob/1",
    })


def preference_records(
    pairs: Sequence[dict],
    adapter: Adapter | None,
    backend: GenerationBackend,
    cache: ScoreCache,
    batch_size: int = 8,
) -> tuple[list[dict], dict]:
    """One record per pair (scores of both sides, margin, won) and the cache counts of this model."""
    requests = []
    for pair in pairs:
        prompt = _prompt(pair["prompt"])
        requests += [ScoreRequest(prompt, _text(pair["chosen"]), adapter),
                     ScoreRequest(prompt, _text(pair["rejected"]), adapter)]
    keys = [score_key(backend.model_id, r) for r in requests]
    scores: list[CompletionScore | None] = [cache.get(k) for k in keys]
    todo = {}
    for index, (key, score) in enumerate(zip(keys, scores, strict=True)):
        if score is None and key not in todo:
            todo[key] = index
    if todo:
        fresh = score_completions(backend, [requests[i] for i in todo.values()], batch_size=batch_size)
        cache.put_many(list(zip(todo, fresh, strict=True)))
        by_key = dict(zip(todo, fresh, strict=True))
        scores = [s if s is not None else by_key[k] for k, s in zip(keys, scores, strict=True)]
    records = []
    for number, pair in enumerate(pairs):
        chosen, rejected = scores[2 * number], scores[2 * number + 1]
        record = {key: pair.get(key) for key in ("id", "lang", "set", "origin", "kind", "cell", "source_key")}
        error = (chosen.error if chosen else "not scored") or (rejected.error if rejected else "not scored")
        if error or chosen is None or rejected is None:
            record.update(error=error or "not scored", won=None)
        else:
            record.update(
                chosen=round(chosen.mean, 6), rejected=round(rejected.mean, 6),
                margin=round(chosen.mean - rejected.mean, 6), won=chosen.mean > rejected.mean, error=None,
            )
        records.append(record)
    counts = {"pairs": len(pairs), "scored": len(todo), "from_cache": len(requests) - len(todo),
              "errors": sum(r["error"] is not None for r in records)}
    return records, counts


def preference_metrics(records: Sequence[dict], bootstrap: BootstrapSettings) -> dict:
    """Preference accuracy overall, per kind and per language, with bootstrap CIs over rows (errors count as lost)."""

    def block(subset: Sequence[dict], name: str) -> dict:
        return mean_ci([float(bool(r["won"])) for r in subset], [(r["lang"], r["id"]) for r in subset], bootstrap,
                       int(hash_json([bootstrap.bootstrap_seed, name])[:8], 16))

    by_kind: dict[str, list[dict]] = defaultdict(list)
    by_lang: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        by_kind[record["kind"]].append(record)
        by_lang[record["lang"]].append(record)
    margins = [r["margin"] for r in records if r.get("margin") is not None]
    return {
        "format": PREFERENCE_FORMAT,
        "all": block(records, "all"),
        "by_kind": {kind: block(rows, f"kind|{kind}") for kind, rows in sorted(by_kind.items())},
        "by_lang": {lang: block(rows, f"lang|{lang}") for lang, rows in sorted(by_lang.items())},
        "mean_margin": round(float(np.mean(margins)), 6) if margins else None,
        "n_errors": sum(r["error"] is not None for r in records),
    }
