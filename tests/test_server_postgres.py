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
import os
import signal
import urllib.error
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from deerflow.knowledge import find_citations, read_envelope
from tests.gated_upstream import GatedLightRAG, gated_lightrag
from tests.gateway_process import gateway_process, gateway_process_handle

pytestmark = pytest.mark.postgres


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

    metadata = (await two.threads.get(tid))["metadata"]
    assert metadata == {
        "owner": "pg-test",
        "graph_id": "agent",
        "assistant_id": metadata["assistant_id"],
    }
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


async def test_metadata_postgresql_cannot_store_is_a_422_not_a_500(
    gateways: tuple[str, str, GatedLightRAG],
) -> None:
    client = get_client(url=gateways[0])
    calls = [
        lambda: client.threads.search(metadata={"owner": "\x00"}),
        lambda: client.threads.search(ids=["\x00"]),
        lambda: client.threads.count(metadata={"\x00": 1}),
        lambda: client.threads.create(metadata={"owner": "a\x00b"}),
    ]
    for call in calls:
        with pytest.raises(UnprocessableEntityError, match="U\\+0000"):
            await call()
    assert isinstance(await client.threads.count(), int)  # the gateway still answers


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


MODES = ["values", "updates", "messages-tuple", "messages"]


def _parts(parts: list[object]) -> list[tuple[str, object, object]]:
    return [(p.event, p.data, p.id) for p in parts]  # type: ignore[attr-defined]


async def test_join_stream_from_the_other_process_carries_every_mode(
    held: tuple[str, str, GatedLightRAG],
) -> None:
    first, second, upstream = held
    one, two = get_client(url=first), get_client(url=second)
    tid = (await one.threads.create())["thread_id"]
    run = await one.runs.create(
        tid,
        "agent",
        input=human("How are citations verified?"),
        stream_mode=MODES,
        stream_resumable=True,
    )
    assert await asyncio.to_thread(upstream.wait_for_queries, 1)
    # The second process follows the run while it is held in the first, then hears it go on.
    remote = two.runs.join_stream(tid, run["run_id"]).__aiter__()
    followed = [await remote.__anext__()]
    assert followed[0].event == "metadata"
    upstream.release()
    followed += [p async for p in remote]
    local = [p async for p in one.runs.join_stream(tid, run["run_id"])]
    assert _parts(followed) == _parts(local)  # same events, same data, same ids
    assert [int(p.id) for p in followed] == list(range(len(followed)))
    names = {p.event for p in followed}
    assert {"values", "updates", "messages", "messages/complete", "messages/metadata"} <= names

    state = (await one.threads.get_state(tid))["values"]
    assert [p.data for p in followed if p.event == "values"][-1] == state
    answer = state["messages"][-1]
    streamed = [p.data for p in followed if p.event == "messages/complete"]
    assert any(
        m[0]["id"] == answer["id"] and m[0]["content"] == answer["content"] for m in streamed
    )
    tool = next(m for m in state["messages"] if m["type"] == "tool")
    sent_tool = next(m[0] for m in streamed if m[0]["type"] == "tool")
    assert json.dumps(sent_tool["artifact"], sort_keys=True) == json.dumps(
        tool["artifact"], sort_keys=True
    )
    sources = {s.id for s in read_envelope(tool["content"], tool["artifact"]).sources}
    assert sources and {c.source_id for c in find_citations(answer["content"])} <= sources


async def test_reconnect_with_last_event_id_on_the_other_process(
    held: tuple[str, str, GatedLightRAG],
) -> None:
    first, second, upstream = held
    one, two = get_client(url=first), get_client(url=second)
    tid = (await one.threads.create())["thread_id"]
    seen = []
    # A client of the first process reads the stream until the run is held at the search ...
    async for part in one.runs.stream(
        tid,
        "agent",
        input=human("What is the trust boundary?"),
        stream_mode=MODES,
        stream_resumable=True,
    ):
        seen.append(part)
        if part.event == "updates" and "model" in part.data:
            break  # ... and drops (a closed tab) once the model has asked for the search.
    run_id = seen[0].data["run_id"]
    assert await asyncio.to_thread(upstream.wait_for_queries, 1)
    upstream.release()
    # It comes back on the second process with the id of the last event it saw.
    rest = [p async for p in two.runs.join_stream(tid, run_id, last_event_id=seen[-1].id)]
    whole = [p async for p in one.runs.join_stream(tid, run_id)]
    assert _parts(seen + rest) == _parts(whole)
    assert rest and int(rest[0].id) == int(seen[-1].id) + 1
    assert (await two.runs.get(tid, run_id))["status"] == "success"


