"""AttnLRP through ``lxt``: its relevance rules patched into a model for the duration of an explanation.

AttnLRP (Achtibat et al., ICML 2024) changes only the backward pass: RMSNorm's variance is treated as a constant
(identity rule), the gated MLP's activation passes relevance through its ratio (identity rule) and the gate×up
product splits it evenly (uniform rule), and attention's query/key/value gradients are divided (uniform rule on the
two matmuls). The forward values are unchanged, so the engine in :mod:`gnt.attribution.gradxinput` reads LRP
relevances off ``e · grad`` exactly as it reads gradient × input.

Two workarounds make ``lxt`` 2.1 run on transformers 5 (measured, ENVIRONMENT.md):

1. ``import lxt`` (and ``lxt.efficient``) imports its BERT and ViT patch modules, which import functions that
   transformers 5 removed. We load only ``lxt.efficient.rules`` and ``lxt.efficient.patches`` (the rule and forward
   definitions), under temporary package stubs, and never run lxt's package ``__init__``.
2. lxt's ``patch_attention`` replaces transformers' attention registry with a plain dict, which breaks the
   registry's ``get_interface`` in transformers 5. We patch only the module's ``eager_attention_forward`` and require
   the model to be loaded with ``attn_implementation="eager"`` (the loader in :mod:`gnt.attribution.run` does).

Patching is scoped: :func:`attnlrp_patched` restores the original methods on exit, so other code in the process
(a training test, a generation backend) never runs with LRP gradients. Supported: the architectures below, whose
modules lxt 2.1 ships rules for and whose MLP/norm/attention shapes the rules assume; anything else raises
:class:`AttnLRPUnavailable` with the list, and ``--method gradxinput`` works for every model.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

#: lxt versions this integration was verified with (relevance conserved on the tiny Qwen2; see tests).
SUPPORTED_LXT_VERSIONS: tuple[str, ...] = ("2.1",)
#: transformers versions it was verified with (the eager attention function and module layout it patches).
TESTED_TRANSFORMERS: tuple[str, ...] = ("5.24.0",)
#: model_type → (modeling module, MLP class, RMSNorm class); lxt 2.1 ships AttnLRP maps for these.
SUPPORTED_ARCHITECTURES: dict[str, tuple[str, str, str]] = {
    "qwen2": ("transformers.models.qwen2.modeling_qwen2", "Qwen2MLP", "Qwen2RMSNorm"),
    "llama": ("transformers.models.llama.modeling_llama", "LlamaMLP", "LlamaRMSNorm"),
    "qwen3": ("transformers.models.qwen3.modeling_qwen3", "Qwen3MLP", "Qwen3RMSNorm"),
}
INSTALL_HINT = "install it with `pip install --no-deps lxt==2.1` (its dependencies would pull a CUDA torchvision)"


class AttnLRPUnavailable(RuntimeError):
    """AttnLRP cannot run for this model or environment; the message says why and what is supported."""

    exit_code = 2

    def __str__(self) -> str:
        return f"AttnLRP unavailable: {super().__str__()}"


def supported_description() -> str:
    return (
        f"AttnLRP is supported with lxt {', '.join(SUPPORTED_LXT_VERSIONS)} for model types "
        f"{', '.join(sorted(SUPPORTED_ARCHITECTURES))} (verified with transformers {', '.join(TESTED_TRANSFORMERS)}); "
        "use --method gradxinput for any other model"
    )


def lxt_version() -> str | None:
    try:
        return metadata.version("lxt")
    except metadata.PackageNotFoundError:
        return None


def load_lxt_patches() -> types.ModuleType:
    """``lxt.efficient.patches`` (with its ``rules``) imported without running lxt's package initialisers.

    The stubs for ``lxt`` and ``lxt.efficient`` exist only during the import; afterwards ``import lxt`` behaves as
    it would without us (and still fails on transformers 5, which is lxt's business).
    """
    version = lxt_version()
    if version is None:
        raise AttnLRPUnavailable(f"the AttnLRP method needs the `lxt` package: {INSTALL_HINT}. {supported_description()}")
    if version not in SUPPORTED_LXT_VERSIONS:
        raise AttnLRPUnavailable(
            f"lxt {version} is installed but this integration was verified only with lxt "
            f"{', '.join(SUPPORTED_LXT_VERSIONS)} (it patches lxt internals): {INSTALL_HINT}. {supported_description()}"
        )
    if "lxt.efficient.patches" in sys.modules:
        return sys.modules["lxt.efficient.patches"]
    spec = importlib.util.find_spec("lxt")
    if spec is None or not spec.submodule_search_locations:
        raise AttnLRPUnavailable(f"lxt {version} is registered but its package folder is missing: {INSTALL_HINT}")
    root = Path(next(iter(spec.submodule_search_locations)))
    stubs = {"lxt": root, "lxt.efficient": root / "efficient"}
    added = []
    try:
        for name, folder in stubs.items():
            if name not in sys.modules:
                stub = types.ModuleType(name)
                stub.__path__ = [str(folder)]  # a package without its __init__ having run
                sys.modules[name] = stub
                added.append(name)
        patches = importlib.import_module("lxt.efficient.patches")
    except Exception as exc:  # noqa: BLE001 - any import failure is an unsupported lxt layout
        raise AttnLRPUnavailable(f"could not load lxt {version}'s AttnLRP rules ({exc}). {supported_description()}") from exc
    finally:
        for name in added:
            sys.modules.pop(name, None)
    for needed in ("rms_norm_forward", "gated_mlp_forward", "wrap_attention_forward"):
        if not hasattr(patches, needed):
            raise AttnLRPUnavailable(f"lxt {version} has no `{needed}` in lxt.efficient.patches. {supported_description()}")
    return patches


def check_support(model) -> tuple[types.ModuleType, type, type]:
    """The modeling module, MLP class and RMSNorm class to patch; raise :class:`AttnLRPUnavailable` otherwise."""
    model_type = getattr(model.config, "model_type", None)
    if model_type not in SUPPORTED_ARCHITECTURES:
        raise AttnLRPUnavailable(f"model type {model_type!r} has no AttnLRP rules here. {supported_description()}")
    attn = getattr(model.config, "_attn_implementation", None)
    if attn != "eager":
        raise AttnLRPUnavailable(
            f"AttnLRP patches the eager attention function, but the model uses {attn!r} attention: load it with "
            'attn_implementation="eager" (gnt.attribution.run.load_model(..., method="attnlrp") does)'
        )
    module_name, mlp_name, norm_name = SUPPORTED_ARCHITECTURES[model_type]
    module = importlib.import_module(module_name)
    missing = [n for n in (mlp_name, norm_name, "eager_attention_forward") if not hasattr(module, n)]
    if missing:
        raise AttnLRPUnavailable(
            f"{module_name} lacks {', '.join(missing)} in this transformers version. {supported_description()}"
        )
    return module, getattr(module, mlp_name), getattr(module, norm_name)


@dataclass
class PatchState:
    """What happened under the patch: how often the patched attention ran (0 after a forward means the model
    dispatched attention elsewhere and the relevances would silently lack the attention rule)."""

    attention_calls: int = 0

    def require_attention(self) -> None:
        if self.attention_calls == 0:
            raise AttnLRPUnavailable(
                "the model never called the eager attention function that AttnLRP patches (this transformers version "
                f"dispatches attention elsewhere); relevances would be wrong. {supported_description()}"
            )


@contextlib.contextmanager
def attnlrp_patched(model) -> Iterator[PatchState]:
    """Run the block with the AttnLRP rules in the model's classes; the originals come back on exit.

    The patch is class-level (as lxt does it), so it applies to every instance of the architecture while active;
    keep forward *and* backward inside the block. Nested use is refused rather than double-dividing gradients.
    Yields a :class:`PatchState` whose ``require_attention()`` confirms after a forward that the patch was used.
    """
    patches = load_lxt_patches()
    module, mlp_cls, norm_cls = check_support(model)
    if getattr(module, "_gnt_attnlrp_active", False):
        raise RuntimeError("AttnLRP patches are already active for this architecture (nested use)")
    state = PatchState()
    saved = (mlp_cls.forward, norm_cls.forward, module.eager_attention_forward)
    lrp_attention = patches.wrap_attention_forward(saved[2])

    def counted_attention(*args, **kwargs):
        state.attention_calls += 1
        return lrp_attention(*args, **kwargs)

    mlp_cls.forward = patches.gated_mlp_forward
    norm_cls.forward = patches.rms_norm_forward
    module.eager_attention_forward = counted_attention
    module._gnt_attnlrp_active = True
    try:
        yield state
    finally:
        mlp_cls.forward, norm_cls.forward, module.eager_attention_forward = saved
        module._gnt_attnlrp_active = False
