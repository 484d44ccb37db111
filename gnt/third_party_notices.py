"""Third-party messages a user can do nothing about, silenced where gnt is imported (and only those).

Each entry names the library line that prints it, why it is not actionable, and what keeps the filter narrow. A
test imports ``gnt.training``, ``gnt.evaluation`` and ``bitsandbytes`` in a fresh interpreter without
``HF_HUB_OFFLINE`` and expects no output at all, and another trains on the tiny model and expects neither notice:
when a library upgrade changes a message, the filter stops matching and those tests say so.
"""

from __future__ import annotations

import logging
import warnings

BNB_KERNELS_LOGGER = "bitsandbytes.backends.cpu.ops"
BNB_KERNELS_NOTICE = "Failed to load CPU gemm_4bit_forward from kernels-community"
"""bitsandbytes 0.50.2, ``backends/cpu/ops.py``: on a CPU with AVX512-BF16, importing bitsandbytes runs
``from kernels import get_kernel`` to fetch an optional faster 4-bit kernel from the Hugging Face hub, and logs this
warning when that fails. It then uses its own compiled CPU kernel, the one QLoRA on CPU is tested with here. The
cause on a normal install is that the optional ``kernels`` package is not installed (ModuleNotFoundError): no hub
setting changes that (``HF_HUB_OFFLINE`` does not), and installing ``kernels`` would make every import fetch code
from the hub. So that one cause is dropped; when ``kernels`` is installed and the fetch fails (the user opted in)
the warning is kept, as is every other bitsandbytes message."""

MISSING_KERNELS = "No module named 'kernels'"

GRADIENT_CHECKPOINTING_NOTICE = r"`(is_)?gradient_checkpointing(_enable|_disable)?` is deprecated"
"""transformers 5.24, ``modeling_utils.py``: ``is_gradient_checkpointing``, ``gradient_checkpointing_enable`` and
``gradient_checkpointing_disable`` warn (FutureWarning) that they are deprecated aliases of the
``activation_checkpointing`` names. gnt never calls them: PEFT 0.21.2 (``PeftModel.__init__``,
``prepare_model_for_kbit_training``) and TRL 1.16 (``disable_gradient_checkpointing``,
``unwrap_model_for_generation``) do, so every LoRA training start printed one, and QLoRA or activation
checkpointing more. Only these messages, from transformers' module, are ignored; remove the filter once PEFT and
TRL call the new names."""


def _not_the_missing_kernels_package(record: logging.LogRecord) -> bool:
    """False (drop it) only for the kernels notice whose cause is that the optional package is absent."""
    if not str(record.msg).startswith(BNB_KERNELS_NOTICE):
        return True
    cause = record.args[0] if isinstance(record.args, tuple) and record.args else ""
    return str(cause) != MISSING_KERNELS  # the exception bitsandbytes passes, as its message renders it


def silence() -> None:
    """Install both filters (idempotent: a filter already present is not added twice)."""
    logger = logging.getLogger(BNB_KERNELS_LOGGER)
    if _not_the_missing_kernels_package not in logger.filters:
        logger.addFilter(_not_the_missing_kernels_package)
    warnings.filterwarnings("ignore", message=GRADIENT_CHECKPOINTING_NOTICE, category=FutureWarning,
                            module=r"transformers\.modeling_utils")
