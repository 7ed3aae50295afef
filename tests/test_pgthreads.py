"""Thread search in SQL answers what the in-process search answers, over LangGraph's real
``AsyncPostgresStore`` on a throwaway PostgreSQL (127.0.0.1, stopped by its PID).

The same thread records go into the PostgreSQL store (searched by ``PgRecords``) and into an
in-memory store (searched in Python, as a single-process gateway does); for every generated search
(metadata filter, status, ids, sort, order, page) both give the same threads in the same order.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from contextlib import AsyncExitStack
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore
from langgraph.store.postgres.aio import AsyncPostgresStore
from psycopg_pool import AsyncConnectionPool

from deerflow.knowledge.server.api._schemas import ThreadSearch
from deerflow.knowledge.server.api._threads import _search
from deerflow.knowledge.server.engine._records import Records
from deerflow.knowledge.server.postgres._pgthreads import PgRecords
from tests.live.postgres_server import PostgresUnavailable, start

pytestmark = pytest.mark.postgres

STATUSES = ["idle", "busy", "interrupted", "error"]
# Values a JSON filter can compare exactly (no bools: Python says True == 1, JSON does not).
PALETTE: list[Any] = [None, 0, 1, -2, "a", "é", "", ["a"], ["a", "b"], {"x": 1}, {"x": 1, "y": 2}]
VALUES = st.sampled_from(PALETTE)
KEYS = st.sampled_from(["user", "topic", "n"])


def _record(n: int, metadata: dict[str, Any]) -> dict[str, Any]:
    stamp = f"2026-01-01T00:00:{n % 7:02d}+00:00"  # shared stamps: ties broken by thread id
    return {
        "thread_id": f"00000000-0000-4000-8000-{n:012d}",
        "created_at": stamp,
        "updated_at": f"2026-01-02T00:00:{(n * 5) % 11:02d}+00:00",
        "metadata": metadata,
        "status": STATUSES[n % 4],
    }


@pytest.fixture(scope="module")
def searchers() -> Iterator[tuple[asyncio.Runner, Records, Records, list[str]]]:
    try:
        server = start()
    except PostgresUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    runner = asyncio.Runner()
    stack = AsyncExitStack()
    try:

        async def open_both() -> tuple[Records, Records, list[str]]:
            store = await stack.enter_async_context(AsyncPostgresStore.from_conn_string(server.url))
            await store.setup()
            pool = await stack.enter_async_context(
                AsyncConnectionPool(server.url, kwargs={"autocommit": True}, open=False)
            )
            in_pg = PgRecords(store, pool)
            in_memory = Records(InMemoryStore())
            pick = random.Random(13)
            ids = []
            for n in range(60):
                keys = pick.sample(["user", "topic", "n"], pick.randint(0, 3))
                record = _record(n, {k: pick.choice(PALETTE) for k in keys})
                ids.append(record["thread_id"])
                await in_pg.put_thread(dict(record))
                await in_memory.put_thread(dict(record))
            await in_pg.put_run({"run_id": "r", "thread_id": ids[0], "created_at": "x"})
            return in_pg, in_memory, ids

        in_pg, in_memory, ids = runner.run(open_both())
        yield runner, in_pg, in_memory, ids
    finally:
        runner.run(stack.aclose())
        runner.close()
        server.stop()


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_sql_search_equals_the_in_process_search(
    searchers: tuple[asyncio.Runner, Records, Records, list[str]], data: st.DataObject
) -> None:
    runner, in_pg, in_memory, ids = searchers
    body = ThreadSearch(
        metadata=data.draw(st.none() | st.dictionaries(KEYS, VALUES, max_size=2)),
        status=data.draw(st.none() | st.sampled_from(STATUSES)),
        ids=data.draw(st.none() | st.lists(st.sampled_from(ids), max_size=10)),
        sort_by=data.draw(
            st.none() | st.sampled_from(["thread_id", "status", "created_at", "updated_at"])
        ),
        sort_order=data.draw(st.none() | st.sampled_from(["asc", "desc"])),
        limit=data.draw(st.integers(1, 70)),
        offset=data.draw(st.integers(0, 70)),
    )
    expected = runner.run(_search(SimpleNamespace(records=in_memory), body))  # type: ignore[arg-type]
    found = runner.run(_search(SimpleNamespace(records=in_pg), body))  # type: ignore[arg-type]
    assert [r["thread_id"] for r in found] == [r["thread_id"] for r in expected]
    assert found == expected
    counted = runner.run(
        in_pg.count(metadata=body.metadata, status=body.status, ids=body.ids)  # type: ignore[union-attr]
    )
    unpaged = body.model_copy(update={"limit": 1000, "offset": 0})
    assert counted == len(runner.run(_search(SimpleNamespace(records=in_memory), unpaged)))  # type: ignore[arg-type]


def test_a_filter_matching_every_thread_reads_only_one_page(
    searchers: tuple[asyncio.Runner, Records, Records, list[str]],
) -> None:
    runner, in_pg, _, ids = searchers
    found = runner.run(in_pg.search(limit=5, offset=2, sort_by="thread_id", sort_order="asc"))  # type: ignore[union-attr]
    assert [r["thread_id"] for r in found] == sorted(ids)[2:7]
    # Run records share the store but are never thread search results.
    assert runner.run(in_pg.count()) == len(ids)  # type: ignore[union-attr]
