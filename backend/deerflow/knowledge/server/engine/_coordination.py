"""Who else runs a thread's runs: the run coordinator, chosen once when the gateway is wired.

``RunManager`` runs a process's runs; what it must agree on with other processes (may this run
start, whose turn it is, which runs a dead process left, a cancel for a run elsewhere, the events
of a run elsewhere) goes through a ``RunCoordinator``. Two implement it:

* :class:`LocalRuns`, in this process, for SQLite and in-memory gateways: the thread and run
  records in the store are all it shares, so it refuses to interrupt another process's run and
  follows none of their events; a run whose process died is found by its record's owner.
* :class:`~deerflow.knowledge.server.postgres._pgruns.PgRuns`, on PostgreSQL: admission, turns, heartbeats
  and events shared by every process on the database.

``Coordination`` pairs a coordinator with the thread and run records it goes with (the PostgreSQL
one searches threads in SQL); the wiring opens one (``in_process_coordination``,
``_pgruns.pg_coordination``) and the gateway never asks which it got.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Protocol, runtime_checkable

from langgraph.store.base import BaseStore

from deerflow.knowledge.server.engine._records import ACTIVE_RUN_STATUSES, Records
from deerflow.knowledge.server.engine._streaming import Event, RunStream
from deerflow.knowledge.server.errors import RunInAnotherProcess, ThreadNotFound

__all__ = [
    "STALE_RUN_GRACE_SECONDS",
    "Coordination",
    "LocalRuns",
    "LostRun",
    "RunCoordinator",
    "SharedRun",
    "in_process_coordination",
    "process_owner",
    "run_orphaned",
]

#: How long past the time budget an active run record of another process still counts as active.
STALE_RUN_GRACE_SECONDS: Final = 60.0


@dataclass(frozen=True)
class LostRun:
    """A run ended because its process stopped."""

    run_id: str
    thread_id: str


@dataclass(frozen=True)
class SharedRun:
    """What a joiner needs to know about a run before following its events."""

    run_id: str
    resumable: bool


#: Given the thread's active runs (oldest first), refuse the run (raise) or name the runs of other
#: processes to cancel first (``interrupt``).
AdmissionCheck = Callable[[list[str]], list[str]]


@runtime_checkable
class RunCoordinator(Protocol):
    """What ``RunManager`` agrees on with the other gateway processes on its database."""

    def bind(
        self,
        *,
        cancel: Callable[[str], object],
        lost: Callable[[list[LostRun]], Awaitable[object]],
        orphaned: Callable[[dict[str, Any]], bool],
    ) -> None:
        """The manager's hooks: cancel one of its runs (asked by another process), end runs found
        lost, and tell whether an active run record belongs to no live process."""

    async def admit(
        self, thread_id: str, run_id: str, *, resumable: bool, check: AdmissionCheck
    ) -> list[LostRun]:
        """Hold the thread for ``run_id`` unless ``check`` raises or the thread has no record
        (``ThreadNotFound``); the thread's runs found lost on the way."""

    def stream(self, run_id: str, thread_id: str, *, resumable: bool) -> RunStream:
        """The run's event stream (published to other processes where they can follow it)."""

    async def wait_turn(self, thread_id: str, run_id: str) -> None:
        """Return once no run admitted before ``run_id`` on its thread, in another process, is
        active (runs of this process keep their order in the manager)."""

    async def release(self, run_id: str) -> None:
        """The run holds its thread no more."""

    async def active(self, thread_id: str) -> list[str]:
        """The thread's runs in progress or queued that the manager does not run itself (or all,
        where the coordinator cannot tell), oldest first."""

    async def reap(self) -> list[LostRun]:
        """End the runs no live process owns; the runs ended here."""

    async def close_thread(self, thread_id: str) -> list[str]:
        """No run is admitted on the thread from now on; the runs of other processes told to stop
        (the manager stops its own)."""

    async def wait_idle(self, thread_id: str, *, timeout: float) -> bool:
        """Wait until no other process runs or queues a run of the thread; False after
        ``timeout``."""

    async def cancel(self, run_id: str) -> bool:
        """Ask the process running ``run_id`` to cancel it; False when none can be asked."""

    async def run(self, run_id: str) -> SharedRun | None:
        """A run of another process whose events this process can follow, or None."""

    def follow(
        self, run_id: str, *, after: int = -1, modes: Collection[str] | None = None
    ) -> AsyncIterator[Event]:
        """The events of a run of another process after ``after``, until its stream ends."""

    def frames(
        self,
        run: SharedRun,
        *,
        after: int = -1,
        modes: Collection[str] | None = None,
        cancel: bool = False,
    ) -> AsyncIterator[bytes]:
        """``follow`` as SSE frames; ``cancel``: a reader leaving early cancels the run."""


