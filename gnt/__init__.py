"""gnt-align."""

import logging as _logging

_BNB_KERNELS = "Failed to load CPU gemm_4bit_forward from kernels-community"
"""bitsandbytes 0.50 on a CPU with AVX512-BF16 tries to fetch a faster 4-bit kernel from the hub (the optional
``kernels`` package) at import and warns when it cannot; it then uses its own CPU kernel, which is what QLoRA on CPU
is tested with here. The warning says nothing a user must act on, and fetching code from the hub at import is not
wanted offline, so it is dropped (every other bitsandbytes message is kept)."""


def _not_the_kernels_notice(record: _logging.LogRecord) -> bool:
    return not str(record.msg).startswith(_BNB_KERNELS)


_logging.getLogger("bitsandbytes.backends.cpu.ops").addFilter(_not_the_kernels_notice)
