#!/usr/bin/env bash
# Create the vLLM environment (.venv-vllm): gnt with the `eval` and `vllm` extras; idempotent. Users run the GPU
# evaluation in it (recipes/eval-vllm.yaml, recipes/judge-vllm.yaml); `make test-vllm` runs the contract tests in it.
#
# Why a separate environment: vLLM 0.33.0 pins torch==2.14.0 (and transformers<5.20, xgrammar==0.2.8), while the
# CPU stack in .venv is tested on torch 2.13.0. vLLM's wheel installs and imports on a CPU-only machine, and its
# configuration classes (EngineArgs, SamplingParams, LoRARequest, the OpenAI server's request models) construct
# without a GPU, so `make test-vllm` checks every argument the project builds against the real classes.
# pip chooses torch here on purpose: vLLM's compiled extension is built against PyPI's (CUDA) torch 2.14.0.
# Cost, measured on a shared 2-core machine: 727 s and 9.7 GB (torch's CUDA wheels are most of both).
# A stamp file records a hash of the pins, the python version and ENV_VERSION: an unchanged environment is a no-op
# (gnt itself is an editable install, so code changes need no rebuild).
set -euo pipefail
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$SELF")/.."
PY=${PYTHON:-python3}
VENV=${GNT_VLLM_VENV:-.venv-vllm}
REQ=vllm-requirements.txt
ENV_VERSION=1
STAMP="$VENV/.gnt-vllm-installed"

# shellcheck source=scripts/_venv.sh
. scripts/_venv.sh
venv_prepare vllm "env=$ENV_VERSION" "$REQ"
"$PIP" install -q -r "$REQ"
"$PIP" install -q --no-deps -e .   # the project's own code, with the dependencies resolved above

"$VENV/bin/python" - <<'PY'
import torch, transformers, vllm
print(f"vllm env: vllm {vllm.__version__} | transformers {transformers.__version__} | torch {torch.__version__}")
PY
echo "$want" >"$STAMP"
echo "vllm env built in $(( $(date +%s) - start )) s ($(du -sh "$VENV" | cut -f1)): $VENV"
