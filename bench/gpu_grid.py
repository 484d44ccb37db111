"""GPU grid: the full 72,000-generation evaluation grid of a 7B-size model through vLLM with a LoRA adapter, and
LoRA / QLoRA SFT throughput and memory of the same model, on one GPU with no network.

Why: the evaluation grid is 4 languages × 4 prompt configurations × 3 shot counts × 1,500 rows = 72,000
generations per checkpoint, and the goal is that one checkpoint takes at most 10 minutes on one H200. Real
weights are not needed to measure that (nor reachable: no hub access), so the model is Qwen2.5-7B's architecture
built from its config (written below) with random weights, saved like a downloaded model, plus a random LoRA
adapter (r = 16 on every projection, as recipes/qwen.yaml trains). Rows are 1,500 synthetic mGeNTE-format rows per
language made from the bundled sample (as the data-build benchmark makes them).

Stages (each in its own process, so vLLM's and the trainer's GPU memory never overlap):

  build      model + tokenizer + random adapter + synthetic rows + SFT data build, into --work
  grid       run_sweep over the adapter on every cell and row with recipes/eval-vllm.yaml: wall time (goal
             <= 600 s), engine start, generations/s, output/prompt token statistics
  sft-lora   recipes/qwen.yaml (LoRA r=16, bf16, packing, activation checkpointing) on the same model: tokens/s
             after warm-up steps, peak GPU memory
  sft-qlora  recipes/qwen-qlora.yaml (4-bit NF4 base, LoRA r=64): the same figures

Without vLLM (``--backend auto`` on a machine that lacks it, or ``--backend transformers``) the grid stage runs the
project's transformers backend instead, in bf16 on the GPU with large batches (and whatever prefix reuse that
backend does): it cannot finish 72,000 generations in 10 minutes, so it runs ``--rows-per-lang`` rows (default 20:
960 generations) and records its generations/s and the full grid's time extrapolated from them, labelled as such.

Random weights never choose to stop, so every generation runs to the token cap. The default cap (96) is about
the length of a real answer (``<it> **LABEL** [translation]`` of a ~25-word sentence); ``--max-new-tokens 256`` is
the recipe's cap, a worst case. The tokenizer is the tiny model's (offline, 2,048 tokens; it makes the prompts
~1.5x longer than Qwen's tokenizer would, so the grid figure is pessimistic) unless ``--tokenizer smollm``.

    python bench/gpu_grid.py                       # all stages on an H200 (needs vllm, trl, peft, bitsandbytes)
    python bench/gpu_grid.py --stages grid         # one stage again (the --work folder is reused)
    python bench/gpu_grid.py --smoke               # CPU: tiny fake model, the transformers backend instead of vLLM
    python bench/gpu_grid.py --backend transformers  # an H200 without vLLM (auto picks it when vllm is missing)
    bash scripts/gpu_check.sh                      # the prepared <= 10-minute GPU session (either backend)
    python bench/gpu_grid.py --fake-backend --stages build,grid   # the sweep's own overhead for the full grid

Writes bench/results/gpu_grid.json (``--smoke``: gpu_grid_smoke.json; ``--fake-backend``: gpu_grid_overhead.json),
merging the stages that ran into what an earlier call of the same mode recorded.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from record import RESULTS_DIR, bench_command, print_table, save_record

from gnt.bootstrap import DEFAULT_SAMPLES
from gnt.cli.command import Call

ROOT = Path(__file__).resolve().parent.parent

# Qwen/Qwen2.5-7B-Instruct config.json (architecture only; token ids are set from the tokenizer used).
QWEN25_7B: dict[str, Any] = {
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_hidden_layers": 28,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "hidden_act": "silu",
    "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-6,
    "rope_theta": 1000000.0,
    "sliding_window": 131072,
    "max_window_layers": 28,
    "use_sliding_window": False,
    "attention_dropout": 0.0,
    "initializer_range": 0.02,
    "tie_word_embeddings": False,
    "vocab_size": 152064,
    "use_cache": True,
}
SMOKE_SHAPE: dict[str, Any] = {
    **QWEN25_7B, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "max_position_embeddings": 4096, "vocab_size": 2048, "max_window_layers": 2,
}
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
ROWS_PER_LANGUAGE = 1500
STAGES = ("build", "grid", "sft-lora", "sft-qlora")
MARKER = "GNT-GPU-GRID "
GOALS = {"grid_wall_seconds": "<= 600 (72,000 generations, one H200)"}
TRANSFORMERS_ROWS_PER_LANGUAGE = 20
FULL_GRID = 4 * 4 * 3 * ROWS_PER_LANGUAGE
SFT_RECIPES = {"sft-lora": ROOT / "recipes" / "qwen.yaml", "sft-qlora": ROOT / "recipes" / "qwen-qlora.yaml"}


# ------------------------------------------------------------------------------------------------------------------
# Preflight
# ------------------------------------------------------------------------------------------------------------------


def resolve_backend(choice: str, smoke: bool) -> str:
    """The grid's backend: ``auto`` is vLLM where it is installed and the transformers backend elsewhere."""
    import importlib.util

    if smoke:
        return "transformers"
    if choice == "auto":
        return "vllm" if importlib.util.find_spec("vllm") is not None else "transformers"
    return choice


