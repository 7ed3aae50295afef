"""The DeerFlow trust boundary's cost before the app: an 8 MiB hostile JSON body against a small one.

The wrapped app answers 401 without reading the body, as DeerFlow's authentication does for an
anonymous caller, so whatever the event loop spends on the request is the boundary's. Each case
runs in a fresh interpreter (peak RSS is per process): the CPU time the event loop's thread spends
until the request is answered (a check in a worker thread is not on it), the longest event-loop
stall meanwhile (a 1 ms ticker's worst lateness: on a loaded machine mostly the neighbours), the
peak RSS rise, and how long a concurrent ``GET /health`` through the same boundary waits. The hostile bodies are ``[[],[],…]`` (the most
containers per byte). A last pair of cases lets the app read the 8 MiB body, so the boundary checks
it: the stall that remains is what the check costs the loop once a caller is authenticated.
Medians of the rounds; the ratios (hostile 8 MiB / small, loop CPU and RSS) are printed last
(target <= 2: flat).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from deerflow.knowledge.integrations.deerflow.boundary import KnowledgeTrustBoundary

ROUNDS = 5
MIB = 1024 * 1024
TICK_SECONDS = 0.001
CASES: dict[str, tuple[int, bool]] = {  # name -> (hostile body size in bytes, 0 = small; app reads)
    "small": (0, False),
    "hostile 4 MiB": (4 * MIB, False),
    "hostile 8 MiB": (8 * MIB, False),
    "small, app reads": (0, True),
    "hostile 8 MiB, app reads": (8 * MIB, True),
}


def _body(size: int) -> bytes:
    if not size:
        return json.dumps({"input": {"messages": [{"type": "human", "content": "hi"}]}}).encode()
    return b"[" + b"[]," * ((size - 3) // 3) + b"[]]"


def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


async def _app(scope: Any, receive: Any, send: Any, *, reads: bool) -> None:
    if reads and scope["method"] == "POST":
        while (await receive()).get("more_body"):
            pass
    status = 200 if scope["path"] == "/health" else 401
    await send({"type": "http.response.start", "status": status, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


async def _call(app: Any, method: str, path: str, body: bytes) -> None:
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    gone = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body"):
            gone.set()

    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await app({"type": "http", "method": method, "path": path, "headers": headers}, receive, send)


async def _measure(size: int, reads: bool) -> dict[str, float]:
    body = _body(size)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await _app(scope, receive, send, reads=reads)

    boundary = KnowledgeTrustBoundary(app)
    await _call(boundary, "POST", "/warm-up", _body(0))
    done = False
    worst = 0.0

    async def ticker() -> None:
        nonlocal worst
        while not done:
            before = time.perf_counter()
            await asyncio.sleep(TICK_SECONDS)
            worst = max(worst, time.perf_counter() - before - TICK_SECONDS)

    async def health(issued: float) -> float:
        await _call(boundary, "GET", "/health", b"")
        return time.perf_counter() - issued

    Path("/proc/self/clear_refs").write_text("5")  # resets the peak RSS (VmHWM)
    base = _rss_kib("VmRSS")
    tick = asyncio.create_task(ticker())
    await asyncio.sleep(TICK_SECONDS * 2)
    # Both requests arrive in the same loop step, the hostile one first; the GET's wait counts
    # from then.
    cpu = time.thread_time()  # the event loop's thread: a worker thread's CPU is not counted
    post = asyncio.create_task(_call(boundary, "POST", "/api/threads/t/runs/wait", body))
    wait = await asyncio.create_task(health(time.perf_counter()))
    await post
    cpu = time.thread_time() - cpu
    done = True
    await tick
    return {
        "cpu": cpu,
        "stall": worst,
        "rss": (_rss_kib("VmHWM") - base) / 1024,
        "health": wait,
    }


def _case(name: str) -> dict[str, float]:
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_boundary", name],
        check=True,
        capture_output=True,
        text=True,
    )
    measured: dict[str, float] = json.loads(completed.stdout)
    return measured


def main() -> None:
    results: dict[str, list[dict[str, float]]] = {name: [] for name in CASES}
    for _ in range(ROUNDS):
        for name in CASES:
            results[name].append(_case(name))
    med = {
        name: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        for name, runs in results.items()
    }
    for name, m in med.items():
        print(
            f"{name:<26} loop CPU {m['cpu'] * 1e3:8.1f} ms   worst stall {m['stall'] * 1e3:8.1f} ms"
            f"   RSS rise {m['rss']:7.1f} MiB   concurrent GET /health {m['health'] * 1e3:8.1f} ms"
        )
    small, hostile = med["small"], med["hostile 8 MiB"]
    print(f"8 MiB hostile / small, before the app: loop CPU {hostile['cpu'] / small['cpu']:.2f}x, "
          f"RSS rise {max(hostile['rss'], 1.0) / max(small['rss'], 1.0):.2f}x (a rise below 1 MiB"
          " counts as 1 MiB)")  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) == 2:
        size, reads = CASES[sys.argv[1]]
        print(json.dumps(asyncio.run(_measure(size, reads))))
    else:
        main()
