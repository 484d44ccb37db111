#!/usr/bin/env bash
# Create the vLLM contract-test environment (.venv-vllm): gnt with the `eval` and `vllm` extras; idempotent.
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

want=$( { cat "$REQ"; echo "env=$ENV_VERSION"; "$PY" -c 'import sys; print(sys.version_info[:2])'; } \
  | sha256sum | cut -c1-16)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -x "$VENV/bin/python" ]; then
  touch "$STAMP"
  echo "vllm env up to date: $VENV"
  exit 0
fi
if command -v flock >/dev/null 2>&1; then
  exec 9<"$SELF"   # one builder at a time
  flock 9
  if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
    echo "vllm env up to date: $VENV"
    exit 0
  fi
fi

start=$(date +%s)
if [ -f "$STAMP" ] && [ -f "$VENV/pyvenv.cfg" ]; then
  echo "vllm env: pins changed, rebuilding $VENV"
  rm -rf "$VENV"
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
printf '*\n' >"$VENV/.gitignore"
PIP="$VENV/bin/pip"
"$PIP" install -q --upgrade pip >/dev/null 2>&1 || true
"$PIP" install -q -r "$REQ"
"$PIP" install -q --no-deps -e .   # the project's own code, with the dependencies resolved above

"$VENV/bin/python" - <<'PY'
import torch, transformers, vllm
print(f"vllm env: vllm {vllm.__version__} | transformers {transformers.__version__} | torch {torch.__version__}")
PY
echo "$want" >"$STAMP"
echo "vllm env built in $(( $(date +%s) - start )) s ($(du -sh "$VENV" | cut -f1)): $VENV"
