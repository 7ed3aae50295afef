# The two README commands: `make demo` (the local demo) and `make test` (every test).
# Both bootstrap a fresh machine: uv (if absent), the locked Python env, the locked npm tree.
SHELL := /bin/bash
.DEFAULT_GOAL := help
# scripts/bin/uv runs uv, installing it with pip first on a fresh machine; it is put first on
# PATH so that every tool the tests start (the LightRAG harness too) finds the same uv.
export PATH := $(CURDIR)/scripts/bin:$(PATH)
UV := uv

.PHONY: help bootstrap python-deps node-deps lint typecheck pytest live-check vitest test bench vectors

help:
	@echo "make test    - install everything needed and run every test (what CI runs)"
	@echo "make bench   - run the benchmarks (ratios, measured in one run)"
	@echo "make vectors - regenerate contracts/vectors/ from scripts/generate_vectors.py"

python-deps:
	$(UV) sync --locked

node-deps:
	@if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then npm ci --no-audit --no-fund; fi

bootstrap: python-deps node-deps

lint: python-deps
	$(UV) run ruff check backend tests scripts benchmarks examples
	$(UV) run ruff format --check backend tests scripts benchmarks examples

typecheck: bootstrap
	$(UV) run mypy
	npm run typecheck

pytest: python-deps
	$(UV) run pytest -q

# The opt-in live contract check, against a real LightRAG server started (and stopped) for it.
live-check: python-deps
	$(UV) run python -m tests.live.lightrag_server live-check -q

vitest: node-deps
	npm test

test: bootstrap lint typecheck pytest live-check vitest

bench: bootstrap
	$(UV) run python benchmarks/bench_envelope.py

vectors: python-deps
	$(UV) run python scripts/generate_vectors.py
