"""Both run coordinators satisfy ``coordination.RunCoordinator`` and behave alike where they must.

The same suite runs two "processes" (two ``RunManager``\\ s, each with its own records object and
coordinator, on one storage) against the in-process coordinator (``LocalRuns``, on one
in-memory store) and the PostgreSQL one (``PgRuns``, on a throwaway cluster started by PID):
a run on a thread refuses a ``reject`` run from the other process, the thread is free once it
ends, a deleted thread admits no run anywhere, and each coordinator answers an ``interrupt``
across processes as it documents (PostgreSQL reaches the other process; alone, it cannot).
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from deerflow.knowledge.server.engine._coordination import (
    Coordination,
    LocalRuns,
    RunCoordinator,
    in_process_coordination,
    process_owner,
)
from deerflow.knowledge.server.engine._manager import RunManager
from deerflow.knowledge.server.engine._records import Records
from deerflow.knowledge.server.errors import RunInAnotherProcess, ThreadBusy, ThreadNotFound
from deerflow.knowledge.server.postgres._pgruns import PgRuns, open_pg_runs, pg_coordination
from deerflow.knowledge.server.postgres._pgthreads import PgRecords
from tests.runs_harness import HeldGraph, plan

KINDS = ["in-process", pytest.param("postgres", marks=pytest.mark.postgres)]


def _protocol_methods() -> list[str]:
    return sorted(
        name
        for name, value in vars(RunCoordinator).items()
        if not name.startswith("_") and callable(value)
    )


@pytest.mark.parametrize("implementation", [LocalRuns, PgRuns])
def test_each_coordinator_has_the_protocols_methods_with_its_signatures(
    implementation: type,
) -> None:
    methods = _protocol_methods()
    assert len(methods) == 13
    for name in methods:
        wanted = inspect.signature(getattr(RunCoordinator, name))
        found = inspect.signature(getattr(implementation, name))
        assert list(found.parameters) == list(wanted.parameters), name
        kinds = [p.kind for p in found.parameters.values()]
        assert kinds == [p.kind for p in wanted.parameters.values()], name
        assert inspect.iscoroutinefunction(getattr(implementation, name)) == (
            inspect.iscoroutinefunction(getattr(RunCoordinator, name))
        ), name


async def test_the_in_process_coordination_is_a_coordinator_on_plain_records() -> None:
    async with in_process_coordination(InMemoryStore()) as coordination:
        assert isinstance(coordination.runs, RunCoordinator)
        assert type(coordination.records) is Records


async def test_a_manager_without_a_coordinator_runs_alone_in_its_process() -> None:
    manager = RunManager(HeldGraph(), Records(InMemoryStore()))
    assert isinstance(manager.coordinator, LocalRuns)


@asynccontextmanager
async def _processes(kind: str, url: str | None, graph: HeldGraph) -> AsyncIterator[list[Any]]:
    """Two run managers on one storage, as two gateway processes hold it: (manager, records)."""
    async with AsyncExitStack() as stack:
        made: list[Coordination] = []
        if kind == "in-process":
            store = InMemoryStore()
            for _ in range(2):
                coordination = await stack.enter_async_context(in_process_coordination(store))
                made.append(coordination)
        else:
            from langgraph.store.postgres.aio import AsyncPostgresStore

            assert url is not None
            for _ in range(2):
                pg_store = await stack.enter_async_context(AsyncPostgresStore.from_conn_string(url))
                await pg_store.setup()
                made.append(await stack.enter_async_context(pg_coordination(url)(pg_store)))
        yield [(RunManager(graph, c.records, coordinator=c.runs), c.records) for c in made]


@pytest.fixture
def storage(request: pytest.FixtureRequest) -> tuple[str, str | None]:
    kind = request.param
    url = request.getfixturevalue("postgres_url") if kind == "postgres" else None
    return kind, url


async def _settle(*managers: RunManager) -> None:
    for manager in managers:
        while pending := [t for t in manager.tasks.values() if not t.done()]:
            await asyncio.wait(pending)


@pytest.mark.parametrize("storage", KINDS, indirect=True)
async def test_a_run_in_one_process_refuses_a_reject_run_in_the_other_until_it_ends(
    storage: tuple[str, str | None],
) -> None:
    graph = HeldGraph()
    async with _processes(*storage, graph) as [(one, records), (two, _)]:
        thread_id = str(uuid.uuid4())
        await records.new_thread(thread_id, {})
        gate = graph.hold("first")
        first, stream = await one.start(plan(thread_id, "first"))
        await graph.wait_started(1)
        assert await two.coordinator.active(thread_id) == [first["run_id"]]
        with pytest.raises(ThreadBusy, match=first["run_id"]):
            await two.start(plan(thread_id, "second"))
        gate.set()
        await asyncio.wait_for(stream.done.wait(), 30)
        await _settle(one)
        assert await two.coordinator.active(thread_id) == []
        record, second = await two.start(plan(thread_id, "second"))
        await asyncio.wait_for(second.done.wait(), 30)
        await _settle(two)
        assert (await records.run(thread_id, record["run_id"]))["status"] == "success"  # type: ignore[index]
        assert (await records.thread(thread_id))["status"] == "idle"  # type: ignore[index]


@pytest.mark.parametrize("storage", KINDS, indirect=True)
async def test_an_interrupt_across_processes_is_answered_as_the_coordinator_can(
    storage: tuple[str, str | None],
) -> None:
    kind = storage[0]
    graph = HeldGraph()
    async with _processes(*storage, graph) as [(one, records), (two, _)]:
        thread_id = str(uuid.uuid4())
        await records.new_thread(thread_id, {})
        graph.hold("first")  # never released: only a cancel ends it
        first, stream = await one.start(plan(thread_id, "first"))
        await graph.wait_started(1)
        if kind == "in-process":
            with pytest.raises(RunInAnotherProcess):
                await two.start(plan(thread_id, "second", "interrupt"))
            assert not stream.done.is_set()
            one.cancel(first["run_id"])
        else:
            _, second = await two.start(plan(thread_id, "second", "interrupt"))
            await asyncio.wait_for(second.done.wait(), 30)
        await asyncio.wait_for(stream.done.wait(), 30)
        await _settle(one, two)
        assert (await records.run(thread_id, first["run_id"]))["status"] == "interrupted"  # type: ignore[index]


@pytest.mark.parametrize("storage", KINDS, indirect=True)
async def test_a_thread_deleted_in_one_process_admits_no_run_in_either(
    storage: tuple[str, str | None],
) -> None:
    graph = HeldGraph()
    async with _processes(*storage, graph) as [(one, records), (two, _)]:
        thread_id = str(uuid.uuid4())
        await records.new_thread(thread_id, {})
        await one.delete_thread(thread_id, records.delete_thread)
        for manager in (one, two):
            with pytest.raises(ThreadNotFound, match=thread_id):
                await manager.start(plan(thread_id, "late"))
            assert await manager.coordinator.active(thread_id) == []
        with pytest.raises(ThreadNotFound):
            await two.start(plan(str(uuid.uuid4()), "never created"))


@pytest.mark.parametrize("storage", KINDS, indirect=True)
async def test_a_refused_admission_holds_nothing(storage: tuple[str, str | None]) -> None:
    graph = HeldGraph()
    async with _processes(*storage, graph) as [(one, records), _]:
        thread_id = str(uuid.uuid4())
        await records.new_thread(thread_id, {})
        run_id = str(uuid.uuid4())

        def refuse(active: list[str]) -> list[str]:
            raise ThreadBusy(thread_id, "another")

        with pytest.raises(ThreadBusy):
            await one.coordinator.admit(thread_id, run_id, resumable=False, check=refuse)
        assert await one.coordinator.active(thread_id) == []
        assert await one.coordinator.run(run_id) is None
        assert await one.coordinator.cancel(run_id) is False


async def test_the_in_process_coordinator_ends_a_dead_processs_run_once() -> None:
    records = Records(InMemoryStore())
    manager = RunManager(HeldGraph(), records)
    thread_id = str(uuid.uuid4())
    await records.new_thread(thread_id, {})
    dead = {**process_owner(), "start": "an earlier start of this pid"}
    await records.put_run(
        {
            "run_id": "left",
            "thread_id": thread_id,
            "status": "running",
            "created_at": "x",
            "updated_at": "2026-01-01T00:00:00+00:00",
            "owner": dead,
        }
    )
    await records.touch_thread(thread_id, status="busy")
    assert [r.run_id for r in await manager.coordinator.reap()] == ["left"]
    assert await manager.recover() == 1
    assert (await records.run(thread_id, "left"))["status"] == "error"  # type: ignore[index]
    assert (await records.thread(thread_id))["status"] == "idle"  # type: ignore[index]
    assert await manager.recover() == 0


@pytest.mark.postgres
async def test_the_postgres_coordination_searches_threads_in_sql(postgres_url: str) -> None:
    from langgraph.store.postgres.aio import AsyncPostgresStore

    async with AsyncPostgresStore.from_conn_string(postgres_url) as store:
        await store.setup()
        async with pg_coordination(postgres_url)(store) as coordination:
            assert isinstance(coordination.runs, PgRuns)
            assert isinstance(coordination.runs, RunCoordinator)
            assert isinstance(coordination.records, PgRecords)


@pytest.mark.postgres
async def test_pg_runs_opened_alone_is_a_coordinator(postgres_url: str) -> None:
    async with open_pg_runs(postgres_url, thread_records=False) as runs:
        assert isinstance(runs, RunCoordinator)


async def test_a_wait_for_a_notification_never_loses_a_cancel() -> None:
    """PgRuns' wait (for a turn, an idle thread, a run's events) cancelled in each of the event
    loop steps after its notification: it raises every time. ``asyncio.wait_for`` on Python 3.11
    returned in one of them instead (CPython gh-86296), and a run waiting its turn lost the cancel
    of an ``interrupt``."""
    from deerflow.knowledge.server.postgres._pgruns import _wait

    landed = 0
    for steps in range(6):
        wake = asyncio.Event()
        waiting = asyncio.create_task(_wait(wake, 60.0))
        await asyncio.sleep(0)  # it waits
        wake.set()
        for _ in range(steps):
            await asyncio.sleep(0)
        if waiting.cancel():  # the cancel lands before the wait has returned
            landed += 1
            outcome = (await asyncio.gather(waiting, return_exceptions=True))[0]
            assert isinstance(outcome, asyncio.CancelledError), steps
        else:
            await waiting
    assert landed >= 3