def missing_requirements(stages: Sequence[str], smoke: bool, fake: bool, backend: str = "vllm") -> list[str]:
    """What this machine lacks for the selected stages, each with its fix (checked before minutes of work)."""
    import importlib.util

    problems = []
    needs = {"torch": "build", "transformers": "build", "peft": "build", "datasets": "build"}
    if "grid" in stages and not fake:
        needs["vllm" if backend == "vllm" else "xgrammar"] = "grid"
    for stage in ("sft-lora", "sft-qlora"):
        if stage in stages:
            needs.update(trl=stage, accelerate=stage)
    for module, stage in needs.items():
        if importlib.util.find_spec(module) is None:
            problems.append(f"python package '{module}' (stage {stage}): pip install -e '.[train,eval,vllm]'")
    if not smoke and not fake:
        try:
            import torch

            if not torch.cuda.is_available():
                problems.append("no CUDA GPU visible: run with --smoke on a CPU machine")
        except ImportError:
            pass
    return problems


# ------------------------------------------------------------------------------------------------------------------
# Stage: build
# ------------------------------------------------------------------------------------------------------------------


def tokenizer_source(choice: str) -> Path:
    """Folder of the tokenizer to ship with the model (offline builders only)."""
    if choice == "smollm":
        from gnt.models.smollm import ensure_smollm

        return ensure_smollm()
    from gnt.models.tiny import ensure_tiny_model

    return ensure_tiny_model()


def build_model(shape: dict[str, Any], tokenizer_dir: Path, out_dir: Path, adapter_dir: Path, device: str,
                dtype: str, lora_r: int = 16) -> dict[str, Any]:
    """A Qwen2 model of ``shape`` with random weights saved as a Hugging Face folder, and a random LoRA adapter.

    The adapter's B matrices are random (PEFT starts them at zero, which would make the adapter a no-op), small
    enough to keep activations in range.
    """
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig, Qwen2Config

    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    eos = eos if isinstance(eos, int) and eos != tokenizer.unk_token_id else tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    config = Qwen2Config(**shape, bos_token_id=pad, eos_token_id=eos, pad_token_id=pad)
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    model.generation_config = GenerationConfig(bos_token_id=pad, eos_token_id=eos, pad_token_id=pad)
    params = sum(p.numel() for p in model.parameters())
    built = time.perf_counter()
    model.save_pretrained(out_dir, max_shard_size="5GB")
    tokenizer.save_pretrained(out_dir)
    saved = time.perf_counter()
    lora = LoraConfig(r=lora_r, lora_alpha=2 * lora_r, lora_dropout=0.0, target_modules=LORA_TARGETS,
                      task_type="CAUSAL_LM")
    peft_model = get_peft_model(model, lora)
    generator = torch.Generator(device=device).manual_seed(1)
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=generator, device=device, dtype=param.dtype) * 0.02)
    peft_model.save_pretrained(str(adapter_dir))  # peft declares a str folder
    return {
        "parameters": params,
        "parameters_billion": round(params / 1e9, 3),
        "dtype": dtype,
        "tokenizer": str(tokenizer_dir.name),
        "tokenizer_size": len(tokenizer),
        "build_seconds": round(built - started, 1),
        "save_seconds": round(saved - built, 1),
        "adapter": {"r": lora_r, "alpha": 2 * lora_r, "targets": LORA_TARGETS},
        "model_gib_on_disk": round(sum(f.stat().st_size for f in out_dir.glob("*.safetensors")) / 2**30, 2),
    }


