"""Runs shared by several gateway processes on one PostgreSQL, through PostgreSQL itself.

Three things a single process does in memory need the database once several processes serve one
set of threads:

* **Admission.** "One run per thread" is decided in one transaction that holds a transaction-level
  advisory lock on the thread (``pg_advisory_xact_lock``): it reads the thread's active runs and
  inserts the new one, so two processes racing to start a run on one thread give exactly one run
  and one 409 (``reject``), or two runs in a queue (``enqueue``).
* **Turns.** Every run row gets a position from an identity column at admission; a run starts only
  when no earlier run of its thread is still active, in whichever process, so ``enqueue`` keeps
  arrival order across processes. A process heartbeats its runs; a run whose heartbeat stopped (its
  process died) no longer holds its thread.
* **Events.** The running process writes each SSE event of a run to a table (in batches, one
  statement each) and sends ``NOTIFY`` with the run's id — ids only: a payload is limited to
  8000 bytes. A ``join_stream`` in another process replays the table after ``Last-Event-ID`` and
  follows the notifications (with a slow re-read, so a lost notification costs seconds, not the
  rest of the stream). A run's events are kept while it runs and ``EVENT_RETENTION_SECONDS`` after,
  up to ``MAX_SHARED_RUN_EVENT_BYTES`` per run.

``cancel`` (and ``multitask_strategy: interrupt``) of a run in another process is a ``NOTIFY`` its
process acts on. A run whose process stopped is ended by whichever process notices first (with
every heartbeat, and when its thread admits a run): its log ends with an ``error`` event
(``RunLost``) and the gateway records the run as failed. Admission also requires the thread's
record, and a delete removes that record under the same lock before it cancels the thread's
runs, so no run starts on a thread being deleted. ``PgRuns`` is the PostgreSQL
``_coordination.RunCoordinator``; gateways on SQLite or in memory never open one, and psycopg is
imported only when one is opened. (One module past 500 lines: admission, turns, heartbeats and
the event log share the two tables, their locks and the notification channel.)

Tested by ``tests/test_pgruns.py`` and the PostgreSQL runs of
``tests/test_server_coordination.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final

from deerflow.knowledge.server.engine._coordination import Coordination, LostRun, SharedRun
from deerflow.knowledge.server.engine._streaming import (
    ALWAYS_SENT,
    Event,
    RunStream,
    event_mode,
    sse_frame,
)
from deerflow.knowledge.server.errors import ThreadNotFound
from deerflow.knowledge.server.wire._wire import dumps

__all__ = [
    "CHANNEL",
    "EVENT_RETENTION_SECONDS",
    "HEARTBEAT_SECONDS",
    "MAX_SHARED_RUN_EVENT_BYTES",
    "RECHECK_SECONDS",
    "STALE_AFTER_SECONDS",
    "LostRun",
    "PgRuns",
    "PublishedRunStream",
    "SharedRun",
    "open_pg_runs",
    "pg_coordination",
]

#: The one ``LISTEN`` channel; payloads are ``e:<run_id>`` (new events), ``t:<thread_id>`` (a
#: turn freed), ``c:<run_id>`` (cancel).
CHANNEL: Final = "deerflow_gateway"
#: How often a process renews the heartbeat of its runs.
HEARTBEAT_SECONDS: Final = 5.0
#: A run whose heartbeat is older than this belongs to a process that stopped.
STALE_AFTER_SECONDS: Final = 30.0
#: How long a waiting join or turn sleeps before reading the tables again without a notification.
RECHECK_SECONDS: Final = 5.0
#: How long a finished run's events stay readable (``join_stream`` after the end, reconnects).
EVENT_RETENTION_SECONDS: Final = 600.0
#: Event bytes kept per run; past it the shared log ends with an ``error`` event saying so.
MAX_SHARED_RUN_EVENT_BYTES: Final = 32 * 1024 * 1024
_PAGE: Final = 500
_POOL_MIN: Final = 4  # ready for a burst: a new PostgreSQL connection costs a process fork
_POOL_MAX: Final = 10
_WRITE_ATTEMPTS: Final = 5
_log = logging.getLogger(__name__)

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS deerflow_gateway_runs (
    run_id text PRIMARY KEY,
    thread_id text NOT NULL,
    position bigint GENERATED ALWAYS AS IDENTITY,
    resumable boolean NOT NULL DEFAULT false,
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    stream_done boolean NOT NULL DEFAULT false,
    ended_at timestamptz
);
CREATE INDEX IF NOT EXISTS deerflow_gateway_runs_active
    ON deerflow_gateway_runs (thread_id, position) WHERE ended_at IS NULL;
CREATE TABLE IF NOT EXISTS deerflow_gateway_run_events (
    run_id text NOT NULL REFERENCES deerflow_gateway_runs (run_id) ON DELETE CASCADE,
    seq integer NOT NULL,
    name text NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""
_WRITE: Final = """
WITH added AS (
    INSERT INTO deerflow_gateway_run_events (run_id, seq, name, data)
    SELECT %(run)s, seq, name, data
    FROM unnest(%(seqs)s::integer[], %(names)s::text[], %(datas)s::bytea[]) AS e (seq, name, data)
    ON CONFLICT DO NOTHING
), ended AS (
    UPDATE deerflow_gateway_runs SET stream_done = true WHERE run_id = %(run)s AND %(done)s
)
SELECT pg_notify(%(channel)s, %(payload)s)
"""
_RELEASE: Final = """
WITH ended AS (
    UPDATE deerflow_gateway_runs SET ended_at = now() WHERE run_id = %(run)s
), expired AS (
    DELETE FROM deerflow_gateway_runs
    WHERE coalesce(ended_at, heartbeat_at) < now() - make_interval(secs => %(keep)s)
)
SELECT pg_notify(%(channel)s, %(payload)s)
"""
_LIVE: Final = "ended_at IS NULL AND heartbeat_at > now() - make_interval(secs => %(stale)s)"
#: Ends the runs whose process stopped (of one thread, or all): the run no longer holds its
#: thread, and its log ends with a ``RunLost`` error after its last event. One statement: two
#: processes noticing the same lost run end it once.
_REAP: Final = """
WITH lost AS (
    UPDATE deerflow_gateway_runs SET ended_at = now(), stream_done = true
    WHERE ended_at IS NULL AND heartbeat_at <= now() - make_interval(secs => %(stale)s)
      AND (%(thread)s::text IS NULL OR thread_id = %(thread)s::text)
    RETURNING run_id, thread_id
), told AS (
    INSERT INTO deerflow_gateway_run_events (run_id, seq, name, data)
    SELECT lost.run_id, coalesce(
        (SELECT max(e.seq) + 1 FROM deerflow_gateway_run_events e WHERE e.run_id = lost.run_id), 0
    ), 'error', %(data)s FROM lost
    ON CONFLICT DO NOTHING
)
SELECT run_id, thread_id, pg_notify(%(channel)s, 'e:' || run_id),
    pg_notify(%(channel)s, 't:' || thread_id)