async def test_reject_race_across_processes_starts_exactly_one_run(
    held: tuple[str, str, GatedLightRAG],
) -> None:
    first, second, upstream = held
    one, two = get_client(url=first), get_client(url=second)
    started_runs = []
    for n in range(10):
        tid = (await one.threads.create())["thread_id"]
        # Both processes are idle and get their request at the same moment.
        pair = await asyncio.gather(
            *[
                client.runs.create(
                    tid, "agent", input=human(f"race {n}"), multitask_strategy="reject"
                )
                for client in (one, two)
            ],
            return_exceptions=True,
        )
        started = [o for o in pair if isinstance(o, dict)]
        refused = [o for o in pair if isinstance(o, ConflictError)]
        assert len(started) == 1 and len(refused) == 1, pair
        assert [r["run_id"] for r in await two.runs.list(tid)] == [started[0]["run_id"]]
        started_runs.append(started[0])
    upstream.release()
    for run in started_runs:
        await two.runs.join(run["thread_id"], run["run_id"])


async def test_enqueue_across_processes_runs_one_at_a_time_in_order(
    held: tuple[str, str, GatedLightRAG],
) -> None:
    first, second, upstream = held
    one, two = get_client(url=first), get_client(url=second)
    tid = (await one.threads.create())["thread_id"]
    questions = ["What is the trust boundary?", "How are citations verified?", "What is a chip?"]
    runs = []
    for question, client in zip(questions, (one, two, one), strict=True):
        runs.append(
            await client.runs.create(
                tid, "agent", input=human(question), multitask_strategy="enqueue"
            )
        )
        if not runs[1:]:
            assert await asyncio.to_thread(upstream.wait_for_queries, 1) == questions[:1]
    # The run queued on the second process waits for the first process's run.
    assert (await two.runs.get(tid, runs[1]["run_id"]))["status"] == "pending"
    upstream.release()
    await two.runs.join(tid, runs[2]["run_id"])
    assert upstream.queries == questions
    messages = (await one.threads.get_state(tid))["values"]["messages"]
    assert [m["content"] for m in messages if m["type"] == "human"] == questions
    assert [m["type"] for m in messages] == ["human", "ai", "tool", "ai"] * 3  # never interleaved
    for run in runs:
        assert (await one.runs.get(tid, run["run_id"]))["status"] == "success"


async def test_cancel_from_the_other_process(held: tuple[str, str, GatedLightRAG]) -> None:
    first, second, upstream = held
    one, two = get_client(url=first), get_client(url=second)
    tid = (await one.threads.create())["thread_id"]
    run = await one.runs.create(tid, "agent", input=human("What is the trust boundary?"))
    assert await asyncio.to_thread(upstream.wait_for_queries, 1)
    await two.runs.cancel(tid, run["run_id"], wait=True)
    assert (await one.runs.get(tid, run["run_id"]))["status"] == "interrupted"
    # The thread is free again, from either process.
    upstream.release()
    await two.runs.wait(tid, "agent", input=human("How are citations verified?"))


async def test_state_write_and_delete_respect_a_run_of_the_other_process(
    held: tuple[str, str, GatedLightRAG], postgres_url: str
) -> None:
    first, second, upstream = held
    one, two = get_client(url=first), get_client(url=second)
    tid = (await one.threads.create())["thread_id"]
    run = await one.runs.create(tid, "agent", input=human("What is the trust boundary?"))
    assert await asyncio.to_thread(upstream.wait_for_queries, 1)
    with pytest.raises(ConflictError):
        await two.threads.update_state(tid, {"messages": []})
    following = one.runs.join_stream(tid, run["run_id"]).__aiter__()
    assert (await following.__anext__()).event == "metadata"
    await two.threads.delete(tid)

    async def rest() -> list[object]:
        return [p async for p in following]

    # The run stops on the first process although its search is still held.
    await asyncio.wait_for(rest(), 30)
    assert not upstream.gate.is_set()
    upstream.release()  # whatever the stopped run still had in flight goes on now
    await one.threads.create()  # a request served after the run's last step
    for client in (one, two):  # the thread stays gone on both processes, and in the database
        with pytest.raises(NotFoundError):
            await client.threads.get(tid)
        assert tid not in [t["thread_id"] for t in await client.threads.search(limit=1000)]
    assert await _rows_of(postgres_url, tid) == {"checkpoints": 0, "runs": 0}


