"""Generation with transformers: CPU and small GPUs, one base model, LoRA adapters swapped in place.

The base model is loaded once per backend, lazily on the first request that is not served from a cache (so a
fully cached rerun never loads it); :attr:`TransformersBackend.loads` counts loads process-wide, which the tests
and benchmarks read. Adapters are attached to that one model with PEFT (``load_adapter`` / ``set_adapter``) and
requests for the base model run with the adapters disabled, so evaluating N checkpoints costs one base load and N
small adapter loads.

Requests are grouped by (adapter, constrained or not, decoding params). With prefix reuse on (the default), a
group is split into clusters of prompts that share a long prefix (one grid cell; one judge language and format),
the key/value cache of that prefix is computed once per (adapter, prefix) and kept in a small LRU
(:mod:`gnt.generation.prefix_cache`), and every batch of the cluster starts ``generate`` from a copy of it, so only
each row's own suffix is prefilled. A batch is laid out as ``[prefix][padding][suffix]`` with an attention mask
over the padding; ``generate`` derives each row's positions from that mask, so a row sees exactly the positions
and tokens it would see left-padded without the prefix (the equality tests check greedy outputs token for token).
Within a cluster rows are sorted by suffix length (less padding) and cut into batches of ``batch_size``. With
reuse off, a group is sorted by prompt length and generated in plain left-padded batches.

Output constraints go through xgrammar (:mod:`gnt.generation.constrained`), compiled once per constraint; the
grammar admits only a stop token once the output is complete, so a constrained row ends right after its closing
bracket and a batch runs only as many steps as its longest row needs (:attr:`TransformersBackend.stats` counts
steps run beyond that; ``generate`` cannot drop finished rows from a batch, they ride along as padding). A batch
that fails (e.g. out of memory) is split in halves and retried, so one bad request yields one error, not a lost
batch.

A request whose prompt and ``max_new_tokens`` do not fit the model's context (``max_position_embeddings``) is not
generated: past its last position a model reads positions it was never trained on and writes noise, without a
word. It becomes an error of its own (``context_exceeded: ...``, counted like every failed generation) and the
run says once how many there were.

On CPU, torch uses as many threads as the process may run on (its CPU affinity) unless ``cpu_threads`` says
otherwise; the setting is process-wide and restored by :meth:`TransformersBackend.close`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from gnt.generation.base import (
    DEFAULT_PREFIX_CACHING,
    Adapter,
    DecodingParams,
    Generation,
    GenerationBackend,
    GenerationRequest,
)
from gnt.generation.identity import adapter_weights_hash, model_identity
from gnt.generation.prefix_cache import MIN_PREFIX_TOKENS, PrefixStore, batch_copy, prefix_clusters

if TYPE_CHECKING:  # for the annotation only: _ensure_model imports it when the model loads
    from gnt.generation.constrained import GrammarCache

log = logging.getLogger(__name__)

PREFIX_SLACK_TOKENS = 32
"""A stored prefix this many tokens shorter than a cluster's shared prefix is reused rather than a new one built:
the few extra tokens are prefilled with each row, which costs less than another prefix forward pass."""


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask, which containers and ``taskset`` narrow), else the count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclass
class GenerationStats:
    """What the backend did, summed over calls: the benchmark's prefill/decode figures and the tests' checks.

    ``prompt_tokens`` are the requests' prompt tokens; ``prefilled_tokens`` those that went through a forward pass
    (each shared prefix once, then each row's suffix), so their difference is what prefix reuse saved.
    ``prefill_s`` covers prefix forward passes and each batch's prefill (up to its first token), ``decode_s`` the
    rest of each ``generate`` call. ``wasted_steps`` counts decode steps a batch ran after every row had stopped
    (expected 0: ``generate`` ends a batch when its last row has stopped).
    """

    requests: int = 0
    batches: int = 0
    prompt_tokens: int = 0
    prefilled_tokens: int = 0
    prefix_builds: int = 0
    prefix_hits: int = 0
    prefill_s: float = 0.0
    generated_tokens: int = 0
    decode_steps: int = 0
    decode_s: float = 0.0
    wasted_steps: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class _StepClock:
    """A logits processor that changes nothing and records when each step's logits arrive (the first one marks
    the end of prefill) and how many steps ran."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def __call__(self, input_ids, scores):
        self.times.append(time.perf_counter())
        return scores