FROM lost
"""
_RUN_LOST: Final = dumps(
    {
        "error": "RunLost",
        "message": "The gateway process running this run stopped before it ended.",
    }
)
#: The store table of the thread records (LangGraph's ``AsyncPostgresStore``), and their prefix.
_THREAD_RECORD: Final = "SELECT 1 FROM store WHERE prefix = 'deerflow_gateway.threads' AND key = %s"
_DELETE_THREAD_RECORD: Final = (
    "DELETE FROM store WHERE prefix = 'deerflow_gateway.threads' AND key = %s"
)


class PgRuns:
    """Admission, turns, heartbeats and shared events for the runs of this process."""

    def __init__(
        self,
        pool: Any,
        url: str,
        *,
        max_event_bytes: int = MAX_SHARED_RUN_EVENT_BYTES,
        stale_after: float = STALE_AFTER_SECONDS,
        recheck: float = RECHECK_SECONDS,
        heartbeat: float = HEARTBEAT_SECONDS,
        thread_records: bool = True,
    ) -> None:
        self.pool = pool
        #: Whether the thread records are in this database (the gateway's store): admission then
        #: requires the thread's record.
        self.thread_records = thread_records
        self.url = url
        self.max_event_bytes = max_event_bytes
        self.stale_after = stale_after
        self.recheck = recheck
        self.heartbeat = heartbeat
        #: Called with a run id when another process asks this one to cancel it.
        self.on_cancel: Callable[[str], object] | None = None
        #: Called with the runs this process found lost (their process stopped) and ended.
        self.on_lost: Callable[[list[LostRun]], Awaitable[object]] | None = None
        self._live: dict[str, str] = {}  # run id -> thread id, until released
        self._writers: set[asyncio.Task[None]] = set()
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._tasks: list[asyncio.Task[None]] = []

    def bind(
        self,
        *,
        cancel: Callable[[str], object],
        lost: Callable[[list[LostRun]], Awaitable[object]],
        orphaned: Callable[[dict[str, Any]], bool],
    ) -> None:
        """The manager's hooks (``orphaned`` is unused: here the heartbeat rule decides)."""
        self.on_cancel = cancel
        self.on_lost = lost

    async def setup(self) -> None:
        async with self.pool.connection() as conn, conn.transaction():
            # Two processes starting at once must not race on CREATE TABLE IF NOT EXISTS.
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (CHANNEL,))
            await conn.execute(_SCHEMA)

    async def start(self) -> None:
        listening = asyncio.Event()
        self._tasks = [
            asyncio.create_task(self._listen(listening), name="pgruns-listen"),
            asyncio.create_task(self._heartbeat(), name="pgruns-heartbeat"),
        ]
        await listening.wait()

    async def aclose(self, timeout: float = 30.0) -> None:
        if self._writers:
            await asyncio.wait(set(self._writers), timeout=timeout)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # -- admission and turns -------------------------------------------------------------------

    async def admit(
        self,
        thread_id: str,
        run_id: str,
        *,
        resumable: bool,
        check: Callable[[list[str]], list[str]],
    ) -> list[LostRun]:
        """Insert ``run_id`` unless ``check`` (given the thread's active runs, oldest first)
        raises, or the thread has no record (``ThreadNotFound``); atomic across processes. ``check`` returns the
        runs to cancel (``interrupt``). Returns the thread's runs found lost and ended here."""
        params = {"thread": thread_id, "stale": self.stale_after}
        try:
            return await self._admit(thread_id, run_id, resumable, check, params)
        except BaseException:
            self._live.pop(run_id, None)
            raise

    async def _admit(
        self,
        thread_id: str,
        run_id: str,
        resumable: bool,
        check: Callable[[list[str]], list[str]],
        params: dict[str, Any],
    ) -> list[LostRun]:
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", ("thread:" + thread_id,)
            )
            if self.thread_records:
                found = await (await conn.execute(_THREAD_RECORD, (thread_id,))).fetchone()
                if found is None:
                    raise ThreadNotFound(thread_id)
            lost = await self._reap(conn, thread_id)
            cursor = await conn.execute(
                "SELECT run_id FROM deerflow_gateway_runs WHERE thread_id = %(thread)s AND "
                + _LIVE
                + " ORDER BY position",
                params,
            )
            cancel = check([row[0] for row in await cursor.fetchall()])
            await conn.execute(
                "INSERT INTO deerflow_gateway_runs (run_id, thread_id, resumable) "
                "VALUES (%s, %s, %s)",
                (run_id, thread_id, resumable),
            )
            # Before the commit: a cancel sent as soon as the run is visible is not dropped.
            self._live[run_id] = thread_id
            for other in cancel:
                await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, "c:" + other))
        return lost

    async def close_thread(self, thread_id: str) -> list[str]:
        """Remove the thread's record under its admission lock (no run is admitted on it from
        now on) and ask every process to cancel its runs; the runs told."""
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", ("thread:" + thread_id,)
            )
            if self.thread_records:
                await conn.execute(_DELETE_THREAD_RECORD, (thread_id,))
            cursor = await conn.execute(
                "SELECT run_id, pg_notify(%(channel)s, 'c:' || run_id) FROM deerflow_gateway_runs "
                "WHERE thread_id = %(thread)s AND " + _LIVE,
                {"thread": thread_id, "stale": self.stale_after, "channel": CHANNEL},
            )
            return [row[0] for row in await cursor.fetchall()]

    async def wait_idle(self, thread_id: str, *, timeout: float) -> bool:
        """Wait until no process runs or queues a run of the thread; False after ``timeout``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        with self._waiting("t:" + thread_id) as wake:
            while await self.active(thread_id):
                left = deadline - loop.time()
                if left <= 0:
                    return False
                await _wait(wake, min(self.recheck, left))
        return True

    async def reap(self) -> list[LostRun]:
        """End every run whose process stopped (see :data:`_REAP`); the runs ended here."""
        async with self.pool.connection() as conn:
            return await self._reap(conn, None)

    async def _reap(self, conn: Any, thread_id: str | None) -> list[LostRun]:
        params = {
            "stale": self.stale_after,
            "thread": thread_id,
            "data": _RUN_LOST,
            "channel": CHANNEL,
        }
        rows = await (await conn.execute(_REAP, params)).fetchall()
        return [LostRun(row[0], row[1]) for row in rows]

    async def active(self, thread_id: str) -> list[str]:
        """The thread's runs in progress or queued in any process, oldest first."""
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT run_id FROM deerflow_gateway_runs WHERE thread_id = %(thread)s AND "
                + _LIVE
                + " ORDER BY position",
                {"thread": thread_id, "stale": self.stale_after},
            )
            return [row[0] for row in await cursor.fetchall()]

    async def wait_turn(self, thread_id: str, run_id: str) -> None:
        """Return once no run admitted before ``run_id`` on its thread is still active."""
        query = (
            "SELECT 1 FROM deerflow_gateway_runs WHERE thread_id = %(thread)s AND "
            + _LIVE
            + " AND position < (SELECT position FROM deerflow_gateway_runs WHERE run_id = %(run)s)"
            " LIMIT 1"
        )
        params = {"thread": thread_id, "run": run_id, "stale": self.stale_after}
        with self._waiting("t:" + thread_id) as wake:
            while True:
                async with self.pool.connection() as conn:
                    earlier = await (await conn.execute(query, params)).fetchone()
                if earlier is None:
                    return
                await _wait(wake, self.recheck)

    async def release(self, run_id: str) -> None:
        """The run holds its thread no more (its stream may still be flushing)."""
        thread_id = self._live.pop(run_id, None)
        if thread_id is None:
            return
        try:
            async with self.pool.connection() as conn:
                await conn.execute(
                    _RELEASE,
                    {
                        "run": run_id,
                        "channel": CHANNEL,
                        "payload": "t:" + thread_id,
                        "keep": EVENT_RETENTION_SECONDS,
                    },
                )
        except Exception:
            _log.exception("releasing run %s in PostgreSQL failed", run_id)

    async def cancel(self, run_id: str) -> bool:
        """Ask the process running ``run_id`` to cancel it; False when no process runs it."""
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT pg_notify(%(channel)s, 'c:' || run_id) FROM deerflow_gateway_runs "
                "WHERE run_id = %(run)s AND " + _LIVE,
                {"channel": CHANNEL, "run": run_id, "stale": self.stale_after},
            )
            return await cursor.fetchone() is not None

    # -- events ------------------------------------------------------------------------------

    def stream(self, run_id: str, thread_id: str, *, resumable: bool) -> PublishedRunStream:
        stream = PublishedRunStream(run_id, thread_id, resumable=resumable, publisher=self)
        task = asyncio.create_task(stream.publish(), name=f"pgruns-publish-{run_id}")
        self._writers.add(task)
        task.add_done_callback(self._writers.discard)
        return stream

    async def write(self, run_id: str, events: list[Event], *, done: bool) -> None:
        """Append ``events`` (and, when ``done``, the end of the stream) in one transaction."""
        # One statement (so one round trip and one transaction on an autocommit connection): the
        # events, the end of the stream and the NOTIFY, sent when they commit.
        params = {
            "run": run_id,
            "seqs": [e.id for e in events],
            "names": [e.name for e in events],
            "datas": [e.data for e in events],
            "done": done,
            "channel": CHANNEL,
            "payload": "e:" + run_id,
        }
        for attempt in range(_WRITE_ATTEMPTS):
            try:
                async with self.pool.connection() as conn:
                    await conn.execute(_WRITE, params)
                return
            except Exception:
                if attempt == _WRITE_ATTEMPTS - 1:
                    _log.exception("writing the events of run %s to PostgreSQL failed", run_id)
                    return
                await asyncio.sleep(0.2 * 2**attempt)

    async def run(self, run_id: str) -> SharedRun | None:
        """The run's shared log, if it has one (None: not a run of this database, or expired)."""
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT resumable FROM deerflow_gateway_runs WHERE run_id = %s", (run_id,)
            )
            row = await cursor.fetchone()
        return None if row is None else SharedRun(run_id, bool(row[0]))

    async def follow(
        self, run_id: str, *, after: int = -1, modes: Collection[str] | None = None
    ) -> AsyncIterator[Event]:
        """The run's events with an id above ``after``, then each new one until its stream ends
        (or its process stops: then an ``error`` event says so)."""
        query = (
            "SELECT r.stream_done, coalesce(r.ended_at, r.heartbeat_at) < now() - "
            "make_interval(secs => %(stale)s), e.seq, e.name, e.data "
            "FROM deerflow_gateway_runs r LEFT JOIN LATERAL (SELECT seq, name, data "
            "FROM deerflow_gateway_run_events WHERE run_id = r.run_id AND seq > %(after)s "
            "ORDER BY seq LIMIT %(page)s) e ON true WHERE r.run_id = %(run)s ORDER BY e.seq"
        )
        position = after
        with self._waiting("e:" + run_id) as wake:
            while True:
                params = {
                    "run": run_id,
                    "after": position,
                    "page": _PAGE,
                    "stale": self.stale_after,
                }
                async with self.pool.connection() as conn:
                    rows = await (await conn.execute(query, params)).fetchall()
                if not rows:
                    return  # the run's log expired while following it
                # One statement, one snapshot: when it shows the stream done, it shows every event
                # (the last batch and the done flag commit together).
                done, stale = rows[0][0], rows[0][1]
                found = [Event(r[2], r[3], bytes(r[4])) for r in rows if r[2] is not None]
                for event in found:
                    position = event.id
                    if (
                        modes is None
                        or event.name in ALWAYS_SENT
                        or event_mode(event.name) in modes
                    ):
                        yield event
                if len(found) == _PAGE:
                    continue
                if done:
                    return
                if stale:
                    yield Event(position + 1, "error", _RUN_LOST)
                    return
                await _wait(wake, self.recheck)

    async def frames(
        self,
        run: SharedRun,
        *,
        after: int = -1,
        modes: Collection[str] | None = None,
        cancel: bool = False,
    ) -> AsyncIterator[bytes]:
        """:meth:`follow` as SSE frames (with ids when the run is resumable); ``cancel``: a
        reader that goes away before the end cancels the run."""
        finished = False
        try:
            async for event in self.follow(run.run_id, after=after, modes=modes):
                yield sse_frame(event, with_id=run.resumable)
            finished = True
        finally:
            if cancel and not finished:
                await self.cancel(run.run_id)

    # -- notifications and heartbeats ------------------------------------------------------------

    @contextlib.contextmanager
    def _waiting(self, key: str) -> Iterator[asyncio.Event]:
        # Registered before the first read, so a notification between read and wait is not lost.
        wake = asyncio.Event()
        self._waiters.setdefault(key, set()).add(wake)
        try:
            yield wake
        finally:
            waiters = self._waiters.get(key)
            if waiters is not None:
                waiters.discard(wake)
                if not waiters:
                    del self._waiters[key]

    def _wake(self, key: str) -> None:
        for wake in self._waiters.get(key, ()):
            wake.set()

    async def _listen(self, listening: asyncio.Event) -> None:
        import psycopg

        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
                    await conn.execute("LISTEN " + CHANNEL)
                    listening.set()
                    # Whatever was sent while not listening is found by re-reading now.
                    for key in list(self._waiters):
                        self._wake(key)
                    async for notify in conn.notifies():
                        self._dispatch(notify.payload)
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.warning("LISTEN connection to PostgreSQL lost; reconnecting", exc_info=True)
                listening.set()  # waiters re-read every RECHECK_SECONDS meanwhile
                await asyncio.sleep(1.0)

    def _dispatch(self, payload: str) -> None:
        if payload.startswith("c:"):
            run_id = payload[2:]
            if run_id in self._live and self.on_cancel is not None:
                self.on_cancel(run_id)
        else:
            self._wake(payload)

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat)
            try:
                if self._live:
                    async with self.pool.connection() as conn:
                        await conn.execute(
                            "UPDATE deerflow_gateway_runs SET heartbeat_at = now() "
                            "WHERE run_id = ANY(%s)",
                            (list(self._live),),
                        )
            except Exception:
                _log.warning("renewing run heartbeats in PostgreSQL failed", exc_info=True)
            if self.on_lost is not None:
                try:
                    lost = await self.reap()
                    if lost:
                        await self.on_lost(lost)
                except Exception:
                    _log.warning("ending runs of a stopped process failed", exc_info=True)


