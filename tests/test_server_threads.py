"""Thread and run requests the gateway refuses with a 422 and a reason (never a 500), one thread
per UUID, and a bound on a thread's metadata: through the app, on real SQLite files."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from deerflow.knowledge.server.api._schemas import MAX_THREAD_METADATA_BYTES
from tests.runs_harness import gateway_app

HUMAN = {"messages": [{"role": "user", "content": "hello"}]}


async def _post_raw(client: httpx.AsyncClient, path: str, body: bytes) -> httpx.Response:
    return await client.post(path, content=body, headers={"Content-Type": "application/json"})


async def test_every_spelling_of_a_uuid_names_one_thread(tmp_path: Path) -> None:
    async with gateway_app(tmp_path) as (client, _):
        tid = str(uuid.uuid4())
        assert (await client.post("/api/threads", json={"thread_id": tid})).status_code == 200
        await client.post(f"/api/threads/{tid}/runs/wait", json={"input": HUMAN})
        spellings = [tid.upper(), "{" + tid + "}", "urn:uuid:" + tid, tid.replace("-", "")]
        for spelling in spellings:
            again = await client.post(
                "/api/threads", json={"thread_id": spelling, "if_exists": "do_nothing"}
            )
            assert again.json()["thread_id"] == tid, spelling
            state = await client.get(f"/api/threads/{spelling}/state")
            assert state.status_code == 200, spelling
            assert [m["type"] for m in state.json()["values"]["messages"]] == ["human", "ai"]
            refused = await client.post("/api/threads", json={"thread_id": spelling})
            assert refused.status_code == 409, spelling
        assert (await client.post("/api/threads/count", json={})).json() == 1


@pytest.mark.parametrize("extra", [0, 1])
async def test_thread_metadata_at_exactly_its_bound_and_one_byte_past(
    tmp_path: Path, extra: int
) -> None:
    async with gateway_app(tmp_path) as (client, _):
        tid = (await client.post("/api/threads", json={"metadata": {"a": ""}})).json()["thread_id"]
        # PATCHes under the request limit each, adding up: {"a":"…","b":"…"} at the bound.
        empty = len(orjson.dumps({"a": "", "b": ""}))
        chunk = (MAX_THREAD_METADATA_BYTES - empty) // 2
        first = await client.patch(f"/api/threads/{tid}", json={"metadata": {"a": "x" * chunk}})
        assert first.status_code == 200
        rest = MAX_THREAD_METADATA_BYTES - empty - chunk + extra
        last = await client.patch(f"/api/threads/{tid}", json={"metadata": {"b": "y" * rest}})
        if extra:
            assert last.status_code == 422 and "at most" in last.json()["detail"]
            kept = (await client.get(f"/api/threads/{tid}")).json()["metadata"]
            assert set(kept) == {"a"}  # the refused PATCH changed nothing
        else:
            assert last.status_code == 200
        created = await client.post(
            "/api/threads", json={"metadata": {"a": "x" * (MAX_THREAD_METADATA_BYTES + extra)}}
        )
        assert created.status_code == 422


async def test_reserved_configurable_keys_are_refused(tmp_path: Path) -> None:
    async with gateway_app(tmp_path) as (client, _):
        tid = (await client.post("/api/threads", json={})).json()["thread_id"]
        for key in ("__pregel_checkpointer", "__pregel_store", "__pregel_send", "__anything"):
            for path in (f"/api/threads/{tid}/runs/wait", f"/api/threads/{tid}/runs"):
                body = {"input": HUMAN, "config": {"configurable": {key: None}}}
                answer = await client.post(path, json=body)
                assert answer.status_code == 422 and key in answer.json()["detail"], key
        ok = {"input": HUMAN, "config": {"configurable": {"user_setting": 1}}}
        assert (await client.post(f"/api/threads/{tid}/runs/wait", json=ok)).status_code == 200
        runs = (await client.get(f"/api/threads/{tid}/runs")).json()
        assert [r["status"] for r in runs] == ["success"]  # nothing ran for the refused ones


async def test_subgraph_checkpoints_are_a_422(tmp_path: Path) -> None:
    async with gateway_app(tmp_path) as (client, _):
        tid = (await client.post("/api/threads", json={})).json()["thread_id"]
        await client.post(f"/api/threads/{tid}/runs/wait", json={"input": HUMAN})
        checkpoint = {"checkpoint_ns": "x"}
        answers = [
            await client.post(
                f"/api/threads/{tid}/state", json={"values": {}, "checkpoint": checkpoint}
            ),
            await client.post(
                f"/api/threads/{tid}/state/checkpoint", json={"checkpoint": checkpoint}
            ),
            await client.post(f"/api/threads/{tid}/history", json={"checkpoint": checkpoint}),
            await client.post(
                f"/api/threads/{tid}/runs/wait", json={"input": HUMAN, "checkpoint": checkpoint}
            ),
        ]
        for answer in answers:
            assert answer.status_code == 422 and "checkpoint_ns" in answer.json()["detail"], (
                answer.request.url
            )


LONE = b'"\\ud800"'


def _bodies() -> list[tuple[str, str, bytes]]:
    meta_value = b'{"metadata": {"k": ' + LONE + b"}}"
    meta_key = b'{"metadata": {' + LONE + b": 1}}"
    content = b'{"input": {"messages": [{"role": "user", "content": ' + LONE + b"}]}}"
    run_meta = b'{"input": {"messages": []}, "metadata": {"k": ' + LONE + b"}}"
    return [
        ("post", "/api/threads", meta_value),
        ("post", "/api/threads", meta_key),
        ("patch", "/api/threads/{tid}", meta_value),
        ("patch", "/api/threads/{tid}", meta_key),
        ("post", "/api/threads/{tid}/runs/wait", run_meta),
        ("post", "/api/threads/{tid}/runs", run_meta),
        ("post", "/api/threads/{tid}/runs/wait", content),
        ("post", "/api/runs/wait", content),
        ("post", "/api/threads/{tid}/state", b'{"values": {"messages": [' + LONE + b"]}}"),
    ]


async def test_a_lone_surrogate_is_a_422_everywhere(tmp_path: Path) -> None:
    async with gateway_app(tmp_path) as (client, _):
        tid = (await client.post("/api/threads", json={})).json()["thread_id"]
        for method, path, body in _bodies():
            answer: Any = await client.request(
                method.upper(),
                path.format(tid=tid),
                content=body,
                headers={"Content-Type": "application/json"},
            )
            assert answer.status_code == 422, (path, body, answer.text)
            assert "surrogate" in answer.json()["detail"], (path, answer.text)
        assert (await client.get(f"/api/threads/{tid}/runs")).json() == []
