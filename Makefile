# Set-up and the two commands of the README. Every target creates or reuses .venv and installs
# what it needs, so each works on a fresh machine with only Python 3.11+, a C compiler and
# access to PyPI (and Debian's packages for the browser, PostgreSQL and nginx tests).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# llama.cpp's native build crashes on CPUs that report AMX (SIGSEGV in ggml_backend_amx_mul_mat):
# build it portably. pip caches the wheel, so this compiles once per machine (about 5 minutes).
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
# What each command needs: the demo only the embedded judge; the tests everything.
DEMO_STAMP := $(VENV)/.judge-demo
TEST_STAMP := $(VENV)/.judge-test
# Arize Phoenix, the real server the connector tests run against: in its own virtualenv (its
# ~150 packages never enter .venv; judge talks to it over HTTP only). Pinned: the tests and
# BENCHMARKS.md were measured on this release.
PHOENIX_VENV ?= .venv-phoenix
PHOENIX_VERSION := 20.26.1
PHOENIX_STAMP := $(PHOENIX_VENV)/.phoenix-$(PHOENIX_VERSION)
# MLflow, the same way (3.18.0 is listed on PyPI, but its mlflow-skinny is not served).
MLFLOW_VENV ?= .venv-mlflow
MLFLOW_VERSION := 3.17.2
MLFLOW_STAMP := $(MLFLOW_VENV)/.mlflow-$(MLFLOW_VERSION)

.PHONY: demo test setup browser postgres nginx phoenix mlflow lint typecheck clean-venv

## demo: set up the embedded judge only, then judge the project's demo gold set (offline)
demo: $(DEMO_STAMP)
	$(BIN)/judge demo

## test: set up everything (extras incl. inspect-ai, browser, PostgreSQL server, nginx, Phoenix,
## MLflow), then run the whole test suite
test: $(TEST_STAMP) browser postgres nginx phoenix mlflow
	$(BIN)/python -m pytest

setup: $(TEST_STAMP)

$(DEMO_STAMP): pyproject.toml Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# The distribution was named `judge` before it became calibrated-judge: an old editable
	@# install (and its judge.egg-info here) would register every entry point twice.
	@$(BIN)/python -m pip uninstall --quiet --yes judge >/dev/null 2>&1 || true
	@rm -rf judge.egg-info
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 \
	  $(BIN)/python -m pip install --quiet -e '.[embedded,fast,multilingual]'
	$(BIN)/judge model install
	@touch $(DEMO_STAMP)

$(TEST_STAMP): $(DEMO_STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 \
	  $(BIN)/python -m pip install --quiet -e '.[embedded,ray,dev,postgres,inspect,fast,multilingual]'
	@touch $(TEST_STAMP)

## browser: Debian's Chromium for the review-page tests (installed when running as root)
browser:
	@if [ -x /usr/bin/chromium ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
	  (apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 || \
	   (apt-get update -q >/dev/null && apt-get install -y -q chromium chromium-driver >/dev/null)) \
	  && echo "installed Debian chromium"; \
	else echo "note: /usr/bin/chromium is missing; browser tests will be skipped (sudo apt-get install chromium chromium-driver)"; fi

## postgres: Debian's PostgreSQL server binaries for the store tests (a throwaway cluster per
## test session, started by the tests themselves; installed when running as root).
postgres:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
	  (apt-get install -y -q postgresql >/dev/null 2>&1 || \
	   (apt-get update -q >/dev/null && apt-get install -y -q postgresql >/dev/null)) \
	  && echo "installed Debian postgresql"; \
	else echo "note: PostgreSQL is missing; its tests will be skipped (sudo apt-get install postgresql)"; fi

## nginx: Debian's nginx for the deployment tests (DEPLOY.md's configuration in front of two
## replicas, started by the tests themselves on loopback ports; installed when running as root).
nginx:
	@if [ -x /usr/sbin/nginx ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
	  (apt-get install -y -q nginx >/dev/null 2>&1 || \
	   (apt-get update -q >/dev/null && apt-get install -y -q nginx >/dev/null)) \
	  && echo "installed Debian nginx"; \
	else echo "note: nginx is missing; the deployment tests will be skipped (sudo apt-get install nginx)"; fi

## phoenix: Arize Phoenix in .venv-phoenix for the platform connector tests (a throwaway server
## per test session, started by the tests themselves; about 3 minutes and 850 MB once).
phoenix: $(PHOENIX_STAMP)

$(PHOENIX_STAMP):
	@test -x $(PHOENIX_VENV)/bin/python || $(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PHOENIX_VENV)/bin/python -m pip install --quiet 'arize-phoenix==$(PHOENIX_VERSION)'
	@touch $(PHOENIX_STAMP)

## mlflow: an MLflow tracking server in .venv-mlflow for the platform connector tests (a
## throwaway `mlflow server` per test session, SQLite; about 3-5 minutes and 850 MB once).
mlflow: $(MLFLOW_STAMP)

$(MLFLOW_STAMP):
	@test -x $(MLFLOW_VENV)/bin/python || $(PYTHON) -m venv $(MLFLOW_VENV)
	$(MLFLOW_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(MLFLOW_VENV)/bin/python -m pip install --quiet 'mlflow==$(MLFLOW_VERSION)'
	@touch $(MLFLOW_STAMP)

lint: $(TEST_STAMP)
	$(BIN)/ruff check judge calibration tests bench
	$(BIN)/ruff format --check judge calibration tests bench

typecheck: $(TEST_STAMP)
	$(BIN)/mypy

clean-venv:
	rm -rf $(VENV) $(PHOENIX_VENV) $(MLFLOW_VENV)
