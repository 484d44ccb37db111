"""The sweep's keys of an evaluation recipe (``recipes/eval*.yaml``), checked before anything loads.

It uses the project's recipe language (:mod:`gnt.recipe`): unknown keys fail with the closest valid names and
values are coerced by type. What to evaluate (``runs``, ``adapters``, ``model``) may be written in the recipe or
given on the command line. An evaluation recipe file also holds the pipeline's keys (``steps`` and each step's
settings); the command layer reads a whole file (``gnt.cli.evaluate``: ``load_pipeline``, ``load_eval_config``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from gnt.data.entry import LANGUAGES
from gnt.models.aliases import check_model_key
from gnt.prompts.grid import CONFIGS, DEFAULT_SHOT_SEED, SHOT_COUNTS, Cell, grid_cells
from gnt.recipe import RecipeError, RecipeSchema
from gnt.settings import (
    SYSTEM_ROLE_HELP,
    BackendKind,
    BackendSettings,
    BootstrapSettings,
    DecodingSettings,
    OutputSettings,
    SystemRole,
    check_positive,
    system_role_value,
)

if TYPE_CHECKING:
    from gnt.generation.base import GenerationBackend

__all__ = ["SCHEMA", "BackendKind", "EvalConfig", "Shard", "eval_config", "parse_shard", "system_role_for"]


@dataclass
class EvalConfig(BackendSettings, DecodingSettings, BootstrapSettings, OutputSettings):
    """Everything a sweep depends on; saved resolved in every model's ``record.json``.

    The backend, decoding, bootstrap and output keys come from the shared groups of :mod:`gnt.settings`; the
    fields below are what only an evaluation has: what to evaluate, the prompt grid and the scale-out.
    """

    # what to evaluate
    runs: list[str] = field(default_factory=list, metadata={"help": "training output dirs (checkpoint-* inside)"})
    adapters: list[str] = field(default_factory=list, metadata={"help": "explicit adapter folders"})
    model: str | None = field(
        default=None, metadata={"help": "base model (hub id, folder, gnt:tiny or gnt:smollm); else from the runs"}
    )
    include_base: bool = field(default=True, metadata={"help": "also evaluate the base model the adapters train"})
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
    allow_leakage: bool = field(default=False, metadata={
        "help": "evaluate even when evaluated sources occur in the model's training data (the report flags it)"})
    # the grid (docs/prompt-grid.md)
    langs: list[str] = field(default_factory=lambda: list(LANGUAGES), metadata={
        "choices": LANGUAGES, "help": "target languages of the grid"})
    configs: list[str] = field(default_factory=lambda: list(CONFIGS), metadata={
        "choices": CONFIGS, "help": "prompt configurations: G+S, G (guidelines), S (system role), None"})
    shots: list[int] = field(default_factory=lambda: list(SHOT_COUNTS), metadata={
        "choices": SHOT_COUNTS, "help": "demonstrations per prompt"})
    base_shots: list[int] | None = field(default=None, metadata={
        "choices": SHOT_COUNTS, "help": "demonstrations per prompt for the base model (null: shots): a base model "
        "that has never seen the answer format is scored prompted with shots, as the field scores untrained "
        "models, while the checkpoints answer at the shots they were trained on"})
    grid_seed: int = field(default=DEFAULT_SHOT_SEED, metadata={"help": "seed that picks the demonstrations of each cell"})
    prompts_dir: str | None = field(default=None, metadata={"help": "folder of prompt texts (null: the bundled ones)"})
    system_role: SystemRole = field(default="auto", metadata={"help": SYSTEM_ROLE_HELP})
    constrained: bool = field(default=True, metadata={"help": "decode under the grid's output-format regex"})
    # scale-out
    shard: str | None = field(
        default=None, metadata={"help": "i/n: generate worker i's share (0 <= i < n) into the cache; merge: build results"}
    )
    recipe: str | None = field(default=None, metadata={"help": "set by the loader: the recipe file"})

    def cells(self, base: bool = False) -> list[Cell]:
        """The grid cells a model is scored in: ``base_shots`` for a base model when set, else ``shots``."""
        shots = self.base_shots if base and self.base_shots else self.shots
        return grid_cells(self.langs, self.configs, shots)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def validate(self) -> EvalConfig:
        """Cross-key checks a type cannot express; raises RecipeError with what to change."""
        if not self.langs or not self.configs or not self.shots:
            raise RecipeError("langs, configs and shots must each select at least one value")
        self.system_role = system_role_value(self.system_role)  # type: ignore[assignment]
        self.validate_backend()
        self.validate_decoding()
        self.validate_bootstrap()
        check_positive(self, "preference_pairs_per_kind", "rows_per_lang")
        check_model_key("model", self.model)
        parse_shard(self.shard)
        return self


MERGE = "merge"
_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    """Worker ``index`` (0-based, as SLURM array task ids) of ``count``."""

    index: int
    count: int

    def owns(self, chunk: int) -> bool:
        return chunk % self.count == self.index

    @property
    def name(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(value: str | None) -> Shard | str | None:
    """``None`` (a whole sweep), :data:`MERGE`, or a :class:`Shard` from ``"i/n"``; raises RecipeError otherwise."""
    if value is None:
        return None
    if str(value).strip() == MERGE:
        return MERGE
    match = _SHARD.match(str(value))
    if match:
        index, count = int(match.group(1)), int(match.group(2))
        if 0 <= index < count:
            return Shard(index, count)
    raise RecipeError(f"shard must be i/n with 0 <= i < n (e.g. shard=0/4), or shard=merge; got {value!r}")


SCHEMA = RecipeSchema.from_dataclasses([EvalConfig])


def eval_config(values: Mapping[str, Any], **explicit: Any) -> EvalConfig:
    """An :class:`EvalConfig` from resolved recipe values, validated; ``explicit`` keyword values go on top (a
    ``runs``/``adapters`` list adds to the recipe's, as the command line's models add to the recipe's)."""
    values = dict(values)
    for key, value in explicit.items():
        if value is None or value == [] or value is False:
            continue
        key = SCHEMA.canonical(key, "keyword")
        if key in ("runs", "adapters") and values.get(key):
            value = [*values[key], *value]
        values[key] = SCHEMA.coerce(key, value, "keyword")
    return EvalConfig(**values).validate()


def system_role_for(config: EvalConfig, backend: GenerationBackend) -> bool:
    """Whether prompts get a system turn: the recipe's ``system_role`` (keep/merge), or the backend's template (auto)."""
    if config.system_role == "auto":
        return backend.supports_system_role()
    return config.system_role == "keep"
