"""Thread and run metadata as LangGraph Server keeps it, through the gateway's routes.

A run writes ``graph_id`` and ``assistant_id`` into the thread it creates and merges them into an
idle thread it starts on, so ``threads.search({"metadata": {"graph_id": "agent"}})`` (Agent Chat
UI's thread list) finds the threads; ``state_updated_at`` moves with the state, not with a
metadata patch; ``messages`` events carry the run's ids; ``runs/stream`` answers with
``Location``. On SQLite (in process) and PostgreSQL (a real server, marker ``postgres``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from deerflow.knowledge.providers.local import LocalProvider, sample_corpus_path
from deerflow.knowledge.server import build_config, create_app
from deerflow.knowledge.server.api._gateway import assistant_uuid
from deerflow.knowledge.server.engine._threadmeta import (
    MAX_GRAPH_METADATA_CHARS,
    graph_metadata,
    new_thread_metadata,
    run_metadata,
    started_thread_metadata,
    thread_with_state_time,
)

#: langgraph-api's id for graph ``agent``'s default assistant (read off ``langgraph dev``).
REFERENCE_ASSISTANT_ID = "fe096781-5601-53d2-b2f6-0d3403f7e9ca"
QUESTION = {"messages": [{"role": "user", "content": "How are citations verified?"}]}


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> LocalProvider:
    provider = LocalProvider(tmp_path_factory.mktemp("index") / "index.sqlite")
    provider.index(sample_corpus_path())
    return provider


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def client(
    request: pytest.FixtureRequest, provider: LocalProvider, tmp_path: Path
) -> Iterator[TestClient]:
    if request.param == "sqlite":
        checkpoint = str(tmp_path / "threads.sqlite")
    else:
        checkpoint = request.getfixturevalue("postgres_url")
    with TestClient(create_app(build_config(provider, checkpoint=checkpoint))) as c:
        yield c


def _events(text: str) -> list[tuple[str, Any]]:
    found = []
    for block in text.split("\n\n"):
        if block.strip():
            fields = dict(line.split(": ", 1) for line in block.splitlines())
            found.append((fields["event"], json.loads(fields["data"])))
    return found


def _wait(client: TestClient, thread_id: str, **body: Any) -> None:
    response = client.post(
        f"/api/threads/{thread_id}/runs/wait",
        json={"assistant_id": "agent", "input": QUESTION, **body},
    )
    assert response.status_code == 200, response.text


def test_the_assistant_id_is_langgraph_servers() -> None:
    assert assistant_uuid("agent") == REFERENCE_ASSISTANT_ID


def test_a_run_writes_graph_and_assistant_into_the_threads_metadata(client: TestClient) -> None:
    thread = client.post("/api/threads", json={"metadata": {"user": "me"}}).json()
    other = client.post("/api/threads", json={}).json()
    assert thread["metadata"] == {"user": "me"}
    _wait(client, thread["thread_id"])
    after = client.get(f"/api/threads/{thread['thread_id']}").json()
    assert after["metadata"] == {
        "user": "me",
        "graph_id": "agent",
        "assistant_id": REFERENCE_ASSISTANT_ID,
    }
    for query in ({"graph_id": "agent"}, {"assistant_id": REFERENCE_ASSISTANT_ID}):
        found = client.post("/api/threads/search", json={"metadata": query}).json()
        assert [t["thread_id"] for t in found] == [thread["thread_id"]]
        count = client.post("/api/threads/count", json={"metadata": query}).json()
        assert count == 1
    # A thread no run touched keeps its metadata.
    assert client.get(f"/api/threads/{other['thread_id']}").json()["metadata"] == {}


def test_a_later_run_merges_them_back_after_a_patch(client: TestClient) -> None:
    thread_id = client.post("/api/threads", json={}).json()["thread_id"]
    _wait(client, thread_id)
    patched = client.patch(
        f"/api/threads/{thread_id}", json={"metadata": {"graph_id": "other", "tag": 1}}
    ).json()
    assert patched["metadata"]["graph_id"] == "other"
    _wait(client, thread_id, metadata={"graph_id": "ignored"})
    metadata = client.get(f"/api/threads/{thread_id}").json()["metadata"]
    assert metadata == {"graph_id": "agent", "assistant_id": REFERENCE_ASSISTANT_ID, "tag": 1}


def test_a_thread_a_run_creates_carries_the_runs_metadata(client: TestClient) -> None:
    thread_id = str(uuid.uuid4())
    _wait(
        client,
        thread_id,
        if_not_exists="create",
        metadata={"source": "request"},
        config={"metadata": {"via": "config"}},
    )
    metadata = client.get(f"/api/threads/{thread_id}").json()["metadata"]
    assert metadata == {
        "graph_id": "agent",
        "assistant_id": REFERENCE_ASSISTANT_ID,
        "via": "config",
        "source": "request",
    }
    run = client.get(f"/api/threads/{thread_id}/runs").json()[0]
    assert run["metadata"]["assistant_id"] == REFERENCE_ASSISTANT_ID
    assert run["metadata"]["source"] == "request"


def test_state_updated_at_moves_with_the_state_not_with_a_patch(client: TestClient) -> None:
    created = client.post("/api/threads", json={}).json()
    assert created["state_updated_at"] == created["created_at"]
    thread_id = created["thread_id"]
    client.patch(f"/api/threads/{thread_id}", json={"metadata": {"a": 1}})
    patched = client.get(f"/api/threads/{thread_id}").json()
    assert patched["state_updated_at"] == created["state_updated_at"]
    assert patched["updated_at"] > created["updated_at"]
    _wait(client, thread_id)
    ran = client.get(f"/api/threads/{thread_id}").json()
    assert ran["state_updated_at"] > patched["state_updated_at"]
    found = client.post(
        "/api/threads/search", json={"sort_by": "state_updated_at", "sort_order": "desc"}
    ).json()
    assert found[0]["thread_id"] == thread_id
    assert all("state_updated_at" in t for t in found)


def test_messages_events_carry_the_runs_metadata_and_stream_answers_with_location(
    client: TestClient,
) -> None:
    thread_id = client.post("/api/threads", json={"metadata": {"user": "me"}}).json()["thread_id"]
    response = client.post(
        f"/api/threads/{thread_id}/runs/stream",
        json={"assistant_id": "agent", "input": QUESTION, "stream_mode": "messages-tuple"},
    )
    run_id = response.headers["content-location"].rsplit("/", 1)[1]
    assert response.headers["location"] == f"/threads/{thread_id}/runs/{run_id}/stream"
    events = _events(response.text)
    metadata = [data[1] for name, data in events if name == "messages"]
    assert metadata
    for meta in metadata:
        assert meta["run_id"] == run_id
        assert meta["thread_id"] == thread_id
        assert meta["graph_id"] == "agent"
        assert meta["assistant_id"] == REFERENCE_ASSISTANT_ID
        assert meta["user"] == "me"
        assert meta["run_attempt"] == 1
        assert isinstance(meta["langgraph_version"], str)


def test_the_pure_rules() -> None:
    assert new_thread_metadata(
        graph_id="g", assistant_id="a", config_metadata={"x": 1}, request_metadata={"x": 2}
    ) == {"graph_id": "g", "assistant_id": "a", "x": 2}
    assert started_thread_metadata({"u": 1}, status="busy", graph_id="g", assistant_id="a") is None
    same = {"graph_id": "g", "assistant_id": "a"}
    assert started_thread_metadata(same, status="idle", graph_id="g", assistant_id="a") is None
    assert started_thread_metadata({}, status="error", graph_id="g", assistant_id="a") == same
    spoofed = run_metadata(
        thread_metadata={},
        config_metadata={},
        request_metadata={"assistant_id": "x"},
        assistant_id="a",
    )
    assert spoofed == {"created_by": "system", "assistant_id": "a"}
    assert thread_with_state_time({"updated_at": "t"})["state_updated_at"] == "t"
    assert (
        thread_with_state_time({"updated_at": "t", "state_updated_at": "s"})["state_updated_at"]
        == "s"
    )


def test_graph_metadata_up_to_its_limit_and_not_past_it() -> None:
    # {"assistant_id":"a","k":""} is 27 code points; the value adds its own.
    def sized(n: int) -> dict[str, str]:
        return {"assistant_id": "a", "k": "é" * (n - 27)}

    at = graph_metadata(sized(MAX_GRAPH_METADATA_CHARS), thread_id="t", graph_id="g")
    past = graph_metadata(sized(MAX_GRAPH_METADATA_CHARS + 1), thread_id="t", graph_id="g")
    assert at["k"] == sized(MAX_GRAPH_METADATA_CHARS)["k"]
    assert "k" not in past
    for found in (at, past):
        assert (found["assistant_id"], found["graph_id"], found["thread_id"]) == ("a", "g", "t")
        assert found["run_attempt"] == 1


def test_a_large_thread_metadata_is_not_copied_into_every_event(client: TestClient) -> None:
    big = {"notes": "x" * 100_000}
    thread_id = client.post("/api/threads", json={"metadata": big}).json()["thread_id"]
    response = client.post(
        f"/api/threads/{thread_id}/runs/stream",
        json={"assistant_id": "agent", "input": QUESTION, "stream_mode": "messages-tuple"},
    )
    metadata = [data[1] for name, data in _events(response.text) if name == "messages"]
    assert metadata and all("notes" not in m and m["thread_id"] == thread_id for m in metadata)
    assert len(response.content) < 100_000 * 2
