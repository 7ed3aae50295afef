"""A thread's runs through the gateway app (real LangGraph graph, real SQLite files, or a real
PostgreSQL): a delete during a run is final, whatever the run's graph still saves after it was
stopped, and a gateway restarted after a crash frees the threads its runs held."""

from __future__ import annotations

import asyncio
import os
import random
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from deerflow.knowledge.server import open_store
from deerflow.knowledge.server.engine._records import Records
from deerflow.knowledge.server.wire._wire import iso_now
from tests.runs_harness import HeldWrites, gateway_app

HUMAN = {"messages": [{"role": "user", "content": "hello"}]}


async def _deleting(client: Any, thread_id: str) -> None:
    """Return once the app's delete of the thread has begun (its runs are being stopped)."""
    manager = client._transport.app.state.gateway.runs
    while thread_id not in manager._deleting:
        await asyncio.sleep(0)


async def test_a_delete_during_a_run_is_final(tmp_path: Path) -> None:
    async with gateway_app(tmp_path) as (client, writes):
        tid = (await client.post("/api/threads", json={})).json()["thread_id"]
        writes.held = True  # the run's checkpoint writes are in flight ...
        run = (await client.post(f"/api/threads/{tid}/runs", json={"input": HUMAN})).json()
        await writes.waiting.wait()
        deleting = asyncio.create_task(client.delete(f"/api/threads/{tid}"))
        await _deleting(client, tid)  # ... while the delete is served
        writes.release.set()
        assert (await deleting).status_code == 204
        writes.held = False
        # Whatever the run still wrote, the thread, its state and its runs stay gone.
        assert (await client.get(f"/api/threads/{tid}")).status_code == 404
        assert (await client.get(f"/api/threads/{tid}/state")).status_code == 404
        found = await client.post("/api/threads/search", json={"ids": [tid]})
        assert found.json() == []
        run_url = f"/api/threads/{tid}/runs/{run['run_id']}"
        assert (await client.get(run_url)).status_code == 404
    async with gateway_app(tmp_path) as (client, _):  # and after a restart
        assert (await client.get(f"/api/threads/{tid}")).status_code == 404
        config = {"configurable": {"thread_id": tid}}
        gw = client._transport.app.state.gateway  # type: ignore[attr-defined]
        assert await gw.saver.aget_tuple(config) is None  # no checkpoint came back


async def _checkpoints(gw: Any, thread_id: str) -> list[Any]:
    return [c async for c in gw.saver.alist({"configurable": {"thread_id": thread_id}})]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def saver(request: pytest.FixtureRequest) -> str | None:
    """The PostgreSQL database the gateway uses, or None: SQLite files."""
    return request.getfixturevalue("postgres_url") if request.param == "postgresql" else None


async def test_a_save_a_stopped_run_makes_after_its_delete_is_dropped(
    tmp_path: Path, saver: str | None
) -> None:
    async with gateway_app(tmp_path, postgres=saver) as (client, _):
        gw = client._transport.app.state.gateway
        # The save of the run's first step (after its input's), held before it reaches the saver
        # where LangGraph's save waits for the one before it: a run stopped while its loop waits
        # at its exit for that save leaves it going on by itself.
        save = HeldWrites(gw.saver)
        save.arm(2)
        tid = (await client.post("/api/threads", json={})).json()["thread_id"]
        await client.post(f"/api/threads/{tid}/runs", json={"input": HUMAN})
        await save.waiting.wait()
        assert (await client.delete(f"/api/threads/{tid}")).status_code == 204
        save.release.set()  # the save goes on after the delete ...
        await save.landed.wait()
        assert await _checkpoints(gw, tid) == []  # ... and writes nothing, nor does any after it
        assert gw.runs._writes.dropped >= 1
        # A thread created afterwards saves its runs as before.
        tid = (await client.post("/api/threads", json={})).json()["thread_id"]
        done = await client.post(f"/api/threads/{tid}/runs/wait", json={"input": HUMAN})
        assert done.status_code == 200, done.text
        assert len(await _checkpoints(gw, tid)) == 3  # input, start, the agent's step


async def _quiet(baseline: set[asyncio.Task[Any]]) -> None:
    """Return once every task started since ``baseline`` was taken has ended."""
    here = asyncio.current_task()
    while pending := {t for t in asyncio.all_tasks() - baseline if t is not here and not t.done()}:
        await asyncio.wait(pending)


