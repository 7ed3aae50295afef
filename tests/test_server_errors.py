"""The run engine's refusals are domain errors; ``http`` alone gives them their status.

``manager``, the coordinators and the error module know no HTTP (checked on their imports); each
error kind maps to one status in ``http.DOMAIN_STATUS``, and a refusal reaches a client as that
status with the error's message as its ``detail``.
"""

from __future__ import annotations

import ast
import socket
import uuid
from pathlib import Path

import pytest
from fastapi import HTTPException
from langgraph.store.memory import InMemoryStore

import deerflow.knowledge.server as server_package
from deerflow.knowledge.server.api._http import DOMAIN_STATUS, api_error
from deerflow.knowledge.server.engine._manager import RunManager
from deerflow.knowledge.server.engine._records import Records
from deerflow.knowledge.server.errors import (
    GatewayError,
    RunInAnotherProcess,
    ThreadBusy,
    ThreadNotFound,
)
from tests.runs_harness import HeldGraph, gateway_app, plan
from tests.test_server_runs_lifecycle import HUMAN, _left_by_a_killed_process

_SERVER = Path(server_package.__file__).parent
#: Modules of the run engine: none may import the HTTP layer or the web framework.
_ENGINE = (
    "engine/_manager.py",
    "engine/_coordination.py",
    "postgres/_pgruns.py",
    "postgres/_pgthreads.py",
    "engine/_records.py",
    "errors.py",
)


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("module", _ENGINE)
def test_the_run_engine_imports_no_http(module: str) -> None:
    imported = _imports(_SERVER / module)
    assert "deerflow.knowledge.server.api._http" not in imported
    assert not {m for m in imported if m.split(".")[0] in ("fastapi", "starlette")}


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (ThreadNotFound("t-1"), 404),
        (ThreadBusy("t-1", "r-1"), 409),
        (RunInAnotherProcess(), 409),
    ],
)
def test_each_refusal_has_its_status_and_keeps_its_message(
    error: GatewayError, status: int
) -> None:
    answer = api_error(error)
    assert (answer.status_code, answer.detail) == (status, str(error))
    assert not isinstance(error, HTTPException)


def test_every_error_kind_is_in_the_table() -> None:
    kinds = {ThreadNotFound, ThreadBusy, RunInAnotherProcess}
    assert set(DOMAIN_STATUS) == kinds
    assert all(issubclass(kind, GatewayError) for kind in kinds)


def test_a_kind_the_table_does_not_name_answers_by_its_nearest_named_parent() -> None:
    class Gone(ThreadNotFound):
        pass

    class Other(GatewayError):
        pass

    assert api_error(Gone("t-2")).status_code == 404
    assert api_error(Other("something else")).status_code == 409


async def test_the_manager_raises_domain_errors_not_http_ones() -> None:
    graph = HeldGraph()
    records = Records(InMemoryStore())
    manager = RunManager(graph, records)
    missing = str(uuid.uuid4())
    with pytest.raises(ThreadNotFound) as not_found:
        await manager.start(plan(missing, "x"))
    assert str(not_found.value) == f"Thread {missing} not found"
    thread_id = str(uuid.uuid4())
    await records.new_thread(thread_id, {})
    gate = graph.hold("first")
    record, stream = await manager.start(plan(thread_id, "first"))
    with pytest.raises(ThreadBusy) as busy:
        await manager.start(plan(thread_id, "second"))
    assert record["run_id"] in str(busy.value)
    assert "multitask_strategy 'reject'" in str(busy.value)
    gate.set()
    await stream.done.wait()


@pytest.mark.parametrize(
    ("strategy", "wanted"),
    [("reject", "is busy with run"), ("interrupt", "belongs to another gateway process")],
)
async def test_a_refusal_reaches_the_client_as_its_status_and_message(
    tmp_path: Path, strategy: str, wanted: str
) -> None:
    # A run of another live process (pid 1) holds the thread in the shared records.
    tid, running, queued = await _left_by_a_killed_process(
        tmp_path, {"host": socket.gethostname(), "pid": 1, "start": "init"}
    )
    async with gateway_app(tmp_path) as (client, _):
        answer = await client.post(
            f"/api/threads/{tid}/runs", json={"input": HUMAN, "multitask_strategy": strategy}
        )
    assert answer.status_code == 409
    body = answer.json()
    assert wanted in body["detail"] and body["error"] == body["detail"]
    if strategy == "reject":
        assert body["detail"] in {str(ThreadBusy(tid, run)) for run in (running, queued)}
