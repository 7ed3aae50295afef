"""Thread and run records, kept in a LangGraph store next to the checkpoints.

LangGraph's checkpointer holds a thread's state; LangGraph Server also keeps a record per thread
(metadata, status, timestamps) and per run. They live in a LangGraph ``BaseStore`` on the same
database as the checkpoints (SQLite or PostgreSQL), so every gateway process on one database sees
the same threads and runs. ``Records`` filters, sorts and pages thread records here; on PostgreSQL
the wiring uses ``_pgthreads.PgRecords``, which does it in SQL and makes a run's status change one
``UPDATE`` of its thread's record.

A run's writes to its thread's record change the keys they name and never create a record: a
run ending after its thread was deleted cannot bring the thread back. A listing is one read of
the store, so a record changed while it is read is neither skipped nor listed twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any, Final

from langgraph.store.base import BaseStore

from deerflow.knowledge.server.engine._threadmeta import thread_with_state_time
from deerflow.knowledge.server.wire._wire import iso_now

__all__ = ["ACTIVE_RUN_STATUSES", "TERMINAL_RUN_STATUSES", "Records"]

ACTIVE_RUN_STATUSES: Final = frozenset({"pending", "running"})
TERMINAL_RUN_STATUSES: Final = frozenset({"error", "success", "timeout", "interrupted"})
_THREADS: Final = ("deerflow_gateway", "threads")
_RUNS: Final = ("deerflow_gateway", "runs")
#: A limit no listing reaches: a listing is one statement (one snapshot), never pages that a
#: write between them would shift.
_EVERY: Final = 2**62


def _runs_ns(thread_id: str) -> tuple[str, ...]:
    return ("deerflow_gateway", "runs", thread_id)


class Records:
    """Thread and run records in ``store``, searched in this process."""

    def __init__(self, store: BaseStore) -> None:
        self.store = store
        # Read-modify-writes of thread records in this process: a delete never lands between a
        # run's read of its thread and its write (which would write the thread back).
        self._lock = asyncio.Lock()

    async def thread(self, thread_id: str) -> dict[str, Any] | None:
        item = await self.store.aget(_THREADS, thread_id)
        return dict(item.value) if item is not None else None

    async def put_thread(self, record: dict[str, Any]) -> dict[str, Any]:
        async with self._lock:
            await self.store.aput(_THREADS, record["thread_id"], record, index=False)
        return record

    async def new_thread(self, thread_id: str, metadata: dict[str, Any]) -> dict[str, Any]:
        now = iso_now()
        return await self.put_thread(
            {
                "thread_id": thread_id,
                "created_at": now,
                "updated_at": now,
                "state_updated_at": now,
                "metadata": metadata,
                "status": "idle",
            }
        )

    async def touch_thread(
        self, thread_id: str, *, only_if: str | None = None, **changes: Any
    ) -> dict[str, Any] | None:
        """Set ``changes`` (and ``updated_at``) on an existing thread record, when its status is
        ``only_if`` (if given); None when there is no such record. Never creates one."""
        changes["updated_at"] = iso_now()
        async with self._lock:
            record = await self.thread(thread_id)
            if record is None or (only_if is not None and record.get("status") != only_if):
                return None
            record.update(changes)
            await self.store.aput(_THREADS, thread_id, record, index=False)
            return record

    async def delete_thread(self, thread_id: str) -> None:
        async with self._lock:
            for run in await self.runs(thread_id):
                await self.store.adelete(_runs_ns(thread_id), run["run_id"])
            await self.store.adelete(_THREADS, thread_id)

    async def threads(self) -> list[dict[str, Any]]:
        return await self._all(_THREADS)

    async def search(
        self,
        *,
        metadata: dict[str, Any] | None = None,
        status: str | None = None,
        ids: Sequence[str] | None = None,
        sort_by: str | None = None,
        sort_order: str | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        """The page of thread records matching every filter given, sorted by ``sort_by``
        (``updated_at`` by default; ties by thread id), newest first unless ``sort_order`` is
        ``asc``."""
        found = [r for r in await self.threads() if _matches(r, metadata, status, ids)]
        key = sort_by or "updated_at"
        found.sort(
            key=lambda r: (str(thread_with_state_time(r).get(key, "")), r["thread_id"]),
            reverse=(sort_order or "desc") == "desc",
        )
        return found[offset : offset + limit]

    async def count(
        self,
        *,
        metadata: dict[str, Any] | None = None,
        status: str | None = None,
        ids: Sequence[str] | None = None,
    ) -> int:
        return sum(1 for r in await self.threads() if _matches(r, metadata, status, ids))

    async def run(self, thread_id: str, run_id: str) -> dict[str, Any] | None:
        item = await self.store.aget(_runs_ns(thread_id), run_id)
        return dict(item.value) if item is not None else None

    async def put_run(self, record: dict[str, Any]) -> dict[str, Any]:
        await self.store.aput(_runs_ns(record["thread_id"]), record["run_id"], record, index=False)
        return record

    async def delete_run(self, thread_id: str, run_id: str) -> None:
        await self.store.adelete(_runs_ns(thread_id), run_id)

    async def runs(self, thread_id: str) -> list[dict[str, Any]]:
        runs = await self._all(_runs_ns(thread_id))
        return sorted(runs, key=lambda r: r["created_at"], reverse=True)

    async def active_runs(self, thread_id: str) -> list[dict[str, Any]]:
        # Filtered in the database: a thread's finished runs are never read to admit a new one.
        found = []
        for status in sorted(ACTIVE_RUN_STATUSES):
            found.extend(await self._all(_runs_ns(thread_id), {"status": status}))
        return found

    async def all_active_runs(self) -> list[dict[str, Any]]:
        """The records of runs in progress or queued, on every thread."""
        found: list[dict[str, Any]] = []
        for status in sorted(ACTIVE_RUN_STATUSES):
            items = await self.store.asearch(_RUNS, filter={"status": status}, limit=_EVERY)
            found.extend(
                dict(item.value)
                for item in items
                if len(item.namespace) == len(_RUNS) + 1 and tuple(item.namespace[:2]) == _RUNS
            )
        return found

    async def _all(
        self, namespace: tuple[str, ...], where: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        page = await self.store.asearch(namespace, filter=where, limit=_EVERY)
        return _exact(page, namespace)


def _matches(
    record: dict[str, Any],
    metadata: dict[str, Any] | None,
    status: str | None,
    ids: Sequence[str] | None,
) -> bool:
    if ids is not None and record["thread_id"] not in ids:
        return False
    if status is not None and record["status"] != status:
        return False
    found = record.get("metadata", {})
    return all(found.get(k) == v for k, v in (metadata or {}).items())


def _exact(items: Iterable[Any], namespace: tuple[str, ...]) -> list[dict[str, Any]]:
    # A namespace search is a prefix search; keep only this namespace's own items.
    return [dict(item.value) for item in items if tuple(item.namespace) == namespace]
