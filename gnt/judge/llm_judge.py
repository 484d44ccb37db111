"""The LLM judge: build requests, parse and validate replies, retry, cache, and never lose an item.

One item is (language, source, translation). The judge sends the format's prompt (system text, exemplars, the item)
with the format's JSON schema as an output constraint, parses the reply and validates it against the full schema.
A reply that is not JSON, breaks the schema, or (P+L) lists no phrases is retried up to ``max_retries`` times, each
retry with the temperature raised by ``temperature_step``, so it is a new request (a new cache key for the
backend) and can come out differently; a backend failure (timeout, 429 after the backend's own backoff) is retried
the same way. After the last try the item becomes a ``judge_error`` record that keeps the last raw text, so the run
always completes, the errors are counted, and nobody has to guess what the judge wrote.

A judge in an L format on the transformers backend can instead *score* its labels (``label_scoring``): each label's
reply (``{"label": "NEUTRAL"}``) is weighed by the model's log-probability, the most probable one is the verdict and
its probability is kept in the judgment. No text is generated, so nothing can fail to parse; a trained judge adapter
(docs/judge.md) is used this way on a CPU.

Judgments are cached in a JSON-lines file keyed by (judge model and adapter, format, language, source, translation,
prompt fingerprint): the same translation produced by several cells or checkpoints is judged once, and a rerun judges
nothing twice. The prompt fingerprint is in the key so that editing a system text or an exemplar never reuses
judgments made with the old prompt. ``judge_error`` records are cached too (a rerun does not silently spend money
on them again); ``retry_errors=True`` judges them anew.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from gnt.generation.base import (
    Adapter,
    Constraint,
    DecodingParams,
    Generation,
    GenerationBackend,
    GenerationRequest,
)
from gnt.io import hash_json
from gnt.jsonl_cache import JsonlCache
from gnt.judge.phrases import phrase_missing
from gnt.judge.prompts import JudgePrompt, load_prompt, render_reply
from gnt.judge.schema import (
    DEFAULT_FORMAT,
    FORMAT_NAMES,
    JudgeFormat,
    SchemaVariant,
    is_neutral,
    json_schema,
    judge_format,
    normalise_label,
    schema_errors,
)
from gnt.redact import redact
from gnt.settings import DecodingSettings

log = logging.getLogger(__name__)

JUDGE_ERROR = "judge_error"
ErrorKind = Literal["backend_error", "invalid_json", "schema_violation", "empty_phrases", "phrase_not_in_translation"]
ERROR_KINDS: tuple[str, ...] = ("backend_error", "invalid_json", "schema_violation", "empty_phrases",
                                "phrase_not_in_translation")


@dataclass(frozen=True)
class JudgeItem:
    """What is judged: a translation into ``lang`` of ``source`` (the source is ignored by MONO formats)."""

    lang: str
    source: str
    translation: str


@dataclass
class JudgeSettings(DecodingSettings):
    """How an LLM judge asks and re-asks: the judge's own keys of ``eval/judge.py`` (:class:`gnt.judge.config.
    JudgeRecipe` is made of this group and the backend's), each default and meaning written once, here.

    ``max_new_tokens`` and ``chunk_size`` have the judge's defaults (its replies are JSON objects, longer than a
    translation); the backend batches within a call by its own ``batch_size``.
    """

    max_new_tokens: int = field(default=512, metadata={"help": "token cap per judge reply"})
    chunk_size: int = field(default=64, metadata={"help": "judge requests per backend call and per cache write"})
    format: str = field(default=DEFAULT_FORMAT, metadata={"help": f"one of {', '.join(FORMAT_NAMES)}"})
    judge_retries: int = field(default=3, metadata={
        "help": "asks again after a reply that does not parse (or a backend failure), each warmer"})
    temperature: float = field(default=0.0, metadata={"help": "sampling temperature of the first ask"})
    temperature_step: float = field(default=0.2, metadata={
        "help": "added to the temperature at each re-ask, so a re-ask is a new request (and cache key)"})
    seed: int = field(default=DecodingParams.seed, metadata={"help": "sampling seed of the judge"})
    schema_variant: Literal["auto", "full", "strict"] = field(default="auto", metadata={
        "help": "JSON schema of the reply: full (with bounds), strict (no array/string bounds, for OpenAI-style "
                "servers), auto: strict on http, else full"})
    retry_errors: bool = field(default=False, metadata={
        "help": "judge anew the items whose cached judgment is a judge error (false: keep them as errors)"})
    n_exemplars: int | None = field(default=None, metadata={
        "help": "exemplars (shots) in the judge prompt (null: every exemplar of the format)"})
    prompts_dir: str | None = field(default=None, metadata={"help": "folder of judge prompt files (null: the bundled ones)"})
    exemplars_dir: str | None = field(default=None, metadata={"help": "folder of judge exemplars (null: the bundled ones)"})
    judge_resources: str | None = field(default=None, metadata={
        "help": "a folder in the fbk-NEUTR-evAL layout (prompts/, shots/): replaces prompts_dir/exemplars_dir"})
    skip_bad_shots: bool = field(default=False, metadata={
        "help": "judge_resources: leave out shots with errors (listed as warnings) instead of stopping"})
    label_scoring: bool = field(default=False, metadata={
        "help": "L formats on the transformers backend: take the label with the highest log-probability instead of "
                "generating a reply (its probability is kept in the judgment; nothing can fail to parse)"})
    recheck_dtype: Literal["float32", "float16", "bfloat16"] | None = field(default=None, metadata={
        "help": "label scoring: score again, by the same judge loaded in this dtype, every verdict whose label "
                "probability is within recheck_margin of a tie (a bfloat16 pass moves a probability with the batch "
                "it runs in, so a near-tie label would change with what else was judged; null: never)"})
    recheck_margin: float = field(default=0.15, metadata={
        "help": "recheck_dtype: how near a tie a verdict is scored again (the top label's probability minus the "
                "next one's is under twice this)"})

    def validate_recheck(self) -> None:
        """A recheck needs label scoring (a generated reply has no probability to be near a tie) and a margin a
        probability can fall within."""
        if self.recheck_dtype and not self.label_scoring:
            raise ValueError(f"recheck_dtype={self.recheck_dtype} needs label_scoring: true (only a scored label has "
                             "a probability to recheck)")
        if not 0 < self.recheck_margin <= 0.5:
            raise ValueError(f"recheck_margin must be in (0, 0.5] (got {self.recheck_margin})")

    def temperature_at(self, attempt: int) -> float:
        return round(min(self.temperature + self.temperature_step * attempt, MAX_TEMPERATURE), 4)

    def judge_settings(self, fmt: str | None = None) -> JudgeSettings:
        """This group alone (of a recipe made of several), for format ``fmt`` (default: its own)."""
        values = {f.name: getattr(self, f.name) for f in fields(JudgeSettings)}
        return JudgeSettings(**{**values, "format": judge_format(fmt or self.format).name})


MAX_TEMPERATURE = 1.5
"""The warmest re-ask: ``temperature + temperature_step * attempt`` stops rising here."""


@dataclass(frozen=True)
class ParsedReply:
    """A reply read against a format: ``value`` when valid, else ``error_kind`` and ``detail``."""

    value: dict[str, Any] | None
    error_kind: str | None = None
    detail: str = ""


def _json_object_text(text: str) -> str:
    """The text from the first ``{``, without Markdown code fences (API models sometimes add them)."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    start = stripped.find("{")
    return stripped[start:] if start >= 0 else stripped


def parse_reply(text: str, fmt: str | JudgeFormat, translation: str | None = None) -> ParsedReply:
    """Read a judge reply: JSON object → label normalisation → empty-phrases check → full-schema validation →
    (given the ``translation``) every phrase occurs in it.

    Text after the closing brace is ignored (a chatty API model); a label written in another case or as an alias
    (``cg``, ``neutral``) is normalised before validation, since it is unambiguous. A phrase whose words are not
    words of the translation (an invented phrase, or one an injected text made the judge copy from elsewhere) is
    a ``phrase_not_in_translation`` error, retried like any invalid reply (:mod:`gnt.judge.phrases`).
    """
    fmt = judge_format(fmt)
    body = _json_object_text(text or "")
    try:
        obj, _ = json.JSONDecoder().raw_decode(body)
    except json.JSONDecodeError as exc:
        return ParsedReply(None, "invalid_json", f"{exc.msg} at character {exc.pos}")
    if not isinstance(obj, dict):
        return ParsedReply(None, "invalid_json", f"expected a JSON object, found {type(obj).__name__}")
    if isinstance(obj.get("label"), str) and normalise_label(obj["label"]) in fmt.labels:
        obj["label"] = normalise_label(obj["label"])
    if fmt.phrases and obj.get("phrases") == []:
        return ParsedReply(None, "empty_phrases", "a P+L reply must list at least one phrase")
    problems = schema_errors(obj, fmt)
    if problems:
        return ParsedReply(None, "schema_violation", "; ".join(problems[:5]))
    missing = phrase_missing(obj, translation) if translation is not None else None
    if missing is not None:
        return ParsedReply(None, "phrase_not_in_translation", f"phrase {missing!r} does not occur in the translation")
    return ParsedReply(obj)


@dataclass
class Judgment:
    """The judgment of one item (a cache record): the phrases, the label and the binary neutrality, or an error."""

    cache_key: str
    judge_model: str
    format: str
    lang: str
    source: str
    translation: str
    prompt_fingerprint: str
    label: str | None = None
    neutral: bool | None = None
    phrases: list[dict[str, str]] | None = None
    probability: float | None = None
    """With label scoring: the verdict's probability among the format's labels."""
    label_probabilities: dict[str, float] | None = None
    rechecked_in: str | None = None
    """With a recheck: the dtype this near-tie verdict was scored again in (its label and probabilities are that
    pass's)."""
    error: str | None = None
    error_kind: str | None = None
    error_detail: str = ""
    raw: str = ""
    attempts: int = 0
    attempt_errors: list[str] = field(default_factory=list)
    request_keys: list[str] = field(default_factory=list)
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and self.label is not None

    def to_record(self) -> dict[str, Any]:
        record = {k: v for k, v in self.__dict__.items() if k != "cached"}
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Judgment:
        fields = {k: record[k] for k in cls.__dataclass_fields__ if k in record and k != "cached"}
        return cls(**fields, cached=True)


def _tie_gap(probabilities: Sequence[float]) -> float:
    """The top label's probability minus the next one's (1 with a single label)."""
    top = sorted(probabilities, reverse=True)
    return top[0] - top[1] if len(top) > 1 else 1.0


def judgment_key(judge_model: str, fmt: str, prompt_fingerprint: str, item: JudgeItem) -> str:
    """Cache key of an item's judgment. MONO formats never see the source, so it is left out of their key."""
    return hash_json(
        {
            "judge": judge_model,
            "format": fmt,
            "lang": item.lang,
            "source": item.source if judge_format(fmt).cross else None,
            "translation": item.translation,
            "prompt": prompt_fingerprint,
        }
    )


class JudgeCache(JsonlCache[dict]):
    """Judgments by cache key, persisted as JSON lines (appended as they complete; a killed run keeps its work).

    Without a path the cache lives in memory only. A key seen twice keeps its last record, so a later successful
    retry of a cached ``judge_error`` wins (:class:`gnt.jsonl_cache.JsonlCache`).
    """

    key_field = "cache_key"

    def put(self, judgments: Iterable[Judgment]) -> None:
        self.append(j.to_record() for j in judgments)


@dataclass
class JudgeStats:
    """Counts of one judge call: what was asked, served from cache, judged, retried and failed."""

    items: int = 0
    unique: int = 0
    cached: int = 0
    judged: int = 0
    ok: int = 0
    errors: int = 0
    retried: int = 0
    requests: int = 0
    rechecked: int = 0
    errors_by_kind: Counter = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["errors_by_kind"] = dict(self.errors_by_kind)
        return data


def speaks_openai_strict(backend: GenerationBackend) -> bool:
    """Whether a backend sends JSON schemas as OpenAI ``response_format`` strict mode.

    A backend may say so with a ``json_schema_strict`` attribute; otherwise the OpenAI-compatible HTTP backend
    does (a wrapper such as the evaluation's ``CachedBackend`` is looked through via its ``backend``).
    """
    seen = 0
    while backend is not None and seen < 5:
        declared = getattr(backend, "json_schema_strict", None)
        if declared is not None:
            return bool(declared)
        try:
            from gnt.generation.http_backend import HTTPBackend
        except ImportError:  # pragma: no cover - httpx missing: no HTTP backend can exist
            return False
        if isinstance(backend, HTTPBackend):
            return True
        backend, seen = getattr(backend, "backend", None), seen + 1
    return False


def resolve_schema_variant(backend: GenerationBackend, requested: str) -> SchemaVariant:
    """``full`` or ``strict``: ``auto`` picks ``strict`` for a backend that speaks OpenAI strict mode."""
    if requested in ("full", "strict"):
        return requested  # type: ignore[return-value]
    return "strict" if speaks_openai_strict(backend) else "full"


def judge_prompt(config: JudgeSettings, lang: str) -> JudgePrompt:
    """The prompt of one language in ``config``'s format: from a published resources folder, or from the prompt
    and exemplar files (bundled, or the recipe's folders)."""
    fmt = judge_format(config.format)
    if config.judge_resources:
        from gnt.judge.resources import load_resource_prompt

        return load_resource_prompt(config.judge_resources, lang, fmt, config.n_exemplars, config.skip_bad_shots)
    return load_prompt(lang, fmt, config.prompts_dir, config.exemplars_dir, config.n_exemplars)


class LLMJudge:
    """Judges items with a generation backend in one format; prompts are loaded per language on first use.

    ``adapter`` is a LoRA adapter applied to every request (a trained judge); with ``label_scoring`` the verdict is
    the most probable label reply instead of a generated one. ``recheck`` builds, when first needed, the same judge
    in the config's ``recheck_dtype``: near-tie verdicts are scored again by it (:meth:`close` releases it).
    """

    def __init__(
        self,
        backend: GenerationBackend,
        config: JudgeSettings | None = None,
        cache: JudgeCache | None = None,
        prompts: dict[str, JudgePrompt] | None = None,
        adapter: Adapter | None = None,
        recheck: Callable[[], GenerationBackend] | None = None,
    ) -> None:
        self.backend = backend
        self.config = (config or JudgeSettings()).judge_settings()
        self.fmt = judge_format(self.config.format)
        if self.config.label_scoring and self.fmt.phrases:
            raise ValueError(f"label scoring needs an L format (the label alone): {self.fmt.name} replies with phrases, "
                             "which only generation can write")
        self.adapter = adapter
        self._recheck = recheck if self.config.label_scoring and self.config.recheck_dtype else None
        self._recheck_backend: GenerationBackend | None = None
        self.cache = cache if cache is not None else JudgeCache()
        self._prompts: dict[str, JudgePrompt] = dict(prompts or {})
        self.schema_variant = resolve_schema_variant(backend, self.config.schema_variant)
        self.constraint = Constraint("json_schema", json_schema(self.fmt, self.schema_variant))
        self.stats = JudgeStats()

    @property
    def model_id(self) -> str:
        """The judge's identity in cache keys and records: the base model, the adapter's weights, and how the label
        is read (a scored label and a generated one are different judgments, and so are near-tie labels scored again
        in another dtype)."""
        identity = self.backend.model_id
        if self.adapter is not None:
            identity += f"+{self.adapter.name}@{self.adapter.weights_hash}"
        if self.config.label_scoring:
            identity += "|label-scoring"
        if self._recheck is not None:
            identity += f"|recheck-{self.config.recheck_dtype}<{self.config.recheck_margin:g}"
        return identity

    def prompt(self, lang: str) -> JudgePrompt:
        if lang not in self._prompts:
            self._prompts[lang] = judge_prompt(self.config, lang)
            for warning in self._prompts[lang].warnings:
                log.warning("judge exemplars: %s", warning)
        return self._prompts[lang]

    def describe(self) -> dict[str, Any]:
        """What a run record needs to reproduce this judge."""
        return {
            "kind": "llm",
            "format": self.fmt.name,
            "judge_model": self.model_id,
            "backend": self.backend.describe(),
            "schema_variant": self.schema_variant,
            "scoring": "labels" if self.config.label_scoring else "generation",
            "recheck": None if self._recheck is None else {
                "dtype": self.config.recheck_dtype, "margin": self.config.recheck_margin},
            "adapter": None if self.adapter is None else {
                "name": self.adapter.name, "path": self.adapter.path, "weights_hash": self.adapter.weights_hash},
            "config": asdict(self.config),
            "prompts": {
                lang: {
                    "system": p.system_path,
                    "exemplars": p.exemplars_path,
                    "n_exemplars": len(p.exemplars),
                    "fingerprint": p.fingerprint,
                }
                for lang, p in sorted(self._prompts.items())
            },
        }

    def request(self, item: JudgeItem, attempt: int) -> GenerationRequest:
        params = DecodingParams(
            max_new_tokens=self.config.max_new_tokens,
            temperature=self.config.temperature_at(attempt),
            seed=self.config.seed,
        )
        messages = self.prompt(item.lang).messages(item.source, item.translation)
        return GenerationRequest.from_messages(messages, adapter=self.adapter, constraint=self.constraint, params=params)

    def key(self, item: JudgeItem) -> str:
        return judgment_key(self.model_id, self.fmt.name, self.prompt(item.lang).fingerprint, item)

    def judge(self, items: Sequence[JudgeItem], progress: Callable[[int, int], None] | None = None) -> list[Judgment]:
        """One judgment per item, in order. Never raises for a reply or a backend failure: those become errors."""
        stats = JudgeStats(items=len(items))
        keys = [self.key(item) for item in items]
        unique: dict[str, JudgeItem] = dict(zip(keys, items, strict=True))
        stats.unique = len(unique)
        done: dict[str, Judgment] = {}
        pending: dict[str, Judgment] = {}
        for key, item in unique.items():
            record = self.cache.get(key)
            if record is not None and (record.get("error") is None or not self.config.retry_errors):
                done[key] = Judgment.from_record(record)
                stats.cached += 1
            else:
                prompt = self.prompt(item.lang)
                pending[key] = Judgment(
                    cache_key=key,
                    judge_model=self.model_id,
                    format=self.fmt.name,
                    lang=item.lang,
                    source=item.source if self.fmt.cross else "",
                    translation=item.translation,
                    prompt_fingerprint=prompt.fingerprint,
                )
        stats.judged = len(pending)
        if self.config.label_scoring:
            self._score_labels(unique, pending, done, stats, progress)
        for attempt in range(0 if self.config.label_scoring else self.config.judge_retries + 1):
            if not pending:
                break
            if attempt > 0:
                stats.retried += len(pending)
            keys_now = list(pending)
            for start in range(0, len(keys_now), self.config.chunk_size):
                batch = keys_now[start : start + self.config.chunk_size]
                requests = [self.request(unique[k], attempt) for k in batch]
                generations = self._generate(requests)
                stats.requests += len(requests)
                finished = []
                for key, request, generation in zip(batch, requests, generations, strict=True):
                    judgment = pending[key]
                    self._record_attempt(judgment, request, generation)
                    if judgment.ok:
                        finished.append(pending.pop(key))
                self._keep(finished, done, stats, progress)
        for judgment in pending.values():
            judgment.error = JUDGE_ERROR
        self.cache.put(pending.values())
        done.update(pending)
        for judgment in done.values():
            if judgment.ok:
                stats.ok += 1
            else:
                stats.errors += 1
                stats.errors_by_kind[judgment.error_kind or "unknown"] += 1
        self.stats = stats
        if stats.errors:
            log.warning("judge: %d of %d unique items ended as judge_error %s", stats.errors, stats.unique,
                        dict(stats.errors_by_kind))
        return [done[key] for key in keys]

    def _score_labels(self, unique: dict[str, JudgeItem], pending: dict[str, Judgment], done: dict[str, Judgment],
                      stats: JudgeStats, progress: Callable[[int, int], None] | None) -> None:
        """Judge ``pending`` items by their labels' log-probabilities (one pass per chunk); what fails stays pending
        with its ``backend_error`` (scoring is deterministic: asking again would give the same failure)."""
        from gnt.generation.scoring import ChoiceRequest, ChoiceScores, score_choices

        labels = self.fmt.labels
        replies = tuple(render_reply({"label": label}) for label in labels)
        keys_now = list(pending)
        for start in range(0, len(keys_now), self.config.chunk_size):
            batch = keys_now[start : start + self.config.chunk_size]
            requests = [ChoiceRequest(GenerationRequest.from_messages(
                self.prompt(unique[k].lang).messages(unique[k].source, unique[k].translation)).messages,
                replies, self.adapter) for k in batch]
            rechecked: set[int] = set()
            try:
                scores: list[ChoiceScores | None] = list(score_choices(
                    self.backend, requests, batch_size=getattr(self.backend, "batch_size", 16)))
                rechecked = self._rescore_near_ties(requests, scores)
            except Exception as exc:  # noqa: BLE001 - e.g. a backend that cannot score: counted, never a crash
                scores = [None] * len(batch)
                failure = f"{type(exc).__name__}: {exc}"
            stats.requests += len(batch)
            stats.rechecked += len(rechecked)
            finished = []
            for index, (key, score) in enumerate(zip(batch, scores, strict=True)):
                judgment = pending[key]
                judgment.attempts += 1
                if score is None or score.error:
                    judgment.error_kind = "backend_error"
                    judgment.error_detail = redact(score.error if score is not None else failure) or ""
                    judgment.attempt_errors.append("backend_error")
                    continue
                probabilities = score.probabilities()
                best = max(range(len(labels)), key=lambda i: probabilities[i])
                judgment.label = labels[best]
                judgment.neutral = is_neutral(judgment.label)
                judgment.probability = round(probabilities[best], 6)
                judgment.label_probabilities = {label: round(p, 6) for label, p in zip(labels, probabilities, strict=True)}
                judgment.raw = replies[best]
                judgment.rechecked_in = self.config.recheck_dtype if index in rechecked else None
                finished.append(pending.pop(key))
            self._keep(finished, done, stats, progress)

    def _rescore_near_ties(self, requests: list, scores: list) -> set[int]:
        """Score again, in the recheck dtype, the requests whose two most probable labels are within twice the
        margin of each other; their scores are replaced in place (a failed recheck is that item's error). Returns
        the indices rescored.

        Why: in bfloat16 a row's probabilities depend on the batch it is padded into (the rounding of a matrix
        product follows its shape), by a few hundredths at most on the learned judge's references
        (bench/judge_scoring_dtype.py). A verdict far from a tie cannot flip by that much; one near it is read again
        in a dtype whose rounding does not reach the label, so a label does not depend on what else was judged.
        """
        from gnt.generation.scoring import score_choices

        if self._recheck is None:
            return set()
        near = [i for i, score in enumerate(scores) if score is not None and not score.error
                and _tie_gap(score.probabilities()) < 2 * self.config.recheck_margin]
        if not near:
            return set()
        if self._recheck_backend is None:
            self._recheck_backend = self._recheck()
        again = score_choices(self._recheck_backend, [requests[i] for i in near],
                              batch_size=getattr(self._recheck_backend, "batch_size", 16))
        for index, score in zip(near, again, strict=True):
            scores[index] = score
        return set(near)

    def close(self) -> None:
        """Release the recheck model, if one was loaded (the main backend belongs to whoever built it)."""
        if self._recheck_backend is not None:
            self._recheck_backend.close()
            self._recheck_backend = None

    def _keep(self, finished: list[Judgment], done: dict[str, Judgment], stats: JudgeStats,
              progress: Callable[[int, int], None] | None) -> None:
        """Cache a chunk's finished judgments as they complete (a killed run keeps its work) and report progress."""
        self.cache.put(finished)
        done.update((j.cache_key, j) for j in finished)
        if progress is not None:
            progress(len(done), stats.unique)

    def _generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        try:
            generations = list(self.backend.generate(requests))
        except Exception as exc:  # noqa: BLE001 - a backend must not raise, but one failure must not end the run
            log.warning("judge backend raised %s: %s", type(exc).__name__, exc)
            return [Generation("", error=f"{type(exc).__name__}: {exc}") for _ in requests]
        if len(generations) != len(requests):
            missing = Generation("", error=f"backend returned {len(generations)} results for {len(requests)} requests")
            generations = (generations + [missing] * len(requests))[: len(requests)]
        return generations

    def _record_attempt(self, judgment: Judgment, request: GenerationRequest, generation: Generation) -> None:
        judgment.attempts += 1
        judgment.request_keys.append(request.key(self.model_id))
        judgment.raw = redact(generation.text or "") or ""
        if generation.error:
            kind, detail = "backend_error", generation.error
        else:
            parsed = parse_reply(generation.text, self.fmt, judgment.translation)
            if parsed.value is not None:
                judgment.label = parsed.value["label"]
                judgment.neutral = is_neutral(judgment.label)
                judgment.phrases = parsed.value.get("phrases")
                judgment.error = judgment.error_kind = None
                judgment.error_detail = ""
                return
            kind, detail = parsed.error_kind or "invalid_json", parsed.detail
        judgment.error_kind = kind
        judgment.error_detail = redact(detail) or ""
        judgment.attempt_errors.append(kind)
