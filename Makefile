# `make test` is the command CI runs: it builds .venv, installs lancelet with its
# dev extras, then runs lint, type checks and the whole test suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

DEMO_STAMP := $(VENV)/.demo-installed

# Fresh environments for the checks of what a user gets (see `user`).
USER_VENV := .venv-user
DEMO_VENV := .venv-demo

# The Spark bridge jar (java/), compiled against the installed pyspark's jars.
BRIDGE_JAR := src/lancelet/spark/jars/lancelet-spark-bridge.jar
BRIDGE_SOURCES := $(shell find java -type f)

.PHONY: demo test lint typecheck docs unit user user-install user-demo protos bench clean bridge wheel

# `make demo`: set up (virtual environment, dependencies, Java) and run the flights
# pipeline on Spark's local mode; it exits non-zero if its own checks fail.
demo: $(DEMO_STAMP)
	./scripts/ensure-java.sh
	test -f $(BRIDGE_JAR) || ! command -v javac >/dev/null || $(BIN)/python scripts/build_bridge.py
	$(BIN)/python examples/flights_pipeline.py

$(DEMO_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[demo]'
	touch $(DEMO_STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

test: lint typecheck docs unit user

# `make bridge`: build the JVM bridge of the Spark source (needs javac, JDK 17+).
bridge: $(BRIDGE_JAR)

$(BRIDGE_JAR): $(STAMP) $(BRIDGE_SOURCES) scripts/build_bridge.py
	./scripts/ensure-java.sh
	$(BIN)/python scripts/build_bridge.py

# `make wheel`: a wheel that carries the bridge jar, so installing it needs no compiler.
wheel: $(BRIDGE_JAR)
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir dist .

# What a user gets, each in a fresh virtual environment: `pip install .` with no
# extras, then a smoke check of every default path (tests/user_install/smoke.py); and
# `make demo` from scratch, as the README tells a new user to run it.
user: user-install user-demo

user-install:
	rm -rf $(USER_VENV)
	$(PYTHON) -m venv $(USER_VENV)
	$(USER_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(USER_VENV)/bin/python -m pip install --quiet .
	$(USER_VENV)/bin/python -s tests/user_install/smoke.py

user-demo:
	rm -rf $(DEMO_VENV)
	$(MAKE) demo VENV=$(DEMO_VENV)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples scripts
	$(BIN)/ruff format --check src tests benchmarks examples scripts
	PYTHONPATH=src $(BIN)/lint-imports
	$(BIN)/python scripts/check_function_imports.py

typecheck: $(STAMP)
	$(BIN)/mypy

# `make docs`: the documentation site (mkdocs.yml, docs/) into site/, warnings as
# errors.  tests/test_docs.py runs the pages' code blocks.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --site-dir site

# The dataset tests run twice: with the default data file format (2.2) on local files,
# and with format 2.0 and every dataset in the memory:// object store (one run covering
# both, which keeps CI well inside its time limit).  The file tests run again without
# the compiled kernels, on the numpy paths alone.  The Spark tests run with the JVM
# bridge (tests/spark/test_bridge.py also reads through the pure-Python source; for
# the whole Spark suite without the bridge: LANCELET_SPARK_BRIDGE=0 pytest tests/spark).
# Left out of the second run, for CI time: vector index maintenance (optimize,
# retrain, compaction remaps), which reads and writes through the same storage calls
# as the scalar index maintenance that run keeps.
SECOND_RUN_SKIPS := --ignore=tests/dataset/test_optimize_vector_index.py \
	--ignore=tests/dataset/test_retrain_vector_index.py \
	--ignore=tests/dataset/test_compaction_vector_index.py
# Each run spreads its test files over TEST_WORKERS processes (pytest-xdist); a file's
# tests stay in one process, so its module fixtures (a Spark session, a server) are
# made once.  TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= 2
PYTEST := $(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile
unit: $(STAMP) $(BRIDGE_JAR)
	$(PYTEST) --durations=20
	LANCELET_TEST_STORAGE_VERSION=2.0 LANCELET_TEST_STORAGE_BACKEND=memory $(PYTEST) tests/dataset $(SECOND_RUN_SKIPS)
	LANCELET_JIT=0 $(PYTEST) tests/file

# Regenerate src/lancelet/_proto from protos/*.proto.
protos: $(STAMP)
	PATH=$(abspath $(BIN)):$$PATH ./gen_protos.sh

bench: $(STAMP)
	$(BIN)/python benchmarks/file_bench.py --scale 1

clean:
	rm -rf $(VENV) $(USER_VENV) $(DEMO_VENV) .mypy_cache .pytest_cache .ruff_cache demo-data $(BRIDGE_JAR)
