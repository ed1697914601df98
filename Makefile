# Two commands matter: `make dev` runs the agent, `make test` passes the tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
HOST ?= 127.0.0.1
PORT ?= 2024

.PHONY: dev test lint typecheck unit bench install clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

## Run the agent under `langgraph dev` (Studio-ready; offline model when no OPENAI_API_KEY).
dev: $(STAMP)
	LANGGRAPH_CLI_NO_ANALYTICS=1 LANGGRAPH_NO_VERSION_CHECK=true \
	LANGSMITH_TRACING=$${LANGSMITH_TRACING:-false} \
	$(BIN)/langgraph dev --no-browser --host $(HOST) --port $(PORT)

## Lint, type check and run every test.
test: lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q

## Benchmarks (figures, not pass/fail tests).
bench: $(STAMP)
	$(BIN)/python -m bench.memory_bench
	$(BIN)/python -m bench.agent_bench
	$(BIN)/python -m bench.workers_bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
