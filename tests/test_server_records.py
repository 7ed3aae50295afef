"""Thread and run records (records.py) on real LangGraph stores: a listing is exact while records
change under it, and a run's write to its thread's record never brings back a deleted thread."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from deerflow.knowledge.server import open_store
from deerflow.knowledge.server.engine._records import Records

THREADS = 1_500  # past one page of the listing before (1,000)


class TouchingStore:
    """A real store whose every ``asearch`` is followed by a touch of one thread record (a run
    ending while a listing is read)."""

    def __init__(self, store: BaseStore, records: Records) -> None:
        self._store = store
        self._records = records
        self.searches = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def asearch(self, *args: Any, **kwargs: Any) -> Any:
        found = await self._store.asearch(*args, **kwargs)
        self.searches += 1
        await self._records.touch_thread("thread-00000", status="busy")
        return found


@asynccontextmanager
async def stores(kind: str, folder: Path) -> AsyncIterator[BaseStore]:
    if kind == "memory":
        yield InMemoryStore()
        return
    async with open_store(str(folder / "threads.sqlite")) as store:
        yield store


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_listing_is_exact_while_a_record_is_touched(kind: str, tmp_path: Path) -> None:
    async with stores(kind, tmp_path) as store:
        plain = Records(store)
        for n in range(THREADS):
            await plain.new_thread(f"thread-{n:05d}", {})
        listed = Records(TouchingStore(store, plain))  # type: ignore[arg-type]
        ids = [r["thread_id"] for r in await listed.threads()]
        assert len(ids) == THREADS and len(set(ids)) == THREADS


async def test_a_runs_write_never_recreates_a_deleted_thread() -> None:
    records = Records(InMemoryStore())
    await records.new_thread("t", {"keep": 1})
    await records.delete_thread("t")
    assert await records.touch_thread("t", status="idle") is None
    assert await records.thread("t") is None
    await records.new_thread("u", {})
    assert await records.touch_thread("u", status="idle", only_if="busy") is None
    assert (await records.thread("u"))["status"] == "idle"  # type: ignore[index]
