"""The official Python ``langgraph-sdk`` against a real gateway process (SQLite), every operation.

The gateway is ``deerflow-knowledge serve`` on 127.0.0.1 with the local provider and the offline
responder; the client is LangChain's own, so paths, bodies, response shapes, status codes and SSE
event names are the ones LangGraph Server clients expect.
"""

from __future__ import annotations

import asyncio
import re
import select
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from deerflow.knowledge.providers.local import LocalProvider, sample_corpus_path
from tests.gated_upstream import GatedLightRAG, gated_lightrag
from tests.gateway_process import gateway_process

QUESTION = "How does a reader verify the evidence of a citation?"


def human(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("index") / "index.sqlite"
    LocalProvider(path).index(sample_corpus_path())
    return path


@pytest.fixture(scope="module")
def base(index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("gateway")
    with gateway_process(index, str(work / "threads.sqlite"), work) as url:
        yield url + "api"


@pytest.fixture
def client(base: str) -> LangGraphClient:
    return get_client(url=base)


@pytest.fixture(scope="module")
def gated_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, GatedLightRAG]]:
    """A second gateway whose knowledge searches wait at a LightRAG upstream the test gates: a
    run is provably in progress while its search is held, however fast runs are otherwise."""
    work = tmp_path_factory.mktemp("gated-gateway")
    with (
        gated_lightrag() as upstream,
        gateway_process(
            None,
            str(work / "threads.sqlite"),
            work,
            "--provider",
            "lightrag",
            "--base-url",
            upstream.url,
        ) as url,
    ):
        yield url + "api", upstream


@pytest.fixture
def gated(
    gated_gateway: tuple[str, GatedLightRAG],
) -> Iterator[tuple[LangGraphClient, GatedLightRAG]]:
    url, upstream = gated_gateway
    upstream.hold()
    try:
        yield get_client(url=url), upstream
    finally:
        upstream.release()


async def held(upstream: GatedLightRAG, count: int) -> list[str]:
    """The queries at the upstream once ``count`` searches are being held there."""
    return await asyncio.to_thread(upstream.wait_for_queries, count)


async def parts(
    client: LangGraphClient, thread_id: str | None, assistant: str = "agent", **kwargs: Any
) -> list[Any]:
    return [p async for p in client.runs.stream(thread_id, assistant, **kwargs)]


async def test_threads_create_get_patch_search_count_delete(client: LangGraphClient) -> None:
    tag = uuid.uuid4().hex
    wanted = str(uuid.uuid4())
    thread = await client.threads.create(thread_id=wanted, metadata={"tag": tag, "n": 1})
    assert thread["thread_id"] == wanted and thread["metadata"] == {"tag": tag, "n": 1}
    assert thread["status"] == "idle" and thread["created_at"] and thread["values"] is None
    with pytest.raises(ConflictError):
        await client.threads.create(thread_id=wanted)
    again = await client.threads.create(thread_id=wanted, if_exists="do_nothing")
    assert again["created_at"] == thread["created_at"]
    assert (await client.threads.get(wanted))["metadata"]["tag"] == tag
    patched = await client.threads.update(wanted, metadata={"n": 2})
    assert patched["metadata"] == {"tag": tag, "n": 2}
    others = [await client.threads.create(metadata={"tag": tag}) for _ in range(3)]
    found = await client.threads.search(metadata={"tag": tag}, limit=10)
    assert len(found) == 4
    newest_first = await client.threads.search(
        metadata={"tag": tag}, sort_by="created_at", sort_order="desc"
    )
    assert newest_first[0]["thread_id"] == others[-1]["thread_id"]
    page = await client.threads.search(
        metadata={"tag": tag}, sort_by="created_at", sort_order="asc", limit=2, offset=1
    )
    assert [t["thread_id"] for t in page] == [others[0]["thread_id"], others[1]["thread_id"]]
    assert await client.threads.count(metadata={"tag": tag}) == 4
    await client.threads.delete(wanted)
    with pytest.raises(NotFoundError):
        await client.threads.get(wanted)
    assert await client.threads.count(metadata={"tag": tag}) == 3


