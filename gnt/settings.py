"""The settings groups that several recipe kinds share, each defined once and composed into the recipes.

A recipe stays one flat YAML mapping (``backend: vllm``, ``bootstrap_samples: 2000``): the groups are dataclasses
that a recipe class inherits from, so their fields become the recipe's keys with one name, one type, one default
and one meaning wherever they appear. The evaluation recipe (:class:`gnt.evaluation.config.EvalConfig`), the judge
recipe (:class:`gnt.judge.config.JudgeRecipe`) and the templated suite (which takes every evaluation key) all use
:class:`BackendSettings`, and :func:`gnt.generation.factory.build_backend` builds a backend from it alone, so a key
that works for one command works the same way for the others.

The groups are plain dataclasses, not pydantic models, because the training recipes are TRL's dataclasses and the
recipe schema (:mod:`gnt.recipe`) reads fields the same way from both.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator

from gnt.bootstrap import BootstrapSettings  # its home is beside the functions it is passed to
from gnt.recipe import Bounds, RecipeError

DEFAULT_PREFIX_CACHING = True
"""Whether backends reuse the key/value cache of a shared prompt prefix (vLLM's prefix caching, the transformers
backend's prefix reuse) unless a recipe's ``enable_prefix_caching`` says otherwise. Outputs are the same either way
(greedy, token for token); turning it off only costs time."""
DEFAULT_MAX_NEW_TOKENS = 256
"""The token cap per reply unless a recipe says otherwise (recipe key ``max_new_tokens``)."""
MAX_TOKENS = Bounds(1, 2**20, note="tokens; no model generates or reads more at once")
"""The range of a count of tokens (a reply's cap, a context length)."""
COUNT = Bounds(1, 2**20)
"""The range of a count of things processed together (a batch, requests in flight, a chunk)."""

BackendKind = Literal["transformers", "vllm", "http"]

SYSTEM_ROLE_SYNONYMS = {"yes": "keep", "no": "merge"}
"""The evaluation recipe's former spelling of ``system_role``, still accepted (YAML 1.1 reads both as booleans)."""


def _system_role(value: Any) -> Any:
    if isinstance(value, bool):
        value = "yes" if value else "no"
    return SYSTEM_ROLE_SYNONYMS.get(value, value) if isinstance(value, str) else value


SystemRole = Annotated[Literal["auto", "keep", "merge"], BeforeValidator(_system_role)]
"""Whether prompts keep their system turn, in training and evaluation alike: ``auto`` asks the chat template,
``keep`` always sends a system turn, ``merge`` puts the system text at the start of the first user turn (for
templates without a system role, such as Gemma 2). ``yes``/``no`` are read as keep/merge."""

SYSTEM_ROLE_HELP = (
    "auto (ask the chat template), keep (send a system turn) or merge (system text opens the first user turn); "
    "yes/no mean keep/merge"
)


DTYPE_HELP = "weights dtype (float32, bfloat16, float16; or bf16, fp32, fp16); auto: bfloat16 on a GPU, else float32"
"""The one meaning of a ``dtype`` key: the dtype a model's weights are loaded in (generation, attribution)."""
DTYPE_NAMES = {"bf16": "bfloat16", "fp32": "float32", "fp16": "float16", "fp64": "float64"}
DTYPES = ("auto", "float32", "bfloat16", "float16", "float64")


def dtype_name(value: str) -> str:
    """A ``dtype`` value in torch's spelling (``bf16`` → ``bfloat16``); RecipeError for one that is none."""
    name = DTYPE_NAMES.get(value, value)
    if name not in DTYPES:
        raise RecipeError(f"dtype: {value!r} is not one of {', '.join(DTYPES)} (or {', '.join(DTYPE_NAMES)})")
    return name


def system_role_value(value: Any) -> str:
    """A ``system_role`` value in the one vocabulary (for configs built in code rather than from a recipe)."""
    value = _system_role(value)
    if value not in ("auto", "keep", "merge"):
        raise RecipeError(f"system_role: {value!r} is not one of auto, keep, merge (or yes/no)")
    return value


def check_positive(owner: object, *names: str) -> None:
    """RecipeError naming every key of ``names`` that is set below 1 (None means "no limit" and passes)."""
    for name in names:
        value = getattr(owner, name)
        if value is not None and value < 1:
            raise RecipeError(f"{name} must be at least 1 (got {value})")


@dataclass
class BackendSettings:
    """How requests reach a model: which backend, on what hardware, over which HTTP server.

    Each backend reads only its own keys (see :func:`gnt.generation.factory.build_backend`); the others are kept in
    the recipe record but have no effect, so one recipe can switch ``backend`` without being rewritten.
    """

    backend: BackendKind = field(default="transformers", metadata={"help": "transformers, vllm or http"})
    dtype: str = field(default="auto", metadata={"help": DTYPE_HELP})
    device: str = field(default="auto", metadata={"help": "transformers: cpu, cuda, cuda:N or auto"})
    batch_size: int = field(default=16, metadata={"help": "transformers: sequences generated together",
                                                  "bounds": COUNT})
    trust_remote_code: bool = field(default=False, metadata={
        "help": "run a model repository's own Python code (turn on only for code you trust)"})
    cpu_threads: int | None = field(default=None, metadata={
        "help": "torch threads on CPU (process-wide); null: torch's", "bounds": Bounds(1, 1024)})
    tensor_parallel_size: int = field(default=1, metadata={"help": "vLLM: GPUs the model is split over",
                                                           "bounds": Bounds(1, 1024)})
    max_loras: int = field(default=4, metadata={"help": "adapters loaded at once (vLLM LoRA slots, transformers)",
                                                "bounds": Bounds(1, 1024)})
    max_lora_rank: int | None = field(default=None, metadata={
        "help": "vLLM: largest adapter rank; null: from the adapters", "bounds": Bounds(1, 65536)})
    max_model_len: int | None = field(default=None, metadata={
        "help": "vLLM: context length; null: the model's", "bounds": MAX_TOKENS})
    gpu_memory_utilization: float = field(default=0.9, metadata={"help": "vLLM: share of GPU memory it may take",
                                                                 "bounds": Bounds(0, 1, above=True)})
    enable_prefix_caching: bool = field(
        default=DEFAULT_PREFIX_CACHING, metadata={"help": "reuse shared prompt prefixes (vLLM and transformers)"}
    )
    engine_extra: dict = field(default_factory=dict, metadata={"help": "vLLM: extra engine arguments"})
    base_url: str | None = field(default=None, metadata={"help": "http: the server, e.g. http://localhost:8000/v1"})
    served_model: str | None = field(default=None, metadata={"help": "http: the model's name on the server"})
    api_key_env: str | None = field(default=None, metadata={"help": "http: environment variable holding the API key"})
    concurrency: int = field(default=8, metadata={"help": "http: requests in flight", "bounds": Bounds(1, 4096)})
    timeout_s: float = field(default=120.0, metadata={"help": "http: seconds per request, in all",
                                                      "bounds": Bounds(0, 7 * 86400, above=True)})
    http_retries: int = field(default=5, metadata={"help": "http: retries of a failed request (errors, 429, 5xx)",
                                                   "bounds": Bounds(0, 100)})
    regex_field: Literal["structured_outputs", "guided_regex"] = field(
        default="structured_outputs", metadata={"help": "http: request field for a regex (guided_regex: vLLM < 0.12)"}
    )

    def validate_backend(self, *, needs_server: bool = True) -> None:
        """Cross-key checks of the backend keys; ``needs_server`` is False where no backend will be built."""
        self.dtype = dtype_name(self.dtype)
        if needs_server and self.backend == "http" and not self.base_url:
            raise RecipeError("backend http needs base_url (e.g. http://localhost:8000/v1)")
        check_positive(self, "batch_size", "tensor_parallel_size", "max_loras", "concurrency", "cpu_threads")
        if self.http_retries < 0:
            raise RecipeError(f"http_retries must be >= 0 (got {self.http_retries})")
        if self.timeout_s <= 0 or not 0 < self.gpu_memory_utilization <= 1:
            raise RecipeError("timeout_s must be positive and gpu_memory_utilization in (0, 1]")


@dataclass
class DecodingSettings:
    """How much is generated per request and how requests are cut into backend calls (greedy decoding)."""

    max_new_tokens: int = field(default=DEFAULT_MAX_NEW_TOKENS, metadata={"help": "token cap per reply",
                                                                          "bounds": MAX_TOKENS})
    chunk_size: int = field(default=256, metadata={"help": "requests per backend call and per cache write",
                                                   "bounds": COUNT})

    def validate_decoding(self) -> None:
        check_positive(self, "max_new_tokens", "chunk_size")


def bootstrap_of(config: object) -> dict[str, object]:
    """The bootstrap keys of any config that has them (a step's settings default to the evaluation recipe's)."""
    return {f.name: getattr(config, f.name) for f in fields(BootstrapSettings) if hasattr(config, f.name)}


@dataclass
class WandbSettings:
    """Where a run is logged in Weights & Biases (used when ``report_to`` includes wandb)."""

    wandb_project: str = field(default="gnt-align", metadata={"help": "W&B project (report_to: wandb)."})
    wandb_entity: str | None = field(default=None, metadata={"help": "W&B entity (team or user)."})
    wandb_group: str | None = field(
        default=None, metadata={"help": "W&B group; default: the base model's short name, so SFT and DPO group."}
    )
    wandb_tags: list[str] = field(default_factory=list, metadata={"help": "W&B tags."})


@dataclass
class OutputSettings:
    """Where a command writes its results and whether it shows progress bars."""

    out_dir: str = field(default="outputs/eval", metadata={"help": "results folder (one subfolder per model)"})
    progress: bool = field(default=True, metadata={"help": "show progress bars"})
