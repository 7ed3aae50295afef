"""The run manager (manager.py): finished runs kept in memory for replays, bounded by count and by
bytes; interrupt storms, deletes during a run and runs a killed process left, driven event by event
(tests/runs_harness.py) on real LangGraph stores."""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore

from deerflow.knowledge.server.engine._coordination import LocalRuns
from deerflow.knowledge.server.engine._manager import (
    FINISHED_RUN_BYTES_KEPT,
    FINISHED_RUNS_KEPT,
    RunManager,
    runs_to_forget,
)
from deerflow.knowledge.server.engine._records import TERMINAL_RUN_STATUSES, Records
from deerflow.knowledge.server.engine._streaming import RunStream
from tests.runs_harness import HeldGraph, HookedRecords, plan


def test_the_count_bound_drops_the_oldest() -> None:
    finished = [(f"r{i}", 1) for i in range(5)]
    assert runs_to_forget(finished, most=3, most_bytes=100) == ["r0", "r1"]
    assert runs_to_forget(finished, most=5, most_bytes=100) == []


def test_the_byte_bound_at_exactly_the_limit_and_one_past() -> None:
    finished = [("old", 10), ("mid", 10), ("new", 10)]
    assert runs_to_forget(finished, most=10, most_bytes=30) == []
    assert runs_to_forget(finished, most=10, most_bytes=29) == ["old"]


def test_the_newest_run_stays_whatever_its_size() -> None:
    assert runs_to_forget([("a", 5), ("huge", 10**9)], most=10, most_bytes=100) == ["a"]


@given(
    sizes=st.lists(st.integers(min_value=0, max_value=50), max_size=30),
    most=st.integers(min_value=1, max_value=30),
    most_bytes=st.integers(min_value=0, max_value=500),
)
def test_the_oldest_go_and_one_more_would_not_fit(
    sizes: list[int], most: int, most_bytes: int
) -> None:
    finished = [(f"r{i}", size) for i, size in enumerate(sizes)]
    dropped = runs_to_forget(finished, most=most, most_bytes=most_bytes)
    kept = finished[len(dropped) :]
    assert dropped == [run_id for run_id, _ in finished[: len(dropped)]]  # the oldest, in order
    assert len(kept) <= most
    if len(kept) > 1:
        assert sum(size for _, size in kept) <= most_bytes
    if dropped:  # keeping the next-oldest too would break a bound
        one_more = finished[len(dropped) - 1 :]
        assert len(one_more) > most or sum(size for _, size in one_more) > most_bytes


def test_a_manager_holds_finished_runs_within_its_byte_bound() -> None:
    manager = RunManager(None, None, finished_run_bytes_kept=2_500)  # type: ignore[arg-type]
    for n in range(5):
        stream = RunStream(f"run-{n}", "thread", resumable=False)
        stream.emit("values", b"x" * 1_000)
        stream.finish()
        manager.streams[stream.run_id] = stream
    running = RunStream("running", "thread", resumable=False)
    running.emit("values", b"y" * 10_000)
    manager.streams["running"] = running
    manager._forget_old()
    assert list(manager.streams) == ["run-3", "run-4", "running"]  # a running run is never dropped
    assert manager.streams["run-4"].size == 1_000


def test_the_defaults() -> None:
    manager = RunManager(None, None)  # type: ignore[arg-type]
    assert (manager.finished_runs_kept, manager.finished_run_bytes_kept) == (
        FINISHED_RUNS_KEPT,
        FINISHED_RUN_BYTES_KEPT,
    )


# -- interrupt storms: every run ends, its stream too, and the thread is usable after ---------------


async def _manager() -> tuple[RunManager, HeldGraph, HookedRecords, str]:
    graph = HeldGraph()
    records = HookedRecords(InMemoryStore())
    thread_id = str(uuid.uuid4())
    await records.new_thread(thread_id, {})
    return RunManager(graph, records), graph, records, thread_id


async def _settle(manager: RunManager) -> None:
    """Until every run task has returned (a task left done in ``tasks`` is for the test to find)."""
    while pending := [t for t in manager.tasks.values() if not t.done()]:
        await asyncio.wait(pending)


async def _usable(manager: RunManager, records: Records, thread_id: str) -> None:
    """The thread takes a default (``reject``) run, which succeeds, and reads idle after."""
    record, stream = await manager.start(plan(thread_id, "after the storm"))
    await stream.done.wait()
    assert (await records.run(thread_id, record["run_id"]))["status"] == "success"  # type: ignore[index]
    assert (await records.thread(thread_id))["status"] == "idle"  # type: ignore[index]


async def test_an_interrupt_while_the_run_it_stops_ends_is_no_500() -> None:
    manager, graph, records, thread_id = await _manager()
    gate = graph.hold("first")
    first, first_stream = await manager.start(plan(thread_id, "first"))
    first_task = manager.tasks[first["run_id"]]
    await graph.wait_started(1)

    async def end_the_first_run_during_admission(kind: str, value: Any) -> None:
        if kind == "active_runs" and not first_stream.done.is_set():
            gate.set()  # the run being interrupted finishes while the new one is admitted
            await first_stream.done.wait()
            await asyncio.wait([first_task])

    records.hook = end_the_first_run_during_admission
    second, stream = await manager.start(plan(thread_id, "second", "interrupt"))
    records.hook = None
    await stream.done.wait()
    assert (await records.run(thread_id, first["run_id"]))["status"] == "success"  # type: ignore[index]
    assert (await records.run(thread_id, second["run_id"]))["status"] == "success"  # type: ignore[index]
    await _usable(manager, records, thread_id)