async def test_stream_mode_string_default_and_state_shape(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    stream = await parts(client, thread["thread_id"], input=human(QUESTION))
    events = [p.event for p in stream]
    assert events[0] == "metadata" and set(events[1:]) == {"values"}
    assert stream[0].data["run_id"]
    state = await client.threads.get_state(thread["thread_id"])
    assert [m["type"] for m in state["values"]["messages"]] == ["human", "ai", "tool", "ai"]
    assert state["values"] == stream[-1].data
    assert state["next"] == [] and state["tasks"] == []
    checkpoint = state["checkpoint"]
    assert checkpoint["thread_id"] == thread["thread_id"] and checkpoint["checkpoint_id"]
    assert state["parent_checkpoint"]["checkpoint_id"] != checkpoint["checkpoint_id"]
    assert state["created_at"] and state["metadata"]["step"] >= 1
    listed = await client.threads.get(thread["thread_id"])
    assert listed["values"] == state["values"]


async def test_stream_modes_event_names(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    stream = await parts(
        client,
        thread["thread_id"],
        input=human(QUESTION),
        stream_mode=["messages-tuple", "messages", "updates", "debug", "tools"],
    )
    names = {p.event for p in stream}
    tools = [p.data for p in stream if p.event == "tools"]
    assert [t["event"] for t in tools] == ["on_tool_start", "on_tool_end"]
    assert (
        tools[0]["toolCallId"] == tools[1]["toolCallId"] and tools[0]["name"] == "knowledge_search"
    )
    assert tools[1]["output"]["artifact"]["knowledge_sources"]
    assert {"messages", "messages/metadata", "messages/partial", "messages/complete"} <= names
    assert {"updates", "debug"} <= names and "values" not in names
    tuples = [p.data for p in stream if p.event == "messages"]
    assert all(len(t) == 2 and "langgraph_node" in t[1] for t in tuples)
    streamed = "".join(
        t[0]["content"]
        for t in tuples
        if t[0]["type"] == "AIMessageChunk" and t[1]["langgraph_node"] == "model"
    )
    final = (await client.threads.get_state(thread["thread_id"]))["values"]["messages"][-1]
    assert streamed.strip() == final["content"].strip()
    completes = [p.data[0] for p in stream if p.event == "messages/complete"]
    assert final["id"] in [m["id"] for m in completes]
    partials = [p.data[0] for p in stream if p.event == "messages/partial"]
    assert partials[-1]["content"] == final["content"]


async def test_unsupported_options_are_422(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    for options in (
        {"webhook": "http://example.invalid/hook"},
        {"after_seconds": 5},
        {"stream_mode": "events"},
        {"multitask_strategy": "rollback"},
        {"config": {"callbacks": []}},
    ):
        with pytest.raises(UnprocessableEntityError) as caught:
            await parts(client, tid, input=human("x"), **options)
        assert "not supported" in caught.value.response.json()["detail"]
    with pytest.raises(UnprocessableEntityError):
        await client.threads.search(values={"x": 1})
    with pytest.raises(NotFoundError):
        await parts(client, tid, "nope", input=human("x"))


async def test_the_official_client_runs_with_a_context(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    context = {"thinking_enabled": True, "mode": "pro", "thread_id": tid}
    values = await client.runs.wait(tid, "agent", input=human(QUESTION), context=context)
    assert isinstance(values, dict) and values["messages"][-1]["type"] == "ai"
    # Mirrored into configurable, hence into checkpoint metadata, as under LangGraph Server.
    metadata = (await client.threads.get_state(tid))["metadata"]
    assert metadata["thinking_enabled"] is True and metadata["mode"] == "pro"


async def test_wait_create_join_get_list_delete(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    values = await client.runs.wait(tid, "agent", input=human(QUESTION), metadata={"who": "me"})
    assert [m["type"] for m in values["messages"]] == ["human", "ai", "tool", "ai"]
    run = await client.runs.create(tid, "agent", input=human("How are citations verified?"))
    assert run["status"] in ("pending", "running") and run["thread_id"] == tid
    joined = await client.runs.join(tid, run["run_id"])
    assert len(joined["messages"]) == 8
    assert (await client.runs.get(tid, run["run_id"]))["status"] == "success"
    listed = await client.runs.list(tid)
    assert listed[0]["run_id"] == run["run_id"] and len(listed) == 2
    # The run's metadata merged as LangGraph Server merges it (assistant's, thread's, request's).
    assert listed[1]["metadata"] == {
        "created_by": "system",
        "graph_id": "agent",
        "assistant_id": listed[1]["assistant_id"],
        "who": "me",
    }
    await client.runs.delete(tid, run["run_id"])
    with pytest.raises(NotFoundError):
        await client.runs.get(tid, run["run_id"])


async def test_join_stream_replays_after_last_event_id(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    run = await client.runs.create(
        tid, "agent", input=human(QUESTION), stream_mode=["values"], stream_resumable=True
    )
    everything = [p async for p in client.runs.join_stream(tid, run["run_id"])]
    assert everything[0].event == "metadata" and everything[-1].event == "values"
    ids = [int(p.id) for p in everything]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    resumed = [
        p async for p in client.runs.join_stream(tid, run["run_id"], last_event_id=str(ids[1]))
    ]
    assert [p.id for p in resumed] == [str(i) for i in ids[2:]]
    assert resumed[-1].data == everything[-1].data


async def test_location_headers_resolve_against_the_api_url(base: str) -> None:
    # Both SDKs reconnect to `Location` and read the run id from `Content-Location`, resolving
    # them against their apiUrl: they are relative to the API root.
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        thread_id = (await http.post("/threads", json={})).json()["thread_id"]
        body = {"input": human(QUESTION), "stream_resumable": True}
        async with http.stream("POST", f"/threads/{thread_id}/runs/stream", json=body) as response:
            location = response.headers["location"]
            content_location = response.headers["content-location"]
            await response.aread()
        assert location == content_location + "/stream"
        assert location.startswith(f"/threads/{thread_id}/runs/")
        run = (await http.get(content_location)).json()
        assert run["thread_id"] == thread_id and run["status"] == "success"
        replay = await http.get(location, headers={"Last-Event-ID": "0"})
        assert replay.headers["content-type"].startswith("text/event-stream")
        assert "event: values" in replay.text and "id: 0\n" not in replay.text
        # A Last-Event-ID that names no event replays from the start instead of failing.
        for header in ("1" * 5_000, "abc"):
            again = await http.get(location, headers={"Last-Event-ID": header})
            assert again.status_code == 200 and "id: 0\n" in again.text


async def test_stateless_runs(client: LangGraphClient) -> None:
    before = await client.threads.count()
    stream = await parts(client, None, input=human(QUESTION), stream_mode="values")
    assert stream[-1].data["messages"][-1]["type"] == "ai"
    values = await client.runs.wait(None, "agent", input=human(QUESTION))
    assert values["messages"][-1]["type"] == "ai"
    await asyncio.sleep(0.2)
    assert await client.threads.count() == before  # their threads are deleted afterwards


async def test_checkpoint_fork_and_resume(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    await client.runs.wait(tid, "agent", input=human(QUESTION))
    first = await client.threads.get_state(tid)
    await client.runs.wait(tid, "agent", input=human("How are citations verified?"))
    history = await client.threads.get_history(tid, limit=100)
    assert history[0]["checkpoint"] == (await client.threads.get_state(tid))["checkpoint"]
    before = await client.threads.get_history(tid, limit=2, before=first["checkpoint"])
    assert before[0]["checkpoint"]["checkpoint_id"] == first["parent_checkpoint"]["checkpoint_id"]
    filtered = await client.threads.get_history(tid, limit=100, metadata={"source": "input"})
    assert filtered and all(s["metadata"]["source"] == "input" for s in filtered)
    at = await client.threads.get_state(tid, checkpoint_id=first["checkpoint"]["checkpoint_id"])
    assert at["values"] == first["values"]
    # Fork from the end of the first run: the second question is not in the new branch.
    await client.runs.wait(
        tid,
        "agent",
        input=human("What is the trust boundary?"),
        checkpoint_id=first["checkpoint"]["checkpoint_id"],
    )
    forked = (await client.threads.get_state(tid))["values"]["messages"]
    questions = [m["content"] for m in forked if m["type"] == "human"]
    assert questions == [QUESTION, "What is the trust boundary?"]
    with pytest.raises(NotFoundError):
        await client.threads.get_state(tid, checkpoint_id=str(uuid.uuid4()))


async def test_config_and_command(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    stream = await parts(client, tid, input=human(QUESTION), config={"recursion_limit": 1})
    error = [p.data for p in stream if p.event == "error"]
    assert error and error[0]["error"] == "GraphRecursionError"
    assert (await client.threads.get(tid))["status"] == "error"
    with pytest.raises(UnprocessableEntityError):
        await parts(client, tid, command={"goto": "no-such-node"})
    values = await client.runs.wait(
        tid, "agent", command={"update": human(QUESTION), "goto": "model"}
    )
    assert values["messages"][-1]["type"] == "ai"


async def test_if_not_exists(client: LangGraphClient) -> None:
    tid = str(uuid.uuid4())
    with pytest.raises(httpx.HTTPStatusError) as caught:
        await client.runs.wait(tid, "agent", input=human(QUESTION))
    assert caught.value.response.status_code == 404
    values = await client.runs.wait(tid, "agent", input=human(QUESTION), if_not_exists="create")
    assert values["messages"][-1]["type"] == "ai"
    assert (await client.threads.get(tid))["thread_id"] == tid


async def test_multitask_reject_is_409_and_enqueue_keeps_order(
    gated: tuple[LangGraphClient, GatedLightRAG],
) -> None:
    client, upstream = gated
    thread = await client.threads.create()
    tid = thread["thread_id"]
    questions = [f"question {i}" for i in range(30)]
    runs = [
        await client.runs.create(tid, "agent", input=human(q), multitask_strategy="enqueue")
        for q in questions
    ]
    # The first run is searching (held at the upstream) and 29 wait behind it: the thread is
    # busy, and "reject" (the default) refuses another.
    assert await held(upstream, 1) == questions[:1]
    with pytest.raises(ConflictError):
        await client.runs.create(tid, "agent", input=human("rejected"))
    assert upstream.queries == questions[:1]  # one run at a time: the others have not started
    upstream.release()
    await asyncio.gather(*(client.runs.join(tid, r["run_id"]) for r in runs))
    assert upstream.queries == questions  # searched in the order they were enqueued
    messages = (await client.threads.get_state(tid))["values"]["messages"]
    assert [m["content"] for m in messages if m["type"] == "human"] == questions
    # Every turn is complete: human, ai (tool call), tool, ai — nothing lost or interleaved.
    assert [m["type"] for m in messages] == ["human", "ai", "tool", "ai"] * 30
    assert {r["status"] for r in await client.runs.list(tid, limit=100)} == {"success"}


async def test_thirty_concurrent_enqueued_runs_lose_no_message(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    questions = [f"concurrent {i}" for i in range(30)]
    await asyncio.gather(
        *(
            client.runs.wait(tid, "agent", input=human(q), multitask_strategy="enqueue")
            for q in questions
        )
    )
    messages = (await client.threads.get_state(tid))["values"]["messages"]
    assert sorted(m["content"] for m in messages if m["type"] == "human") == sorted(questions)
    assert [m["type"] for m in messages] == ["human", "ai", "tool", "ai"] * 30


async def test_cancel_and_on_disconnect(gated: tuple[LangGraphClient, GatedLightRAG]) -> None:
    client, upstream = gated
    thread = await client.threads.create()
    tid = thread["thread_id"]
    queued = [
        await client.runs.create(tid, "agent", input=human(f"q{i}"), multitask_strategy="enqueue")
        for i in range(6)
    ]
    assert await held(upstream, 1) == ["q0"]  # q0 is searching; q1..q5 wait their turn
    last = queued[-1]["run_id"]
    await client.runs.cancel(tid, last, wait=True)  # still waiting its turn: it never runs
    assert (await client.runs.get(tid, last))["status"] == "interrupted"
    with pytest.raises(ConflictError):
        await client.runs.cancel(tid, last)
    upstream.release()
    await asyncio.gather(*(client.runs.join(tid, r["run_id"]) for r in queued[:-1]))
    questions = [
        m["content"]
        for m in (await client.threads.get_state(tid))["values"]["messages"]
        if m["type"] == "human"
    ]
    assert questions == [f"q{i}" for i in range(5)]
    assert upstream.queries == questions
    upstream.hold()
    async for part in client.runs.stream(
        tid, "agent", input=human(QUESTION), on_disconnect="cancel", stream_mode="messages-tuple"
    ):
        if part.event == "messages":
            break  # the run has started; it cannot finish while the upstream holds its search
    latest = (await client.runs.list(tid))[0]
    await client.runs.join(tid, latest["run_id"])  # returns once the disconnect has stopped it
    assert (await client.runs.get(tid, latest["run_id"]))["status"] == "interrupted"


async def test_assistants_info_ok(client: LangGraphClient, base: str) -> None:
    (assistant,) = await client.assistants.search()
    assert assistant["graph_id"] == "agent"
    assert await client.assistants.search(graph_id="other") == []
    assert (await client.assistants.get(assistant["assistant_id"]))["name"] == "agent"
    assert (await client.assistants.get("agent"))["assistant_id"] == assistant["assistant_id"]
    graph = await client.assistants.get_graph("agent")
    assert {n["id"] for n in graph["nodes"]} >= {"model", "tools"}
    schemas = await client.assistants.get_schemas("agent")
    assert "messages" in schemas["input_schema"]["properties"]
    with pytest.raises(NotFoundError):
        await client.assistants.get(str(uuid.uuid4()))
    async with httpx.AsyncClient(base_url=base) as http:
        assert (await http.get("/ok")).json() == {"ok": True}
        assert (await http.get("/info")).json()["provider"] == "local"
        missing = await http.post("/no/such/operation", json={})
        assert missing.status_code == 404 and "detail" in missing.json()


def _raw_post(
    base: str, path: str, head: dict[str, str], chunks: Iterator[bytes]
) -> tuple[int, int]:
    """POST over a plain socket, sending ``chunks`` until the server answers; (status, bytes sent)."""
    url = urlsplit(base)
    lines = [
        f"POST {url.path}{path} HTTP/1.1",
        f"Host: {url.netloc}",
        *(f"{k}: {v}" for k, v in head.items()),
    ]
    sent = 0
    with socket.create_connection((url.hostname, url.port), timeout=30) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        for chunk in chunks:
            if select.select([sock], [], [], 0)[0]:
                break
            try:
                sock.sendall(chunk)
            except OSError:
                break
            sent += len(chunk)
        status_line = sock.recv(65536).split(b"\r\n", 1)[0]
    return int(status_line.split()[1]), sent


def test_body_limit_enforced_while_reading(base: str) -> None:
    block = b"x" * 65536
    total = 200_000_000
    blocks = total // len(block)
    status, sent = _raw_post(
        base,
        "/threads",
        {"Content-Type": "application/json", "Content-Length": str(total)},
        (block for _ in range(blocks)),
    )
    assert status == 413 and sent < 20_000_000
    framed = b"%x\r\n" % len(block) + block + b"\r\n"
    status, sent = _raw_post(
        base,
        "/threads",
        {"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
        (framed for _ in range(blocks)),
    )
    assert status == 413 and sent < 20_000_000


def test_readme_python_client_snippet_runs(base: str, capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    (snippet,) = re.findall(r"^```python gateway\n(.*?)^```", readme, re.DOTALL | re.MULTILINE)
    assert "http://127.0.0.1:8000/api" in snippet
    code = snippet.replace("http://127.0.0.1:8000/api", base)
    exec(compile(code, "README.md gateway snippet", "exec"), {"__name__": "__readme__"})
    answer, title = capsys.readouterr().out.strip().splitlines()[-2:]
    assert "#knowledge-source-" in answer and title


async def test_multitask_interrupt_stops_the_runs_in_progress(
    gated: tuple[LangGraphClient, GatedLightRAG],
) -> None:
    client, upstream = gated
    thread = await client.threads.create()
    tid = thread["thread_id"]
    queued = [
        await client.runs.create(tid, "agent", input=human(f"q{i}"), multitask_strategy="enqueue")
        for i in range(30)
    ]
    assert await held(upstream, 1) == ["q0"]  # q0 is in progress, the rest wait their turn
    run = await client.runs.create(
        tid, "agent", input=human(QUESTION), multitask_strategy="interrupt"
    )
    # The interrupting run starts only once the runs before it have stopped: its search arrives.
    assert await held(upstream, 2) == ["q0", QUESTION]
    upstream.release()
    values = await client.runs.join(tid, run["run_id"])
    assert values["messages"][-1]["type"] == "ai"
    statuses = [(await client.runs.get(tid, r["run_id"]))["status"] for r in queued]
    assert statuses == ["interrupted"] * 30
    messages = (await client.threads.get_state(tid))["values"]["messages"]
    assert [m["content"] for m in messages if m["type"] == "human"][-1] == QUESTION
