# `make test` is the command CI runs: it builds .venv, installs lancelet with its
# dev extras, then runs lint, type checks and the whole test suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test lint typecheck unit protos bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

test: lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q

# Regenerate src/lancelet/_proto from protos/*.proto.
protos: $(STAMP)
	PATH=$(abspath $(BIN)):$$PATH ./gen_protos.sh

bench: $(STAMP)
	$(BIN)/python benchmarks/file_bench.py --scale 1

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
