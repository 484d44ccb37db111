"""The training recipe language: which keys each stage accepts and how they become TRL/transformers objects.

A stage's recipe keys are the union of TRL's trainer config (``SFTConfig`` or ``DPOConfig``), TRL's ``ModelConfig``
(model, LoRA and bitsandbytes fields) and the project keys below. Values are validated and coerced by
:mod:`gnt.recipe` before any model is loaded; this module then builds the config objects and applies the few
project-wide rules (adapters only, explicit output and data directories, CPU launch fix-ups).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gnt.models.aliases import check_model_key
from gnt.output_folder import check_output_folder
from gnt.recipe import Bounds, RecipeError, RecipeSchema, ResolvedRecipe, resolve_recipe
from gnt.settings import SYSTEM_ROLE_HELP, SystemRole, WandbSettings

STAGES = ("sft", "dpo", "grpo")


class TrainingError(RecipeError):
    """A run that cannot start as configured (missing adapter, data, capability); exit status 2 like recipe errors."""


@dataclass
class ProjectArgs(WandbSettings):
    """gnt-align's own recipe keys (everything that is not a TRL or transformers field); the W&B keys are the
    shared group of :mod:`gnt.settings`."""

    data_dir: str | None = field(
        default=None, metadata={"help": "Directory written by `python data/build.py out_dir=DIR` (required)."}
    )
    data_rows: str | None = field(
        default=None, metadata={"help": "The folder of data_dir whose train.jsonl/dev.jsonl this run trains on "
                                "(null: the stage's own, sft/ or dpo/; judge: the judge's rows, "
                                "docs/judge.md 'A judge that runs anywhere')."}
    )
    max_train_samples: int | None = field(
        default=None, metadata={"help": "Use a seeded sample of at most N training rows (quick runs)."}
    )
    max_eval_samples: int | None = field(default=None, metadata={"help": "At most N dev rows for evaluation."})
    system_role: SystemRole = field(default="auto", metadata={"help": SYSTEM_ROLE_HELP})
    eval_queue_dir: str | None = field(
        default=None,
        metadata={"help": "Copy every saved checkpoint (adapter, tokenizer, run record) into this queue for "
                  "eval/watch.py, safe from save_total_limit (gnt.checkpoint_queue.callback; rank 0 only)."},
    )
    merge_adapter: bool = field(
        default=False, metadata={"help": "After training, also save base + adapter merged (never into 4-bit)."}
    )
    merged_dir: str | None = field(default=None, metadata={"help": "Where the merged model goes (OUTPUT/merged)."})
    merge_dtype: str = field(
        default="bfloat16",
        metadata={"help": "dtype of the merged model.", "choices": ["bfloat16", "float16", "float32"]},
    )
    batch_units: str | None = field(
        default=None,
        metadata={"help": "A row column whose equal values are batched together (within a prompt cell): source_key "
                  "keeps a judge's references of one source in one batch, its gendered and neutral translations "
                  "side by side (minimal pairs), so the gradient sees what tells them apart. Replaces "
                  "balance_label_batches (the pairs balance themselves)."},
    )
    balance_label_batches: bool = field(
        default=False,
        metadata={"help": "Every batch holds as many GENDERED as NEUTRAL targets (DPO: chosen answers), so no batch "
                  "pushes the decision towards one constant label; with share_prompt_prefix, within one prompt "
                  "cell (gnt.training.lean_forward.PromptGroupedSampler)."},
    )
    callbacks: list[str] | None = field(
        default=None,
        metadata={"help": "Extra transformers TrainerCallbacks, as import paths `package.module:Class` (or "
                  "`package.module.Class`), each built without arguments and run after the project's own (the run "
                  "record is in a checkpoint before they see it). Your own code on your PYTHONPATH, imported as "
                  "named: nothing is fetched."},
    )
    share_prompt_prefix: bool = field(
        default=False,
        metadata={"help": "Batch rows of one prompt cell together and compute the prompt prefix they share "
                  "(system, preamble, guidelines, shots) once per batch: exact, and several times less backbone "
                  "work when prompts are long and completions short (gnt.training.lean_forward). Not with packing "
                  "or activation checkpointing (then it does nothing)."},
    )


@dataclass
class SFTProjectArgs(ProjectArgs):
    """Project keys of the SFT stage."""

    judge: dict | None = field(
        default=None,
        metadata={"help": "Settings for using this adapter as a judge: keys of eval/judge.py (format, prompts_dir, "
                  "label_scoring ...), read when this recipe is given to eval/judge.py, which takes the base "
                  "model from model_name_or_path and the adapter from output_dir; checked here too."},
    )

    decision_token_weight: float = field(
        default=1.0,
        metadata={"help": "Loss weight of each completion's decision token (where a GENDERED and a NEUTRAL answer "
                  "first differ) relative to 1 for every other completion token. The label is one token of a "
                  "~30-token completion: above 1 the recognition decision is not drowned by the translation. "
                  "The logged loss stays unweighted (gnt.training.lean_forward).",
                  "bounds": Bounds(0, 1000, above=True, note="1 weighs it like every other token")},
    )


@dataclass
class AlignmentProjectArgs(ProjectArgs):
    """Project keys every stage after SFT shares: the SFT adapter it continues."""

    sft_adapter: str | None = field(
        default=None,
        metadata={"help": "SFT adapter to start from (DPO: also its frozen reference): an SFT run's output "
                  "directory or one of its checkpoint-N folders (required)."},
    )


REWARD_WEIGHTS = {"label": 1.0, "judge": 1.0, "adequacy": 1.0}
"""The GNT rewards and their weights when a recipe names none (GRPO and on-policy DPO alike)."""


@dataclass
class DPOProjectArgs(AlignmentProjectArgs):
    """Project keys of the DPO stage: DPO continues training an SFT adapter."""

    decision_token_only: bool = field(
        default=False,
        metadata={"help": "Score each preference pair at the first completion token where its chosen and rejected "
                  "answers differ (the label), not over the whole answer: DPO on the recognition decision alone, "
                  "relative to the SFT reference (gnt.training.decision_pairs)."},
    )
    pair_kinds: list[str] | None = field(
        default=None,
        metadata={"help": "Train on these preference-pair kinds only (null: every kind data/build.py wrote). "
                  "label_decision pairs differ in the label alone (same correct translation), so they train the "
                  "recognition decision without moving the translation; see docs/recipes.md for every kind."},
    )


@dataclass
class GRPOProjectArgs(AlignmentProjectArgs):
    """Project keys of the GRPO stage: online alignment of an SFT adapter with the GNT rewards (docs/alignment.md)."""

    rewards: dict[str, float] = field(
        default_factory=lambda: dict(REWARD_WEIGHTS),
        metadata={"help": "reward name -> weight (label, judge, adequacy, chrf, target_chrf, adjective_form: docs/alignment.md); TRL's reward_weights "
                  "are set from it"},
    )
    judge: str | None = field(
        default=None, metadata={"help": "the judge recipe of the judge reward (e.g. recipes/judge-gemma270m.yaml)"})
    judge_keys: dict = field(default_factory=dict, metadata={"help": "keys of that judge recipe to override"})


DPO_FIXED_KEYS = {
    "lora_r", "lora_alpha", "lora_dropout", "lora_target_modules", "lora_target_parameters", "lora_modules_to_save",
    "lora_task_type", "use_rslora", "use_dora",
}
"""ModelConfig keys a DPO recipe cannot set: the adapter it trains is the SFT adapter, loaded as saved."""

TRAINER_BOUNDS: dict[str, Bounds] = {
    "learning_rate": Bounds(0, 10, above=True),
    "weight_decay": Bounds(0, 10),
    "warmup_steps": Bounds(0, None, note="optimizer steps; below 1: a share of the total steps"),
    "label_smoothing_factor": Bounds(0, 1, below=True),
    "beta": Bounds(0, 1000, above=True, note="DPO's KL weight: 0 learns nothing, a negative value inverts the "
                   "preference"),
    "neftune_noise_alpha": Bounds(0, 1000, note="null turns NEFTune off"),
    "max_grad_norm": Bounds(0, None),
    "adam_beta1": Bounds(0, 1, below=True),
    "adam_beta2": Bounds(0, 1, below=True),
    "adam_epsilon": Bounds(0, 1, above=True),
    "num_train_epochs": Bounds(None, 1_000_000),
    "dataloader_num_workers": Bounds(0, 256, note="worker processes; 0 loads in the main process"),
    "dataloader_prefetch_factor": Bounds(1, 1024),
    "per_device_train_batch_size": Bounds(1, 2**20, give="a positive whole number"),
    "per_device_eval_batch_size": Bounds(1, 2**20, give="a positive whole number"),
    "gradient_accumulation_steps": Bounds(1, 2**20, give="a positive whole number"),
    "max_length": Bounds(1, 2**24, give="a positive number of tokens, or null for no limit"),
    "seed": Bounds(0, 2**32 - 1),
    "data_seed": Bounds(0, 2**32 - 1),
    "lora_r": Bounds(1, 65536, note="the adapter's rank; 8 to 64 is usual"),
    "lora_alpha": Bounds(0, 65536, above=True),
    "lora_dropout": Bounds(0, 1, below=True),
    "save_total_limit": Bounds(1, None),
    "ld_alpha": Bounds(0, 1),
}
"""Ranges of TRL's and transformers' own numeric keys that recipes pass through (their classes carry none): a
value outside is refused when the recipe is read, before a model is loaded (``learning_rate: inf`` would train an
all-NaN adapter; ``dataloader_num_workers: -1`` hangs; ``beta: 0`` learns nothing). The project's own keys carry
their ranges in their field metadata (:class:`gnt.recipe.Bounds`)."""



def trainer_bounds(stage: str) -> dict[str, Bounds]:
    """The ranges of a stage's trainer keys: GRPO's ``beta`` (its KL weight) may be 0, TRL's default there."""
    if stage == "grpo":
        return {**TRAINER_BOUNDS, "beta": Bounds(0, 1000, note="GRPO's KL weight: 0 (TRL's default) adds no KL term")}
    return TRAINER_BOUNDS


