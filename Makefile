# The two README commands: `make demo` (the local demo) and `make test` (every test).
# Both bootstrap a fresh machine: uv (if absent), the locked Python env, the locked npm tree.
SHELL := /bin/bash
.DEFAULT_GOAL := help
# uv from PATH, else the one pip installs (run as a module, so no PATH or shim is needed).
UV := $(shell command -v uv 2>/dev/null || echo "python3 -m uv")

.PHONY: help bootstrap python-deps node-deps lint typecheck pytest vitest test bench vectors

help:
	@echo "make test    - install everything needed and run every test (what CI runs)"
	@echo "make bench   - run the benchmarks (ratios, measured in one run)"
	@echo "make vectors - regenerate contracts/vectors/ from scripts/generate_vectors.py"

python-deps:
	@$(UV) --version >/dev/null 2>&1 || python3 -m pip install --quiet --disable-pip-version-check uv
	$(UV) sync --locked

node-deps:
	@if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then npm ci --no-audit --no-fund; fi

bootstrap: python-deps node-deps

lint: python-deps
	$(UV) run ruff check backend tests scripts benchmarks
	$(UV) run ruff format --check backend tests scripts benchmarks

typecheck: bootstrap
	$(UV) run mypy
	npm run typecheck

pytest: python-deps
	$(UV) run pytest -q

vitest: node-deps
	npm test

test: bootstrap lint typecheck pytest vitest

bench: bootstrap
	$(UV) run python benchmarks/bench_envelope.py

vectors: python-deps
	$(UV) run python scripts/generate_vectors.py
