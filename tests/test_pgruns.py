"""``pgruns`` against a real PostgreSQL: admission is atomic across connections, turns keep arrival
order, a run's events reach a follower on another connection (through NOTIFY, or the slow re-read
when a notification is lost), the shared log is bounded, and a stopped process's run lets go.

Each ``PgRuns`` here has its own connection pool and ``LISTEN`` connection, as two gateway
processes would. The PostgreSQL server is a throwaway one on 127.0.0.1, stopped by its PID.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import orjson
import psycopg
import pytest

from deerflow.knowledge.server.api._http import ApiError
from deerflow.knowledge.server.engine._manager import RunManager
from deerflow.knowledge.server.engine._records import Records
from deerflow.knowledge.server.engine._streaming import Event
from deerflow.knowledge.server.postgres._pgruns import PgRuns, open_pg_runs
from tests.runs_harness import HeldGraph, HookedPgRecords, plan

pytestmark = pytest.mark.postgres


@asynccontextmanager
async def processes(url: str, count: int, **options: Any) -> AsyncIterator[list[PgRuns]]:
    async with AsyncExitStack() as stack:
        options.setdefault("thread_records", False)  # no gateway store in these tests
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
            assert sum(o == [] for o in outcomes) == 1
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


# -- the run manager on PostgreSQL: two "processes" (each its own pools and LISTEN connection) -------


@asynccontextmanager
async def gateways(url: str, count: int, graph: HeldGraph) -> AsyncIterator[list[Any]]:
    """``count`` run managers on one database, as ``count`` gateway processes hold them."""
    from langgraph.store.postgres.aio import AsyncPostgresStore

    async with AsyncExitStack() as stack:
        made = []
        for _ in range(count):
            store = await stack.enter_async_context(AsyncPostgresStore.from_conn_string(url))
            await store.setup()
            shared = await stack.enter_async_context(open_pg_runs(url))
            records = HookedPgRecords(store, shared.pool)
            made.append((RunManager(graph, records, coordinator=shared), records))
        yield made


async def _settle(*managers: RunManager) -> None:
    for manager in managers:
        while pending := [t for t in manager.tasks.values() if not t.done()]:
            await asyncio.wait(pending)


async def test_an_interrupt_storm_across_processes_leaves_the_thread_usable(
    postgres_url: str,
) -> None:
    graph = HeldGraph()
    async with gateways(postgres_url, 2, graph) as [(one, records), (two, _)]:
        rng = random.Random(7)

        async def yields(*_: Any) -> None:
            for _ in range(rng.randrange(4)):
                await asyncio.sleep(0)

        graph.before_step = yields
        for storm in range(3):
            thread_id = str(uuid.uuid4())
            await records.new_thread(thread_id, {})
            starts = []
            for n in range(25):
                manager = (one, two)[n % 2]
                starts.append(asyncio.create_task(manager.start(plan(thread_id, n, "interrupt"))))
                await yields()
            outcomes = await asyncio.gather(*starts, return_exceptions=True)
            await _settle(one, two)
            assert [o for o in outcomes if isinstance(o, BaseException)] == [], storm
            for _, stream in outcomes:  # type: ignore[misc]
                await asyncio.wait_for(stream.done.wait(), 30)
            assert await one.coordinator.active(thread_id) == []  # type: ignore[union-attr]
            for manager in (one, two):  # a default (reject) run starts on either process
                _, stream = await manager.start(plan(thread_id, f"after {storm}"))
                await asyncio.wait_for(stream.done.wait(), 30)
                await _settle(manager)
            assert (await records.thread(thread_id))["status"] == "idle"  # type: ignore[index]


async def _left_by_a_killed_process(url: str, records: Records) -> tuple[str, list[str]]:
    """Rows and records as a process killed mid-run leaves them: a running run and a queued one
    whose heartbeat stopped (aged past the stale rule, as 30 s without a heartbeat would)."""
    thread_id, runs = str(uuid.uuid4()), [str(uuid.uuid4()), str(uuid.uuid4())]
    await records.new_thread(thread_id, {})
    await records.touch_thread(thread_id, status="busy")
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for run_id, status in zip(runs, ("running", "pending"), strict=True):
            await conn.execute(
                "INSERT INTO deerflow_gateway_runs (run_id, thread_id, heartbeat_at) "
                "VALUES (%s, %s, now() - interval '1 hour')",
                (run_id, thread_id),
            )
            await records.put_run(
                {"run_id": run_id, "thread_id": thread_id, "status": status, "created_at": "x"}
            )
        await conn.execute(
            "INSERT INTO deerflow_gateway_run_events VALUES (%s, 0, 'metadata', '{}')", (runs[0],)
        )
    return thread_id, runs


@pytest.mark.parametrize("noticed_by", ["a heartbeat", "an admission on the thread"])
async def test_a_killed_processs_runs_end_as_errors(postgres_url: str, noticed_by: str) -> None:
    graph = HeldGraph()
    async with gateways(postgres_url, 1, graph) as [(manager, records)]:
        thread_id, runs = await _left_by_a_killed_process(postgres_url, records)
        follower = asyncio.create_task(_follow_all(manager.coordinator, runs[0]))  # type: ignore[arg-type]
        if noticed_by == "a heartbeat":
            assert await manager.recover() == 2
        else:
            _, stream = await manager.start(plan(thread_id, "new", "enqueue"))
            await asyncio.wait_for(stream.done.wait(), 30)
            await _settle(manager)
        for run_id in runs:
            assert (await records.run(thread_id, run_id))["status"] == "error"  # type: ignore[index]
        got = await asyncio.wait_for(follower, 30)  # a join of the lost run ends, saying why
        assert [e.name for e in got] == ["metadata", "error"]
        assert orjson.loads(got[-1].data)["error"] == "RunLost"
        if noticed_by == "a heartbeat":
            assert (await records.thread(thread_id))["status"] == "idle"  # type: ignore[index]
        assert await manager.recover() == 0  # ended once


async def test_every_admitted_interrupt_stops_the_run_it_displaces(postgres_url: str) -> None:
    """Seeded storms of 25 ``interrupt`` runs at one thread, alternating two processes, a seeded
    number of event-loop steps apart. Each run's graph is held until the run admitted two after it
    (on its own process, so its admission cancels it there directly) is admitted: a run that lost
    the cancel of an interrupt on the way ends ``success`` then, with later interrupts admitted
    during its step. Counted over the storms."""
    graph = HeldGraph()
    rng = random.Random(9)

    async def yields(*_: Any) -> None:
        for _ in range(rng.randrange(8)):
            await asyncio.sleep(0)

    graph.before_step = yields
    async with gateways(postgres_url, 2, graph) as [(one, records), (two, _)]:
        missed = []
        for storm in range(12):
            thread_id = str(uuid.uuid4())
            await records.new_thread(thread_id, {})
            gates = [graph.hold((storm, n)) for n in range(25)]
            runs = []
            for n in range(25):
                manager = (one, two)[n % 2]
                record, stream = await manager.start(plan(thread_id, (storm, n), "interrupt"))
                runs.append((record["run_id"], stream))
                if n >= 2:
                    gates[n - 2].set()
                await yields()
            gates[23].set()  # displaced by the last run, on the other process: not counted
            for _, stream in runs[:-1]:
                await stream.done.wait()
            statuses = [(await records.run(thread_id, r))["status"] for r, _ in runs[:-1]]  # type: ignore[index]
            missed += [(storm, n, s) for n, s in enumerate(statuses[:23]) if s != "interrupted"]
            # The last run is ended by a cancel from the other process.
            last, stream = runs[-1]
            assert await two.coordinator.cancel(last)  # type: ignore[attr-defined]
            await stream.done.wait()
            assert (await records.run(thread_id, last))["status"] == "interrupted"  # type: ignore[index]
            await _settle(one, two)
        assert missed == [], f"{len({m[0] for m in missed})} of 12 storms missed an interrupt"
