"""DeerFlow's gateway as a real uvicorn process on 127.0.0.1, and a small client for its API.

The app is the package's trust-boundary wrapper around DeerFlow's ``app.gateway.app:app`` when
DeerFlow's venv can import it, else DeerFlow's own app; DEERFLOW_GATEWAY_APP picks one
explicitly (to measure DeerFlow alone). Started as DeerFlow's Makefile does (``PYTHONPATH`` =
``backend``), stopped by its own process group.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WRAPPED_APP = "deerflow.knowledge.integrations.deerflow.gateway:app"
DEERFLOW_APP = "app.gateway.app:app"
APP_ENV = "DEERFLOW_GATEWAY_APP"
START_TIMEOUT_SECONDS = 180.0
REQUEST_TIMEOUT_SECONDS = 120.0


class GatewayError(AssertionError):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:2000]}")
        self.status = status
        self.body = body


@dataclass
class SSEEvent:
    event: str
    data: Any


@dataclass
class Gateway:
    base: str
    app: str
    log: Path

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.base + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_SECONDS) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raise GatewayError(exc.code, exc.read().decode(errors="replace")) from None
        return json.loads(raw) if raw else None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body)

    def stream(self, path: str, body: Any) -> tuple[list[SSEEvent], dict[str, str]]:
        """POST ``body`` and read the whole SSE answer (DeerFlow ends it when the run ends)."""
        request = urllib.request.Request(
            self.base + path,
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
        )
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_SECONDS) as response:
                headers = {k.lower(): v for k, v in response.headers.items()}
                text = response.read().decode()
        except urllib.error.HTTPError as exc:
            raise GatewayError(exc.code, exc.read().decode(errors="replace")) from None
        return parse_sse(text), headers

    def new_thread(self) -> str:
        return self.post("/api/threads", {})["thread_id"]


def parse_sse(text: str) -> list[SSEEvent]:
    events: list[SSEEvent] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name, lines = "message", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                lines.append(line[5:].lstrip(" "))
        if lines:
            payload = "\n".join(lines)
            try:
                data = json.loads(payload)
            except ValueError:
                data = payload
            events.append(SSEEvent(name, data))
    return events


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def importable(python: Path, module: str, env: dict[str, str], cwd: Path) -> bool:
    probe = subprocess.run(
        [str(python), "-c", f"import importlib, sys; importlib.import_module({module!r})"],
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=120,
    )
    return probe.returncode == 0


@contextmanager
def start_gateway(
    root: Path, env: dict[str, str], work: Path, port: int | None = None
) -> Iterator[Gateway]:
    """The gateway on ``port`` (a free one when None: DeerFlow's frontend fixes the address it
    proxies to when it is built, so the suite picks the port first)."""
    backend = root / "backend"
    python = backend / ".venv" / "bin" / "python"
    env = {**env, "PYTHONPATH": str(backend)}
    app = os.environ.get(APP_ENV) or (
        WRAPPED_APP if importable(python, WRAPPED_APP.split(":")[0], env, backend) else DEERFLOW_APP
    )
    port = port or free_port()
    log = work / f"gateway-{port}.log"
    with log.open("wb") as stream:
        process = subprocess.Popen(
            [str(python), "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port)],
            cwd=backend,
            env=env,
            stdout=stream,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    gateway = Gateway(f"http://127.0.0.1:{port}", app, log)
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            try:
                if gateway.get("/health").get("status") == "healthy":
                    break
            except (OSError, GatewayError, ValueError):
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"DeerFlow's gateway ({app}) did not start:\n{log.read_text(errors='replace')[-6000:]}"
                )
            time.sleep(0.25)
        yield gateway
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
