"""One ``knowledge_search`` tool call vs a raw httpx POST of the same query, on a real server.

Starts a real LightRAG 1.5.7 server on loopback (tests/live/lightrag_server.py), then alternates
the two calls so both see the same machine state; prints the median ratio last (target <= 1.15).
The tool call includes everything the agent pays for: validation, the HTTP call, mapping, the
budgeted formatting and the evidence envelope.
"""

from __future__ import annotations

import asyncio
import statistics
import time

import httpx
from tests.live.lightrag_server import LIVE_EVIDENCE_QUERY, start

from deerflow.knowledge.providers.lightrag import LightRAGProvider
from deerflow.knowledge.tools import make_knowledge_tool

ROUNDS = 40


async def _measure(base_url: str, api_key: str) -> tuple[float, float]:
    tool = make_knowledge_tool(LightRAGProvider(base_url, api_key=api_key, mode="naive"))
    payload = {"query": LIVE_EVIDENCE_QUERY, "mode": "naive", "top_k": 60}
    headers = {"X-API-Key": api_key}
    call = {
        "type": "tool_call",
        "id": "b",
        "name": tool.name,
        "args": {"query": LIVE_EVIDENCE_QUERY},
    }

    async def raw() -> None:
        async with httpx.AsyncClient(timeout=30) as client:
            response = await client.post(f"{base_url}/query/data", json=payload, headers=headers)
            response.raise_for_status()
            response.json()

    async def ours() -> None:
        message = await tool.ainvoke(call)
        assert not str(message.content).startswith("Error:"), message.content

    for fn in (raw, ours, raw, ours):  # warm caches on both paths
        await fn()
    times: dict[str, list[float]] = {"raw": [], "tool": []}
    for _ in range(ROUNDS):
        for name, fn in (("raw", raw), ("tool", ours)):
            start_time = time.perf_counter()
            await fn()
            times[name].append(time.perf_counter() - start_time)
    return statistics.median(times["raw"]), statistics.median(times["tool"])


def main() -> None:
    api_key = "bench-key-0123456789"
    server = start(api_key=api_key)
    try:
        raw, tool = asyncio.run(_measure(server.base_url, api_key))
    finally:
        server.stop()
    print(f"raw httpx POST /query/data, median: {raw * 1e3:.2f} ms")
    print(f"knowledge_search tool call, median: {tool * 1e3:.2f} ms")
    print(f"knowledge_search/raw ratio: {tool / raw:.3f}")


if __name__ == "__main__":
    main()
