"""``pgruns`` against a real PostgreSQL: admission is atomic across connections, turns keep arrival
order, a run's events reach a follower on another connection (through NOTIFY, or the slow re-read
when a notification is lost), the shared log is bounded, and a stopped process's run lets go.

Each ``PgRuns`` here has its own connection pool and ``LISTEN`` connection, as two gateway
processes would. The PostgreSQL server is a throwaway one on 127.0.0.1, stopped by its PID.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import orjson
import psycopg
import pytest

from deerflow.knowledge.server.http import ApiError
from deerflow.knowledge.server.pgruns import PgRuns, open_pg_runs
from deerflow.knowledge.server.streaming import Event

pytestmark = pytest.mark.postgres


@asynccontextmanager
async def processes(url: str, count: int, **options: Any) -> AsyncIterator[list[PgRuns]]:
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(open_pg_runs(url, **options)) for _ in range(count)]


def refuse_busy(active: list[str]) -> list[str]:
    if active:
        raise ApiError(409, f"busy with {active[0]}")
    return []


async def test_admission_race_admits_exactly_one(postgres_url: str) -> None:
    async with processes(postgres_url, 2) as (one, two):
        for _ in range(10):
            thread = str(uuid.uuid4())
            outcomes = await asyncio.gather(
                *[
                    runs.admit(thread, str(uuid.uuid4()), resumable=False, check=refuse_busy)
                    for runs in (one, two, one, two)
                ],
                return_exceptions=True,
            )
            assert sum(o is None for o in outcomes) == 1
            assert all(isinstance(o, ApiError) and o.status_code == 409 for o in outcomes if o)
            assert len(await two.active(thread)) == 1


async def test_turns_keep_arrival_order_across_processes(postgres_url: str) -> None:
    async with processes(postgres_url, 2) as (one, two):
        thread = str(uuid.uuid4())
        ids = [str(uuid.uuid4()) for _ in range(3)]
        for runs, run_id in zip((one, two, one), ids, strict=True):
            await runs.admit(thread, run_id, resumable=False, check=lambda _: [])
        started: list[str] = []

        async def take_turn(runs: PgRuns, run_id: str) -> None:
            await runs.wait_turn(thread, run_id)
            started.append(run_id)

        waiting = [
            asyncio.create_task(take_turn(two, ids[1])),
            asyncio.create_task(take_turn(one, ids[2])),
        ]
        await take_turn(one, ids[0])
        await asyncio.sleep(0)  # let the queued runs look once: neither may start
        assert started == ids[:1] and not any(t.done() for t in waiting)
        await one.release(ids[0])
        await asyncio.wait_for(waiting[0], 10)
        assert started == ids[:2] and not waiting[1].done()
        await two.release(ids[1])
        await asyncio.wait_for(waiting[1], 10)
        assert started == ids
        await one.release(ids[2])
        assert await one.active(thread) == []


async def _follow_all(runs: PgRuns, run_id: str, after: int = -1) -> list[Event]:
    return [e async for e in runs.follow(run_id, after=after)]


async def test_events_reach_another_process_in_order(postgres_url: str) -> None:
    async with processes(postgres_url, 2) as (one, two):
        thread, run_id = str(uuid.uuid4()), str(uuid.uuid4())
        await one.admit(thread, run_id, resumable=True, check=lambda _: [])
        stream = one.stream(run_id, thread, resumable=True)
        stream.emit("metadata", b'{"run_id":"x"}')
        follower = asyncio.create_task(_follow_all(two, run_id))
        for n in range(50):
            stream.emit("messages", b"[%d]" % n)
            if n % 7 == 0:
                await asyncio.sleep(0.01)  # several batches, each its own NOTIFY
        stream.finish()
        got = await asyncio.wait_for(follower, 10)
        assert got == stream.events
        assert await _follow_all(two, run_id, after=20) == stream.events[21:]
        assert await two.run(run_id) is not None and (await two.run(run_id)).resumable  # type: ignore[union-attr]
        await one.release(run_id)


async def test_a_lost_notification_costs_one_recheck(postgres_url: str) -> None:
    async with processes(postgres_url, 1) as (runs,):
        runs.recheck = 0.2
        thread, run_id = str(uuid.uuid4()), str(uuid.uuid4())
        await runs.admit(thread, run_id, resumable=False, check=lambda _: [])
        follower = asyncio.create_task(_follow_all(runs, run_id))
        await asyncio.sleep(0.1)
        # Written behind the gateway's back: no NOTIFY is sent.
        async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
            await conn.execute(
                "INSERT INTO deerflow_gateway_run_events VALUES (%s, 0, 'values', '{}')", (run_id,)
            )
            await conn.execute(
                "UPDATE deerflow_gateway_runs SET stream_done = true WHERE run_id = %s", (run_id,)
            )
        got = await asyncio.wait_for(follower, 5)
        assert [(e.id, e.name) for e in got] == [(0, "values")]
        await runs.release(run_id)


@pytest.mark.parametrize("extra", [0, 1])
async def test_the_shared_log_is_bounded(postgres_url: str, extra: int) -> None:
    async with processes(postgres_url, 1) as (runs,):
        sizes = [10, 20, 30]
        runs.max_event_bytes = sum(sizes) - 1 + (1 - extra)  # exactly the limit, or one past
        thread, run_id = str(uuid.uuid4()), str(uuid.uuid4())
        await runs.admit(thread, run_id, resumable=False, check=lambda _: [])
        stream = runs.stream(run_id, thread, resumable=False)
        for size in sizes:
            stream.emit("custom", b"x" * size)
        stream.finish()
        got = await asyncio.wait_for(_follow_all(runs, run_id), 10)
        if extra == 0:
            assert got == stream.events
        else:
            assert got[:2] == stream.events[:2]
            assert got[2].name == "error" and got[2].id == 2
            assert orjson.loads(got[2].data)["error"] == "StreamTooLarge"
        assert len(stream.events) == 3  # the process's own stream is whole either way
        await runs.release(run_id)


async def test_a_stopped_process_lets_go_of_its_run(postgres_url: str) -> None:
    async with processes(postgres_url, 1) as (runs,):
        runs.recheck = 0.2
        thread, run_id = str(uuid.uuid4()), str(uuid.uuid4())
        await runs.admit(thread, run_id, resumable=False, check=lambda _: [])
        async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
            await conn.execute(
                "UPDATE deerflow_gateway_runs SET heartbeat_at = now() - interval '1 hour' "
                "WHERE run_id = %s",
                (run_id,),
            )
        assert await runs.active(thread) == []  # a new run may start
        got = await asyncio.wait_for(_follow_all(runs, run_id), 5)
        assert [e.name for e in got] == ["error"]
        assert orjson.loads(got[0].data)["error"] == "RunLost"


async def test_heartbeats_keep_a_long_run_holding_its_thread(postgres_url: str) -> None:
    async with processes(postgres_url, 1, heartbeat=0.1, stale_after=2.0) as (runs,):
        thread, run_id = str(uuid.uuid4()), str(uuid.uuid4())
        await runs.admit(thread, run_id, resumable=False, check=lambda _: [])
        for _ in range(12):  # until well past the stale age of its admission
            await asyncio.sleep(0.5)
            assert await runs.active(thread) == [run_id]
        await runs.release(run_id)
        assert await runs.active(thread) == []


async def test_cancel_reaches_the_process_running_the_run(postgres_url: str) -> None:
    async with processes(postgres_url, 2) as (one, two):
        cancelled = asyncio.Event()
        one.on_cancel = lambda run_id: cancelled.set()
        thread, run_id = str(uuid.uuid4()), str(uuid.uuid4())
        assert not await two.cancel(run_id)  # no such run
        await one.admit(thread, run_id, resumable=False, check=lambda _: [])
        assert await two.cancel(run_id)
        await asyncio.wait_for(cancelled.wait(), 5)
        await one.release(run_id)
        assert not await two.cancel(run_id)  # ended
