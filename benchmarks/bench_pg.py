"""Several gateway processes on one PostgreSQL: how late a join from another process hears a run
end, and what thread search costs as threads pile up.

A throwaway PostgreSQL (Debian's package, tests/live/postgres_server.py) and two real gateway
processes on 127.0.0.1 share one database; their knowledge searches go to the gated LightRAG-shaped
upstream (tests/gated_upstream.py), so a run is held in progress until the benchmark releases it.
Each round starts a run on process A and follows it with ``join_stream`` from A and from B at once,
then opens the gate: the ratio is B's time to its last event over A's (1.0 = the other process
hears as soon as the running one). Search: ``threads.search`` (a metadata filter, a page of 10)
with 20 and with 2,000 threads in the database, fastest of each; ratio 2,000 / 20.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from langgraph_sdk import get_client
from tests.gated_upstream import GatedLightRAG, gated_lightrag
from tests.gateway_process import gateway_process
from tests.live.postgres_server import start

ROUNDS = 15
SEARCHES = 20
SMALL, LARGE = 20, 2000
QUESTION = "How are citations verified?"


async def _follow(client: Any, thread_id: str, run_id: str) -> tuple[float, list[str]]:
    events = [p.event async for p in client.runs.join_stream(thread_id, run_id)]
    return time.perf_counter(), events


async def _join_round(one: Any, two: Any, upstream: GatedLightRAG) -> tuple[float, float]:
    thread_id = (await one.threads.create())["thread_id"]
    upstream.hold()
    try:
        run = await one.runs.create(
            thread_id,
            "agent",
            input={"messages": [{"role": "user", "content": QUESTION}]},
            stream_mode=["values", "messages-tuple"],
        )
        await asyncio.to_thread(upstream.wait_for_queries, 1)
        local = asyncio.create_task(_follow(one, thread_id, run["run_id"]))
        remote = asyncio.create_task(_follow(two, thread_id, run["run_id"]))
        await asyncio.sleep(0.3)  # both joins are following the run
    finally:
        released = time.perf_counter()
        upstream.release()
    (local_end, local_events), (remote_end, remote_events) = await asyncio.gather(local, remote)
    assert "error" not in local_events + remote_events, (local_events, remote_events)
    return local_end - released, remote_end - released


def _search_time(base: str) -> float:
    # A new connection per search (as bench_gateway does): a kept-alive connection to the gateway
    # adds a fixed ~40 ms per request here, which would hide what the search itself costs.
    body = json.dumps({"metadata": {"user": "u1"}, "limit": 10}).encode()
    best = float("inf")
    for _ in range(SEARCHES):
        request = urllib.request.Request(
            base + "/threads/search", data=body, headers={"Content-Type": "application/json"}
        )
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=60) as response:
            found = json.loads(response.read())
        best = min(best, time.perf_counter() - started)
        assert len(found) == 10, "the filter matches a page of threads"
    return best


async def _create_threads(client: Any, count: int, first: int) -> None:
    numbers = list(range(first, first + count))
    for at in range(0, count, 50):
        await asyncio.gather(
            *[
                client.threads.create(metadata={"user": f"u{i % 2}", "n": i})
                for i in numbers[at : at + 50]
            ]
        )


async def _measure(first: str, second: str, upstream: GatedLightRAG) -> None:
    one, two = get_client(url=first), get_client(url=second)
    await _join_round(one, two, upstream)  # warm up
    local, remote = [], []
    for _ in range(ROUNDS):
        a, b = await _join_round(one, two, upstream)
        local.append(a)
        remote.append(b)
    await _create_threads(one, SMALL, 0)
    small = await asyncio.to_thread(_search_time, second)
    await _create_threads(one, LARGE - SMALL, SMALL)
    large = await asyncio.to_thread(_search_time, second)
    local_m, remote_m = statistics.median(local), statistics.median(remote)
    print(f"run end heard by a join on the running process (median): {local_m * 1e3:.1f} ms")
    print(f"run end heard by a join on another process (median):     {remote_m * 1e3:.1f} ms")
    print(f"threads.search, {SMALL} threads (fastest):                  {small * 1e3:.1f} ms")
    print(f"threads.search, {LARGE} threads (fastest):                {large * 1e3:.1f} ms")
    print(f"search {LARGE} / {SMALL} threads ratio: {large / small:.2f}")
    print(f"join from another process / from the running process ratio: {remote_m / local_m:.2f}")


def main() -> None:
    server = start()
    try:
        with tempfile.TemporaryDirectory() as folder, gated_lightrag() as upstream:
            work = Path(folder)
            options = ("--provider", "lightrag", "--base-url", upstream.url)
            with (
                gateway_process(None, server.url, work, *options) as first,
                gateway_process(None, server.url, work, *options) as second,
            ):
                asyncio.run(_measure(first + "api", second + "api", upstream))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
