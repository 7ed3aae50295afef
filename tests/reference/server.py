"""LangGraph's own server (``langgraph dev``, langgraph-api's in-memory runtime) on 127.0.0.1,
serving the project's agent (:mod:`tests.reference.graph`) for the differential test and the
peer benchmark. Started as a real process, stopped by its PID."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.live.lightrag_server import free_port

__all__ = [
    "START_TIMEOUT_SECONDS",
    "ReferenceServer",
    "langgraph_available",
    "langgraph_dev",
    "start_langgraph_dev",
]

START_TIMEOUT_SECONDS = 120.0
_GRAPH = Path(__file__).resolve().with_name("graph.py")
_ROOT = _GRAPH.parents[2]


def _langgraph() -> str | None:
    return shutil.which("langgraph", path=str(Path(sys.executable).parent))


def langgraph_available() -> bool:
    """Whether the ``reference`` dependency group (langgraph-cli[inmem]) is installed."""
    return _langgraph() is not None


@dataclass
class ReferenceServer:
    """A running ``langgraph dev``: its base URL; ``stop`` ends it by its PID."""

    url: str
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def start_langgraph_dev(lightrag_url: str, work: Path) -> ReferenceServer:
    """Start ``langgraph dev`` serving graph ``agent`` over the LightRAG upstream; return once it
    answers ``/ok``."""
    executable = _langgraph()
    if executable is None:
        raise RuntimeError("langgraph-cli is not installed: uv sync --locked --group reference")
    config = work / "langgraph.json"
    config.write_text(json.dumps({"graphs": {"agent": f"{_GRAPH}:graph"}, "dependencies": ["."]}))
    port = free_port()
    env = {
        **os.environ,
        "DEERFLOW_REFERENCE_LIGHTRAG_URL": lightrag_url,
        # Offline: no analytics, no LangSmith tracing.
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "LANGSMITH_API_KEY": "",
        "PYTHONPATH": str(_ROOT),
    }
    log_path = work / f"langgraph-dev-{port}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                executable,
                "dev",
                "--config",
                str(config),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--no-browser",
                "--no-reload",
                "--allow-blocking",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=work,
            env=env,
        )
    server = ReferenceServer(f"http://127.0.0.1:{port}", process)
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while True:
        try:
            urllib.request.urlopen(server.url + "/ok", timeout=2).read()
            return server
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                if process.poll() is None:
                    server.stop()
                raise RuntimeError(
                    f"langgraph dev did not start:\n{log_path.read_text()}"
                ) from None
            time.sleep(0.2)


@contextmanager
def langgraph_dev(lightrag_url: str, work: Path) -> Iterator[str]:
    """The base URL of ``langgraph dev`` serving graph ``agent`` over the LightRAG upstream."""
    server = start_langgraph_dev(lightrag_url, work)
    try:
        yield server.url
    finally:
        server.stop()
