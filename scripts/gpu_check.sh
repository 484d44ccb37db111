#!/usr/bin/env bash
# One prepared GPU session that fits 10 minutes on one H200: the evaluation grid's throughput and LoRA / QLoRA SFT
# tokens/s and peak memory on a Qwen2.5-7B-shaped model (random weights, no network), via bench/gpu_grid.py.
#
#   bash scripts/gpu_check.sh                 # vLLM if installed, else the transformers backend (bf16, batched)
#   BACKEND=transformers GRID_ROWS=40 bash scripts/gpu_check.sh
#
# The grid runs a slice of the 72,000 generations (GRID_ROWS rows per language: 250 with vLLM, 20 with
# transformers) and records generations/s with the full grid's time extrapolated from it; the full grid is
# `python bench/gpu_grid.py --stages grid` (one 10-minute call with vLLM). The record is written after every
# stage (bench/results/gpu_grid.json with vLLM, gpu_grid_transformers.json without), so a stage cut off by the
# time budget keeps what the earlier ones measured. If $OUT is set (a device machine's return folder), the
# record and the stage log are copied there. Exit status: gpu_grid.py's (2: a requirement is missing), 124 on timeout.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
BUDGET_S=${BUDGET_S:-570}          # leaves half a minute of a 10-minute call for start-up and copying
start=$(date +%s)

if ! nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; then
  echo "gpu_check: no NVIDIA GPU here (bench/gpu_grid.py --smoke checks the logic on CPU)" >&2
  exit 2
fi
"$PY" - <<'PY'
import importlib.util, torch
found = {m: importlib.util.find_spec(m) is not None for m in ("vllm", "trl", "peft", "bitsandbytes", "xgrammar", "flash_attn")}
print(f"gpu_check: torch {torch.__version__} cuda {torch.version.cuda} ({torch.cuda.device_count()} GPU) | {found}")
PY
if [ -z "${BACKEND:-}" ] || [ "$BACKEND" = auto ]; then
  if "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"; then BACKEND=vllm; else BACKEND=transformers; fi
fi
if [ "$BACKEND" = vllm ]; then GRID_ROWS=${GRID_ROWS:-250}; else GRID_ROWS=${GRID_ROWS:-20}; fi
echo "gpu_check: grid on $BACKEND, $GRID_ROWS rows per language; budget ${BUDGET_S}s"

timeout --signal=INT --kill-after=15 "$BUDGET_S" "$PY" bench/gpu_grid.py --backend "$BACKEND" \
  --rows-per-lang "$GRID_ROWS" --grid-rows-per-lang "$GRID_ROWS" --sft-steps "${SFT_STEPS:-8}" --warmup-steps 2 \
  --stages build,grid,sft-lora,sft-qlora
rc=$?
echo "gpu_check: exit status $rc after $(( $(date +%s) - start )) s"
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  cp bench/results/gpu_grid*.json "$OUT"/ 2>/dev/null || true
  tail -n 400 outputs/gpu-grid/stages.log >"$OUT/gpu_grid_stages.log" 2>/dev/null || true
fi
exit "$rc"
