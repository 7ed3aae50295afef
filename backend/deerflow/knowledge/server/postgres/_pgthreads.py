"""Thread search and count (``_records.Records.search``, ``count``) in SQL on PostgreSQL.

The records are items of LangGraph's ``AsyncPostgresStore`` (table ``store``: ``prefix`` is the
namespace joined by dots, ``key`` the thread id, ``value`` the record as ``jsonb``). Reading them
all to filter, sort and page in Python costs every thread per search; here the filter (metadata,
status, ids), the order and the page are one query on the store's primary key. The metadata
filter means what it means in a single process: each given key equals the given JSON value (a
missing key equals ``null``). ``tests/test_pgthreads.py`` runs it against the real store.

A run's change to its thread's record (its status) is one ``UPDATE`` that merges the changed keys:
it never recreates a deleted record, nor writes back metadata another process just changed.

Tested by ``tests/test_pgthreads.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import orjson
from langgraph.store.base import BaseStore

from deerflow.knowledge.server.engine._records import Records
from deerflow.knowledge.server.wire._wire import iso_now

__all__ = ["THREADS_PREFIX", "PgRecords"]

#: The store prefix of the thread records (``Records``' namespace, joined as the store joins it).
THREADS_PREFIX: Final = "deerflow_gateway.threads"
_SORTABLE: Final = frozenset(
    {"thread_id", "status", "created_at", "updated_at", "state_updated_at"}
)


class PgRecords(Records):
    """Thread and run records in LangGraph's PostgreSQL store (``store``), with thread search and
    a run's change to its thread's record done in SQL on ``pool``."""

    def __init__(self, store: BaseStore, pool: Any) -> None:
        super().__init__(store)
        self.pool = pool

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
        where, params = _where(metadata, status, ids)
        key = sort_by or "updated_at"
        if key not in _SORTABLE:
            raise ValueError(f"cannot sort threads by {key!r}")
        direction = "ASC" if sort_order == "asc" else "DESC"
        params.update(sort=key, limit=limit, offset=offset)
        query = (
            f"SELECT value FROM store WHERE {where} "
            # Code point order, as Python sorts (and whatever the database's collation).
            # A record older than ``state_updated_at`` sorts by its ``updated_at``, as it reads.
            "ORDER BY coalesce(value->>%(sort)s, value->>'updated_at') "
            f'COLLATE "C" {direction}, key COLLATE "C" {direction} '
            "LIMIT %(limit)s OFFSET %(offset)s"
        )
        async with self.pool.connection() as conn:
            rows = await (await conn.execute(query, params)).fetchall()
        return [dict(row[0]) for row in rows]

    async def touch_thread(
        self, thread_id: str, *, only_if: str | None = None, **changes: Any
    ) -> dict[str, Any] | None:
        """Merge ``changes`` (and ``updated_at``) into the thread's record, when its status is
        ``only_if`` (if given); the record after, or None when there is none."""
        changes["updated_at"] = iso_now()
        query = (
            "UPDATE store SET value = value || %(changes)s::jsonb, updated_at = now() "
            "WHERE prefix = %(prefix)s AND key = %(key)s"
            + ("" if only_if is None else " AND value->>'status' = %(only_if)s")
            + " RETURNING value"
        )
        params = {
            "changes": orjson.dumps(changes).decode(),
            "prefix": THREADS_PREFIX,
            "key": thread_id,
            "only_if": only_if,
        }
        async with self.pool.connection() as conn:
            row = await (await conn.execute(query, params)).fetchone()
        return None if row is None else dict(row[0])

    async def count(
        self,
        *,
        metadata: dict[str, Any] | None = None,
        status: str | None = None,
        ids: Sequence[str] | None = None,
    ) -> int:
        where, params = _where(metadata, status, ids)
        async with self.pool.connection() as conn:
            row = await (
                await conn.execute(f"SELECT count(*) FROM store WHERE {where}", params)
            ).fetchone()
        return int(row[0]) if row else 0


def _where(
    metadata: dict[str, Any] | None, status: str | None, ids: Sequence[str] | None
) -> tuple[str, dict[str, Any]]:
    clauses = ["prefix = %(prefix)s"]
    params: dict[str, Any] = {"prefix": THREADS_PREFIX}
    if status is not None:
        clauses.append("value->>'status' = %(status)s")
        params["status"] = status
    if ids is not None:
        clauses.append("key = ANY(%(ids)s)")
        params["ids"] = list(ids)
    for n, (name, wanted) in enumerate(sorted((metadata or {}).items())):
        clauses.append(f"coalesce(value->'metadata'->%(k{n})s, 'null') = %(v{n})s::jsonb")
        params[f"k{n}"] = name
        params[f"v{n}"] = orjson.dumps(wanted).decode()
    return " AND ".join(clauses), params