def stage_build(work: Path, smoke: bool, tokenizer: str, rows_per_lang: int) -> dict[str, Any]:
    """Model, adapter, synthetic grid rows and an SFT data build, into ``work`` (``smoke``: the small CPU model,
    also what the fake-backend mode uses, since it needs only the tokenizer and an adapter folder)."""
    from data_build import write_synthetic_mgente

    from gnt.data.build import BuildConfig, build_dataset

    for name in ("model", "adapter", "mgente", "data"):
        shutil.rmtree(work / name, ignore_errors=True)
    (work / "mgente").mkdir(parents=True)
    write_synthetic_mgente(work / "mgente", rows_per_lang)
    build_dataset(BuildConfig(out_dir=str(work / "data"), progress=False))
    device = "cpu" if smoke else "cuda"
    dtype = "float32" if smoke else "bfloat16"
    figures = build_model(SMOKE_SHAPE if smoke else QWEN25_7B, tokenizer_source(tokenizer), work / "model",
                          work / "adapter", device, dtype)
    figures["rows_per_language"] = rows_per_lang
    return figures


# ------------------------------------------------------------------------------------------------------------------
# Stage: grid
# ------------------------------------------------------------------------------------------------------------------


class TimedBackend:
    """Delegates to a generation backend and adds up the seconds spent inside ``generate``."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.model_id = backend.model_id
        self.seconds = 0.0
        self.calls = 0

    def generate(self, requests: Sequence[Any]) -> list[Any]:
        started = time.perf_counter()
        try:
            return self.backend.generate(requests)
        finally:
            self.seconds += time.perf_counter() - started
            self.calls += 1

    def supports_system_role(self) -> bool:
        return self.backend.supports_system_role()

    def describe(self) -> dict:
        return self.backend.describe()

    def close(self) -> None:
        self.backend.close()


class InstantBackend:
    """Answers every grid request at once with a well-formed output: the sweep's own cost, without a model."""

    model_id = "instant-fake"

    def generate(self, requests: Sequence[Any]) -> list[Any]:
        import re

        from gnt.generation.base import Generation

        out = []
        for request in requests:
            match = re.match(r"<(\w\w)>", str(request.constraint.value)) if request.constraint else None
            lang = match.group(1) if match else "it"
            out.append(Generation(f"<{lang}> **NEUTRAL** [x]", n_tokens=8, finish_reason="stop"))
        return out

    def supports_system_role(self) -> bool:
        return True

    def describe(self) -> dict:
        return {"backend": "instant-fake"}

    def close(self) -> None:
        return None


def prompt_token_stats(model_dir: Path, cells: Sequence[Any], source: str) -> dict[str, float]:
    """Prompt tokens of one row in every cell (the model's tokenizer and chat template), min / mean / max."""
    from transformers import AutoTokenizer

    from gnt.prompts.chat import render_prompt_text
    from gnt.prompts.grid import PromptGrid

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    grid = PromptGrid(tuple(dict.fromkeys(c.lang for c in cells)))
    lengths = [len(tokenizer(render_prompt_text(tokenizer, grid.render(source, cell, True).as_messages()),
                             add_special_tokens=False)["input_ids"]) for cell in cells]
    return {"min": min(lengths), "mean": round(sum(lengths) / len(lengths), 1), "max": max(lengths)}


