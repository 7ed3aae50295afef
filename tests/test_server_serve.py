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
from deerflow.knowledge.server.process import _serve
from deerflow.knowledge.server.process._serve import MMAP_THRESHOLD_BYTES, SWITCH_INTERVAL_SECONDS


def test_serve_tunes_the_process_once_while_it_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("gc.freeze"))
    monkeypatch.setattr(sys, "setswitchinterval", lambda value: calls.append(("switch", value)))
    monkeypatch.setattr(_serve, "pin_mmap_threshold", lambda: calls.append("mmap") or True)
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
    assert seen["calls"] == ["mmap", ("switch", SWITCH_INTERVAL_SECONDS), "gc.freeze"]
    assert calls == seen["calls"]
    assert seen["worker"].startswith("gateway-step")  # the bounded executor (WORKER_THREADS)
    assert seen["override"] is not None
    assert get_runtime_overrides().aio_to_thread is None  # LangSmith's hook leaves with serve


_FRAGMENTED_HEAP = """
import sys
from deerflow.knowledge.server.process._serve import pin_mmap_threshold
pinned = sys.argv[1] == "pin" and pin_mmap_threshold()
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
big = [bytearray(1 << 20) for _ in range(32)]  # mapped, then freed: glibc raises its threshold
del big
frames = [bytearray(2 * MMAP) for _ in range(400)]  # 100 MiB of frames
peak = rss()
del frames[::2]  # every other one freed, between frames still in use
print(pinned, peak - rss())
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_a_pinned_mmap_threshold_gives_freed_frames_back() -> None:
    """Counted in resident bytes, in a fresh interpreter each: of 50 MiB of frames freed between
    frames still in use, glibc's moving threshold gives nothing back (they were in its heap);
    pinned, all of it (each was mapped on its own)."""
    import subprocess

    script = _FRAGMENTED_HEAP.replace("MMAP", str(MMAP_THRESHOLD_BYTES))
    given_back = {}
    for mode in ("default", "pin"):
        out = subprocess.run(
            [sys.executable, "-c", script, mode], capture_output=True, text=True, check=True
        ).stdout.split()
        if mode == "pin" and out[0] != "True":
            pytest.skip("no glibc mallopt here")
        given_back[mode] = int(out[1])
    assert given_back["default"] < 8 * 2**20
    assert given_back["pin"] > 45 * 2**20
