#!/usr/bin/env bash
# Fetch, here (with PyPI), the wheels scripts/gpu_check.sh needs on a GPU machine that has no network: into .whl/,
# which travels with the checkout and which gpu_check.sh installs offline into /tmp/site before it starts.
#
#   bash scripts/gpu_wheels.sh            # then run `bash scripts/gpu_check.sh` there with .whl carried along
#
# The list is what the lent H200's image lacks for gnt and the GPU benchmark (its image has torch, transformers,
# accelerate, peft, numpy, pandas, pyarrow, huggingface-hub, tokenizers, safetensors, pyyaml, rich, tqdm,
# sacrebleu, matplotlib): TRL and datasets for training, bitsandbytes for QLoRA, xgrammar for the grid's
# constrained decoding, pydantic and jsonschema for gnt itself, and their own requirements the image lacks. The
# versions are this project's pins (constraints-cpu.txt); the platform is the machine's (x86-64, Python 3.12).
# bitsandbytes is most of the ~50 MB; the checkout and .whl together must stay under the 64 MiB a machine
# receives, which this script checks.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PYTHON_VERSION=${GPU_PYTHON_VERSION:-3.12}
WHEELS=(
  trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19
  bitsandbytes==0.50.2
  xgrammar==0.2.9 apache-tvm-ffi==0.1.15.post2
  pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
  jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
)
exclude=$(git rev-parse --git-path info/exclude)   # a worktree's .git is a file: ask git where its exclude is
mkdir -p "$(dirname "$exclude")"
grep -qx '/.whl/' "$exclude" 2>/dev/null || echo '/.whl/' >>"$exclude"   # never committed, carried by name
mkdir -p .whl
platforms=()
for n in 2_39 2_35 2_34 2_31 2_28 2_27 2_24 2_17; do platforms+=(--platform "manylinux_${n}_x86_64"); done
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "$PYTHON_VERSION" --implementation cp \
  "${platforms[@]}" --platform manylinux2014_x86_64 -d .whl "${WHEELS[@]}"
wheels=$(du -sm .whl | cut -f1)
checkout=$(git ls-files -z | xargs -0 du -cm 2>/dev/null | tail -1 | cut -f1)
echo "gpu_wheels: $(ls .whl | wc -l) wheels, ${wheels} MB in .whl/; the checkout's tracked files ${checkout} MB"
if [ $((wheels + checkout)) -ge 62 ]; then
  echo "gpu_wheels: over what a GPU machine receives (64 MiB): leave bitsandbytes out (the QLoRA stage then says so)" >&2
  exit 1
fi