STAGE_DEFAULTS: dict[str, Any] = {
    "use_peft": True,  # gnt-align trains adapters: the evaluator and vLLM load checkpoints as LoRA adapters
    "ddp_find_unused_parameters": False,  # LoRA has none; True costs an extra graph traversal per step
}
"""Defaults that differ from TRL's, applied below the recipe."""


def stage_classes(stage: str) -> tuple[type, type, type]:
    """The settings classes whose fields are the keys of a ``stage`` recipe: project keys, TRL trainer, ModelConfig."""
    from trl import DPOConfig, ModelConfig, SFTConfig

    if stage == "sft":
        return SFTProjectArgs, SFTConfig, ModelConfig
    if stage == "dpo":
        return DPOProjectArgs, DPOConfig, ModelConfig
    if stage == "grpo":
        from trl import GRPOConfig

        return GRPOProjectArgs, GRPOConfig, ModelConfig
    raise ValueError(f"unknown stage {stage!r}; valid: {', '.join(STAGES)}")


STAGE_KEYS = "Recipe keys are TRL SFTConfig/DPOConfig/GRPOConfig and ModelConfig fields plus the project keys."


def stage_elsewhere(stage: str) -> dict[str, str]:
    """Keys of the other stage, each with a hint (``beta`` in an SFT recipe: run DPO recipes with train/dpo.py)."""
    own = {f.name for klass in stage_classes(stage) for f in dataclasses.fields(klass)}
    hints: dict[str, str] = {}
    for other in (o for o in STAGES if o != stage):
        hint = f"It is a {other.upper()} key: run {other.upper()} recipes with train/{other}.py."
        for klass in stage_classes(other):
            for f in dataclasses.fields(klass):
                if f.name not in own:
                    hints.setdefault(f.name, hint)
    return hints


