"""Generation with transformers: CPU and small GPUs, one base model, LoRA adapters swapped in place.

The base model is loaded once per backend, lazily on the first request that is not served from a cache (so a
fully cached rerun never loads it); :attr:`TransformersBackend.loads` counts loads process-wide, which the tests
and benchmarks read. Adapters are attached to that one model with PEFT (``load_adapter`` / ``set_adapter``) and
requests for the base model run with the adapters disabled, so evaluating N checkpoints costs one base load and N
small adapter loads.

Requests are grouped by (adapter, constrained or not, decoding params), sorted by prompt length within a group
(less padding) and generated in left-padded batches. Output constraints go through xgrammar
(:mod:`gnt.generation.constrained`). A batch that fails (e.g. out of memory) is split in halves and retried, so
one bad request yields one error, not a lost batch.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import ClassVar

from gnt.generation.base import Adapter, DecodingParams, Generation, GenerationBackend, GenerationRequest
from gnt.generation.identity import model_identity


def _as_list(value) -> list[int]:
    if value is None:
        return []
    return [int(v) for v in value] if isinstance(value, (list, tuple)) else [int(value)]


def peft_adapter_name(name: str) -> str:
    """PEFT stores adapters in ``ModuleDict``s whose keys may not contain dots; everything else is kept."""
    return re.sub(r"[^\w/-]", "_", name)


class TransformersBackend(GenerationBackend):
    """Batched (constrained) generation for one base model with any number of LoRA adapters."""

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
        self.model_id = model_id or f"{model_identity(self.model_name, revision)}|transformers/{self.dtype}"
        self._model = None
        self._is_peft = False
        self._adapters: OrderedDict[str, str] = OrderedDict()  # peft name -> weights hash, least recent first
        self._grammars = None
        self._stop_ids: list[int] = []
        self._lock = threading.Lock()
        self.generated = 0  # requests actually run through the model
        self.adapter_loads = 0

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
        if self.cpu_threads and self.device == "cpu":
            # process-wide in torch: restored by close(). A tiny model gains nothing from threads and loses a lot
            # when several processes share few cores.
            self._saved_threads = torch.get_num_threads()
            torch.set_num_threads(self.cpu_threads)
        model = AutoModelForCausalLM.from_pretrained(self.model_name, **kwargs)
        model.to(self.device).eval()
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
            del self._adapters[name]
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
            old, _ = self._adapters.popitem(last=False)
            model.delete_adapter(old)
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
        groups: dict[tuple, list[int]] = {}
        for index, request in enumerate(requests):
            if prompts[index] is not None:
                adapter = request.adapter
                key = (adapter.name if adapter else None, adapter.weights_hash if adapter else None,
                       request.constraint is not None, request.params)
                groups.setdefault(key, []).append(index)
        with self._lock:
            for indices in groups.values():
                indices.sort(key=lambda i: len(prompts[i]))  # type: ignore[arg-type]
                for start in range(0, len(indices), self.batch_size):
                    chunk = indices[start : start + self.batch_size]
                    for index, generation in zip(chunk, self._run_resilient(requests, prompts, chunk), strict=True):
                        results[index] = generation
        return [r if r is not None else Generation("", error="not generated") for r in results]

    def _run_resilient(self, requests, prompts, chunk: list[int]) -> list[Generation]:
        """Run one batch; on failure split it in halves so only the failing requests get an error."""
        try:
            return self._run_batch([requests[i] for i in chunk], [prompts[i] for i in chunk])
        except Exception as exc:  # noqa: BLE001 - isolate the failure, never lose the whole batch
            if len(chunk) == 1:
                return [Generation("", error=f"{type(exc).__name__}: {exc}")]
            half = len(chunk) // 2
            return self._run_resilient(requests, prompts, chunk[:half]) + self._run_resilient(
                requests, prompts, chunk[half:]
            )

    def _run_batch(self, batch: list[GenerationRequest], prompts: list[list[int]]) -> list[Generation]:
        import torch
        from transformers import GenerationConfig

        first = batch[0]
        context = self._activate(first.adapter)
        params: DecodingParams = first.params
        pad_id = self.tokenizer.pad_token_id
        width = max(len(p) for p in prompts)
        input_ids = torch.tensor([[pad_id] * (width - len(p)) + p for p in prompts], device=self.device)
        attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=self.device)
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
        processors = []
        if first.constraint is not None:
            processors.append(self._grammars.logits_processor([r.constraint for r in batch]))
        if sample:
            torch.manual_seed(params.seed)
        with context, torch.inference_mode():
            output = self._model.generate(
                input_ids=input_ids, attention_mask=attention, generation_config=config, logits_processor=processors
            )
        self.generated += len(batch)
        return [self._decode(row[width:].tolist()) for row in output]

    def _decode(self, tokens: list[int]) -> Generation:
        stop_at = next((i for i, t in enumerate(tokens) if t in self._stop_ids), None)
        kept = tokens if stop_at is None else tokens[:stop_at]
        text = self.tokenizer.decode(kept, skip_special_tokens=True)
        return Generation(text, n_tokens=len(kept), finish_reason="length" if stop_at is None else "stop")

    def describe(self) -> dict:
        return {
            "backend": "transformers",
            "model": self.model_name,
            "model_id": self.model_id,
            "revision": self.revision,
            "device": self.device,
            "dtype": self.dtype,
            "batch_size": self.batch_size,
            "cpu_threads": self.cpu_threads,
            "constrained_decoding": "xgrammar",
        }

    def close(self) -> None:
        import torch

        self._model = None
        self._adapters.clear()
        self._is_peft = False
        if self._saved_threads is not None:
            torch.set_num_threads(self._saved_threads)
            self._saved_threads = None
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
