"""The lean training forward on a CPU: seconds per SFT step and peak memory, plain TRL against gnt's two savings.

    python bench/train_lean.py                   # Gemma 3 270M, the demo's SFT recipe, batch 8, 4 steps each
    python bench/train_lean.py --model gnt:smollm --steps 6
    python bench/train_lean.py training_recipe=recipes/judge-gemma270m.yaml steps=6   # the judge's training

Four runs of the same recipe on the same rows (each in its own process, so each peak memory is its own); each
loads the base in the dtype its name says (float32 unless ``+bf16``), whatever the recipe holds:

- ``plain``: TRL 1.16's fused LM head as shipped, which on a CPU projects every position onto the vocabulary;
- ``labelled``: the head projects only the positions that carry a label (gnt.training.lean_forward);
- ``labelled+shared``: the same, and the rows of a batch come from one prompt cell, whose shared prompt prefix is
  computed once (``share_prompt_prefix: true``);
- ``labelled+shared+bf16``: both savings, and the frozen base weights loaded in bfloat16 (``dtype: bfloat16``,
  ``bf16: false``: no autocast). The LoRA weights, their gradients and the optimizer stay in float32 (PEFT keeps
  adapters in float32); on a CPU with AVX512-BF16 or AMX the base's matrix products run at bf16 speed.

The figure is the median seconds per optimizer step after the first (warm-up) step, and the ratio of each run's
to the plain one's, measured in one invocation (the machine's other load moves all four alike only when it is
steady: run it on an otherwise idle machine).
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from record import bench_command, conclude, module_at, run_variant

from gnt.cli.command import Call

ROOT = Path(__file__).resolve().parent.parent
RUNS = ("plain", "labelled", "labelled+shared", "labelled+shared+bf16")


def _one(run: str, recipe: str, model: str, steps: int, data_dir: str, out: str) -> dict:
    """Train ``steps`` steps in this process and return per-step seconds and the peak resident memory."""
    import trl.trainer.utils as trl_utils
    from transformers import TrainerCallback
    from trl.kernels.chunked_logprob import _use_triton

    from gnt.training.sft import prepare_sft

    overrides = [("model_name_or_path", model), ("data_dir", data_dir), ("output_dir", out), ("max_steps", steps),
                 ("save_steps", steps * 10), ("report_to", "none"), ("logging_steps", 1),
                 ("share_prompt_prefix", run.startswith("labelled+shared"))]
    overrides += [("dtype", "bfloat16" if run.endswith("+bf16") else "float32"), ("bf16", False)]
    prepared = prepare_sft(recipe, overrides)
    if run == "plain":
        trl_utils._use_triton = _use_triton  # TRL's own rule: every position on a CPU
    stamps: list[float] = []

    class Clock(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            stamps.append(time.perf_counter())

    prepared.trainer.add_callback(Clock())
    started = time.perf_counter()
    prepared.trainer.train()
    steps_s = [b - a for a, b in zip([started, *stamps[:-1]], stamps, strict=True)]
    return {"step_seconds": [round(s, 2) for s in steps_s],
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "tokens": int(prepared.trainer.state.num_input_tokens_seen or 0)}


@dataclass
class TrainLeanOptions:
    """Which model, how many steps, on which data (``one`` and ``out_dir`` are a child run's)."""

    training_recipe: str = field(default="recipes/gemma270m.yaml", metadata={
        "help": "the SFT recipe trained (recipes/judge-gemma270m.yaml: the demo's judge on its judge rows)"})
    model: str = field(default="gnt:gemma", metadata={
        "help": "the base model of the recipe (hub id, folder or gnt:NAME)"})
    steps: int = field(default=4, metadata={"help": "optimizer steps of each run (the first is the warm-up)"})
    data: str | None = field(default=None, metadata={
        "help": "a data/build.py folder (default: the demo's build, made here)"})
    one: str | None = field(default=None, metadata={
        "choices": RUNS, "help": "internal: one run in this process"})
    out_dir: str | None = field(default=None, metadata={"help": "internal: the output folder of that run"})


def _run(call: Call) -> None:
    args = call.build(TrainLeanOptions)
    if args.one:
        print(json.dumps(_one(args.one, args.training_recipe, args.model, args.steps, args.data, args.out_dir)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        data = args.data
        if data is None:
            data = str(Path(tmp) / "data")
            build = module_at(ROOT / "scripts" / "demo.py", "gnt_demo").MODELS["gemma"].build
            subprocess.run([sys.executable, "data/build.py", f"out_dir={data}", *build], cwd=ROOT, check=True,
                           capture_output=True)
        results = {}
        for run in RUNS:
            results[run] = run_variant(__file__, run, f"--training-recipe={args.training_recipe}",
                                       f"--model={args.model}", f"--steps={args.steps}", f"--data={data}",
                                       f"--out-dir={Path(tmp) / run.replace('+', '-')}")
            results[run]["median_step_s"] = statistics.median(results[run]["step_seconds"][1:])
    plain = results["plain"]["median_step_s"]
    for figures in results.values():
        figures["speedup_vs_plain"] = round(plain / figures["median_step_s"], 2)
    rows = [(f"{run}: s/step, x plain, peak MB",
             f"{f['median_step_s']:.1f} / {f['speedup_vs_plain']:.2f} / {f['peak_rss_mb']:.0f}", "")
            for run, f in results.items()]
    figures = {"model": args.model, "steps": args.steps, "recipe": args.training_recipe, "runs": results}
    goals = {"labelled+shared vs plain": ">= 3x faster per step, lower peak memory",
             "labelled+shared+bf16 vs labelled+shared": "faster per step (recorded as a ratio; no goal set)"}
    missed = []
    if results["labelled+shared"]["speedup_vs_plain"] < 3:
        missed.append(f"labelled+shared is only {results['labelled+shared']['speedup_vs_plain']}x plain")
    recipe = args.training_recipe
    name = "train_lean" if recipe == "recipes/gemma270m.yaml" else f"train_lean_{Path(recipe).stem}"
    conclude(name.replace("-", "_"), f"lean training forward on CPU ({recipe})", rows, figures, goals, missed)


COMMAND = bench_command(
    __name__, __file__, "benchmark: seconds per SFT step and peak memory on a CPU, plain TRL against gnt's lean forward",
    TrainLeanOptions, _run, __doc__
)