@functools.cache
def stage_schema(stage: str) -> RecipeSchema:
    """All keys a recipe of ``stage`` may use; keys of the other stage get a hint instead of only suggestions."""
    schema = RecipeSchema.from_dataclasses(stage_classes(stage), bounds=trainer_bounds(stage), description=STAGE_KEYS)
    schema.elsewhere.update(stage_elsewhere(stage))
    return schema


@dataclass
class TrainSetup:
    """Everything a stage needs, built from a resolved recipe (no model, tokenizer or data loaded yet)."""

    stage: str
    recipe: ResolvedRecipe
    project: ProjectArgs
    model_args: Any
    """trl.ModelConfig"""
    training_args: Any
    """trl.SFTConfig or trl.DPOConfig (``resume_from_checkpoint`` is handled by :mod:`gnt.training.resume`)."""
    resume: Any = None
    """The recipe's ``resume_from_checkpoint`` value, interpreted by :func:`gnt.training.resume.resume_checkpoint`."""
    notes: list[str] = field(default_factory=list)
    """Adjustments made to the recipe for this machine, printed and recorded."""

    @property
    def output_dir(self) -> Path:
        return Path(self.training_args.output_dir)

    @property
    def run_name(self) -> str:
        return self.training_args.run_name


def load_recipe(stage: str, path: str | None, overrides: Sequence[tuple[str, Any]] = ()) -> ResolvedRecipe:
    """Resolve a recipe for ``stage``: defaults < file < overrides, every key checked (RecipeError otherwise)."""
    return resolve_recipe(path, overrides, stage_schema(stage), STAGE_DEFAULTS)


