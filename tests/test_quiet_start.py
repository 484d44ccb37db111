"""A quiet start: importing gnt and starting LoRA training print nothing a user cannot act on.

Each check runs in a fresh interpreter, without ``HF_HUB_OFFLINE`` (a user's normal shell), because the messages
come from imports and the filters must be in place before the libraries load.
"""

from __future__ import annotations

import os
import subprocess
import sys

from gnt.paths import PROJECT_ROOT
from gnt.third_party_notices import BNB_KERNELS_NOTICE

LORA_ON_A_TINY_QWEN = """
import gnt
from peft import LoraConfig, get_peft_model
from transformers import Qwen2Config, Qwen2ForCausalLM
config = Qwen2Config(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                     num_key_value_heads=1, vocab_size=64)
model = Qwen2ForCausalLM(config)
model.gradient_checkpointing_enable()  # what PEFT's prepare_model_for_kbit_training and TRL call
get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj"]))
model.gradient_checkpointing_disable()
"""


def _python(code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "PYTHONWARNINGS")}
    env.update(OMP_NUM_THREADS="1", PYTHONPATH=str(PROJECT_ROOT))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=PROJECT_ROOT,
                          timeout=300)


def test_importing_gnt_and_bitsandbytes_prints_nothing() -> None:
    quiet = _python("import gnt.training, gnt.evaluation, bitsandbytes")
    assert quiet.returncode == 0, quiet.stderr
    assert (quiet.stdout, quiet.stderr) == ("", "")
    # the control: on a CPU where bitsandbytes looks for the optional hub kernel (AVX512-BF16, as on the project's
    # machines), bitsandbytes alone prints the notice, so the silence above is gnt's filter at work
    alone = _python("import bitsandbytes.functional as f; print(bool(f.has_avx512bf16()))")
    if alone.stdout.strip() == "True":
        assert BNB_KERNELS_NOTICE in alone.stderr


def test_wrapping_a_model_in_lora_prints_no_deprecation_notice() -> None:
    # PEFT reads transformers' deprecated `is_gradient_checkpointing`: every training start printed a FutureWarning
    result = _python(LORA_ON_A_TINY_QWEN)
    assert result.returncode == 0, result.stderr
    assert "gradient_checkpointing" not in result.stderr
    assert (result.stdout, result.stderr) == ("", "")


def test_the_kernels_notice_is_kept_when_the_user_installed_kernels(caplog) -> None:
    import logging

    import gnt  # noqa: F401 - installs the filter

    logger = logging.getLogger("bitsandbytes.backends.cpu.ops")
    with caplog.at_level(logging.WARNING, logger=logger.name):
        logger.warning(BNB_KERNELS_NOTICE + ": %s. Please make sure ...", ConnectionError("hub unreachable"))
        logger.warning(BNB_KERNELS_NOTICE + ": %s. Please make sure ...", ModuleNotFoundError(
            "No module named 'kernels'", name="kernels"))
    assert [r.getMessage().split(": ")[1] for r in caplog.records] == ["hub unreachable. Please make sure ..."]
