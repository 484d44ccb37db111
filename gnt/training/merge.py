"""Merging a trained adapter into its base model, for users who want one full model instead of base + adapter.

The base is always loaded unquantized in ``merge_dtype`` (bf16 by default), also after QLoRA training: merging
into 4-bit weights would round the LoRA update away and produce a model no other tool can load as bf16.
"""

from __future__ import annotations

from pathlib import Path

from gnt.io import atomic_directory


def merge_adapter(base_model: str, adapter_dir: str | Path, out_dir: str | Path, *, dtype: str = "bfloat16",
                  trust_remote_code: bool = False) -> Path:
    """Save ``base_model`` + the adapter in ``adapter_dir`` merged, with the adapter's tokenizer, into ``out_dir``,
    swapped in whole: so ``out_dir`` must be new or a merged model this project wrote (checked again here, as the
    recipe check was hours ago)."""
    from gnt.output_folder import check_output_folder, mark

    check_output_folder(out_dir, "merged", "merged_dir", replaced_whole=True)
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = AutoModelForCausalLM.from_pretrained(
        base_model, dtype=getattr(torch, dtype), device_map=None, trust_remote_code=trust_remote_code
    )
    merged = PeftModel.from_pretrained(base, str(adapter_dir)).merge_and_unload()
    tokenizer = AutoTokenizer.from_pretrained(str(adapter_dir))
    with atomic_directory(out_dir) as tmp:
        merged.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        mark(tmp, "merged")
    return Path(out_dir)