class PublishedRunStream(RunStream):
    """A :class:`RunStream` whose events are also written to PostgreSQL for other processes."""

    def __init__(self, run_id: str, thread_id: str, *, resumable: bool, publisher: PgRuns) -> None:
        super().__init__(run_id, thread_id, resumable=resumable)
        self._publisher = publisher
        self._dirty = asyncio.Event()

    def emit(self, name: str, data: bytes) -> None:
        super().emit(name, data)
        self._dirty.set()

    def finish(self) -> None:
        super().finish()
        self._dirty.set()

    async def publish(self) -> None:
        """Write the events as they come, in batches (those emitted during one write go next)."""
        sent = size = 0
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            done = self.done.is_set()  # read before the slice: when done, no event comes later
            batch = self.events[sent:]
            sent += len(batch)
            kept: list[Event] = []
            for event in batch:
                size += len(event.data)
                if size > self._publisher.max_event_bytes:
                    limit = self._publisher.max_event_bytes
                    message = (
                        f"The run's events passed {limit} bytes, the most other gateway processes "
                        "are shown; join it on its own process or read the thread's state."
                    )
                    error = dumps({"error": "StreamTooLarge", "message": message})
                    kept.append(Event(event.id, "error", error))
                    done = True
                    break
                kept.append(event)
            await self._publisher.write(self.run_id, kept, done=done)
            if done:
                return


