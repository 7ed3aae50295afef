# The two README commands: `make demo` (the local demo) and `make test` (every test).
# Both bootstrap a fresh machine: uv (if absent), the locked Python env, the locked npm tree, and —
# for the browser and PostgreSQL tests — Debian's chromium and postgresql.
SHELL := /bin/bash
.DEFAULT_GOAL := help
# scripts/bin/uv runs uv, installing it from PyPI first on a fresh machine; it is put first on
# PATH so that every tool the tests start (the LightRAG harness too) finds the same uv.
export PATH := $(CURDIR)/scripts/bin:$(PATH)
UV := uv
HOST ?= 127.0.0.1
PORT ?= 8000
INDEX ?= .deerflow-knowledge/index.sqlite
CHROMIUM ?= /usr/bin/chromium

.PHONY: help bootstrap python-deps node-deps system-deps page lint typecheck pytest browser-test \
	live-check vitest test demo demo-port bench vectors

help:
	@echo "make demo    - install everything, build the chat page, index the bundled corpus and"
	@echo "               serve the demo on http://$(HOST):$(PORT) (another port: make demo PORT=8001)"
	@echo "make test    - install everything needed and run every test (what CI runs)"
	@echo "make bench   - run the benchmarks (each prints a ratio measured in one run, last)"
	@echo "make vectors - regenerate contracts/vectors/ from scripts/"

python-deps:
	$(UV) sync --locked

# npm ci prints nothing while it works (about half a minute on a fresh machine): say so first.
node-deps:
	@if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then \
		echo "installing the locked npm packages (npm ci; about 30 s on a fresh machine)..."; \
		npm ci --no-audit --no-fund; fi

bootstrap: python-deps node-deps

# Debian's chromium (browser tests; never a browser download) and PostgreSQL server (the
# shared-threads test), installed only when missing, with one `apt-get update`. Needs root, as in CI.
system-deps:
	@pkgs=""; \
	[ -x "$(CHROMIUM)" ] || pkgs="$$pkgs chromium fonts-dejavu-core"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || pkgs="$$pkgs postgresql"; \
	if [ -n "$$pkgs" ]; then \
		sudo=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		echo "installing from Debian's packages:$$pkgs"; \
		$$sudo apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$pkgs >/dev/null; \
	fi

# The chat page, built into the Python package's static folder (served at /).
page: node-deps
	npm run build:demo

lint: python-deps
	$(UV) run ruff check backend tests scripts benchmarks examples
	$(UV) run ruff format --check backend tests scripts benchmarks examples

typecheck: bootstrap
	$(UV) run mypy
	npm run typecheck

pytest: python-deps page system-deps
	$(UV) run pytest -q

# The opt-in live contract check, against a real LightRAG server started (and stopped) for it.
live-check: python-deps
	$(UV) run python -m tests.live.lightrag_server live-check -q

vitest: node-deps
	npm test
	npm run test:gateway --workspace=@deerflow/knowledge-citations

test: bootstrap lint typecheck pytest live-check vitest

# The port is checked before the set-up, and a busy one is named with the make variable to change
# (make users cannot pass serve's --port).
demo-port:
	@python3 -c 'import socket, sys; h, p = sys.argv[1], int(sys.argv[2]); s = socket.socket(socket.AF_INET6 if ":" in h else socket.AF_INET); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((h, p)); s.close()' '$(HOST)' '$(PORT)' 2>/dev/null || \
		{ echo "make demo: port $(PORT) on $(HOST) is in use; stop the other server or pick another port: make demo PORT=$$(( $(PORT) + 1 ))" >&2; exit 2; }

demo: demo-port bootstrap page
	$(UV) run deerflow-knowledge index --index $(INDEX)
	$(UV) run deerflow-knowledge serve --provider local --index $(INDEX) --host $(HOST) --port $(PORT)

bench: bootstrap
	$(UV) run python -m benchmarks.bench_envelope
	$(UV) run python -m benchmarks.bench_accumulator
	$(UV) run python -m benchmarks.bench_local
	$(UV) run python -m benchmarks.bench_quality
	$(UV) run python -m benchmarks.bench_lightrag
	$(UV) run python -m benchmarks.bench_citations
	$(UV) run python -m benchmarks.bench_citations_model
	$(UV) run python -m benchmarks.bench_import
	$(UV) run python -m benchmarks.bench_startup
	$(UV) run python -m benchmarks.bench_gateway
	$(UV) run python -m benchmarks.bench_boundary
	$(UV) run python -m benchmarks.bench_memory
	$(UV) run python -m benchmarks.bench_pg
	$(UV) run python -m benchmarks.bench_peer
	$(UV) run python -m benchmarks.bench_deerflow_ui
	npm run bench

vectors: python-deps
	$(UV) run python scripts/generate_vectors.py
	$(UV) run python scripts/generate_native_vectors.py
	$(UV) run python scripts/generate_display_vectors.py
	$(UV) run python scripts/generate_grammar_vectors.py
