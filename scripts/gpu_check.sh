#!/usr/bin/env bash
# The prepared GPU session: one script that ends within 9 minutes on one H200 with no network, and measures
#   1. the evaluation grid's throughput on a Qwen2.5-7B-shaped model (random weights) with a LoRA adapter,
#   2. LoRA and QLoRA SFT tokens/s and peak GPU memory (recipes/qwen.yaml, recipes/qwen-qlora.yaml),
#   3. the learned judge's throughput (bench/learned_judge_throughput.py: the hook below runs it once it exists).
# Stages 1-2 are bench/gpu_grid.py, one process per stage (GPU memory is freed between them); each stage's figures
# go into its record in bench/results/ (bench/record.py) as soon as the stage ends, so a stage cut off by the time
# budget keeps what the earlier ones measured.
#
#   bash scripts/gpu_check.sh                         # vLLM if installed, else the transformers backend
#   BACKEND=transformers GRID_ROWS=40 bash scripts/gpu_check.sh
#
# On a machine without the project's packages: `bash scripts/gpu_wheels.sh` here (with PyPI) puts the wheels it
# lacks into .whl/, which travels with the checkout; this script installs them into /tmp/site, offline, first.
# Without vLLM the grid runs GRID_ROWS rows per language (20: 960 of the 72,000 generations) on the transformers
# backend in bf16 and records generations/s with the full grid's time extrapolated and labelled so; with vLLM, 250
# rows per language. Records: bench/results/gpu_grid.json (vLLM) or gpu_grid_transformers.json; if $OUT is set (a
# device machine's return folder) the records and the stage log are copied there. Exit status: 2 when no GPU or a
# requirement is missing (named), else 0 with each stage's own status printed.
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
BUDGET_S=${BUDGET_S:-530}           # the whole script, wheels and copying included: 9 minutes less a margin
deadline=$((start + BUDGET_S - 10))  # the last 10 s copy the records
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1

if ! nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; then
  echo "gpu_check: no NVIDIA GPU here (bench/gpu_grid.py --smoke checks the logic on CPU)" >&2
  exit 2
fi
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
if compgen -G ".whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "gpu_check: the carried wheels in .whl/ did not install" >&2; exit 2; }
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}   # gnt from this checkout, installed or not
"$PY" - <<'PY' || exit 2
import importlib.util, sys, torch
found = {m: importlib.util.find_spec(m) is not None
         for m in ("gnt", "vllm", "trl", "peft", "datasets", "bitsandbytes", "xgrammar", "flash_attn")}
print(f"gpu_check: python {sys.version.split()[0]} torch {torch.__version__} cuda {torch.version.cuda} "
      f"({torch.cuda.device_count()} GPU) | {found}")
sys.exit(0 if torch.cuda.is_available() and found["gnt"] else 1)
PY
if [ -z "${BACKEND:-}" ] || [ "$BACKEND" = auto ]; then
  if "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"; then BACKEND=vllm; else BACKEND=transformers; fi
fi
if [ "$BACKEND" = vllm ]; then GRID_ROWS=${GRID_ROWS:-250}; else GRID_ROWS=${GRID_ROWS:-20}; fi
GRID=(bench/gpu_grid.py --backend "$BACKEND" --rows-per-lang "$GRID_ROWS" --grid-rows-per-lang "$GRID_ROWS"
      --sft-steps "${SFT_STEPS:-8}" --warmup-steps 2)
echo "gpu_check: grid on $BACKEND, $GRID_ROWS rows per language; $((deadline - $(date +%s))) s left for the stages"

# stage NAME CAP_S COMMAND...: run COMMAND for at most CAP_S seconds, and never past the deadline.
missing=0
stage() {
  local name=$1 cap=$2 left limit rc
  shift 2
  left=$((deadline - $(date +%s)))
  limit=$((left < cap ? left : cap))
  if [ "$limit" -lt 30 ]; then
    echo "gpu_check: $name not run: ${left} s left of the budget"
    return 0
  fi
  echo "gpu_check: $name, at most ${limit} s"
  timeout --signal=INT --kill-after=10 "$limit" "$@"
  rc=$?
  [ "$rc" -eq 2 ] && missing=1   # gpu_grid.py: a requirement is missing (named above)
  echo "gpu_check: $name exit status $rc after $(($(date +%s) - start)) s in all"
}

stage build 120 "$PY" "${GRID[@]}" --stages build          # 7B random model + adapter + rows, saved to disk
stage grid 120 "$PY" "${GRID[@]}" --stages grid            # generations/s of the grid through the adapter
stage sft-lora 90 "$PY" "${GRID[@]}" --stages sft-lora    # LoRA SFT: tokens/s after warm-up, peak memory
stage sft-qlora 120 "$PY" "${GRID[@]}" --stages sft-qlora  # QLoRA SFT: the same
# The learned judge's throughput: label scoring against schema-constrained generation on the 7B-shaped model the
# build stage saved (its adapter merged in): what judging every checkpoint costs with a GPU-size judge.
stage learned-judge 50 "$PY" bench/learned_judge_throughput.py model=outputs/gpu-grid/model \
  adapter=outputs/gpu-grid/adapter dtype=bfloat16 items=512 generated=64 batch_size=64

echo "gpu_check: done after $(($(date +%s) - start)) s"
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  cp bench/results/gpu_grid*.json bench/results/learned_judge*.json "$OUT"/ 2>/dev/null || true
  tail -n 400 outputs/gpu-grid/stages.log >"$OUT/gpu_grid_stages.log" 2>/dev/null || true
fi
[ "$missing" -eq 0 ] || exit 2