async def _wait(wake: asyncio.Event, timeout: float) -> None:
    """Until ``wake`` is set or ``timeout`` passes. Not ``asyncio.wait_for``: on Python 3.11 it
    returns instead of raising when it is cancelled in the step its event fires (CPython
    gh-86296), and a run waiting its turn would lose the cancel of an ``interrupt``."""
    woken = asyncio.ensure_future(wake.wait())
    try:
        await asyncio.wait({woken}, timeout=timeout)
    finally:
        woken.cancel()
    wake.clear()


@asynccontextmanager
async def open_pg_runs(url: str, **options: Any) -> AsyncIterator[PgRuns]:
    """A connection pool on ``url``, the tables, the ``LISTEN`` connection and the heartbeat
    (``options``: :class:`PgRuns`' keyword arguments)."""
    from psycopg_pool import AsyncConnectionPool

    async with AsyncConnectionPool(
        url,
        min_size=_POOL_MIN,
        max_size=_POOL_MAX,
        kwargs={"autocommit": True},
        check=AsyncConnectionPool.check_connection,  # a database restart costs no request
        open=False,
    ) as pool:
        runs = PgRuns(pool, url, **options)
        await runs.setup()
        await runs.start()
        try:
            yield runs
        finally:
            await runs.aclose()


def pg_coordination(url: str) -> Callable[[Any], AbstractAsyncContextManager[Coordination]]:
    """The coordination of gateways sharing the PostgreSQL database at ``url``: :class:`PgRuns`
    and records searched in SQL (``_pgthreads.PgRecords``, on the gateway's store there)."""
    from deerflow.knowledge.server.postgres._pgthreads import PgRecords

    @asynccontextmanager
    async def opened(store: Any) -> AsyncIterator[Coordination]:
        async with open_pg_runs(url) as runs:
            yield Coordination(PgRecords(store, runs.pool), runs)

    return opened
