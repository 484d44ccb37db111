"""The judge recipe: one flat YAML of known keys (``recipes/judge-*.yaml``) plus ``key=value`` overrides.

It speaks the project's recipe language (:mod:`gnt.recipe`): unknown keys fail at once with the closest valid names
and values are coerced by type. The same keys serve ``eval/judge.py judge`` (judge an evaluation results folder)
and ``eval/judge.py validate`` (validate a judge on references or a gold TSV).

``judge_model`` accepts the model aliases of every recipe (``gnt:tiny``, the offline tiny random model, and
``gnt:smollm``, SmolLM2-135M from its wheel; bare ``tiny``/``smollm`` too) as well as a hub id or folder, so CPU
demos and tests need no download.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gnt.data.entry import LANGUAGES
from gnt.filenames import JUDGE_VALIDATION
from gnt.judge.llm_judge import JudgeSettings
from gnt.judge.schema import judge_format
from gnt.models.aliases import check_model_key
from gnt.recipe import RecipeError, RecipeSchema, resolve_recipe
from gnt.settings import BackendSettings, OutputSettings

DEFAULT_VALIDATION = str(Path(OutputSettings().out_dir) / JUDGE_VALIDATION)
"""Where ``validate`` writes its report when ``validation`` is not given: ``judge_validation.json`` in the default
results folder, the file the report of that folder reads, so an evaluation into the default ``out_dir`` shows the
validation beside its GNT numbers without naming it anywhere."""

if TYPE_CHECKING:
    from gnt.generation.base import GenerationBackend


@dataclass
class JudgeRecipe(BackendSettings, JudgeSettings):
    """Everything a judge run depends on; saved resolved beside its outputs.

    Made of groups, each key written once: the backend keys are the evaluation recipe's
    (:class:`gnt.settings.BackendSettings`), the judge's own are :class:`gnt.judge.llm_judge.JudgeSettings` (the
    recipe *is* the LLM judge's config); the fields below say what to judge and where.
    """

    judge: Literal["llm", "lexical", "recorded"] = field(
        default="llm",
        metadata={"help": "llm (default), lexical (offline), or recorded (validate: judge labels stored in the gold file)"},
    )
    formats: list[str] = field(default_factory=list, metadata={"help": "validate: formats to compare (or 'all')"})
    judge_model: str | None = field(default=None, metadata={"help": "hub id, folder, gnt:tiny, gnt:smollm or gnt:gemma"})
    judge_adapter: str | None = field(default=None, metadata={
        "help": "a trained judge's LoRA adapter folder (train/sft.py on a build's judge rows); given a judge's "
                "training recipe, its output_dir"})
    cache: str | None = field(default=None, metadata={"help": "judge cache file (default <results>/cache/judgments.jsonl)"})
    # what to judge
    models: list[str] = field(default_factory=list, metadata={"help": "judge only these model folders"})
    data: str | None = field(default=None, metadata={"help": "mGeNTE path: references (validate), gendered words"})
    langs: list[str] = field(default_factory=lambda: list(LANGUAGES), metadata={
        "choices": LANGUAGES, "help": "languages to judge, validate or check"})
    lexical_check: bool = field(default=True, metadata={"help": "also run the lexical judge and report agreement"})
    validation: str | None = field(default=None, metadata={
        "help": f"the judge's validation report: validate writes it (null: {DEFAULT_VALIDATION}, read by the "
                "report of that results folder), judging "
                "attaches its figures to the metrics"})
    validate_references: bool = field(default=True, metadata={
        "help": "judging an evaluation with an llm judge and no validation= report: first validate the judge on the "
                "references of the rows that evaluation scored (held-out test rows: Ref-G and Ref-N, labels known by "
                "construction), write <results>/judge_validation.json and keep its figures beside the GNT numbers"})
    # validation on a gold TSV
    tsv: str | None = field(default=None, metadata={"help": "validate: a gold TSV of human labels to score the judge on"})
    lang: str | None = field(default=None, metadata={"help": "language of a gold TSV without a lang column"})
    recipe: str | None = field(default=None, metadata={"help": "the recipe file these keys came from (set by the command)"})

    def validate(self) -> JudgeRecipe:
        try:
            self.format = judge_format(self.format).name
        except ValueError as exc:
            raise RecipeError(f"format: {exc}") from None
        if self.judge == "llm" and not self.judge_model and self.backend != "http":
            raise RecipeError("an llm judge needs judge_model (a hub id, a folder, gnt:tiny or gnt:smollm)")
        if self.judge_adapter and (self.judge != "llm" or self.backend == "http"):
            raise RecipeError("judge_adapter needs judge=llm on a local backend (transformers or vllm): a server "
                              "applies its own adapters")
        if self.label_scoring and judge_format(self.format).phrases:
            raise RecipeError(f"label_scoring needs an L format (CROSS-L, MONO-L), not {self.format}: a P+L reply "
                              "lists phrases, which only generation writes")
        if self.label_scoring and self.backend != "transformers":
            raise RecipeError(f"label_scoring reads label log-probabilities from the model, which only the "
                              f"transformers backend holds (backend={self.backend}); use generation there")
        try:
            self.validate_recheck()
        except ValueError as exc:
            raise RecipeError(str(exc)) from None
        self.validate_backend(needs_server=self.judge == "llm")
        self.validate_decoding()
        if self.judge_retries < 0:
            raise RecipeError(f"judge_retries must be >= 0 (got {self.judge_retries})")
        if self.n_exemplars is not None and self.n_exemplars < 0:
            raise RecipeError(f"n_exemplars must be >= 0 or null for every exemplar (got {self.n_exemplars})")
        for name in self.formats:
            if name.lower() != "all":
                try:
                    judge_format(name)
                except ValueError as exc:
                    raise RecipeError(f"formats: {exc}") from None
        check_model_key("judge_model", self.judge_model)
        return self

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


SCHEMA = RecipeSchema.from_dataclasses([JudgeRecipe])


def load_judge_recipe(path: str | Path | None, overrides: Iterable[tuple[str, Any]] = ()) -> JudgeRecipe:
    """Recipe file < ``key=value`` overrides, validated before any model loads. The file may be a judge recipe or
    a judge adapter's training recipe (:func:`gnt.judge.learned.judge_recipe_mapping`)."""
    from gnt.judge.learned import judge_recipe_mapping

    resolved = resolve_recipe(path, overrides, SCHEMA, reader=judge_recipe_mapping)
    values = dict(resolved.values)
    values["recipe"] = str(path) if path is not None else None
    return JudgeRecipe(**values).validate()


def resolve_model_path(name: str) -> str:
    """``gnt:tiny`` / ``gnt:smollm`` (or bare ``tiny`` / ``smollm``) → the offline model folder; else unchanged."""
    from gnt.models.aliases import resolve_model

    return resolve_model(name)


def make_backend(recipe: JudgeRecipe) -> GenerationBackend:
    """The generation backend the recipe names, through the one builder every user shares
    (:func:`gnt.generation.factory.build_backend`; imported lazily: vLLM and httpx are optional). A judge adapter is
    merged into the base weights on transformers (it is the only adapter served); vLLM is told it up front and it
    is applied per request."""
    from gnt.generation.factory import build_backend

    if recipe.backend == "http":
        model = recipe.judge_model or "judge"
    else:
        model = resolve_model_path(recipe.judge_model or "")
    if recipe.judge_adapter and recipe.backend == "transformers":
        return build_backend(recipe, model, seed=recipe.seed, merged_adapter=recipe.judge_adapter)
    adapters = [recipe.judge_adapter] if recipe.judge_adapter else []
    return build_backend(recipe, model, seed=recipe.seed, adapter_paths=adapters)
