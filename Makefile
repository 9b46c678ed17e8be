# Two commands do everything on a fresh machine with Python 3.11 and Go >= 1.26:
#   make demo   set up, start the embedded cluster, run the toolkit, write reports/
#   make test   set up and run the test suite
SHELL := bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup binaries test lint unit demo manifests bench cluster-down clean chromium redis sample-report \
	floors dist

$(STAMP): pyproject.toml
	@echo ">> creating $(VENV) and installing the toolkit (pip install -e '.[dev]')"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $@

setup: $(STAMP) binaries redis

# Builds etcd, the Kubernetes control plane, kwok and helm from Go modules (cached).
binaries:
	@bash tools/build.sh

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: setup lint chromium
	$(BIN)/pytest --durations=30

# The lower bounds in pyproject.toml are true: every direct dependency installed at its lowest
# allowed version (uv --resolution lowest-direct, in .venv-floors/) passes the unit tests.
# Those include the HTML report's browser test: chromium first (a fresh machine has none).
floors: chromium
	@PYTHON=$(PYTHON) bash tools/floors.sh

demo: setup
	$(BIN)/compare cluster up
	@# The report is written even when a trial ended in error; the run's exit code is kept.
	$(BIN)/compare run; status=$$?; $(BIN)/compare report --format html; exit $$status

# Generated manifests (kubebuilder's `make manifests`): the CRD from the typed model, the RBAC
# from webapp_operator.rbac. A test fails when the committed files differ.
manifests: $(STAMP)
	$(BIN)/python -m webapp_operator.manifests
	$(BIN)/python -m compare.webapp.values_schema
	$(BIN)/python -m compare.approaches.schema

bench: setup
	$(BIN)/python bench/cluster_up.py
	$(BIN)/python bench/cluster_throughput.py --count 300
	$(BIN)/python bench/run_catalogue.py

cluster-down: $(STAMP)
	$(BIN)/compare cluster down

clean:
	rm -rf $(VENV) .venv-floors .mypy_cache .ruff_cache .pytest_cache build dist

# The sdist and the wheel (`pipx install dist/*.whl`): setup.py's build hook copies the data
# folders (compare.paths.SHIPPED) into the wheel; tests/packaging checks both in `make test`.
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	$(BIN)/twine check --strict dist/*

# The HTML report test opens the report in a real headless browser; a fresh CI machine (root,
# Debian/Ubuntu) gets Debian's chromium here. Set COMPARE_CHROMIUM to use another binary.
chromium:
	@if [ -n "$$COMPARE_CHROMIUM" ] || [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo ">> /usr/bin/chromium is missing: apt-get install chromium (for the HTML report test)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else \
	  echo ">> /usr/bin/chromium is missing and cannot be installed here (needs root and apt-get);"; \
	  echo ">> install chromium or set COMPARE_CHROMIUM, or the HTML report test fails"; \
	fi

# The argocd approach's controllers keep their caches in Redis, which the toolkit starts on
# 127.0.0.1 (never as a service): a fresh CI machine (root, Debian/Ubuntu) gets Debian's
# redis-server here.
redis:
	@if command -v redis-server >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo ">> redis-server is missing: apt-get install redis-server (for the argocd approach)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; \
	else \
	  echo ">> redis-server is missing and cannot be installed here (needs root and apt-get);"; \
	  echo ">> install redis-server, or the argocd approach cannot start"; \
	fi

# Regenerates the committed sample (reports/sample/) from the newest run under reports/
# (`compare run --trials 3` made the committed one). The run's results.json and journals are
# copied beside the reports so that the sample is self-contained and its journal links work.
sample-report: $(STAMP)
	@run=$$($(BIN)/python -c 'from compare.paths import REPORTS_DIR; from compare.results import latest_run; print(latest_run(REPORTS_DIR))') && \
	  echo ">> sample from $$run" && \
	  rm -rf reports/.sample.tmp && mkdir -p reports/.sample.tmp && \
	  cp "$$run/results.json" reports/.sample.tmp/ && cp -r "$$run/journals" reports/.sample.tmp/ && \
	  $(BIN)/compare report reports/.sample.tmp --format md -o reports/.sample.tmp/report.md && \
	  $(BIN)/compare report reports/.sample.tmp --format html -o reports/.sample.tmp/report.html && \
	  rm -rf reports/sample && mv reports/.sample.tmp reports/sample

# Regenerates charts/webapp/values.schema.json from the WebApp model and lints the chart.
.PHONY: chart
chart: $(STAMP)
	$(BIN)/python -m compare.webapp.values_schema
	"$$($(BIN)/python -c 'from compare.cluster import tool_path; print(tool_path("helm"))')" lint --strict charts/webapp
