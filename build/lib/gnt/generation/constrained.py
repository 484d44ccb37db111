"""Constrained decoding for the transformers backend with xgrammar.

xgrammar compiles a regex or a JSON schema against the tokenizer once (the compiled grammar is reusable); the
matcher state lives in a logits processor that can serve only one ``generate`` call, so a fresh processor is built
per call from the cached grammars. One processor can carry a different grammar per batch row, which lets a batch
mix languages (each language has its own output regex).

JSON schemas are compiled without free whitespace (``any_whitespace=False``): a small model that may emit
whitespace anywhere can loop on spaces until the token limit, and the compact form is what every JSON parser reads.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence

from gnt.generation.base import Constraint


def constraint_cache_key(constraint: Constraint) -> str:
    """A stable string for a constraint (schemas are dicts: serialise them with sorted keys)."""
    value = constraint.value if isinstance(constraint.value, str) else json.dumps(constraint.value, sort_keys=True)
    return f"{constraint.kind}:{value}"


class GrammarCache:
    """Compiles each distinct constraint once per tokenizer and builds per-call logits processors."""

    def __init__(self, tokenizer, vocab_size: int, stop_token_ids: Iterable[int]) -> None:
        import xgrammar as xgr

        self._xgr = xgr
        info = xgr.TokenizerInfo.from_huggingface(
            tokenizer, vocab_size=vocab_size, stop_token_ids=sorted(set(stop_token_ids))
        )
        self._compiler = xgr.GrammarCompiler(info)
        self._compiled: dict[str, object] = {}
        self._lock = threading.Lock()
        self.compilations = 0  # how many distinct grammars were compiled (tests check the cache works)

    def compiled(self, constraint: Constraint):
        """The compiled grammar of one constraint, compiling it on first use."""
        key = constraint_cache_key(constraint)
        with self._lock:
            if key not in self._compiled:
                if constraint.kind == "regex":
                    grammar = self._compiler.compile_regex(str(constraint.value))
                elif constraint.kind == "json_schema":
                    schema = constraint.value if isinstance(constraint.value, str) else json.dumps(constraint.value)
                    grammar = self._compiler.compile_json_schema(schema, any_whitespace=False)
                else:
                    raise ValueError(f"unknown constraint kind {constraint.kind!r}; expected regex or json_schema")
                self._compiled[key] = grammar
                self.compilations += 1
            return self._compiled[key]

    def logits_processor(self, constraints: Sequence[Constraint]):
        """A fresh xgrammar logits processor for one ``generate`` call, one grammar per batch row."""
        return self._xgr.contrib.hf.LogitsProcessor([self.compiled(c) for c in constraints])