@dataclass(frozen=True)
class Coordination:
    """The records a gateway keeps and the coordinator its runs agree through."""

    records: Records
    runs: RunCoordinator


class LocalRuns:
    """A coordinator for gateways that share only the store (SQLite, in memory).

    Admission reads the thread's run records: another process's active run on the thread refuses
    a ``reject`` run and cannot be interrupted from here (``RunInAnotherProcess``). Turns need
    nothing beyond the manager's own lanes, and no event of another process can be followed."""

    def __init__(self, records: Records) -> None:
        self.records = records
        self._orphaned: Callable[[dict[str, Any]], bool] = lambda _: False
        self._live: set[str] = set()  # admitted here, not yet released

    def bind(
        self,
        *,
        cancel: Callable[[str], object],
        lost: Callable[[list[LostRun]], Awaitable[object]],
        orphaned: Callable[[dict[str, Any]], bool],
    ) -> None:
        # No other process reaches this one: only the orphan rule is needed.
        self._orphaned = orphaned

    async def admit(
        self, thread_id: str, run_id: str, *, resumable: bool, check: AdmissionCheck
    ) -> list[LostRun]:
        if await self.records.thread(thread_id) is None:
            raise ThreadNotFound(thread_id)
        active = [
            r["run_id"] for r in await self.records.active_runs(thread_id) if not self._orphaned(r)
        ]
        if check(active):
            raise RunInAnotherProcess
        self._live.add(run_id)
        return []

    def stream(self, run_id: str, thread_id: str, *, resumable: bool) -> RunStream:
        return RunStream(run_id, thread_id, resumable=resumable)

    async def wait_turn(self, thread_id: str, run_id: str) -> None:
        return None

    async def release(self, run_id: str) -> None:
        self._live.discard(run_id)

    async def active(self, thread_id: str) -> list[str]:
        return [
            r["run_id"]
            for r in await self.records.active_runs(thread_id)
            if r["run_id"] not in self._live and not self._orphaned(r)
        ]

    async def reap(self) -> list[LostRun]:
        return [
            LostRun(r["run_id"], r["thread_id"])
            for r in await self.records.all_active_runs()
            if r["run_id"] not in self._live and self._orphaned(r)
        ]

    async def close_thread(self, thread_id: str) -> list[str]:
        return []

    async def wait_idle(self, thread_id: str, *, timeout: float) -> bool:
        return True

    async def cancel(self, run_id: str) -> bool:
        return False

    async def run(self, run_id: str) -> SharedRun | None:
        return None

    async def follow(
        self, run_id: str, *, after: int = -1, modes: Collection[str] | None = None
    ) -> AsyncIterator[Event]:
        return
        yield  # an async generator with nothing to follow

    async def frames(
        self,
        run: SharedRun,
        *,
        after: int = -1,
        modes: Collection[str] | None = None,
        cancel: bool = False,
    ) -> AsyncIterator[bytes]:
        return
        yield


@asynccontextmanager
async def in_process_coordination(store: BaseStore) -> AsyncIterator[Coordination]:
    """Records in ``store``, searched here, and the in-process coordinator."""
    records = Records(store)
    yield Coordination(records, LocalRuns(records))


_PROCESS_START: Final = uuid.uuid4().hex  # tells this process from an earlier one with its pid


def process_owner() -> dict[str, Any]:
    """This process, as run records name it: host, pid and a mark of this start."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "start": _PROCESS_START}


def run_orphaned(record: dict[str, Any], *, owner: dict[str, Any], run_timeout: float) -> bool:
    """Whether an active run record belongs to no live process (one that died mid-run).

    A record names the process that runs it (``owner``): on this host a process that no longer
    exists, or this process's pid under another start (a restarted container), owns nothing. A
    record of another host, or one without an owner, counts as lost once nobody updated it for
    longer than any run may last (``run_timeout`` and ``STALE_RUN_GRACE_SECONDS``)."""
    if record.get("status") not in ACTIVE_RUN_STATUSES:
        return False
    found = record.get("owner")
    if isinstance(found, dict) and found.get("host") == owner["host"]:
        pid = found.get("pid")
        if pid == owner["pid"]:
            return bool(found.get("start") != owner["start"])
        if isinstance(pid, int) and not _process_exists(pid):
            return True
    updated = datetime.fromisoformat(record["updated_at"])
    age = (datetime.now(updated.tzinfo) - updated).total_seconds()
    return bool(age > run_timeout + STALE_RUN_GRACE_SECONDS)


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True
