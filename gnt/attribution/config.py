"""The keys of an attribution run and of a contrastive run (``eval/attribute.py``, ``contrastive=true``): what both
read (the model, the rows, the grid, where results go) is one group, each default and meaning written once; each
run adds its own keys."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gnt.attribution.contrastive import LABEL_MODES
from gnt.attribution.loading import METHODS
from gnt.attribution.spans import TARGETS
from gnt.prompts.grid import Cell
from gnt.recipe import RecipeError
from gnt.settings import DTYPE_HELP

OUTCOME_KINDS: tuple[str, ...] = ("label", "judged", "gnt")
DEFAULT_CONFIG, DEFAULT_SHOTS = "G+S", 4


SETS: tuple[str, ...] = ("Set-G", "Set-N")


def check_choices(key: str, values: Sequence[str], valid: Sequence[str]) -> None:
    """A selection key that would select nothing (empty, or an unknown value) is refused before any work."""
    unknown = [value for value in values if value not in valid]
    if unknown or not values:
        what = f"unknown {', '.join(map(repr, unknown))}" if unknown else "selects nothing"
        raise RecipeError(f"{key}: {what}; valid: {', '.join(valid)}")


def cell_dir_name(cell: str) -> str:
    """File-system name of a cell: ``it/G+S/4`` → ``it_G+S_4``."""
    return Cell.parse(cell).name.replace("/", "_")


def _key(default: Any, meaning: str, choices: Sequence[str] | None = None) -> Any:
    """A field that is also a command-line key: its default and its meaning."""
    metadata = {"help": meaning, **({"choices": tuple(choices)} if choices else {})}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass
class AttributionSettings:
    """What both runs read: the evaluated model, the rows, the prompt grid that rendered them, where results go."""

    result_dir: str | None = None
    """The evaluation result folder ``<out>/<model>`` (set from the command's subject)."""
    model: str | None = _key(None, "model path or hub id (null: the result's record.json)")
    adapter: str | None = _key(None, "LoRA adapter folder (null: the result's record.json); merged before attribution")
    data: str | None = _key(None, "the evaluated rows (Entry .jsonl or mGeNTE TSV/folder): the sources and references "
                                  "a result's generations lack, or, without a result, the rows themselves")
    cells: tuple[str, ...] = _key((), "grid cells such as it/G+S/4 (empty: <lang>/G+S/4 of every language)")
    sets: tuple[str, ...] = _key(("Set-G", "Set-N"), "mGeNTE sets whose rows are explained")
    max_rows: int | None = _key(50, "rows sampled per group: per (set, outcome), or per cell with contrastive "
                                    "(null: every row)")
    device: str = _key("auto", "auto, cpu, cuda or cuda:N")
    dtype: str = _key("auto", DTYPE_HELP)
    prompts_dir: str | None = _key(None, "prompt texts folder (null: the result's record, else data/prompts)")
    grid_seed: int | None = _key(None, "shot-order seed of the prompt grid (null: the result's record, else 0)")
    sample_seed: int = _key(0, "seed of the row sample")
    out_dir: str | None = _key(None, "output root (null: <result>/attribution; needed without a result)")
    plots: bool = _key(True, "draw the PNG figures")


@dataclass
class AttributionConfig(AttributionSettings):
    """Everything an attribution run depends on; saved in its record."""

    balance_by: str = _key("label", "outcome the row sample is balanced over (judged/gnt need judgments.jsonl)",
                           ("label", "judged", "gnt", "none"))
    method: str = _key("gradxinput", "attribution method (attnlrp needs lxt 2.1 and a Qwen2/Qwen3/Llama model)", METHODS)
    targets: tuple[str, ...] = _key(TARGETS, "what is explained: S_L (the label) and/or S_T (the translation)")
    batch_size: int = _key(8, "rows per backward pass")
    max_batch_tokens: int = _key(32768, "cap on padded tokens per batch")
    top_tokens: int = _key(20, "top tokens kept per row for inspection")
    keep_token_scores: bool = _key(False, "also save every ranked token's score")

    def validate(self) -> AttributionConfig:
        if not self.result_dir:
            raise RecipeError("attribution needs an evaluation result folder (or contrastive=true with data=...)")
        if self.method not in METHODS:
            raise RecipeError(f"unknown method {self.method!r}; expected one of {', '.join(METHODS)}")
        if self.balance_by not in (*OUTCOME_KINDS, "none"):
            raise RecipeError(f"balance_by must be one of {', '.join((*OUTCOME_KINDS, 'none'))}")
        check_choices("targets", self.targets, TARGETS)
        check_choices("sets", self.sets, SETS)
        return self


@dataclass
class ContrastiveConfig(AttributionSettings):
    """A contrastive run: rows with Ref-G and Ref-N from an evaluation result or straight from the data."""

    max_rows: int | None = _key(20, "rows sampled per cell (null: every row)")
    langs: tuple[str, ...] = _key((), "languages when no cells are given (empty: every language of the rows)")
    common_only: bool = _key(True, "only rows of the common set (false: every row with both references)")
    min_refs: int = _key(1, "only rows with at least this many neutral references")
    labels: str = _key("matching", "answer labels: matching (NEUTRAL for Ref-N, GENDERED for Ref-G) or one for both",
                       LABEL_MODES)
    extra: dict = field(default_factory=dict)

    def validate(self) -> ContrastiveConfig:
        check_choices("sets", self.sets, SETS)
        if self.labels not in LABEL_MODES:
            raise RecipeError(f"labels must be one of {', '.join(LABEL_MODES)}")
        if not self.result_dir and not self.data:
            raise RecipeError("contrastive mode needs rows: give an evaluation result or data=...")
        return self
