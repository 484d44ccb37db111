# Shared steps of the scripts that build an environment (install.sh: its torch step; comet_env.sh, vllm_env.sh:
# all of them); sourced, never run.
#
# Each builder keeps a stamp file in its environment holding a hash of everything the environment was built from
# (pins, python version, ENV_VERSION, ...). The steps below are why the builders behave alike: an unchanged
# environment is a no-op, two builders started at once build it only once, and a changed one is rebuilt from
# scratch rather than patched. The caller sets, before calling them:
#   SELF   the builder script's own path (its file is the lock)    PY     the python that creates the venv
#   VENV   the environment's folder                                STAMP  the stamp file inside it
#   want   the stamp the environment must carry (venv_prepare sets it from venv_stamp)
# LABEL, the first argument of each function, names the environment in messages ("comet", "vllm").

# venv_stamp EXTRA FILE...: a short hash of the files, the extra text and the python version.
venv_stamp() {
  local extra=$1
  shift
  { cat "$@"; echo "$extra"; "$PY" -c 'import sys; print(sys.version_info[:2])'; } | sha256sum | cut -c1-16
}

# venv_exit_if_current LABEL: stop the builder (exit 0) when the environment is complete and its stamp is "$want".
venv_exit_if_current() {
  if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -x "$VENV/bin/python" ]; then
    touch "$STAMP"   # newer than the pins again, so make's timestamp rule stays quiet
    echo "$1 env up to date: $VENV"
    exit 0
  fi
}

# venv_lock LABEL: one builder at a time (parallel test workers or two shells). The second waits on the lock,
# then usually finds the stamp the first one wrote and stops.
venv_lock() {
  if command -v flock >/dev/null 2>&1; then
    exec 9<"$SELF"   # lock the builder's own file: no lock file to leave behind
    flock 9
    venv_exit_if_current "$1"
  fi
}

# venv_create LABEL: an empty environment at "$VENV" (a stale one, built from other pins, is removed first),
# kept out of git, with pip upgraded; sets PIP.
venv_create() {
  if [ -f "$STAMP" ] && [ -f "$VENV/pyvenv.cfg" ]; then
    echo "$1 env: pins changed, rebuilding $VENV"
    rm -rf "$VENV"
  fi
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  printf '*\n' >"$VENV/.gitignore"   # keep the environment out of git without touching the top-level .gitignore
  PIP="$VENV/bin/pip"
  "$PIP" install -q --upgrade pip >/dev/null 2>&1 || true
}

# venv_prepare LABEL EXTRA FILE...: the opening every builder shares. Sets want (the stamp of FILE... and EXTRA),
# stops when the environment already carries it, else takes the lock, starts the clock (start) and leaves an empty
# environment with PIP set for the builder to install into.
venv_prepare() {
  local label=$1
  shift
  want=$(venv_stamp "$@")
  venv_exit_if_current "$label"
  venv_lock "$label"
  start=$(date +%s)
  venv_create "$label"
}

# venv_install_torch VERSION GPU: torch first, pinned, in the build that fits the machine (GPU is yes or no), and
# sets torch_flags to what every later pip call must pass to keep it (letting pip choose torch pulls a multi-GB
# CUDA build on CPU machines, or replaces a CUDA build with a CPU one on GPU machines).
venv_install_torch() {
  torch_flags=()
  if [ "$2" = yes ]; then
    "$PIP" install -q "torch==$1"                       # PyPI's Linux build is the CUDA one
  elif "$PIP" download -q --no-deps --no-index -d "$(mktemp -d)" "torch==$1" >/dev/null 2>&1; then
    "$PIP" install -q "torch==$1"                       # pip's find-links offer a local CPU wheel
  else
    torch_flags=(--extra-index-url https://download.pytorch.org/whl/cpu)
    "$PIP" install -q "torch==$1+cpu" "${torch_flags[@]}"
  fi
}
