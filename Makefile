# gnt-align: two commands for a fresh machine with only Python 3.11.
#   make demo   install (once) and run the demo chain on the offline model and the bundled sample
#   make test   install (once) and run the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.gnt-installed
# Offline models (tiny, SmolLM2) are content-hash cached here and shared by the demo and the tests.
export GNT_CACHE_DIR ?= $(HOME)/.cache/gnt-align

.PHONY: demo test test-fast lint bench install clean

$(STAMP): pyproject.toml scripts/install.sh
	PYTHON=$(PYTHON) VENV=$(VENV) bash scripts/install.sh
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python scripts/demo.py

test: $(STAMP)
	$(BIN)/python -m pytest -q

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf outputs runs wandb .pytest_cache
