"""Training overhead: gnt-align's SFT stage vs a plain TRL ``SFTTrainer`` script with identical settings.

Why: the framework wraps TRL (recipe checks, data validation, template checks, a vocabulary guard, run records,
callbacks). This measures what that costs per trained token, so a slowdown in the wrapper shows up as a ratio
below 1 rather than hiding in machine noise. Both sides train the tiny offline model on the *same rows* (the rows
gnt-align selected, handed to the baseline as a list), with the same LoRA config, steps, batch, sequence length
and packing; the settings of the two built trainers are compared field by field and any difference is recorded.

Measured per run (the pair alternates order each repeat; medians over the repeats):

- tokens/s of the training loop: TRL's own ``num_tokens`` counter over the Trainer's own ``train_runtime``;
- end-to-end seconds (setup + train + save) as information: it includes gnt-align's data checks;
- the non-padding token share of the collated batches with packing, counted by wrapping the data collator
  (real tokens = the examples' lengths going in, total = the collated ``input_ids`` size coming out), and the same
  share without packing for comparison.

    python bench/train_overhead.py [--repeats 3] [--steps 10]
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from record import bench_command, print_table, save_record

from gnt.cli.command import Call

ROOT = Path(__file__).resolve().parent.parent
TINY_RECIPE = ROOT / "recipes" / "tiny.yaml"

TRAIN_SETTINGS: dict[str, Any] = {
    "max_steps": 10,
    "per_device_train_batch_size": 2,
    "gradient_accumulation_steps": 1,
    "learning_rate": 2.0e-3,
    "lr_scheduler_type": "constant",
    "max_length": 512,
    "packing": True,
    "logging_steps": 1,
    "save_strategy": "no",
    "eval_strategy": "no",
    "seed": 42,
    "bf16": False,
    "dataloader_num_workers": 0,
    "activation_checkpointing": False,
    "report_to": "none",
}
"""Trainer settings both sides get (gnt-align as recipe overrides, the baseline as ``SFTConfig`` arguments)."""

LORA_SETTINGS: dict[str, Any] = {"r": 8, "lora_alpha": 16, "lora_dropout": 0.0, "target_modules": "all-linear"}
MODEL_SETTINGS: dict[str, Any] = {"dtype": "float32", "attn_implementation": "sdpa"}
MAX_TRAIN_SAMPLES = 64

COMPARED_FIELDS = (
    "max_steps", "per_device_train_batch_size", "gradient_accumulation_steps", "learning_rate", "lr_scheduler_type",
    "max_length", "packing", "packing_strategy", "padding_free", "activation_checkpointing", "seed", "bf16",
    "completion_only_loss", "assistant_only_loss", "dataset_text_field", "optim", "weight_decay", "warmup_steps",
    "max_grad_norm", "dataloader_num_workers", "pad_to_multiple_of", "loss_type",
)
"""Trainer fields checked equal between the two built trainers (a mismatch is recorded, not silently accepted)."""

GOALS = {"tokens_per_s_ratio": ">= 0.95", "nonpad_share_packing": ">= 0.90"}


class CountingCollator:
    """Wraps a data collator and counts real tokens (the examples' ``input_ids`` going in) and collated tokens
    (the ``input_ids`` tensor coming out, padding included): their ratio is the non-padding share."""

    def __init__(self, inner: Callable[[list[dict]], dict]) -> None:
        self.inner = inner
        self.real = 0
        self.total = 0
        self.batches = 0

    def __call__(self, examples: list[dict]) -> dict:
        batch = self.inner(examples)
        self.real += sum(len(example["input_ids"]) for example in examples)
        self.total += int(batch["input_ids"].numel())
        self.batches += 1
        return batch

    @property
    def share(self) -> float:
        """Non-padding share of everything collated so far."""
        return self.real / self.total if self.total else float("nan")


def count_tokens(trainer: Any) -> CountingCollator:
    """Install a :class:`CountingCollator` on a built trainer (before ``train()`` builds its dataloader)."""
    counter = CountingCollator(trainer.data_collator)
    trainer.data_collator = counter
    return counter


def trained_tokens(trainer: Any) -> int:
    """TRL's own cumulative ``num_tokens`` (tokens the model was trained on), read from the trainer's logs."""
    logged = [entry["num_tokens"] for entry in trainer.state.log_history if "num_tokens" in entry]
    if not logged:
        raise RuntimeError("the trainer logged no num_tokens (logging_steps must be > 0)")
    return int(max(logged))


def build_data(directory: Path) -> Path:
    """The fixed dataset: a data build of the bundled sample (SFT rows, templated pairs included)."""
    from gnt.data.build import BuildConfig, build_dataset

    build_dataset(BuildConfig(out_dir=str(directory), progress=False))
    return directory


def gnt_overrides(data_dir: Path, output_dir: Path, steps: int) -> list[tuple[str, Any]]:
    """Recipe overrides that pin every compared setting (the recipe's own values are not relied on)."""
    values: dict[str, Any] = {
        **TRAIN_SETTINGS, "max_steps": steps, "data_dir": str(data_dir), "output_dir": str(output_dir),
        "max_train_samples": MAX_TRAIN_SAMPLES,
        "lora_r": LORA_SETTINGS["r"], "lora_alpha": LORA_SETTINGS["lora_alpha"],
        "lora_dropout": LORA_SETTINGS["lora_dropout"], "lora_target_modules": LORA_SETTINGS["target_modules"],
        **MODEL_SETTINGS,
    }
    return list(values.items())


def run_gnt(data_dir: Path, output_dir: Path, steps: int) -> dict[str, Any]:
    """One gnt-align SFT run of the tiny recipe with every compared setting pinned."""
    return run_recipe(TINY_RECIPE, gnt_overrides(data_dir, output_dir, steps))


def run_recipe(recipe: Path, overrides: list[tuple[str, Any]], callbacks: list | None = None) -> dict[str, Any]:
    """One SFT run exactly as ``run_sft`` does it (prepare → train → end), with a token counter on the collator.

    ``callbacks`` are added to the built trainer (the GPU benchmark times steps with one).
    """
    from gnt.training.runner import end_run, train_run
    from gnt.training.sft import prepare_sft

    started = time.perf_counter()
    run = prepare_sft(str(recipe), overrides)
    counter = count_tokens(run.trainer)
    for callback in callbacks or []:
        run.trainer.add_callback(callback)
    try:
        train_run(run)
    finally:
        end_run(run)
    wall = time.perf_counter() - started
    return {
        **_run_figures(run.trainer, counter, wall, float(run.record["train_metrics"]["train_runtime"])),
        "rows": run.data.train,
        "model_path": run.base_model,
    }


def plain_trl_trainer(model_path: str, rows: list[dict], output_dir: Path, steps: int,
                      overrides: dict[str, Any] | None = None) -> Any:
    """The baseline: what a plain TRL script builds (``SFTConfig`` + ``LoraConfig`` + ``SFTTrainer``), nothing else."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    settings = {**TRAIN_SETTINGS, "max_steps": steps, **(overrides or {})}
    args = SFTConfig(output_dir=str(output_dir), model_init_kwargs=dict(MODEL_SETTINGS), **settings)
    peft_config = LoraConfig(task_type="CAUSAL_LM", **LORA_SETTINGS)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    return SFTTrainer(model=model_path, args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                      peft_config=peft_config)


def run_baseline(model_path: str, rows: list[dict], output_dir: Path, steps: int) -> dict[str, Any]:
    """One plain TRL run over the same rows: build, train, save the adapter (as a script would)."""
    started = time.perf_counter()
    trainer = plain_trl_trainer(model_path, rows, output_dir, steps)
    counter = count_tokens(trainer)
    result = trainer.train()
    trainer.save_model(str(output_dir))
    wall = time.perf_counter() - started
    return _run_figures(trainer, counter, wall, float(result.metrics["train_runtime"]))


def _run_figures(trainer: Any, counter: CountingCollator, wall: float, train_seconds: float) -> dict[str, Any]:
    """The figures measured for either run (ours or plain TRL) under the same names, so the two compare key by key."""
    return {
        "wall_seconds": wall,
        "train_seconds": train_seconds,
        "tokens": trained_tokens(trainer),
        "steps": trainer.state.global_step,
        "nonpad_share": counter.share,
        "collated_real": counter.real,
        "collated_total": counter.total,
        "collated_batches": counter.batches,
        "settings": trainer_settings(trainer),
    }


def trainer_settings(trainer: Any) -> dict[str, Any]:
    """The compared trainer fields and the LoRA config of the built model, as plain values."""
    args = trainer.args
    values = {name: _plain(getattr(args, name, None)) for name in COMPARED_FIELDS}
    peft_config = getattr(trainer.model, "peft_config", {}).get("default")
    if peft_config is not None:
        for name in ("r", "lora_alpha", "lora_dropout", "target_modules", "use_rslora", "use_dora", "bias"):
            values[f"lora.{name}"] = _plain(getattr(peft_config, name, None))
    values["attn_implementation"] = getattr(getattr(trainer.model, "config", None), "_attn_implementation", None)
    values["train_rows"] = len(trainer.train_dataset) if trainer.train_dataset is not None else None
    return values


def _plain(value: Any) -> Any:
    """A JSON-comparable value (enums to their value, sets sorted) so both trainers' settings compare equal."""
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    return getattr(value, "value", value) if not isinstance(value, (int, float, str, bool, type(None), list)) else value


def nonpad_share_without_packing(model_path: str, rows: list[dict], output_dir: Path, steps: int) -> float:
    """The same rows collated without packing (padded batches), for comparison: no training, batches only."""
    trainer = plain_trl_trainer(model_path, rows, output_dir, steps, {"packing": False})
    counter = count_tokens(trainer)
    for number, _ in enumerate(trainer.get_train_dataloader()):
        if number + 1 >= steps:
            break
    return counter.share


def settings_mismatches(ours: dict[str, Any], baseline: dict[str, Any]) -> dict[str, list[Any]]:
    """Fields whose values differ between the two trainers: ``{field: [ours, baseline]}``."""
    return {k: [ours.get(k), baseline.get(k)] for k in sorted(set(ours) | set(baseline)) if ours.get(k) != baseline.get(k)}


def goal_text(goal: str, met: bool) -> str:
    """The goal column of the table: the goal and its verdict."""
    return f"{goal}  {'met' if met else 'MISSED'}"


@dataclass
class TrainOverheadOptions:
    """How many repeats of how many steps, on how many threads."""

    repeats: int = field(default=3, metadata={
        "help": "repeats of the gnt-align / plain TRL pair (medians over them)"})
    steps: int = field(default=TRAIN_SETTINGS["max_steps"], metadata={
        "help": "training steps of each timed run"})
    threads: int = field(default=1, metadata={
        "help": "torch intra-op threads for both sides (default 1: on two shared, busy cores two threads per "
                "process oversubscribe and the timings scatter by 5x)"})


def _run(call: Call) -> None:
    """Data build, warm-up, then gnt-align and plain TRL runs alternating per repeat; medians, table, record."""
    args = call.build(TrainOverheadOptions)
    import torch

    torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory(prefix="gnt-bench-train-") as tmp:
        root = Path(tmp)
        data_dir = build_data(root / "data")
        # Warm-up (not timed): first-use costs of the process (lazy imports, allocator) would land on one side.
        warm = run_gnt(data_dir, root / "warm-gnt", 2)
        rows, model_path = warm["rows"], warm["model_path"]
        run_baseline(model_path, rows, root / "warm-trl", 2)

        ours: list[dict] = []
        base: list[dict] = []
        for repeat in range(args.repeats):
            order = ("gnt", "trl") if repeat % 2 == 0 else ("trl", "gnt")
            for side in order:
                if side == "gnt":
                    ours.append(run_gnt(data_dir, root / f"gnt-{repeat}", args.steps))
                else:
                    base.append(run_baseline(model_path, rows, root / f"trl-{repeat}", args.steps))
            print(f"  repeat {repeat + 1}: gnt {ours[-1]['tokens'] / ours[-1]['train_seconds']:.0f} tok/s, "
                  f"plain TRL {base[-1]['tokens'] / base[-1]['train_seconds']:.0f} tok/s", flush=True)
        share_unpacked = nonpad_share_without_packing(model_path, rows, root / "trl-nopack", args.steps)

    mismatches = settings_mismatches(ours[0]["settings"], base[0]["settings"])
    tps_ours = [r["tokens"] / r["train_seconds"] for r in ours]
    tps_base = [r["tokens"] / r["train_seconds"] for r in base]
    ratios = [o / b for o, b in zip(tps_ours, tps_base, strict=True)]
    wall_ratios = [b["wall_seconds"] / o["wall_seconds"] for o, b in zip(ours, base, strict=True)]
    figures: dict[str, Any] = {
        "model": "gnt:tiny",
        "torch_threads": args.threads,
        "steps": args.steps,
        "repeats": args.repeats,
        "train_rows": len(rows),
        "tokens_per_run_gnt": sorted({r["tokens"] for r in ours}),
        "tokens_per_run_trl": sorted({r["tokens"] for r in base}),
        "tokens_per_s_gnt_median": round(statistics.median(tps_ours), 1),
        "tokens_per_s_trl_median": round(statistics.median(tps_base), 1),
        "tokens_per_s_ratio": round(statistics.median(ratios), 4),
        "tokens_per_s_ratios": [round(r, 4) for r in ratios],
        "wall_seconds_gnt_median": round(statistics.median(r["wall_seconds"] for r in ours), 2),
        "wall_seconds_trl_median": round(statistics.median(r["wall_seconds"] for r in base), 2),
        "end_to_end_speed_ratio": round(statistics.median(wall_ratios), 4),
        "nonpad_share_packing": round(statistics.median(r["nonpad_share"] for r in ours), 4),
        "nonpad_share_packing_trl": round(statistics.median(r["nonpad_share"] for r in base), 4),
        "nonpad_share_no_packing": round(share_unpacked, 4),
        "pack_fill": round(pack_fill(ours[0]), 4),
        "settings_compared": sorted(ours[0]["settings"]),
        "settings_mismatches": mismatches,
    }
    met = {
        "tokens_per_s_ratio": figures["tokens_per_s_ratio"] >= 0.95,
        "nonpad_share_packing": figures["nonpad_share_packing"] >= 0.90,
    }
    figures["goals_met"] = met
    print_table("training overhead (tiny model, gnt-align SFT vs plain TRL SFTTrainer)", [
        ("train rows / steps", f"{len(rows)} / {args.steps}", "identical on both sides"),
        ("tokens per run gnt / trl", f"{figures['tokens_per_run_gnt']} / {figures['tokens_per_run_trl']}", "equal"),
        ("tokens/s gnt (median)", figures["tokens_per_s_gnt_median"], ""),
        ("tokens/s plain TRL (median)", figures["tokens_per_s_trl_median"], "baseline"),
        ("tokens/s ratio gnt / TRL", figures["tokens_per_s_ratio"], goal_text(GOALS["tokens_per_s_ratio"], met["tokens_per_s_ratio"])),
        ("end-to-end s gnt / TRL", f"{figures['wall_seconds_gnt_median']} / {figures['wall_seconds_trl_median']}",
         "info: setup + train + save"),
        ("non-padding share, packing", figures["nonpad_share_packing"],
         goal_text(GOALS["nonpad_share_packing"], met["nonpad_share_packing"])),
        ("non-padding share, no packing", figures["nonpad_share_no_packing"], "info: padded batches"),
        ("pack fill (tokens / capacity)", figures["pack_fill"], "info"),
        ("settings mismatches", len(mismatches), "0"),
    ])
    if mismatches:
        print(f"  settings differ: {mismatches}")
    for name, ok in met.items():
        if not ok:
            print(f"  goal MISSED: {name} = {figures[name]} (goal {GOALS[name]}); per-repeat ratios "
                  f"{figures['tokens_per_s_ratios']} — see bench/README.md")
    print(f"record: {save_record('train_overhead', figures, GOALS)}")


def pack_fill(run: dict[str, Any]) -> float:
    """Real tokens over the packs' capacity (batches × packs per batch × max_length): how full best-fit packs are."""
    capacity = run["collated_batches"] * TRAIN_SETTINGS["per_device_train_batch_size"] * TRAIN_SETTINGS["max_length"]
    return run["collated_real"] / capacity if capacity else float("nan")


COMMAND = bench_command(
    __name__, __file__, "benchmark: gnt-align's SFT stage vs a plain TRL SFTTrainer script, tokens/s",
    TrainOverheadOptions, _run, __doc__
)
