"""Two gateway processes share threads through one real PostgreSQL checkpointer.

A throwaway PostgreSQL server (Debian's package) runs on 127.0.0.1 for this module and is stopped
by its PID; each gateway is a real ``deerflow-knowledge serve`` process.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from deerflow.knowledge import find_citations, read_envelope
from deerflow.knowledge.providers.local import LocalProvider, sample_corpus_path
from tests.gateway_process import call, gateway_process
from tests.live.postgres_server import PostgresUnavailable, start

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    try:
        server = start()
    except PostgresUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield server.url
    finally:
        server.stop()


def test_two_gateways_share_threads(postgres_url: str, tmp_path: Path) -> None:
    index = tmp_path / "index.sqlite"
    LocalProvider(index).index(sample_corpus_path())
    with (
        gateway_process(index, postgres_url, tmp_path) as first,
        gateway_process(index, postgres_url, tmp_path) as second,
    ):
        thread_id = call(first, "api/threads", {})["thread_id"]
        events = call(
            first,
            f"api/threads/{thread_id}/runs/stream",
            {"input": {"messages": [{"type": "human", "content": "What is the trust boundary?"}]}},
        )
        assert events[-1][0] == "end" and "error" not in [kind for kind, _ in events]

        # The second process sees the thread and its evidence exactly as the first stored it.
        assert thread_id in [t["thread_id"] for t in call(second, "api/threads")]
        state = call(second, f"api/threads/{thread_id}/state")
        assert state == call(first, f"api/threads/{thread_id}/state")
        tool = next(m for m in state["values"]["messages"] if m["type"] == "tool")
        streamed = [data for kind, data in events if kind == "values"][-1]["messages"]
        streamed_tool = next(m for m in streamed if m["type"] == "tool")
        assert json.dumps(streamed_tool["artifact"], sort_keys=True) == json.dumps(
            tool["artifact"], sort_keys=True
        )
        sources = {s.id for s in read_envelope(tool["content"], tool["artifact"]).sources}
        answer = state["values"]["messages"][-1]["content"]
        assert sources and {c.source_id for c in find_citations(answer)} <= sources

        # A follow-up run on the second process continues the same thread.
        call(
            second,
            f"api/threads/{thread_id}/runs/stream",
            {"input": {"messages": [{"type": "human", "content": "How are citations verified?"}]}},
        )
        after = call(first, f"api/threads/{thread_id}/state")["values"]["messages"]
        assert [m["type"] for m in after].count("human") == 2
