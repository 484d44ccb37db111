"""The evaluation recipe: one flat YAML of known keys (``recipes/eval*.yaml``), checked before anything loads.

It uses the project's recipe language (:mod:`gnt.recipe`): unknown keys fail with the closest valid names, values
are coerced by type, and ``key=value`` overrides follow the recipe on the command line. What to evaluate
(``runs``, ``adapters``, ``model``) may be written in the recipe or given as command-line flags.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gnt.data.entry import LANGUAGES
from gnt.evaluation.bootstrap import DEFAULT_ALPHA, DEFAULT_SAMPLES, DEFAULT_SEED
from gnt.evaluation.steps import PipelineKeys
from gnt.generation.base import DEFAULT_PREFIX_CACHING, DecodingParams
from gnt.prompts.grid import CONFIGS, DEFAULT_SHOT_SEED, SHOT_COUNTS, Cell, grid_cells
from gnt.recipe import RecipeError, RecipeSchema, resolve_recipe, split_by_owner

if TYPE_CHECKING:
    from gnt.generation.base import GenerationBackend

BackendKind = Literal["transformers", "vllm", "http"]


@dataclass
class EvalConfig:
    """Everything a sweep depends on; saved resolved in every model's ``record.json``."""

    # what to evaluate
    runs: list[str] = field(default_factory=list, metadata={"help": "training output dirs (checkpoint-* inside)"})
    adapters: list[str] = field(default_factory=list, metadata={"help": "explicit adapter folders"})
    model: str | None = field(default=None, metadata={"help": "base model (hub id or folder); else from the runs"})
    include_base: bool = True
    mgente: str | None = field(default=None, metadata={"help": "rows: mGeNTE path or hub id (base-only sweeps)"})
    rows_per_lang: int | None = field(default=None, metadata={"help": "evaluate only the first N rows per language"})
    split: Literal["test", "dev"] = field(
        default="test", metadata={"help": "held-out side of the runs' data build: test (report) or dev (tuning)"}
    )
    templated_rows: bool = field(
        default=False, metadata={"help": "also score the build's held-out templated entries in the grid format"}
    )
    preference: bool = field(
        default=False, metadata={"help": "preference accuracy on the build's held-out DPO pairs (transformers)"}
    )
    preference_pairs_per_kind: int | None = field(
        default=None, metadata={"help": "score at most N held-out pairs per language and pair kind (null: all)"}
    )
    out_dir: str = "outputs/eval"
    allow_leakage: bool = False
    # the grid (docs/prompt-grid.md)
    langs: list[str] = field(default_factory=lambda: list(LANGUAGES), metadata={"choices": LANGUAGES})
    configs: list[str] = field(default_factory=lambda: list(CONFIGS), metadata={"choices": CONFIGS})
    shots: list[int] = field(default_factory=lambda: list(SHOT_COUNTS), metadata={"choices": SHOT_COUNTS})
    grid_seed: int = DEFAULT_SHOT_SEED
    prompts_dir: str | None = None
    system_role: Literal["auto", "yes", "no"] = "auto"
    # decoding
    max_new_tokens: int = DecodingParams.max_new_tokens
    constrained: bool = True
    # backend
    backend: BackendKind = "transformers"
    chunk_size: int = field(default=256, metadata={"help": "requests per backend call and per cache write"})
    batch_size: int = 16
    dtype: str = "auto"
    device: str = "auto"
    trust_remote_code: bool = False
    cpu_threads: int | None = field(default=None, metadata={"help": "torch threads on CPU (process-wide); null: torch's"})
    tensor_parallel_size: int = 1
    max_loras: int = 4
    max_lora_rank: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float = 0.9
    enable_prefix_caching: bool = field(
        default=DEFAULT_PREFIX_CACHING, metadata={"help": "reuse shared prompt prefixes (vLLM and transformers)"}
    )
    engine_extra: dict = field(default_factory=dict)
    base_url: str | None = None
    served_model: str | None = field(default=None, metadata={"help": "the base model's name on the HTTP server"})
    api_key_env: str | None = None
    concurrency: int = 8
    timeout_s: float = 120.0
    max_retries: int = 5
    regex_field: Literal["structured_outputs", "guided_regex"] = "structured_outputs"
    # statistics and output
    bootstrap_samples: int = DEFAULT_SAMPLES
    bootstrap_seed: int = DEFAULT_SEED
    alpha: float = DEFAULT_ALPHA
    progress: bool = True
    # scale-out
    shard: str | None = field(
        default=None, metadata={"help": "i/n: generate worker i's share (0 <= i < n) into the cache; merge: build results"}
    )
    recipe: str | None = field(default=None, metadata={"help": "set by the loader: the recipe file"})

    def cells(self) -> list[Cell]:
        return grid_cells(self.langs, self.configs, self.shots)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def validate(self) -> EvalConfig:
        """Cross-key checks a type cannot express; raises RecipeError with what to change."""
        if not self.langs or not self.configs or not self.shots:
            raise RecipeError("langs, configs and shots must each select at least one value")
        if self.backend == "http" and not self.base_url:
            raise RecipeError("backend http needs base_url (e.g. http://localhost:8000/v1)")
        if self.max_new_tokens < 1:
            raise RecipeError(f"max_new_tokens must be at least 1 (got {self.max_new_tokens}); the grid's answers "
                              "need about 256")
        if self.chunk_size < 1 or self.batch_size < 1:
            raise RecipeError("chunk_size and batch_size must be positive")
        if self.preference_pairs_per_kind is not None and self.preference_pairs_per_kind < 1:
            raise RecipeError("preference_pairs_per_kind must be positive (or null for all pairs)")
        if self.rows_per_lang is not None and self.rows_per_lang < 1:
            raise RecipeError("rows_per_lang must be positive (or null for all rows)")
        if not 0 < self.alpha < 1:
            raise RecipeError("alpha must be between 0 and 1")
        from gnt.evaluation.shard import parse_shard

        parse_shard(self.shard)
        return self


SCHEMA = RecipeSchema.from_dataclasses([EvalConfig])
RECIPE_SCHEMA = RecipeSchema.from_dataclasses([EvalConfig, PipelineKeys])
"""What an evaluation recipe file may hold: the sweep's keys and the pipeline's (``steps`` and their settings)."""


def load_eval_config(
    path: str | Path | None, overrides: Iterable[tuple[str, Any]] = (), **explicit: Any
) -> EvalConfig:
    """Recipe file < ``key=value`` overrides < explicit keyword values (the CLI's flags), validated."""
    resolved = resolve_recipe(path, overrides, RECIPE_SCHEMA)
    values = split_by_owner(resolved, RECIPE_SCHEMA).get(EvalConfig.__name__, {})  # the pipeline reads its own
    for key, value in explicit.items():
        if value is None or value == [] or value is False:
            continue
        key = SCHEMA.canonical(key, "command line")
        if key in ("runs", "adapters") and values.get(key):
            value = [*values[key], *value]  # flags add to what the recipe lists
        values[key] = SCHEMA.coerce(key, value, "command line")
    values["recipe"] = str(path) if path is not None else None
    return EvalConfig(**values).validate()


def system_role_for(config: EvalConfig, backend: GenerationBackend) -> bool:
    """Whether prompts get a system turn: the recipe's ``system_role`` (yes/no), or the backend's template (auto)."""
    if config.system_role == "auto":
        return backend.supports_system_role()
    return config.system_role == "yes"
