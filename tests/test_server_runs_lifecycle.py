"""A thread's runs through the gateway app (real LangGraph graph, real SQLite files): a delete
during a run is final, and a gateway restarted after a crash frees the threads its runs held."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from deerflow.knowledge.server import open_store
from deerflow.knowledge.server._records import Records
from deerflow.knowledge.server._wire import iso_now
from tests.runs_harness import gateway_app

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
