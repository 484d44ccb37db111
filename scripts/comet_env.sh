#!/usr/bin/env bash
# Create the isolated xCOMET environment (.venv-comet) from comet-requirements.txt; idempotent.
#
# Why a second environment: unbabel-comet 2.2.7 needs transformers < 5 (and numpy < 2, protobuf < 5, ...), gnt needs
# transformers 5. The evaluator drives gnt/comet/runner.py with this environment's python (files in, files out).
# Users never run this by hand: `make comet-env` and the test suite's Makefile prerequisite call it.
#
# torch is installed first and stays pinned in every later pip call (letting pip choose torch pulls a multi-GB
# CUDA build on CPU machines, or replaces a CUDA build with a CPU one on GPU machines). On a GPU machine (nvidia-smi
# present) the CUDA build of the same version is installed. A stamp file records a hash of the pins, the torch
# version, the python version, CPU-or-GPU and ENV_VERSION (bump it when a change to this script must rebuild):
# an unchanged environment is a no-op (< 1 s); a changed one is rebuilt from scratch.
set -euo pipefail
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$SELF")/.."
PY=${PYTHON:-python3}
VENV=${GNT_COMET_VENV:-.venv-comet}   # the same variable gnt/comet/env.py reads
REQ=comet-requirements.txt
TORCH_VERSION=2.13.0
ENV_VERSION=1
STAMP="$VENV/.gnt-comet-installed"
GPU=no
command -v nvidia-smi >/dev/null 2>&1 && GPU=yes

# shellcheck source=scripts/_venv.sh
. scripts/_venv.sh
venv_prepare comet "torch=$TORCH_VERSION gpu=$GPU env=$ENV_VERSION" "$REQ"
venv_install_torch "$TORCH_VERSION" "$GPU"
"$PIP" install -q -r "$REQ" "torch==$TORCH_VERSION" ${torch_flags[@]+"${torch_flags[@]}"}

PYTHONWARNINGS=ignore "$VENV/bin/python" - <<'PY'
import comet, torch, transformers
from importlib.metadata import version
assert transformers.__version__.startswith("4."), transformers.__version__
import pkg_resources  # noqa: F401  (comet's load_from_checkpoint needs it)
print(f"comet env: unbabel-comet {version('unbabel-comet')} | transformers {transformers.__version__} "
      f"| torch {torch.__version__} (cuda {torch.version.cuda}, {torch.cuda.device_count()} visible GPUs)")
PY
if [ "$GPU" = yes ] && ! "$VENV/bin/python" -c "import torch,sys; sys.exit(torch.version.cuda is None)"; then
  echo "warning: nvidia-smi is present but $VENV has a CPU-only torch; xCOMET will run on CPU" >&2
fi
echo "$want" >"$STAMP"
echo "comet env built in $(( $(date +%s) - start )) s: $VENV"
