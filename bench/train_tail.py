"""The mixed batches at the end of an epoch: their memory and time with and without activation checkpointing.

    python bench/train_tail.py                                 # the judge's recipe, 256 of its rows, one epoch
    python bench/train_tail.py training_recipe=recipes/gemma270m.yaml rows=192

Why: with ``share_prompt_prefix`` the sampler batches the rows of one prompt group together and computes their
shared prefix once. Rows no group can fill a whole batch with (a group's size modulo the batch, and the surplus
of its majority label when labels are balanced) go into mixed batches at the end of each epoch. Their rows share
no prefix, so every row carries its whole prompt through the backbone, and keeping all those activations for the
backward pass made these few batches the peak of a training run. gnt.training.lean_forward now runs them under
activation checkpointing. This measures what that changes, in one invocation, on one epoch of a sample of the
recipe's rows (so the mixed batches come after a few shared ones, as they do after every epoch of a full run):

- ``plain``: the mixed batches keep their activations (the fallback as it was: checkpointing switched off here);
- ``checkpointed``: as shipped.

Each run is its own process. Per run: seconds per step of the shared and of the mixed batches (medians, the first
step left out as warm-up), the process's peak resident memory after the last shared batch and after the mixed
ones (the kernel's high-water mark, read at each step's end), and the trained adapter. The two adapters are
compared tensor by tensor: checkpointing replays LoRA dropout's random masks, so they should be the same.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from record import bench_command, conclude, module_at, run_variant

from gnt.cli.command import Call

ROOT = Path(__file__).resolve().parent.parent
RUNS = ("plain", "checkpointed")
BUILD = module_at(ROOT / "scripts" / "demo.py", "gnt_demo").MODELS["gemma"].build
"""The demo's build flags (scripts/demo.py, profile gemma): its translation rows and the judge rows of it, es, de, el."""


def _high_water_mb() -> float:
    """The process's peak resident memory so far (VmHWM), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError("no VmHWM in /proc/self/status (this benchmark reads Linux's accounting)")


def _one(run: str, recipe: str, rows: int, data_dir: str, out: str) -> dict[str, Any]:
    """Train one epoch of ``rows`` rows in this process; per-step seconds and high-water marks, the adapter saved."""
    from transformers import TrainerCallback

    import gnt.training.lean_forward as lean
    from gnt.training.data import GROUP_FIELD
    from gnt.training.sft import prepare_sft

    if run == "plain":
        @contextmanager
        def no_checkpointing(backbone: Any):
            yield 0

        lean.checkpointed_layers = no_checkpointing  # the patched forward looks it up when a batch falls back
    prepared = prepare_sft(recipe, [("data_dir", data_dir), ("output_dir", out), ("max_train_samples", rows),
                                    ("save_steps", 10**6), ("report_to", "none"), ("logging_steps", 1)])
    trainer = prepared.trainer
    if not prepared.record["lean_forward"].get("shared_prefix"):
        raise SystemExit(f"{recipe} does not share prompt prefixes (share_prompt_prefix): nothing to measure")
    groups = trainer.train_dataset[GROUP_FIELD]
    batches = trainer._get_train_sampler().batches()  # epoch 0: the order the first epoch trains in
    mixed = [len({groups[i] for i in batch}) > 1 for batch in batches]
    if sum(not m for m in mixed) < 2 or not any(mixed):
        raise SystemExit(f"rows={rows} gives {sum(not m for m in mixed)} one-group and {sum(mixed)} mixed batches in "
                         "an epoch: this compares the two, so it needs at least 2 of the first and 1 of the second "
                         "(try more rows)")
    trainer.args.max_steps = len(batches)
    stamps: list[float] = []
    marks: list[float] = []

    class Clock(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            stamps.append(time.perf_counter())
            marks.append(_high_water_mb())

    trainer.add_callback(Clock())
    started = time.perf_counter()
    trainer.train()
    trainer.save_model(out)
    seconds = [b - a for a, b in zip([started, *stamps[:-1]], stamps, strict=True)]
    shared_steps = [s for s, m in zip(seconds[1:], mixed[1:], strict=True) if not m]
    mixed_steps = [s for s, m in zip(seconds, mixed, strict=True) if m]
    last_shared = max(i for i, m in enumerate(mixed) if not m)
    return {"steps": len(batches), "mixed_steps": sum(mixed), "mixed_at": [i for i, m in enumerate(mixed) if m],
            "median_shared_step_s": round(statistics.median(shared_steps), 2),
            "median_mixed_step_s": round(statistics.median(mixed_steps), 2) if mixed_steps else None,
            "peak_after_shared_mb": marks[last_shared], "peak_mb": marks[-1], "step_seconds": [round(s, 2) for s in seconds]}


def _adapter_difference(first: Path, second: Path) -> float:
    """The largest absolute difference between the two adapters' tensors (they must hold the same names)."""
    from safetensors.torch import load_file

    a, b = load_file(first / "adapter_model.safetensors"), load_file(second / "adapter_model.safetensors")
    if a.keys() != b.keys():
        raise SystemExit(f"the adapters hold different tensors: {sorted(a.keys() ^ b.keys())[:5]}")
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