async def _rows_of(url: str, thread_id: str) -> dict[str, int]:
    """The thread's checkpoint rows and run records left in the database."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        checkpoints = await (
            await conn.execute(
                "SELECT count(*) FROM checkpoints WHERE thread_id = %s", (thread_id,)
            )
        ).fetchone()
        runs = await (
            await conn.execute(
                "SELECT count(*) FROM store WHERE prefix = %s",
                ("deerflow_gateway.runs." + thread_id,),
            )
        ).fetchone()
    return {"checkpoints": checkpoints[0], "runs": runs[0]}  # type: ignore[index]


async def test_interrupt_stops_the_run_of_the_other_process_first(
    held: tuple[str, str, GatedLightRAG],
) -> None:
    first, second, upstream = held
    one, two = get_client(url=first), get_client(url=second)
    tid = (await one.threads.create())["thread_id"]
    old = await one.runs.create(tid, "agent", input=human("What is the trust boundary?"))
    assert await asyncio.to_thread(upstream.wait_for_queries, 1)
    new = await two.runs.create(
        tid, "agent", input=human("How are citations verified?"), multitask_strategy="interrupt"
    )
    # The new run's search arrives only once the old run has stopped on the first process.
    assert await asyncio.to_thread(upstream.wait_for_queries, 2) == [
        "What is the trust boundary?",
        "How are citations verified?",
    ]
    assert (await two.runs.get(tid, old["run_id"]))["status"] == "interrupted"
    upstream.release()
    await one.runs.join(tid, new["run_id"])
    assert (await one.runs.get(tid, new["run_id"]))["status"] == "success"


async def test_a_killed_processs_runs_end_and_its_thread_is_usable(
    held: tuple[str, str, GatedLightRAG], postgres_url: str, tmp_path: Path
) -> None:
    first, second, upstream = held
    one, two = get_client(url=first), get_client(url=second)
    options = ("--provider", "lightrag", "--base-url", upstream.url)
    with gateway_process_handle(None, postgres_url, tmp_path, *options) as (base, process):
        doomed = get_client(url=base + "api")
        tid = (await one.threads.create())["thread_id"]
        running = await doomed.runs.create(tid, "agent", input=human("What is the trust boundary?"))
        assert await asyncio.to_thread(upstream.wait_for_queries, 1)
        queued = await doomed.runs.create(
            tid, "agent", input=human("queued"), multitask_strategy="enqueue"
        )
        os.killpg(process.pid, signal.SIGKILL)  # kill -9, mid-run
        process.wait()
    # 30 s without a heartbeat, as the stale rule counts them (no test waits for the clock).
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await conn.execute(
            "UPDATE deerflow_gateway_runs SET heartbeat_at = now() - interval '1 hour' "
            "WHERE thread_id = %s",
            (tid,),
        )
    upstream.release()
    # A default (reject) run on the thread is admitted at once, on either live process ...
    await one.runs.wait(tid, "agent", input=human("How are citations verified?"))
    for run in (running, queued):  # ... and the lost runs say they failed, everywhere
        for client in (one, two):
            assert (await client.runs.get(tid, run["run_id"]))["status"] == "error"
        parts = [p async for p in two.runs.join_stream(tid, run["run_id"])]
        assert parts and parts[-1].event == "error" and parts[-1].data["error"] == "RunLost"
        with pytest.raises(ConflictError, match="already ended"):
            await two.runs.cancel(tid, run["run_id"])
        await two.runs.delete(tid, run["run_id"])
    await two.threads.delete(tid)
    with pytest.raises(NotFoundError):
        await one.threads.get(tid)


async def test_an_interrupt_storm_across_processes_leaves_the_thread_usable(
    held: tuple[str, str, GatedLightRAG],
) -> None:
    first, second, upstream = held
    one, two = get_client(url=first), get_client(url=second)
    for _ in range(2):
        tid = (await one.threads.create())["thread_id"]
        # 25 interrupt runs, alternating between the processes, sent at once; each run's search
        # is held, so every one of them is in progress or queued when the next comes.
        runs = await asyncio.gather(
            *[
                (one, two)[n % 2].runs.create(
                    tid, "agent", input=human(f"storm {n}"), multitask_strategy="interrupt"
                )
                for n in range(25)
            ]
        )
        upstream.release()
        for run in runs:
            await two.runs.join(tid, run["run_id"])
        upstream.hold()
        statuses = [(await one.runs.get(tid, r["run_id"]))["status"] for r in runs]
        assert set(statuses) <= {"interrupted", "success"}, statuses
        upstream.release()
        for client in (one, two):  # a default (reject) run starts on either process
            await client.runs.wait(tid, "agent", input=human("after the storm"))
        upstream.hold()
        assert (await two.threads.get(tid))["status"] == "idle"


def test_a_gateway_comes_back_by_itself_after_a_database_restart(
    tmp_path: Path,
) -> None:
    from tests.gateway_process import call
    from tests.live.postgres_server import restart, start

    server = start()  # its own cluster: the other tests' gateways keep theirs
    try:
        with gated_lightrag() as upstream:
            options = ("--provider", "lightrag", "--base-url", upstream.url)
            with gateway_process(None, server.url, tmp_path, *options) as base:
                tid = call(base, "api/threads", {})["thread_id"]
                restart(server)  # every connection the gateway held is cut
                # The first requests may find the database still coming up (503, never 500);
                # then every request is served again, on connections the pools replaced.
                statuses = []
                for _ in range(50):
                    try:
                        call(base, f"api/threads/{tid}/runs/wait", {"input": human("again?")})
                        break
                    except urllib.error.HTTPError as exc:
                        statuses.append(exc.code)
                assert set(statuses) <= {503}, statuses
                assert len(statuses) < 50
                for n in range(5):
                    assert call(base, "api/threads", {})["thread_id"]
                    call(base, f"api/threads/{tid}/runs/wait", {"input": human(f"more {n}")})
                state = call(base, f"api/threads/{tid}/state")
                assert [m["type"] for m in state["values"]["messages"]].count("human") == 6
    finally:
        server.stop()