async def test_interrupts_landing_in_a_runs_cleanup_still_end_its_stream() -> None:
    manager, _, records, thread_id = await _manager()
    cleanup = asyncio.Event()
    in_cleanup = asyncio.Event()
    first, first_stream = await manager.start(plan(thread_id, "first"))

    async def hold_the_end_of_the_first_run(kind: str, value: Any) -> None:
        ending = kind == "put_run" and value["status"] in TERMINAL_RUN_STATUSES
        if ending and value["run_id"] == first["run_id"]:
            in_cleanup.set()
            await cleanup.wait()

    records.hook = hold_the_end_of_the_first_run
    await in_cleanup.wait()  # the first run is recording its end
    # Two more interrupts: each cancels the first run while it records its end.
    others = [await manager.start(plan(thread_id, f"next {n}", "interrupt")) for n in range(2)]
    cleanup.set()
    await _settle(manager)
    records.hook = None
    assert first_stream.done.is_set()  # a join of the first run returns
    for record, stream in [(first, first_stream), *others]:
        assert stream.done.is_set()
        status = (await records.run(thread_id, record["run_id"]))["status"]  # type: ignore[index]
        assert status in TERMINAL_RUN_STATUSES
    await _usable(manager, records, thread_id)


@pytest.mark.parametrize("seed", range(4))
async def test_a_seeded_interrupt_storm_leaves_the_thread_usable(seed: int) -> None:
    """30 ``interrupt`` runs whose record writes, steps and arrivals interleave in an order a
    seeded generator picks (counted yields to the event loop, no clock)."""
    manager, graph, records, thread_id = await _manager()
    rng = random.Random(seed)

    async def yields(*_: Any) -> None:
        for _ in range(rng.randrange(6)):
            await asyncio.sleep(0)

    graph.before_step = yields
    records.hook = yields
    starts = []
    for n in range(30):
        starts.append(asyncio.create_task(manager.start(plan(thread_id, n, "interrupt"))))
        await yields()
    outcomes = await asyncio.gather(*starts, return_exceptions=True)
    await _settle(manager)
    records.hook = None
    assert [o for o in outcomes if isinstance(o, BaseException)] == []
    for record, stream in outcomes:  # type: ignore[misc]
        assert stream.done.is_set()
        status = (await records.run(thread_id, record["run_id"]))["status"]
        assert status in TERMINAL_RUN_STATUSES
    assert (await records.run(thread_id, outcomes[-1][0]["run_id"]))["status"] == "success"  # type: ignore[index]
    await _usable(manager, records, thread_id)


# -- a cancel lost on the way (asyncio.wait_for on 3.11, a library) still stops the run ------------


class LosesACancel:
    """A wait that returns, as if not cancelled, when it is cancelled in the step its event fires
    (as ``asyncio.wait_for`` waits on Python 3.11, CPython gh-86296)."""

    def __init__(self) -> None:
        self.waiting = asyncio.Event()
        self.go = asyncio.Event()

    async def wait(self) -> None:
        self.waiting.set()
        try:
            await self.go.wait()
        except asyncio.CancelledError:
            if not self.go.is_set():
                raise


class TurnLosingCancels(LocalRuns):
    """The in-process coordinator, with a wait for the run's turn that loses a cancel."""

    def __init__(self, records: Records, lose: LosesACancel) -> None:
        super().__init__(records)
        self.lose = lose

    async def wait_turn(self, thread_id: str, run_id: str) -> None:
        await self.lose.wait()


@pytest.mark.parametrize("where", ["waiting its turn", "recording that it runs"])
async def test_a_run_whose_cancel_is_lost_on_the_way_still_stops(where: str) -> None:
    graph, lose = HeldGraph(), LosesACancel()
    records = HookedRecords(InMemoryStore())
    if where == "waiting its turn":
        manager = RunManager(graph, records, coordinator=TurnLosingCancels(records, lose))
    else:
        manager = RunManager(graph, records)

        async def lose_it_in_the_record(kind: str, value: Any) -> None:
            if kind == "touch_thread" and not lose.go.is_set():
                await lose.wait()

        records.hook = lose_it_in_the_record
    thread_id = str(uuid.uuid4())
    await records.new_thread(thread_id, {})
    gate = graph.hold("run")
    try:
        record, stream = await manager.start(plan(thread_id, "run"))
        await lose.waiting.wait()
        lose.go.set()  # the wait ends ...
        assert manager.cancel(record["run_id"])  # ... in the step the run is cancelled
        started = asyncio.ensure_future(graph.wait_started(1))
        ended = asyncio.ensure_future(stream.done.wait())
        await asyncio.wait({started, ended}, return_when=asyncio.FIRST_COMPLETED)
        assert graph.started == []  # it did not go on to its graph ...
        await ended  # ... but ended, its thread free
        started.cancel()
    finally:
        gate.set()
        await _settle(manager)
    assert (await records.run(thread_id, record["run_id"]))["status"] == "interrupted"  # type: ignore[index]
    records.hook = None
    await _usable(manager, records, thread_id)