@dataclass
class TrainTailOptions:
    """Which recipe, how many of its rows (``one`` and ``out_dir`` are a child run's)."""

    training_recipe: str = field(default="recipes/judge-gemma270m.yaml", metadata={
        "help": "an SFT recipe with share_prompt_prefix (default: the demo's judge on its judge rows)"})
    rows: int = field(default=256, metadata={"help": "training rows sampled (one epoch of them is trained)"})
    data: str | None = field(default=None, metadata={
        "help": "a data/build.py folder (default: the demo's build, made here)"})
    one: str | None = field(default=None, metadata={"choices": RUNS, "help": "internal: one run in this process"})
    out_dir: str | None = field(default=None, metadata={"help": "internal: the output folder of that run"})


def _run(call: Call) -> None:
    args = call.build(TrainTailOptions)
    if args.one:
        print(json.dumps(_one(args.one, args.training_recipe, args.rows, args.data, args.out_dir)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        data = args.data
        if data is None:
            data = str(Path(tmp) / "data")
            subprocess.run([sys.executable, "data/build.py", f"out_dir={data}", *BUILD], cwd=ROOT, check=True,
                           capture_output=True)
        results = {}
        for run in RUNS:
            results[run] = run_variant(__file__, run, f"--training-recipe={args.training_recipe}",
                                       f"--rows={args.rows}", f"--data={data}", f"--out-dir={Path(tmp) / run}")
        difference = _adapter_difference(Path(tmp) / "plain", Path(tmp) / "checkpointed")
    plain, kept = results["plain"], results["checkpointed"]
    rows = [(f"{run}: peak MB after the shared / after the mixed batches",
             f"{f['peak_after_shared_mb']:.0f} / {f['peak_mb']:.0f}", "") for run, f in results.items()]
    rows += [(f"{run}: s/step shared / mixed", f"{f['median_shared_step_s']} / {f['median_mixed_step_s']}", "")
             for run, f in results.items()]
    rows.append(("largest difference between the two adapters", f"{difference:.3g}", ""))
    figures = {"recipe": args.training_recipe, "rows": args.rows, "runs": results,
               "adapter_max_abs_difference": difference,
               "peak_saving_mb": round(plain["peak_mb"] - kept["peak_mb"], 1)}
    goals = {"checkpointed": "the mixed batches do not raise the peak above the shared ones' (+5%)",
             "adapters": "the same weights (largest difference <= 1e-6)"}
    missed = []
    if kept["peak_mb"] > 1.05 * kept["peak_after_shared_mb"]:
        missed.append(f"checkpointed: the mixed batches raise the peak from {kept['peak_after_shared_mb']} to "
                      f"{kept['peak_mb']} MB")
    if difference > 1e-6:
        missed.append(f"the adapters differ by up to {difference:.3g}")
    name = f"train_tail_{Path(args.training_recipe).stem}".replace("-", "_")
    conclude(name, f"mixed batches at an epoch's end, checkpointed or not ({args.training_recipe})", rows, figures,
             goals, missed)


COMMAND = bench_command(
    __name__, __file__, "benchmark: memory and time of the mixed batches at an epoch's end, checkpointed or not",
    TrainTailOptions, _run, __doc__
)
