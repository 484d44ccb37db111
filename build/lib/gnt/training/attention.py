"""Which attention kernel a run uses, and whether it packs rows (padding-free) with it.

TRL's best-fit packing concatenates rows into one sequence whose ``position_ids`` restart at every row. Whether
rows then stay apart depends on the attention implementation:

- flash_attention_2/3 take the row boundaries as cumulative lengths (varlen): isolated and cheap — the reason to
  pack at all;
- sdpa, eager and flex_attention get a block-diagonal mask that transformers 5 derives from ``position_ids``
  (training: no mask, no KV cache): isolated (the tests check it), but the mask and attention scores span the
  whole packed batch, quadratic in ``per_device_train_batch_size * max_length``;
- anything else (remote code, custom kernels) is not known to honour the boundaries: packing is turned off.

So GPU recipes ask for flash_attention_2 with packing; where flash-attn is not installed the run falls back to
sdpa without packing, and says so.
"""

from __future__ import annotations

import importlib.util
from typing import Any

VARLEN = {"flash_attention_2": "flash_attn", "flash_attention_3": "flash_attn_interface"}
MASKED = {None, "sdpa", "eager", "flex_attention"}


def kernel_installed(attention: str) -> bool:
    module = VARLEN.get(attention)
    return module is None or importlib.util.find_spec(module) is not None


def plan_attention(model_args: Any, training_args: Any) -> list[str]:
    """Adjust ``attn_implementation`` / ``packing`` to what this machine supports; return one note per change."""
    notes = []
    attention = model_args.attn_implementation
    packing = bool(getattr(training_args, "packing", False))
    if attention in VARLEN and not kernel_installed(attention):
        model_args.attn_implementation = "sdpa"
        notes.append(f"{attention} requested but {VARLEN[attention]} is not installed: using sdpa"
                     + (" without packing (pip install flash-attn to pack rows padding-free)" if packing else ""))
        if packing:
            training_args.packing = False
        return notes
    if not packing:
        return notes
    if attention in MASKED:
        notes.append(f"packing with {attention or 'the default'} attention: rows stay isolated (block-diagonal "
                     "mask) but cost grows with the square of the packed batch; flash_attention_2 packs for free")
    elif attention not in VARLEN:
        training_args.packing = False
        notes.append(f"packing disabled: attention '{attention}' is not known to keep packed rows apart")
    return notes
