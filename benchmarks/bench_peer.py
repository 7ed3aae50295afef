"""The gateway against LangGraph's own server on the same graph, in one run: medians and ratios.

Both serve ``build_agent`` (offline responder) over one LightRAG-shaped upstream on 127.0.0.1
(``tests.gated_upstream``, gate open): the gateway as ``deerflow-knowledge serve`` (SQLite), the
peer as ``langgraph dev`` (langgraph-api, in-memory runtime; the ``reference`` dependency group).
Measured, alternating between the servers so both see the same machine load:

* a fresh thread's ``runs.wait``, ``ROUNDS`` times each: the median;
* ``CONCURRENT`` ``runs.wait`` at once, then as many streamed runs at once (each on its own
  thread): runs per second, the median of ``BURSTS`` bursts;
* the resident memory of each server's processes after the runs.

Ratios are gateway / peer (time: lower is better; throughput: higher is better). Only the ratios
mean anything on a shared machine; every figure is a median, never the fastest of N.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from tests.gated_upstream import gated_lightrag
from tests.gateway_process import gateway_process
from tests.reference.server import start_langgraph_dev

ROUNDS = 15
CONCURRENT = 50
BURSTS = 3
QUESTION = {"messages": [{"role": "user", "content": "How does a reader verify the evidence?"}]}


async def _thread(http: httpx.AsyncClient) -> str:
    response = await http.post("/threads", json={})
    response.raise_for_status()
    return str(response.json()["thread_id"])


async def _wait(http: httpx.AsyncClient, thread_id: str) -> None:
    response = await http.post(
        f"/threads/{thread_id}/runs/wait", json={"assistant_id": "agent", "input": QUESTION}
    )
    response.raise_for_status()


async def _stream(http: httpx.AsyncClient, thread_id: str) -> None:
    body = {"assistant_id": "agent", "input": QUESTION, "stream_mode": ["values", "messages-tuple"]}
    async with http.stream("POST", f"/threads/{thread_id}/runs/stream", json=body) as response:
        response.raise_for_status()
        async for _ in response.aiter_bytes():
            pass


async def _fresh_wait(base: str) -> float:
    async with httpx.AsyncClient(base_url=base, timeout=120) as http:
        thread_id = await _thread(http)
        started = time.perf_counter()
        await _wait(http, thread_id)
        return time.perf_counter() - started


async def _burst(base: str, streamed: bool) -> float:
    limits = httpx.Limits(max_connections=CONCURRENT)
    async with httpx.AsyncClient(base_url=base, timeout=300, limits=limits) as http:
        threads = [await _thread(http) for _ in range(CONCURRENT)]
        run = _stream if streamed else _wait
        started = time.perf_counter()
        await asyncio.gather(*(run(http, t) for t in threads))
        return CONCURRENT / (time.perf_counter() - started)


def _rss_mib(pid: int) -> float:
    """Resident memory of the process group led by ``pid`` (the server and its workers)."""
    out = subprocess.run(
        ["ps", "-o", "rss=", "-g", str(os.getpgid(pid))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sum(int(n) for n in out.split()) / 1024


def _gateway_pid(url: str) -> int:
    """The PID of the ``deerflow-knowledge serve`` process listening at ``url``."""
    port = url.rstrip("/").rsplit(":", 1)[1]
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in argv and b"--port" in argv and port.encode() in argv:
            return int(proc.name)
    raise RuntimeError(f"no gateway process on port {port}")


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-peer-"))
    with gated_lightrag() as upstream:
        peer = start_langgraph_dev(upstream.url, work)
        try:
            with gateway_process(
                None,
                str(work / "threads.sqlite"),
                work,
                "--provider",
                "lightrag",
                "--base-url",
                upstream.url,
            ) as gateway_url:
                servers = {"gateway": gateway_url + "api", "langgraph dev": peer.url}
                for base in servers.values():  # warm both (imports, first model call)
                    asyncio.run(_fresh_wait(base))
                waits: dict[str, list[float]] = {name: [] for name in servers}
                for _ in range(ROUNDS):
                    for name, base in servers.items():
                        waits[name].append(asyncio.run(_fresh_wait(base)))
                bursts: dict[tuple[str, bool], list[float]] = {}
                for _ in range(BURSTS):
                    for streamed in (False, True):
                        for name, base in servers.items():
                            rate = asyncio.run(_burst(base, streamed))
                            bursts.setdefault((name, streamed), []).append(rate)
                rss = {
                    "gateway": _rss_mib(_gateway_pid(gateway_url)),
                    "langgraph dev": _rss_mib(peer.process.pid),
                }
        finally:
            peer.stop()
    wait_ms = {name: statistics.median(v) * 1000 for name, v in waits.items()}
    rate = {key: statistics.median(v) for key, v in bursts.items()}
    print(f"gateway vs langgraph dev (same graph, one upstream; medians; {sys.platform})")
    print(f"{'':34} {'gateway':>10} {'langgraph dev':>14} {'ratio':>7}")
    g, p = wait_ms["gateway"], wait_ms["langgraph dev"]
    print(f"{'fresh runs.wait, ms (median)':34} {g:10.0f} {p:14.0f} {g / p:7.2f}")
    for streamed, label in ((False, "runs.wait"), (True, "streams")):
        g, p = rate[("gateway", streamed)], rate[("langgraph dev", streamed)]
        print(f"{f'{CONCURRENT} concurrent {label}, runs/s':34} {g:10.1f} {p:14.1f} {g / p:7.2f}")
    g, p = rss["gateway"], rss["langgraph dev"]
    print(f"{'RSS after the runs, MiB':34} {g:10.0f} {p:14.0f} {g / p:7.2f}")


if __name__ == "__main__":
    main()