def as_recipe(stage: str, recipe: str | ResolvedRecipe | None, overrides: Sequence[tuple[str, Any]] = ()) -> ResolvedRecipe:
    """``recipe`` as resolved by the command layer, or resolved here from a path and ``(key, value)`` overrides."""
    if isinstance(recipe, ResolvedRecipe):
        if overrides:
            raise ValueError("give overrides with a recipe path, not with a resolved recipe")
        return recipe
    return load_recipe(stage, recipe, overrides)


def build_setup(stage: str, recipe: ResolvedRecipe, *, dry_run: bool = False) -> TrainSetup:
    """Build the config objects of a resolved recipe and check the rules that need no files or models.

    With ``dry_run`` a GPU recipe is still validated on a CPU machine: bf16/fp16 are checked as if ``use_cpu``
    were set (noted in the output) instead of failing, since dry-runs are how recipes are kept from rotting.
    """
    from gnt.training.world import adapt_to_launch

    project_cls, trainer_cls, model_cls = stage_classes(stage)
    values = dict(recipe.values)
    notes: list[str] = []
    where = recipe.path or "command line"

    for required in ("output_dir", "data_dir"):
        if not values.get(required):
            raise RecipeError(f"{where}: '{required}' is required (add `{required}: ...` to the recipe or override it)")
    if stage == "sft" and not values.get("model_name_or_path"):
        raise RecipeError(f"{where}: 'model_name_or_path' is required (a hub id, a local folder, or gnt:tiny)")
    check_model_key(f"{where}: model_name_or_path", values.get("model_name_or_path"))
    if stage in ("dpo", "grpo") and not values.get("sft_adapter"):
        raise RecipeError(f"{where}: 'sft_adapter' is required: the SFT run (or checkpoint) {stage.upper()} starts from")
    if not values.get("use_peft", True):
        raise RecipeError(
            f"{where}: use_peft: false is not supported: gnt-align trains LoRA adapters, which is what the "
            "evaluator and vLLM load. Remove the key (or set it to true)."
        )
    if values.get("load_in_4bit") and values.get("load_in_8bit"):
        raise RecipeError(f"{where}: load_in_4bit and load_in_8bit are exclusive")
    if stage in ("dpo", "grpo"):
        lora = sorted(k for k in values if k in DPO_FIXED_KEYS and recipe.sources.get(k) != "default")
        if lora:
            raise RecipeError(
                f"{where}: {', '.join(lora)}: DPO continues training the SFT adapter, whose LoRA settings (and base "
                "model) come from its adapter_config.json. Remove these keys from the DPO recipe."
            )

    _check_ranges(values, where)
    _check_report_to(values.get("report_to"), where)
    check_output_folder(str(values["output_dir"]), stage, "output_dir")  # a user's folder, the other stage's run
    if values.get("merge_adapter") and values.get("merged_dir"):  # swapped in whole: never a user's folder, nor `.`
        check_output_folder(str(values["merged_dir"]), "merged", "merged_dir", replaced_whole=True)
    values.setdefault("run_name", _default_run_name(stage, recipe))
    resume = values.pop("resume_from_checkpoint", None)

    def kwargs_for(klass: type) -> dict[str, Any]:
        names = {f.name for f in dataclasses.fields(klass) if f.init}
        return {k: v for k, v in values.items() if k in names}

    trainer_kwargs = kwargs_for(trainer_cls)
    trainer_kwargs.setdefault("activation_checkpointing", _trl_default(trainer_cls, "gradient_checkpointing"))
    notes += adapt_to_launch(trainer_kwargs, dry_run=dry_run)
    try:
        project = project_cls(**kwargs_for(project_cls))
        model_args = model_cls(**kwargs_for(model_cls))
        training_args = trainer_cls(**trainer_kwargs)
    except (TypeError, ValueError) as exc:
        hint = ""
        if "bf16" in str(exc) or "fp16" in str(exc):
            hint = " On a machine without GPU set bf16: false (as the tiny and smollm recipes do)."
        raise RecipeError(f"{where}: invalid configuration: {exc}{hint}") from None
    from gnt.training.attention import plan_attention

    notes += plan_attention(model_args, training_args)
    return TrainSetup(stage, recipe, project, model_args, training_args, resume, notes)


