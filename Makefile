# Two commands do everything on a fresh machine with Python 3.11 and Go >= 1.26:
#   make demo   set up, start the embedded cluster, run the toolkit, write reports/
#   make test   set up and run the test suite
SHELL := bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup binaries test lint unit demo manifests bench cluster-down clean

$(STAMP): pyproject.toml
	@echo ">> creating $(VENV) and installing the toolkit (pip install -e '.[dev]')"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $@

setup: $(STAMP) binaries

# Builds etcd, the Kubernetes control plane, kwok and helm from Go modules (cached).
binaries:
	@bash tools/build.sh

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: setup lint
	$(BIN)/pytest

demo: setup
	$(BIN)/compare cluster up

bench: setup
	$(BIN)/python bench/cluster_up.py

cluster-down: $(STAMP)
	$(BIN)/compare cluster down

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
