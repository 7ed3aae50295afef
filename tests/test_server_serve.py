"""``serve`` tunes the process it owns, once each, while uvicorn runs; ``create_app`` never does
(``test_server.py`` counts that an embedded app changes nothing).

uvicorn's main loop is replaced by a probe that looks at the running process and returns, so the
real start-up (the app's lifespan on a SQLite file) and shutdown run, and nothing waits on a
signal.
"""

from __future__ import annotations

import gc
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from langsmith._runtime_overrides import get_runtime_overrides

from deerflow.knowledge.providers.local import LocalProvider
from deerflow.knowledge.server import build_config, serve
from deerflow.knowledge.server._serve import SWITCH_INTERVAL_SECONDS


def test_serve_tunes_the_process_once_while_it_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("gc.freeze"))
    monkeypatch.setattr(sys, "setswitchinterval", lambda value: calls.append(("switch", value)))
    seen: dict[str, Any] = {}

    async def probe(self: uvicorn.Server) -> None:
        import asyncio
        import threading

        loop = asyncio.get_running_loop()
        seen["worker"] = await loop.run_in_executor(None, lambda: threading.current_thread().name)
        seen["override"] = get_runtime_overrides().aio_to_thread
        seen["calls"] = list(calls)

    monkeypatch.setattr(uvicorn.Server, "main_loop", probe)
    config = build_config(
        LocalProvider(tmp_path / "index.sqlite"), checkpoint=str(tmp_path / "threads.sqlite")
    )
    with socket.create_server(("127.0.0.1", 0)) as sock:
        serve(config, sock=sock)
    # Tuned before the app started; the collector frozen once the app had started.
    assert seen["calls"] == [("switch", SWITCH_INTERVAL_SECONDS), "gc.freeze"]
    assert calls == seen["calls"]
    assert seen["worker"].startswith("gateway-step")  # the bounded executor (WORKER_THREADS)
    assert seen["override"] is not None
    assert get_runtime_overrides().aio_to_thread is None  # LangSmith's hook leaves with serve
