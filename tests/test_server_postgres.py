"""Two gateway processes on one real PostgreSQL, driven by the official Python client.

A throwaway PostgreSQL server (Debian's package) runs on 127.0.0.1 for this module and is stopped
by its PID; each gateway is a real ``deerflow-knowledge serve`` process. Threads, state, history
and runs written through one process are visible through the other; a run started on one is
joined (``join`` and ``join_stream``) from the other through the shared database. Both search a
gated LightRAG-shaped upstream (tests/gated_upstream.py) so a run can be held in progress.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError

from deerflow.knowledge import find_citations, read_envelope
from tests.gated_upstream import GatedLightRAG, gated_lightrag
from tests.gateway_process import gateway_process
from tests.live.postgres_server import PostgresUnavailable, start

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    try:
        server = start()
    except PostgresUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def gateways(
    postgres_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str, GatedLightRAG]]:
    """Two processes whose knowledge searches go to a LightRAG upstream the test can gate (open
    unless a test holds it), so a run can be held in progress on one of them."""
    work = tmp_path_factory.mktemp("gateways")
    with gated_lightrag() as upstream:
        options = ("--provider", "lightrag", "--base-url", upstream.url)
        with (
            gateway_process(None, postgres_url, work, *options) as first,
            gateway_process(None, postgres_url, work, *options) as second,
        ):
            yield first + "api", second + "api", upstream


def human(text: str) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": text}]}


async def test_threads_state_history_runs_shared(
    gateways: tuple[str, str, GatedLightRAG],
) -> None:
    one, two = get_client(url=gateways[0]), get_client(url=gateways[1])
    thread = await one.threads.create(metadata={"owner": "pg-test"})
    tid = thread["thread_id"]
    streamed = [
        p async for p in one.runs.stream(tid, "agent", input=human("What is the trust boundary?"))
    ]
    assert "error" not in [p.event for p in streamed]

    assert (await two.threads.get(tid))["metadata"] == {"owner": "pg-test"}
    assert tid in [t["thread_id"] for t in await two.threads.search(metadata={"owner": "pg-test"})]
    state = await two.threads.get_state(tid)
    assert state == await one.threads.get_state(tid)
    assert await two.threads.get_history(tid, limit=50) == await one.threads.get_history(
        tid, limit=50
    )
    assert [r["run_id"] for r in await two.runs.list(tid)] == [
        r["run_id"] for r in await one.runs.list(tid)
    ]
    tool = next(m for m in state["values"]["messages"] if m["type"] == "tool")
    streamed_tool = next(m for m in streamed[-1].data["messages"] if m["type"] == "tool")
    assert json.dumps(streamed_tool["artifact"], sort_keys=True) == json.dumps(
        tool["artifact"], sort_keys=True
    )
    sources = {s.id for s in read_envelope(tool["content"], tool["artifact"]).sources}
    answer = state["values"]["messages"][-1]["content"]
    assert sources and {c.source_id for c in find_citations(answer)} <= sources

    # A follow-up run on the second process continues the same thread.
    await two.runs.wait(tid, "agent", input=human("How are citations verified?"))
    after = (await one.threads.get_state(tid))["values"]["messages"]
    assert [m["type"] for m in after].count("human") == 2


@pytest.fixture
def held(gateways: tuple[str, str, GatedLightRAG]) -> Iterator[tuple[str, str, GatedLightRAG]]:
    """The gateways with the upstream's gate closed; open again after the test, pass or fail."""
    gateways[2].hold()
    try:
        yield gateways
    finally:
        gateways[2].release()


async def test_join_from_the_other_process(held: tuple[str, str, GatedLightRAG]) -> None:
    first, second, upstream = held
    one, two = get_client(url=first), get_client(url=second)
    tid = (await one.threads.create())["thread_id"]
    # Keep the thread busy on the first process: its first run's search is held at the upstream,
    # and nine more runs wait behind it.
    for i in range(9):
        await one.runs.create(
            tid, "agent", input=human(f"question {i}"), multitask_strategy="enqueue"
        )
    run = await one.runs.create(
        tid, "agent", input=human("How are citations verified?"), multitask_strategy="enqueue"
    )
    assert await asyncio.to_thread(upstream.wait_for_queries, 1) == ["question 0"]
    # The second process refuses a second run on the busy thread (multitask_strategy reject).
    with pytest.raises(ConflictError):
        await two.runs.create(tid, "agent", input=human("again"))
    upstream.release()
    joined_stream, joined = await asyncio.gather(
        _collect(two, tid, run["run_id"]), two.runs.join(tid, run["run_id"])
    )
    final = (await one.threads.get_state(tid))["values"]
    assert joined == final
    assert joined_stream[0].event == "metadata"
    assert joined_stream[-1].event == "values" and joined_stream[-1].data == final
    assert (await two.runs.get(tid, run["run_id"]))["status"] == "success"


async def _collect(client: object, tid: str, run_id: str) -> list[object]:
    return [p async for p in client.runs.join_stream(tid, run_id)]  # type: ignore[attr-defined]