def contiguous_head_input(model) -> None:
    """Hand the LM head a contiguous copy of the hidden states it projects.

    transformers slices the last positions (``logits_to_keep``) out of the hidden states before the LM head, a
    strided view; on a CPU, torch's matmul with a strided input of Gemma's 262k-row head took 10 s in bfloat16 and
    1 s in float32 where the same rows copied first took 0.06 s and 0.17 s (measured, 16 rows x 6 positions). One
    copy of a few rows is nothing beside the projection.
    """
    head = model.get_output_embeddings()
    if head is not None and not getattr(head, "gnt_contiguous", False):
        head.register_forward_pre_hook(lambda _module, args: (args[0].contiguous(), *args[1:]))
        head.gnt_contiguous = True


def _as_list(value) -> list[int]:
    if value is None:
        return []
    return [int(v) for v in value] if isinstance(value, (list, tuple)) else [int(value)]


def peft_adapter_name(name: str) -> str:
    """PEFT stores adapters in ``ModuleDict``s whose keys may not contain dots; everything else is kept."""
    return re.sub(r"[^\w/-]", "_", name)


class TransformersBackend(GenerationBackend):
    """Batched (constrained) generation for one base model with any number of LoRA adapters."""

    name = "transformers"

    loads: ClassVar[int] = 0
    """Base-model loads in this process, over all instances (a sweep over N checkpoints must add exactly one)."""

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        dtype: str = "auto",
        device: str = "auto",
        batch_size: int = 16,
        max_loaded_adapters: int = 4,
        attn_implementation: str | None = None,
        trust_remote_code: bool = False,
        cpu_threads: int | None = None,
        model_id: str | None = None,
        prefix_reuse: bool = DEFAULT_PREFIX_CACHING,
        prefix_store_size: int = 8,
        merged_adapter: str | None = None,
    ) -> None:
        import torch
        from transformers import AutoTokenizer

        self.model_name = str(model)
        self.revision = revision
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        # bf16 on GPUs as the grid prescribes; fp32 on CPU, where bf16 matmuls are slow and change results.
        self.dtype = ("bfloat16" if self.device.startswith("cuda") else "float32") if dtype == "auto" else dtype
        self.batch_size = batch_size
        self.max_loaded_adapters = max(1, max_loaded_adapters)
        self.attn_implementation = attn_implementation
        self.trust_remote_code = trust_remote_code
        self.cpu_threads = cpu_threads
        self._saved_threads: int | None = None
        self.tokenizer = AutoTokenizer.from_pretrained(
            self.model_name, revision=revision, trust_remote_code=trust_remote_code
        )
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.merged_adapter = merged_adapter
        merged = f"+{adapter_weights_hash(merged_adapter)}" if merged_adapter else ""
        self.model_id = model_id or f"{model_identity(self.model_name, revision)}{merged}|transformers/{self.dtype}"
        self._model = None
        self._is_peft = False
        self._adapters: OrderedDict[str, str] = OrderedDict()  # peft name -> weights hash, least recent first
        self._grammars: GrammarCache | None = None  # built with the model (_ensure_model)
        self._stop_ids: list[int] = []
        self._lock = threading.Lock()
        self.generated = 0  # requests actually run through the model
        self.adapter_loads = 0
        self.prefix_reuse = prefix_reuse
        self._prefixes = PrefixStore(prefix_store_size)
        self._prefix_limit: int | None = None  # longest sequence a prefix cache may serve (sliding windows); -1 none
        self.stats = GenerationStats()
        self.last_token_ids: list[list[int]] = []
        """Generated token ids (up to the stop token) of the last call's requests, in order: what the tests and the
        benchmark compare token for token."""

    # -- model and adapters ---------------------------------------------------------------------------------

    def _ensure_model(self):
        if self._model is not None:
            return self._model
        import torch
        from transformers import AutoModelForCausalLM

        from gnt.generation.constrained import GrammarCache

        kwargs = {"revision": self.revision, "dtype": getattr(torch, self.dtype), "trust_remote_code": self.trust_remote_code}
        if self.attn_implementation:
            kwargs["attn_implementation"] = self.attn_implementation
        if self.device == "cpu":
            # process-wide in torch: restored by close(). A recipe may ask for fewer (a tiny model gains nothing
            # from threads and loses a lot when several processes share few cores).
            self._saved_threads = torch.get_num_threads()
            torch.set_num_threads(self.cpu_threads or available_cpus())
        model = AutoModelForCausalLM.from_pretrained(self.model_name, **kwargs)
        if self.merged_adapter:
            # One adapter for every request (a trained judge): merged into the base weights, so each forward costs
            # what the base model's does (an unmerged LoRA's rank-16 side matmuls run many times slower on a CPU
            # in bfloat16 than the merged weights do).
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, self.merged_adapter, is_trainable=False).merge_and_unload()
        model.to(self.device).eval()
        contiguous_head_input(model)
        type(self).loads += 1
        self._model = model
        stop = set(_as_list(self.tokenizer.eos_token_id)) | set(_as_list(model.generation_config.eos_token_id))
        self._stop_ids = sorted(stop)
        vocab = model.get_output_embeddings().weight.shape[0]
        self._grammars = GrammarCache(self.tokenizer, vocab, self._stop_ids)
        return model

    def _activate(self, adapter: Adapter | None):
        """Make ``adapter`` the active one (loading it on first use); return a context for the generate call."""
        model = self._ensure_model()
        if adapter is None:
            return model.disable_adapter() if self._is_peft else contextlib.nullcontext()
        name = peft_adapter_name(adapter.name)
        if self._adapters.get(name) not in (None, adapter.weights_hash):
            model.delete_adapter(name)  # same name, new weights (an overwritten checkpoint): reload
            self._prefixes.drop_adapter((name, self._adapters.pop(name)))
        if name not in self._adapters:
            if not self._is_peft:
                from peft import PeftModel

                model = PeftModel.from_pretrained(model, adapter.path, adapter_name=name, is_trainable=False)
                model.eval()
                self._model, self._is_peft = model, True
            else:
                model.load_adapter(adapter.path, adapter_name=name, is_trainable=False)
            self.adapter_loads += 1
            self._adapters[name] = adapter.weights_hash
        self._adapters.move_to_end(name)
        model.set_adapter(name)
        while len(self._adapters) > self.max_loaded_adapters:
            old, old_hash = self._adapters.popitem(last=False)
            model.delete_adapter(old)
            self._prefixes.drop_adapter((old, old_hash))
        return contextlib.nullcontext()

    # -- generation -----------------------------------------------------------------------------------------

    def supports_system_role(self) -> bool:
        from gnt.prompts.chat import supports_system_role

        return supports_system_role(self.tokenizer)

    def prompt_text(self, request: GenerationRequest) -> str:
        """The exact text the model is conditioned on (chat template, system turn fitted to the template)."""
        from gnt.prompts.chat import render_prompt_text
        from gnt.prompts.grid import fit_messages

        return render_prompt_text(self.tokenizer, fit_messages(request.chat(), self.supports_system_role()))

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        results: list[Generation | None] = [None] * len(requests)
        prompts: list[list[int] | None] = [None] * len(requests)
        for index, request in enumerate(requests):
            try:
                prompts[index] = self.tokenizer(self.prompt_text(request), add_special_tokens=False)["input_ids"]
            except Exception as exc:  # noqa: BLE001 - a template error is this request's failure only
                results[index] = Generation("", error=f"prompt rendering failed: {exc}")
        self._refuse_beyond_context(requests, prompts, results)
        token_ids: list[list[int]] = [[] for _ in requests]
        groups: dict[tuple, list[int]] = {}
        for index, request in enumerate(requests):
            if prompts[index] is not None:
                adapter = request.adapter
                key = (adapter.name if adapter else None, adapter.weights_hash if adapter else None,
                       request.constraint is not None, request.params)
                groups.setdefault(key, []).append(index)
        with self._lock:
            for indices in groups.values():
                for chunk, prefix in self._plan(requests, prompts, indices):  # type: ignore[arg-type]
                    for index, (generation, tokens) in zip(
                        chunk, self._run_resilient(requests, prompts, chunk, prefix), strict=True
                    ):
                        results[index] = generation
                        token_ids[index] = tokens
        self.last_token_ids = token_ids
        return [r if r is not None else Generation("", error="not generated") for r in results]

    def context_length(self) -> int | None:
        """The most positions the model was made for (its config's ``max_position_embeddings``), or None."""
        config = self._ensure_model().config
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        value = getattr(text, "max_position_embeddings", None)
        return value if isinstance(value, int) and value > 0 else None

    def _refuse_beyond_context(self, requests: Sequence[GenerationRequest], prompts: list[list[int] | None],
                               results: list[Generation | None]) -> None:
        """Requests whose prompt plus ``max_new_tokens`` exceed the context become ``context_exceeded`` errors."""
        if not any(p is not None for p in prompts):
            return
        limit = self.context_length()
        refused = 0
        for index, prompt in enumerate(prompts):
            if limit is None or prompt is None:
                continue
            wanted = len(prompt) + requests[index].params.max_new_tokens
            if wanted > limit:
                results[index] = Generation("", error=f"context_exceeded: a {len(prompt)}-token prompt and "
                                                      f"max_new_tokens={requests[index].params.max_new_tokens} need "
                                                      f"{wanted} positions; the model has {limit}")
                prompts[index] = None
                refused += 1
        if refused:
            log.warning("%d of %d requests do not fit the model's %d-position context (prompt + max_new_tokens): "
                        "not generated, counted as errors (context_exceeded)", refused, len(requests), limit)

    # -- planning: clusters, prefixes, batches -------------------------------------------------------------

    def _plan(self, requests: Sequence[GenerationRequest], prompts: list[list[int]], indices: list[int]):
        """Yield ``(batch indices, prefix or None)`` for one group; a prefix is ``(tokens, one-row cache)``."""
        if not self.prefix_reuse:
            indices = sorted(indices, key=lambda i: len(prompts[i]))
            for start in range(0, len(indices), self.batch_size):
                yield indices[start : start + self.batch_size], None
            return
        first = requests[indices[0]]
        for cluster in prefix_clusters(prompts, indices):
            members = sorted(cluster.indices, key=lambda i: len(prompts[i]))  # common prefix: by suffix length
            try:
                prefix = self._prefix_for(first, prompts, members, cluster.prefix_len)
            except Exception as exc:  # noqa: BLE001 - e.g. out of memory on a long prefix: generate without reuse
                log.warning("prefix reuse skipped for %d requests: %s: %s", len(members), type(exc).__name__, exc)
                prefix = None
            for start in range(0, len(members), self.batch_size):
                yield members[start : start + self.batch_size], prefix

    def _prefix_for(self, request: GenerationRequest, prompts: list[list[int]], members: list[int], shared: int):
        """The stored prefix cache to start these rows from, building it when the rows share enough; or None."""
        tokens = prompts[members[0]]
        longest = max(len(prompts[i]) for i in members) + request.params.max_new_tokens
        if not self._prefix_allowed(longest):
            return None
        adapter = request.adapter
        adapter_key = (peft_adapter_name(adapter.name), adapter.weights_hash) if adapter else None
        limit = shared if shared else len(tokens) - 1  # a lone row may still start from a stored prefix
        wanted = max(MIN_PREFIX_TOKENS, limit - PREFIX_SLACK_TOKENS) if shared else MIN_PREFIX_TOKENS
        hit = self._prefixes.best(adapter_key, tokens[:limit], wanted)
        if hit is not None:
            return hit
        if shared < MIN_PREFIX_TOKENS:
            return None
        prefix = tuple(tokens[:shared])
        cache = self._build_prefix(request.adapter, prefix)
        self._prefixes.put(adapter_key, prefix, cache)
        return prefix, cache

    def _build_prefix(self, adapter: Adapter | None, prefix: tuple[int, ...]):
        """One forward pass over ``prefix`` with ``adapter`` active; its key/value cache (one row)."""
        import torch
        from transformers import DynamicCache

        context = self._activate(adapter)
        started = time.perf_counter()
        with context, torch.inference_mode():
            cache = DynamicCache(config=self._model.config)
            # the decoder alone: a prefix needs its keys and values, not the logits of its last token (one row
            # through Gemma's 262k-row head cost ~0.9 s in bfloat16 on a CPU, more than the whole prefix)
            decoder = self._model.get_decoder() if hasattr(self._model, "get_decoder") else None
            if decoder is not None:
                decoder(input_ids=torch.tensor([list(prefix)], device=self.device), cache=cache, use_cache=True)
            else:
                self._model(input_ids=torch.tensor([list(prefix)], device=self.device), cache=cache, use_cache=True,
                            logits_to_keep=1)
        self.stats.prefill_s += time.perf_counter() - started
        self.stats.prefix_builds += 1
        self.stats.prefilled_tokens += len(prefix)
        return cache

    def _prefix_allowed(self, length: int) -> bool:
        """Whether a prefix cache can serve sequences of ``length`` tokens: not for recurrent (linear) layers, and
        within the window of sliding-window layers (which keep only their last ``window`` keys)."""
        if self._prefix_limit is None:
            from transformers import DynamicCache

            probe = DynamicCache(config=self._ensure_model().config)
            if any(probe.is_linear):
                self._prefix_limit = -1
            else:
                windows = [getattr(layer, "sliding_window", None) for layer in probe.layers if layer.is_sliding]
                self._prefix_limit = min((w for w in windows if w), default=0)  # 0: no limit
        return self._prefix_limit == 0 or length <= self._prefix_limit

    # -- running batches ------------------------------------------------------------------------------------

    def _run_resilient(self, requests, prompts, chunk: list[int], prefix=None) -> list[tuple[Generation, list[int]]]:
        """Run one batch (generations and their token ids); on failure split it in halves so only the failing
        requests get an error."""
        try:
            return self._run_batch([requests[i] for i in chunk], [prompts[i] for i in chunk], prefix)
        except Exception as exc:  # noqa: BLE001 - isolate the failure, never lose the whole batch
            if len(chunk) == 1:
                return [(Generation("", error=f"{type(exc).__name__}: {exc}"), [])]
            half = len(chunk) // 2
            return self._run_resilient(requests, prompts, chunk[:half], prefix) + self._run_resilient(
                requests, prompts, chunk[half:], prefix
            )

    def _run_batch(self, batch: list[GenerationRequest], prompts: list[list[int]],
                   prefix=None) -> list[tuple[Generation, list[int]]]:
        import torch
        from transformers import GenerationConfig

        first = batch[0]
        context = self._activate(first.adapter)
        params: DecodingParams = first.params
        pad_id = self.tokenizer.pad_token_id
        shared = len(prefix[0]) if prefix is not None else 0
        tails = [p[shared:] for p in prompts]
        width = max(len(t) for t in tails)
        head = list(prefix[0]) if prefix is not None else []
        # [prefix][padding][suffix]: generate reads positions off the mask, so padding may sit after the prefix
        input_ids = torch.tensor([head + [pad_id] * (width - len(t)) + t for t in tails], device=self.device)
        attention = torch.tensor([[1] * shared + [0] * (width - len(t)) + [1] * len(t) for t in tails],
                                 device=self.device)
        sample = params.temperature > 0
        config = GenerationConfig(
            max_new_tokens=params.max_new_tokens,
            do_sample=sample,
            temperature=params.temperature if sample else None,
            top_p=params.top_p if sample else None,
            top_k=None,
            eos_token_id=self._stop_ids,
            pad_token_id=pad_id,
        )
        clock = _StepClock()
        processors = [clock]
        if first.constraint is not None:
            processors.append(self._grammars.logits_processor([r.constraint for r in batch]))
        if sample:
            torch.manual_seed(params.seed)
        extra = {}
        if prefix is not None:
            extra["cache"] = batch_copy(prefix[1], len(batch))
            self.stats.prefix_hits += 1
        started = time.perf_counter()
        with context, torch.inference_mode():
            output = self._model.generate(
                input_ids=input_ids, attention_mask=attention, generation_config=config, logits_processor=processors,
                **extra,
            )
        ended = time.perf_counter()
        tokens = [self._kept(row[shared + width :].tolist()) for row in output]
        generations = [self._decode(kept, stopped) for kept, stopped in tokens]
        self._count(clock, started, ended, generations, prompts, tails)
        self.generated += len(batch)
        return [(g, kept) for g, (kept, _) in zip(generations, tokens, strict=True)]

    def _count(self, clock: _StepClock, started: float, ended: float, generations: list[Generation],
               prompts: list[list[int]], tails: list[list[int]]) -> None:
        """Add one batch to :attr:`stats` (prefill up to the first logits, decode after)."""
        stats = self.stats
        first = clock.times[0] if clock.times else ended
        stats.requests += len(generations)
        stats.batches += 1
        stats.prompt_tokens += sum(len(p) for p in prompts)
        stats.prefilled_tokens += sum(len(t) for t in tails)
        stats.prefill_s += first - started
        stats.decode_s += ended - first
        stats.decode_steps += max(len(clock.times) - 1, 0)
        # tokens each row needed: its kept tokens plus the stop token, when it stopped
        needed = [(g.n_tokens or 0) + (g.finish_reason == "stop") for g in generations]
        stats.generated_tokens += sum(needed)
        stats.wasted_steps += max(len(clock.times) - max(needed, default=0), 0)

    def _kept(self, tokens: list[int]) -> tuple[list[int], bool]:
        """A row's generated tokens up to its first stop token, and whether it stopped (else it hit the cap)."""
        stop_at = next((i for i, t in enumerate(tokens) if t in self._stop_ids), None)
        return (tokens, False) if stop_at is None else (tokens[:stop_at], True)

    def _decode(self, kept: list[int], stopped: bool) -> Generation:
        text = self.tokenizer.decode(kept, skip_special_tokens=True)
        return Generation(text, n_tokens=len(kept), finish_reason="stop" if stopped else "length")

    def settings(self) -> dict:
        threads = self.cpu_threads or (available_cpus() if self.device == "cpu" else None)
        return {"revision": self.revision, "device": self.device, "dtype": self.dtype, "batch_size": self.batch_size,
                "cpu_threads": threads, "prefix_reuse": self.prefix_reuse, "constrained_decoding": "xgrammar",
                "merged_adapter": self.merged_adapter}

    def close(self) -> None:
        import torch

        self._model = None
        self._prefixes.clear()
        self._prefix_limit = None
        self._adapters.clear()
        self._is_peft = False
        if self._saved_threads is not None:
            torch.set_num_threads(self._saved_threads)
            self._saved_threads = None
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
