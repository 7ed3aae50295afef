"""Run ``deerflow-knowledge serve`` as a real process on 127.0.0.1 for a test; stop it by PID."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.live.lightrag_server import free_port

START_TIMEOUT_SECONDS = 60.0


@contextmanager
def gateway_process(
    index: Path | None,
    checkpoint: str,
    work: Path,
    *extra: str,
    max_open_files: int | None = None,
) -> Iterator[str]:
    """The base URL of a gateway serving the local provider over ``index`` (``extra``: more
    ``serve`` options; with ``index`` None, ``extra`` names the provider; ``max_open_files``: the
    process's ``RLIMIT_NOFILE``)."""
    with gateway_process_handle(index, checkpoint, work, *extra, max_open_files=max_open_files) as (
        base,
        _,
    ):
        yield base


@contextmanager
def gateway_process_handle(
    index: Path | None,
    checkpoint: str,
    work: Path,
    *extra: str,
    max_open_files: int | None = None,
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """:func:`gateway_process`, with the process (a test may kill it)."""
    port = free_port()
    provider = () if index is None else ("--provider", "local", "--index", str(index))
    log_path = work / f"gateway-{port}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "deerflow.knowledge.cli",
                "serve",
                *provider,
                "--checkpoint",
                checkpoint,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                *extra,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=work,
            preexec_fn=None if max_open_files is None else lambda: _limit_files(max_open_files),
        )
        base = f"http://127.0.0.1:{port}/"
        try:
            deadline = time.monotonic() + START_TIMEOUT_SECONDS
            while True:
                try:
                    urllib.request.urlopen(base + "api/ok", timeout=2).read()
                    break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(
                            f"gateway did not start:\n{log_path.read_text()}"
                        ) from None
                    time.sleep(0.2)
            yield base, process
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def _limit_files(count: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))


def call(base: str, path: str, body: Any = None) -> Any:
    """A JSON request to the gateway (POST when ``body`` is given)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        base + path,
        data=data,
        method="GET" if body is None else "POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        raw = response.read()
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        events = []
        for block in raw.decode().split("\n\n"):
            if block.strip():
                fields = dict(line.split(": ", 1) for line in block.splitlines())
                events.append((fields["event"], json.loads(fields["data"])))
        return events
    return json.loads(raw)
