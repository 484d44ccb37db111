"""Builders for evaluation tests: tiny training runs with real PEFT checkpoints, and scripted backends."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from gnt.generation.base import Generation, GenerationBackend, GenerationRequest


def make_checkpoint(base_model: Path, folder: Path, seed: int, rank: int = 4) -> Path:
    """A LoRA adapter over ``base_model`` whose B weights are random (so it changes outputs), saved to ``folder``."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(base_model)
    config = LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    with torch.random.fork_rng(devices=[]):  # LoRA's A init draws from the global RNG: seed it, leave it as it was
        torch.manual_seed(seed)
        peft_model = get_peft_model(model, config)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.5)
    peft_model.save_pretrained(folder)
    return folder


def make_run(
    base_model: Path,
    run_dir: Path,
    data_dir: Path,
    steps: Sequence[int] = (1, 2),
    train_source_keys: Iterable[str] | None = None,
    stage: str = "sft",
) -> Path:
    """A training-run folder as the trainer writes it: gnt_run.json + checkpoint-<step>/ adapters with records."""
    manifest = json.loads((data_dir / "manifest.json").read_text(encoding="utf-8"))
    keys = sorted(train_source_keys) if train_source_keys is not None else manifest["source_keys"]["train"]
    record = {
        "stage": stage,
        "base_model": str(base_model),
        "recipe": {"name": "tiny"},
        "data_dir": str(data_dir),
        "data_manifest_sha256": "test",
        "train_source_keys": keys,
        "wandb": {"mode": "disabled"},
    }
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "gnt_run.json").write_text(json.dumps(record), encoding="utf-8")
    for step in steps:
        folder = make_checkpoint(base_model, run_dir / f"checkpoint-{step}", seed=zlib.crc32(f"{stage}/{step}".encode()))
        (folder / "gnt_run.json").write_text(json.dumps({**record, "global_step": step}), encoding="utf-8")
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}), encoding="utf-8")
    return run_dir


class ScriptedBackend(GenerationBackend):
    """Answers each request with ``reply(request)``; counts calls; can raise after ``fail_after`` calls."""

    def __init__(
        self, reply: Callable[[GenerationRequest], Generation | str], model_id: str = "scripted",
        fail_after: int | None = None, system_role: bool = True,
    ) -> None:
        self.reply = reply
        self.model_id = model_id
        self.fail_after = fail_after
        self.system_role = system_role
        self.calls = 0
        self.requests: list[GenerationRequest] = []

    def supports_system_role(self) -> bool:
        return self.system_role

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise KeyboardInterrupt("simulated kill")
        self.calls += 1
        self.requests.extend(requests)
        out = []
        for request in requests:
            result = self.reply(request)
            out.append(result if isinstance(result, Generation) else Generation(result))
        return out