def _check_ranges(values: dict[str, Any], where: str) -> None:
    """Values transformers would accept with another meaning (``max_steps: -3`` trains by epochs) or fail on
    deep inside training (``max_length: 0``): refused here with what to write instead."""
    steps = values.get("max_steps")
    if isinstance(steps, int) and (steps == 0 or steps < -1):
        raise RecipeError(f"{where}: max_steps: {steps}: give a positive number of optimizer steps, or -1 (the "
                          "default) to train num_train_epochs")
    for key in ("max_length", "max_prompt_length", "max_completion_length"):
        if isinstance(values.get(key), int) and values[key] < 1:
            raise RecipeError(f"{where}: {key}: {values[key]}: give a positive number of tokens, or null for no limit")
    for key in ("max_train_samples", "max_eval_samples"):
        if isinstance(values.get(key), int) and values[key] < 1:
            raise RecipeError(f"{where}: {key}: {values[key]}: give a positive number of rows, or null for all rows")
    epochs = values.get("num_train_epochs")
    if isinstance(epochs, (int, float)) and epochs <= 0 and not (isinstance(steps, int) and steps > 0):
        raise RecipeError(f"{where}: num_train_epochs: {epochs}: give a positive number (or set max_steps)")
    for key in ("per_device_train_batch_size", "per_device_eval_batch_size", "gradient_accumulation_steps", "lora_r"):
        if isinstance(values.get(key), int) and values[key] < 1:
            raise RecipeError(f"{where}: {key}: {values[key]}: give a positive whole number")
    for key in ("learning_rate", "lora_alpha"):
        if isinstance(values.get(key), (int, float)) and not values[key] > 0:
            raise RecipeError(f"{where}: {key}: {values[key]}: give a positive number")
    for key in ("save_steps", "logging_steps", "eval_steps"):  # below 1: a share of the total steps
        if isinstance(values.get(key), (int, float)) and not values[key] > 0:
            raise RecipeError(f"{where}: {key}: {values[key]}: give a positive number of steps (below 1: a share "
                              "of the total steps)")
    dropout = values.get("lora_dropout")
    if isinstance(dropout, (int, float)) and not 0 <= dropout < 1:
        raise RecipeError(f"{where}: lora_dropout: {dropout}: give a probability in [0, 1)")
    modules = values.get("lora_target_modules")
    if isinstance(modules, list) and any(not isinstance(m, str) or not m.strip() or m.strip().isdigit()
                                         for m in modules):
        raise RecipeError(f"{where}: lora_target_modules: {modules}: give module names (q_proj, v_proj, ...) or "
                          "all-linear")
    kinds = values.get("pair_kinds")
    if kinds is not None:
        from gnt.data.training_rows import PAIR_KINDS

        unknown = [k for k in kinds if k not in PAIR_KINDS] if isinstance(kinds, list) else [kinds]
        if unknown or not kinds:
            raise RecipeError(f"{where}: pair_kinds: {kinds}: give a non-empty list of {', '.join(PAIR_KINDS)} (or "
                              "null for every kind)")
    weight = values.get("decision_token_weight")
    if isinstance(weight, (int, float)) and weight <= 0:
        raise RecipeError(f"{where}: decision_token_weight: {weight}: give a positive weight (1 weighs the decision "
                          "token like every other token)")


def _check_report_to(report_to: Any, where: str) -> None:
    """An unknown tracker fails here, before anything is written, instead of when the trainer is built."""
    from transformers.integrations.integration_utils import INTEGRATION_TO_CALLBACK

    values = [report_to] if isinstance(report_to, str) else list(report_to or [])
    valid = ("none", "all", *INTEGRATION_TO_CALLBACK)
    unknown = [value for value in values if str(value) not in valid]
    if unknown:
        raise RecipeError(f"{where}: report_to: unknown tracker(s) {', '.join(map(str, unknown))}; valid: "
                          f"{', '.join(valid)}")


def _trl_default(klass: type, name: str) -> Any:
    for f in dataclasses.fields(klass):
        if f.name == name:
            return f.default
    return None


def _default_run_name(stage: str, recipe: ResolvedRecipe) -> str:
    """``<recipe>-<stage>`` (``qwen`` → ``qwen-sft``; ``qwen-dpo`` stays), plus a short hash of any overrides."""
    from gnt.io import hash_json

    name = recipe.name if stage in recipe.name.split("-") else f"{recipe.name}-{stage}"
    significant = [o for o in recipe.overrides if not o.startswith(("output_dir=", "report_to="))]
    return f"{name}-{hash_json(significant, 6)}" if significant else name
