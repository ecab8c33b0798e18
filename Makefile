# Two commands: `make sample` (set up, then run the sample job) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup sample test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first and pinned: the CPU wheel; a bare `torch` pulls GBs of CUDA packages
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev,bench]'
	touch $@

setup: $(STAMP)

sample: setup
	$(BIN)/datapipe run jobs/sample.yaml

test: setup
	$(BIN)/python -m pytest -q

clean:
	rm -rf runs/ .pytest_cache
