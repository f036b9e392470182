# Two commands a newcomer needs: `make demo` and `make test`. Both create .venv first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
SOURCES := src tests benchmarks tools examples

.PHONY: demo test lint typecheck contracts unit bench schemas clean system-deps

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test,all,ray]'
	touch $@ $(VENV)/.demo-installed

demo: $(VENV)/.demo-installed
	$(BIN)/playproof demo

lint: $(VENV)/.test-installed
	$(BIN)/ruff check $(SOURCES)
	$(BIN)/ruff format --check $(SOURCES)

typecheck: $(VENV)/.test-installed
	$(BIN)/mypy

contracts: $(VENV)/.test-installed
	$(BIN)/lint-imports

system-deps:
	bash scripts/system-deps.sh

unit: $(VENV)/.test-installed system-deps
	$(BIN)/pytest -m 'not ray'
	# A Ray driver keeps native threads alive for the rest of its process, so its
	# tests get a pytest process of their own.
	$(BIN)/pytest -m ray

test: lint typecheck contracts unit

bench: $(VENV)/.test-installed
	$(BIN)/python benchmarks/run.py

schemas: $(VENV)/.test-installed
	$(BIN)/python -m playproof.schemas schemas

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis playproof-runs