async def test_deletes_at_seeded_points_of_runs_leave_no_checkpoint(
    tmp_path: Path, saver: str | None
) -> None:
    """Seeded rounds over where a delete finds a run's saves: at the first, second or third save,
    held in flight (inside the saver) or before it (not given to the saver yet)."""
    rng = random.Random(6)
    async with gateway_app(tmp_path, postgres=saver) as (client, in_flight):
        gw = client._transport.app.state.gateway
        before = HeldWrites(gw.saver)
        baseline = asyncio.all_tasks()
        left: list[tuple[int, bool]] = []
        for at, hold in [(rng.randrange(1, 4), rng.choice((before, in_flight))) for _ in range(24)]:
            hold.arm(at)
            tid = (await client.post("/api/threads", json={})).json()["thread_id"]
            await client.post(f"/api/threads/{tid}/runs", json={"input": HUMAN})
            await hold.waiting.wait()
            deleting = asyncio.create_task(client.delete(f"/api/threads/{tid}"))
            if hold is in_flight:
                await _deleting(client, tid)  # the delete waits for a save in flight
            else:
                await deleting  # ... and cannot see one the saver was not given yet
            hold.release.set()
            assert (await deleting).status_code == 204
            await _quiet(baseline)  # whatever the run still had going has ended
            left += [(at, hold is in_flight)] if await _checkpoints(gw, tid) else []
        assert left == []


async def test_a_run_cannot_start_on_a_thread_being_deleted(tmp_path: Path) -> None:
    async with gateway_app(tmp_path) as (client, writes):
        tid = (await client.post("/api/threads", json={})).json()["thread_id"]
        writes.held = True
        await client.post(f"/api/threads/{tid}/runs", json={"input": HUMAN})
        await writes.waiting.wait()
        deleting = asyncio.create_task(client.delete(f"/api/threads/{tid}"))
        await _deleting(client, tid)
        late = await client.post(
            f"/api/threads/{tid}/runs", json={"input": HUMAN, "multitask_strategy": "enqueue"}
        )
        writes.release.set()
        assert (await deleting).status_code == 204
        writes.held = False
        assert late.status_code == 404, late.text
        assert (await client.get(f"/api/threads/{tid}")).status_code == 404
        assert uuid.UUID(tid)


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


async def _left_by_a_killed_process(folder: Path, owner: dict[str, object]) -> tuple[str, str, str]:
    """Records as a gateway killed mid-run leaves them: a thread ``busy`` with a ``running`` run
    and a ``pending`` one queued behind it."""
    tid, running, queued = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    async with open_store(str(folder / "threads.sqlite")) as store:
        records = Records(store)
        await records.new_thread(tid, {})
        await records.touch_thread(tid, status="busy")
        for run_id, status in ((running, "running"), (queued, "pending")):
            now = iso_now()
            await records.put_run(
                {
                    "run_id": run_id,
                    "thread_id": tid,
                    "assistant_id": "agent",
                    "created_at": now,
                    "updated_at": now,
                    "status": status,
                    "metadata": {},
                    "multitask_strategy": "enqueue",
                    "kwargs": {},
                    "owner": owner,
                }
            )
    return tid, running, queued


@pytest.mark.parametrize("killed", ["dead pid", "own pid, earlier start"])
async def test_a_restarted_gateway_ends_the_runs_a_killed_one_left(
    tmp_path: Path, killed: str
) -> None:
    # As ``process_owner()`` names a process: this host, a pid, a mark of that process's start.
    pid = _dead_pid() if killed == "dead pid" else os.getpid()
    owner = {"host": socket.gethostname(), "pid": pid, "start": "an earlier start"}
    tid, running, queued = await _left_by_a_killed_process(tmp_path, owner)
    async with gateway_app(tmp_path) as (client, _):
        for run_id in (running, queued):
            got = (await client.get(f"/api/threads/{tid}/runs/{run_id}")).json()
            assert got["status"] == "error" and "owner" not in got
        assert (await client.get(f"/api/threads/{tid}")).json()["status"] == "idle"
        # The thread takes a default (reject) run at once, and a join of the lost run returns.
        joined = await client.get(f"/api/threads/{tid}/runs/{running}/join")
        assert joined.status_code == 200
        done = await client.post(f"/api/threads/{tid}/runs/wait", json={"input": HUMAN})
        assert done.status_code == 200, done.text
        assert (await client.delete(f"/api/threads/{tid}/runs/{queued}")).status_code == 204


async def test_a_run_of_a_live_process_is_left_alone(tmp_path: Path) -> None:
    tid, running, _ = await _left_by_a_killed_process(
        tmp_path, {"host": socket.gethostname(), "pid": 1, "start": "init"}
    )
    async with gateway_app(tmp_path) as (client, _):
        got = (await client.get(f"/api/threads/{tid}/runs/{running}")).json()
        assert got["status"] == "running"  # pid 1 lives: its run may still be going
        busy = await client.post(f"/api/threads/{tid}/runs", json={"input": HUMAN})
        assert busy.status_code == 409