def stage_grid(work: Path, smoke: bool, fake: bool, max_new_tokens: int, bootstrap: int, backend: str = "vllm",
               batch_size: int = 64, rows_per_lang: int | None = None) -> dict[str, Any]:
    """The grid over the adapter (vLLM, or the transformers backend in bf16 on the GPU; transformers on CPU in
    ``--smoke``; instant in ``--fake-backend``). ``rows_per_lang`` evaluates only that many of the built rows."""
    import torch

    from gnt.cli.evaluate import load_eval_config
    from gnt.evaluation.driver import default_backend_factory as make_backend
    from gnt.evaluation.results import GENERATIONS, load_summary, model_dir
    from gnt.evaluation.sweep import run_sweep
    from gnt.generation.transformers_backend import TransformersBackend
    from gnt.generation.vllm_backend import VLLMBackend
    from gnt.io import read_jsonl

    out = work / "eval"
    shutil.rmtree(out, ignore_errors=True)
    recipe = ROOT / "recipes" / ("eval.yaml" if smoke or backend == "transformers" else "eval-vllm.yaml")
    overrides: list[tuple[str, Any]] = [("include_base", False), ("max_new_tokens", max_new_tokens),
                                        ("bootstrap_samples", bootstrap), ("progress", not smoke)]
    if smoke:
        overrides += [("backend", "transformers"), ("device", "cpu"), ("dtype", "float32"), ("cpu_threads", 1),
                      ("batch_size", 8), ("chunk_size", 64)]
    elif backend == "transformers" and not fake:
        overrides += [("backend", "transformers"), ("device", "cuda"), ("dtype", "bfloat16"),
                      ("batch_size", batch_size), ("chunk_size", 8 * batch_size)]
    if rows_per_lang:
        overrides.append(("rows_per_lang", rows_per_lang))
    cuda = torch.cuda.is_available() and not smoke and not fake
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    config = load_eval_config(recipe, overrides, adapters=[str(work / "adapter")], model=str(work / "model"),
                              mgente=str(work / "mgente"), out_dir=str(out))
    timing: dict[str, Any] = {"rerun": False}

    def factory(cfg: Any, base_model: str, adapter_paths: Sequence[str]) -> Any:
        """The recipe's backend (or the instant one) wrapped in a timer; vLLM's engine started here, timed."""
        started = time.perf_counter()
        backend = InstantBackend() if fake else make_backend(cfg, base_model, adapter_paths)
        # The recipe's backend key picks the class (gnt.generation.factory): dispatch on the class built.
        if isinstance(backend, VLLMBackend) and not timing["rerun"]:
            _ = backend.llm  # start the engine here, so its start-up is reported apart from generation
        elif isinstance(backend, TransformersBackend) and not timing["rerun"]:
            backend._ensure_model()  # the same for the model load (the backend otherwise loads on first use)
        timing["engine_start_seconds"] = time.perf_counter() - started
        timed = TimedBackend(backend)
        timing["backend"] = timed
        return timed

    started = time.perf_counter()
    run_sweep(config, backend_factory=factory)
    wall = time.perf_counter() - started
    summary = load_summary(out)
    (entry,) = summary["models"]
    counts = entry["counts"]
    records = read_jsonl(model_dir(out, entry["name"]) / GENERATIONS)
    tokens = [r["n_tokens"] or 0 for r in records]
    generate_seconds = timing["backend"].seconds
    cells = config.cells()
    # The same sweep again over its finished folder: nothing may be generated (and the engine never starts).
    timing["rerun"] = True
    rerun_started = time.perf_counter()
    run_sweep(config, backend_factory=factory)
    rerun_wall = time.perf_counter() - rerun_started
    rerun_counts = load_summary(out)["models"][0]["counts"]
    per_s = counts["generated"] / generate_seconds if generate_seconds else None
    extra: dict[str, Any] = {}
    if cuda:
        extra["peak_gpu_memory_allocated_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    if config.backend == "transformers" and not smoke and not fake:
        extra.update(batch_size=config.batch_size, chunk_size=config.chunk_size, dtype=config.dtype)
    if not smoke and not fake and counts["requests"] < FULL_GRID:
        extra.update(full_grid_seconds_extrapolated=round(FULL_GRID / per_s, 1) if per_s else None,
                     note=f"{config.backend} backend: {counts['requests']} of the grid's {FULL_GRID:,} generations "
                          "run; the full-grid time is extrapolated from their generations/s")
    return {
        **extra,
        "backend": "instant-fake" if fake else config.backend,
        "recipe": str(recipe.relative_to(ROOT)),
        "cells": len(cells),
        "rows": len({r["id"] for r in records}),
        "generations": counts["requests"],
        "generated": counts["generated"],
        "failed": counts["failed"],
        "max_new_tokens": max_new_tokens,
        "bootstrap_samples": bootstrap,
        "grid_wall_seconds": round(wall, 1),
        "engine_start_seconds": round(timing["engine_start_seconds"], 1),
        "generate_seconds": round(generate_seconds, 1),
        "sweep_overhead_seconds": round(wall - timing["engine_start_seconds"] - generate_seconds, 1),
        "generations_per_s": round(per_s, 1) if per_s else None,
        "generations_per_s_overall": round(counts["requests"] / wall, 1),
        "output_tokens_mean": round(sum(tokens) / len(tokens), 1) if tokens else None,
        "output_tokens_per_s": round(sum(tokens) / generate_seconds, 1) if generate_seconds else None,
        "finished_at_cap_share": round(sum(r["finish_reason"] == "length" for r in records) / len(records), 3),
        "prompt_tokens": prompt_token_stats(work / "model", cells, records[0]["source"]),
        "rerun_seconds": round(rerun_wall, 1),
        "rerun_generated": rerun_counts["generated"],
        "rerun_share": round(rerun_wall / wall, 4),
    }


# ------------------------------------------------------------------------------------------------------------------
# Stages: sft-lora, sft-qlora
# ------------------------------------------------------------------------------------------------------------------


def step_clock() -> Any:
    """A trainer callback noting (step, time, TRL's cumulative num_tokens) at every log (logging_steps = 1)."""
    from transformers import TrainerCallback

    class StepClock(TrainerCallback):
        def __init__(self) -> None:
            self.marks: list[tuple[int, float, float]] = []

        def on_log(self, args, state, control, logs=None, **kwargs) -> Any:
            if logs and "num_tokens" in logs:
                self.marks.append((state.global_step, time.perf_counter(), float(logs["num_tokens"])))
            return control

    return StepClock()


def steady_tokens_per_s(marks: list[tuple[int, float, float]], warmup: int) -> float | None:
    """Tokens/s from the end of step ``warmup`` (>= 1) to the last step: the first steps compile and autotune."""
    warmup = max(1, warmup)
    if len(marks) <= warmup:
        return None
    (_, t0, n0), (_, t1, n1) = marks[warmup - 1], marks[-1]
    return (n1 - n0) / (t1 - t0) if t1 > t0 else None


def stage_sft(work: Path, smoke: bool, variant: str, steps: int, warmup: int) -> dict[str, Any]:
    """One SFT run of the project's 7B recipe over the random model; tokens/s after warm-up and peak memory."""
    import torch
    from train_overhead import run_recipe

    from gnt.recipe import RecipeError

    overrides: list[tuple[str, Any]] = [
        ("model_name_or_path", str(work / "model")), ("data_dir", str(work / "data")),
        ("output_dir", str(work / variant)), ("report_to", "none"), ("eval_strategy", "no"),
        ("save_strategy", "no"), ("logging_steps", 1), ("max_steps", steps), ("gradient_accumulation_steps", 1),
    ]
    if smoke:
        overrides += [("bf16", False), ("dtype", "float32"), ("max_length", 512), ("per_device_train_batch_size", 2),
                      ("max_train_samples", 32), ("activation_checkpointing", False)]
    shutil.rmtree(work / variant, ignore_errors=True)
    cuda = torch.cuda.is_available() and not smoke
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    clock = step_clock()
    try:
        result = run_recipe(SFT_RECIPES[variant], overrides, callbacks=[clock])
    except RecipeError as exc:  # e.g. QLoRA where bitsandbytes cannot run: recorded, not fatal
        return {"skipped": str(exc)}
    figures: dict[str, Any] = {
        "recipe": str(SFT_RECIPES[variant].relative_to(ROOT)),
        "steps": result["steps"],
        "warmup_steps": warmup,
        "tokens": result["tokens"],
        "tokens_per_s": round(result["tokens"] / result["train_seconds"], 1),
        "tokens_per_s_after_warmup": _round(steady_tokens_per_s(clock.marks, warmup)),
        "nonpad_share": round(result["nonpad_share"], 4),
        "train_seconds": round(result["train_seconds"], 1),
        "wall_seconds": round(result["wall_seconds"], 1),
        "settings": {k: result["settings"].get(k) for k in (
            "attn_implementation", "per_device_train_batch_size", "max_length", "packing", "padding_free",
            "activation_checkpointing", "bf16", "lora.r")},
    }
    if cuda:
        figures["peak_gpu_memory_allocated_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        figures["peak_gpu_memory_reserved_gib"] = round(torch.cuda.max_memory_reserved() / 2**30, 2)
    else:
        figures["peak_process_rss_gib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    shutil.rmtree(work / variant, ignore_errors=True)
    return figures


def _round(value: float | None, digits: int = 1) -> float | None:
    """Round a figure that may be missing (too few steps to measure after warm-up)."""
    return None if value is None else round(value, digits)


# ------------------------------------------------------------------------------------------------------------------
# Orchestration
# ------------------------------------------------------------------------------------------------------------------


T = TypeVar("T")


def _resolved(value: T | None, key: str) -> T:
    """An option ``_run`` fills in before any stage runs (the default, or the value given): None here means the
    options did not go through ``_run``, a caller's mistake, said as one rather than passed on to a stage."""
    if value is None:
        raise ValueError(f"gpu_grid: {key} is unset; _run resolves it before a stage runs")
    return value


def run_stage(args: GpuGridOptions) -> dict[str, Any]:
    """One stage in this process (the ``--child`` side), on the options ``_run`` resolved."""
    work = Path(args.work)
    if args.child == "build":
        return stage_build(work, args.smoke or args.fake_backend, args.tokenizer,
                           _resolved(args.rows_per_lang, "rows_per_lang"))
    if args.child == "grid":
        return stage_grid(work, args.smoke, args.fake_backend, _resolved(args.max_new_tokens, "max_new_tokens"),
                          args.bootstrap_samples, args.backend, args.batch_size, args.grid_rows_per_lang)
    return stage_sft(work, args.smoke, _resolved(args.child, "child"), _resolved(args.sft_steps, "sft_steps"),
                     _resolved(args.warmup_steps, "warmup_steps"))


def spawn(stage: str, argv: list[str], log: Path) -> dict[str, Any]:
    """Run a stage in a fresh process (GPU memory is released when it exits). Its whole output goes to ``log``;
    the project's own ``[gnt]`` lines are echoed, and the last lines too when the stage fails."""
    command = [sys.executable, str(Path(__file__).resolve()), *argv, "--child", stage]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1"}
    started = time.perf_counter()
    tail: list[str] = []
    result = None
    with open(log, "a", encoding="utf-8") as sink:
        sink.write(f"\n===== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(command)}\n")
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
        assert proc.stdout is not None
        for line in proc.stdout:
            sink.write(line)
            tail = (tail + [line.rstrip()])[-40:]
            if line.startswith(MARKER):
                result = json.loads(line[len(MARKER):])
            elif line.startswith("[gnt]"):
                print(f"    [{stage}] {line.rstrip()[:220]}", flush=True)
        proc.wait()
    if proc.returncode != 0 or result is None:
        print(f"    [{stage}] FAILED (exit status {proc.returncode}); last lines:\n      " + "\n      ".join(tail))
        return {"error": f"stage {stage} failed with exit status {proc.returncode}; log: {log}"}
    result["stage_wall_seconds"] = round(time.perf_counter() - started, 1)
    return result


def record_name(smoke: bool, fake: bool, backend: str = "vllm") -> str:
    """One record per mode, so a CPU smoke run (or a GPU run without vLLM) never overwrites the H200 vLLM figures."""
    if smoke or fake:
        return "gpu_grid_smoke" if smoke else "gpu_grid_overhead"
    return "gpu_grid" if backend == "vllm" else "gpu_grid_transformers"


@dataclass
class GpuGridOptions:
    """Which stages, in which mode, on which backend, at what sizes (``child``: a child process's stage)."""

    smoke: bool = field(default=False, metadata={
        "help": "tiny fake model on CPU; the grid runs on the transformers backend (vLLM needs a GPU)"})
    fake_backend: bool = field(default=False, metadata={
        "help": "the grid with an instant fake backend: the sweep's own overhead (no model needed)"})
    stages: list[str] = field(default_factory=lambda: list(STAGES), metadata={
        "choices": STAGES, "help": "the stages to run, in the order given"})
    work: str = field(default=str(ROOT / "outputs" / "gpu-grid"), metadata={
        "help": "working folder (reused)"})
    tokenizer: str = field(default="tiny", metadata={
        "choices": ("tiny", "smollm"), "help": "the tokenizer shipped with the random model"})
    backend: str = field(default="auto", metadata={
        "choices": ("auto", "vllm", "transformers"),
        "help": "the grid's backend; auto: vLLM if installed, else transformers (bf16, batched)"})
    batch_size: int = field(default=64, metadata={"help": "transformers backend on GPU: batch size"})
    grid_rows_per_lang: int | None = field(default=None, metadata={
        "help": "rows per language the grid evaluates (default: all with vLLM, "
                f"{TRANSFORMERS_ROWS_PER_LANGUAGE} with transformers on GPU)"})
    rows_per_lang: int | None = field(default=None, metadata={"help": "default 1,500 (smoke: 1)"})
    max_new_tokens: int | None = field(default=None, metadata={"help": "default 96 (smoke: 8)"})
    bootstrap_samples: int = field(default=DEFAULT_SAMPLES, metadata={
        "help": "bootstrap resamples of the metrics"})
    sft_steps: int | None = field(default=None, metadata={"help": "default 12 (smoke: 3)"})
    warmup_steps: int | None = field(default=None, metadata={"help": "default 2 (smoke: 1)"})
    child: str | None = field(default=None, metadata={
        "choices": STAGES, "help": "internal: run this one stage in this process"})


def _run(call: Call) -> None:
    """Check requirements, run the selected stages in fresh processes, merge into the record, print the table.

    With ``child=STAGE`` this process runs that one stage and prints its figures as one marked JSON line.
    """
    args = call.build(GpuGridOptions)
    smoke = args.smoke
    args.rows_per_lang = args.rows_per_lang or (1 if smoke else ROWS_PER_LANGUAGE)
    args.max_new_tokens = args.max_new_tokens or (8 if smoke else 96)
    args.sft_steps = args.sft_steps or (3 if smoke else 12)
    args.warmup_steps = args.warmup_steps if args.warmup_steps is not None else (1 if smoke else 2)
    args.backend = resolve_backend(args.backend, smoke or args.fake_backend)
    if args.grid_rows_per_lang is None and args.backend == "transformers" and not smoke and not args.fake_backend:
        args.grid_rows_per_lang = TRANSFORMERS_ROWS_PER_LANGUAGE

    if args.child:
        print(MARKER + json.dumps(run_stage(args)), flush=True)
        return

    stages = list(args.stages)
    if args.fake_backend:
        stages = [s for s in stages if s in ("build", "grid")]
    problems = missing_requirements(stages, smoke, args.fake_backend, args.backend)
    if problems:
        print("gpu_grid: cannot run here:\n  " + "\n  ".join(problems), file=sys.stderr)
        raise SystemExit(2)

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    name = record_name(smoke, args.fake_backend, args.backend)
    previous = RESULTS_DIR / f"{name}.json"
    figures: dict[str, Any] = json.loads(previous.read_text(encoding="utf-8"))["figures"] if previous.is_file() else {}
    figures["mode"] = ("smoke: tiny fake model on CPU, transformers backend instead of vLLM" if smoke else
                       "fake backend: the sweep's own overhead, no model" if args.fake_backend else
                       f"Qwen2.5-7B architecture, random weights, {args.backend} + LoRA adapter")
    child_argv = ["--work", str(work), "--tokenizer", args.tokenizer, "--rows-per-lang", str(args.rows_per_lang),
                  "--max-new-tokens", str(args.max_new_tokens), "--bootstrap-samples", str(args.bootstrap_samples),
                  "--sft-steps", str(args.sft_steps), "--warmup-steps", str(args.warmup_steps),
                  "--backend", args.backend, "--batch-size", str(args.batch_size)]
    child_argv += ["--grid-rows-per-lang", str(args.grid_rows_per_lang)] if args.grid_rows_per_lang else []
    child_argv += ["--smoke"] if smoke else []
    child_argv += ["--fake-backend"] if args.fake_backend else []
    for stage in stages:
        print(f"  stage {stage} ...", flush=True)
        figures[stage] = spawn(stage, child_argv, work / "stages.log")
        figures[stage]["date"] = time.strftime("%Y-%m-%d %H:%M:%S")
        save_record(name, figures, GOALS)  # after every stage: a later failure keeps what was measured

    report(figures, name)


def report(figures: dict[str, Any], name: str) -> None:
    """Print the table with the goal verdict."""
    rows: list[tuple[str, Any, str]] = [("mode", figures.get("mode", ""), "")]
    build = figures.get("build", {})
    if build:
        rows.append(("model parameters", build.get("parameters", build.get("error")), "Qwen2.5-7B: 7.6e9"))
    grid = figures.get("grid", {})
    if "grid_wall_seconds" in grid:
        met = grid["grid_wall_seconds"] <= 600 and grid["failed"] == 0
        verdict = "met" if met else "MISSED"
        if name == "gpu_grid_transformers":
            verdict = f"n/a: transformers backend, {grid['generations']} generations"
        elif name != "gpu_grid":
            verdict = "n/a outside the H200 run"
        rows += [
            ("grid generations", grid["generations"], "4 langs x 4 configs x 3 shots x rows"),
            ("grid wall seconds", grid["grid_wall_seconds"], f"{GOALS['grid_wall_seconds']}  {verdict}"),
            ("engine start seconds", grid["engine_start_seconds"], "inside the wall time"),
            ("generations/s (in backend)", grid["generations_per_s"], grid.get("backend", "")),
            *([("full grid seconds (extrapolated)", grid["full_grid_seconds_extrapolated"], "72,000 / generations/s")]
              if "full_grid_seconds_extrapolated" in grid else []),
            *([("grid peak GPU memory GiB", grid["peak_gpu_memory_allocated_gib"], "allocated")]
              if "peak_gpu_memory_allocated_gib" in grid else []),
            ("sweep overhead seconds", grid["sweep_overhead_seconds"], "rendering, cache, records, metrics"),
            ("output tokens mean / at cap", f"{grid['output_tokens_mean']} / {grid['finished_at_cap_share']}",
             f"cap {grid['max_new_tokens']}"),
            ("prompt tokens min/mean/max", "{min}/{mean}/{max}".format(**grid["prompt_tokens"]), ""),
            ("failed generations", grid["failed"], "0"),
            ("rerun seconds / generated", f"{grid.get('rerun_seconds')} / {grid.get('rerun_generated')}",
             f"share of the first run {grid.get('rerun_share')} (sweep goal <= 0.05)"),
        ]
    elif grid:
        rows.append(("grid", grid.get("error", "?"), "MISSED: did not run"))
    for stage in ("sft-lora", "sft-qlora"):
        sft = figures.get(stage, {})
        if "tokens_per_s" in sft:
            memory = sft.get("peak_gpu_memory_allocated_gib", sft.get("peak_process_rss_gib"))
            rows += [
                (f"{stage} tokens/s (after warm-up)", sft["tokens_per_s_after_warmup"], f"{sft['steps']} steps"),
                (f"{stage} peak memory GiB", memory,
                 "GPU allocated" if "peak_gpu_memory_allocated_gib" in sft else "process RSS (CPU smoke)"),
            ]
        elif sft:
            rows.append((stage, (sft.get("skipped") or sft.get("error", "?"))[:60], "not measured"))
    print_table(f"GPU grid ({name})", rows)
    print(f"record: {RESULTS_DIR / (name + '.json')}")


COMMAND = bench_command(
    __name__, __file__, "benchmark: the 72,000-generation grid of a 7B-size model and its LoRA / QLoRA SFT on one GPU",
    GpuGridOptions, _run, __doc__
)
