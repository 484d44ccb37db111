# gnt-align: two commands for a fresh machine with only Python 3.11.
#   make demo   install (once) and run the demo chain on the offline model and the bundled sample
#   make test   install (once) and run the test suite
#   make vllm-env    build .venv-vllm (once, ~12 min, ~10 GB): the environment the GPU evaluation runs in (eval-vllm.yaml)
#   make test-vllm   build .venv-vllm if needed and check what the project sends vLLM against vLLM 0.33
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.gnt-installed
# Offline models (tiny, SmolLM2) are content-hash cached here and shared by the demo and the tests.
export GNT_CACHE_DIR ?= $(HOME)/.cache/gnt-align

# xCOMET needs transformers < 5: it runs in its own environment, driven as a batch step (files in, files out).
GNT_COMET_VENV ?= .venv-comet
COMET_STAMP    := $(GNT_COMET_VENV)/.gnt-comet-installed

# vLLM contract tests: the real vllm 0.33.0 (CPU is enough to construct its classes) in its own environment.
GNT_VLLM_VENV ?= .venv-vllm
VLLM_STAMP    := $(GNT_VLLM_VENV)/.gnt-vllm-installed

.PHONY: demo test test-fast test-vllm lint typecheck bench install comet-env vllm-env clean

$(STAMP): pyproject.toml constraints-cpu.txt scripts/install.sh
	PYTHON=$(PYTHON) VENV=$(VENV) bash scripts/install.sh
	touch $(STAMP)

install: $(STAMP)

$(COMET_STAMP): comet-requirements.txt scripts/comet_env.sh
	PYTHON=$(PYTHON) GNT_COMET_VENV=$(GNT_COMET_VENV) bash scripts/comet_env.sh

comet-env: $(COMET_STAMP)

$(VLLM_STAMP): vllm-requirements.txt scripts/vllm_env.sh
	PYTHON=$(PYTHON) GNT_VLLM_VENV=$(GNT_VLLM_VENV) bash scripts/vllm_env.sh

vllm-env: $(VLLM_STAMP)

# MODEL=gemma (default: Gemma 3 270M, a real multilingual base model, en-it + en-es), MODEL=smollm
# (SmolLM2-135M-Instruct: English-first, does not translate) or MODEL=tiny (the offline tiny random Qwen2: every
# code path in ~3 min, its outputs are noise)
MODEL ?= gemma
demo: $(STAMP)
	$(BIN)/python scripts/demo.py model=$(MODEL)

test: $(STAMP) $(COMET_STAMP)
	$(BIN)/python -m pytest -q

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

# tests_vllm/ is outside the main suite's testpaths: `make test` never collects it, this target only
test-vllm: $(VLLM_STAMP)
	$(GNT_VLLM_VENV)/bin/python -m pytest -q -p no:cacheprovider tests_vllm

lint: $(STAMP) typecheck
	$(BIN)/ruff check .

# mypy (pinned in the dev extra) on the results folder, the evaluation, the report and bench/: [tool.mypy] in pyproject.toml
typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf outputs runs wandb .pytest_cache
