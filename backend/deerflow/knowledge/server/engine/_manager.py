"""Runs in this process: one at a time per thread, each under a time budget, events kept for joins.

LangGraph Server runs one run per thread at a time; overlapping requests follow their
``multitask_strategy``: ``reject`` answers 409, ``enqueue`` waits its turn in arrival order,
``interrupt`` stops the run in progress first. Runs of one thread never interleave their writes,
so no message is lost. Every run has a time budget: a run past it is cancelled and its stream ends
with an ``error`` event saying so, while runs on other threads go on (CPU-heavy steps of the agent
run in worker threads, off the event loop). Records of runs live in the shared store, so another
gateway process sees them too. What the manager agrees on with other processes goes through its
run coordinator (``_coordination``), chosen when the gateway is wired: in this process alone, or on
PostgreSQL (``_pgruns``), where admission, turns and events are shared by every process on the
database, so the strategies hold across processes and a run is joined from any of them. A refusal
is a domain error (``errors``); the HTTP layer gives it its status.

A run is cancelled at most once and never inside the cleanup that records its end, so however
many ``interrupt`` runs pile up, each run's stream ends and its thread is released. A delete
stops new runs on its thread, waits for the thread's runs and their checkpoint writes in flight,
then removes it; a save a stopped graph still makes afterwards is dropped (``_runwrites``), so
nothing brings it back. Run records name their process: a gateway that starts after a crash ends
the runs a dead process left (on PostgreSQL, by the heartbeat rule).

It is nearly 500 lines because admission, cancellation and deletion share the admission lock and
the per-thread lanes; split, each part would have to re-check the others' invariants.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from deerflow.knowledge.server._defaults import GATEWAY_DEFAULTS
from deerflow.knowledge.server.engine._coordination import (
    STALE_RUN_GRACE_SECONDS,
    LocalRuns,
    LostRun,
    RunCoordinator,
    process_owner,
    run_orphaned,
)
from deerflow.knowledge.server.engine._records import ACTIVE_RUN_STATUSES, Records
from deerflow.knowledge.server.engine._runwrites import RunWrites
from deerflow.knowledge.server.engine._streaming import EventTranslator, RunStream
from deerflow.knowledge.server.engine._threadmeta import with_run_id
from deerflow.knowledge.server.errors import ThreadBusy, ThreadNotFound
from deerflow.knowledge.server.wire._wire import ThreadMemos, WireEncoder, dumps, iso_now

__all__ = [
    "DEFAULT_RUN_TIMEOUT_SECONDS",
    "DELETE_WAIT_SECONDS",
    "FINISHED_RUNS_KEPT",
    "FINISHED_RUN_BYTES_KEPT",
    "STALE_RUN_GRACE_SECONDS",
    "RunManager",
    "RunPlan",
    "process_owner",
    "runs_to_forget",
]

DEFAULT_RUN_TIMEOUT_SECONDS: Final = GATEWAY_DEFAULTS.run_timeout
#: How long a delete waits for the thread's runs to stop before it removes the thread anyway.
DELETE_WAIT_SECONDS: Final = 30.0
#: Finished runs whose events stay in memory for ``join_stream`` / ``Last-Event-ID`` replays.
FINISHED_RUNS_KEPT: Final = 200
#: ... and at most this many bytes of their events: a run on a long thread streams megabytes of
#: ``values`` frames (the whole history each), so a count alone could hold gigabytes. A run
#: dropped from memory is still joined, from its thread's final state.
FINISHED_RUN_BYTES_KEPT: Final = 64 * 1024 * 1024
_log = logging.getLogger(__name__)


@dataclass
class RunPlan:
    """What a run does, parsed and stripped at the edge."""

    thread_id: str
    assistant_id: str
    graph_input: Any
    config: dict[str, Any]
    modes: list[str]
    #: The graph's runtime context (``Runtime.context``).
    context: Any = None
    subgraphs: bool = False
    resumable: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    multitask_strategy: str = "reject"
    interrupt_before: Any = None
    interrupt_after: Any = None
    durability: str | None = None
    delete_thread_after: bool = False
    stopped_at_interrupt: bool = False


class RunManager:
    def __init__(
        self,
        graph: Any,
        records: Records,
        *,
        run_timeout: float = DEFAULT_RUN_TIMEOUT_SECONDS,
        on_thread_done: Any = None,
        coordinator: RunCoordinator | None = None,
        finished_runs_kept: int = FINISHED_RUNS_KEPT,
        finished_run_bytes_kept: int = FINISHED_RUN_BYTES_KEPT,
    ) -> None:
        self.graph = graph
        self._writes = RunWrites(getattr(graph, "checkpointer", None))
        self.finished_runs_kept = finished_runs_kept
        self.finished_run_bytes_kept = finished_run_bytes_kept
        #: Agreement with other gateway processes; alone in this process unless told otherwise.
        self.coordinator: RunCoordinator = (
            coordinator if coordinator is not None else LocalRuns(records)
        )
        self.coordinator.bind(cancel=self.cancel, lost=self._on_lost, orphaned=self.orphaned)
        self.records = records
        self.run_timeout = run_timeout
        self.on_thread_done = on_thread_done
        self.streams: OrderedDict[str, RunStream] = OrderedDict()
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self._lanes: dict[str, asyncio.Lock] = {}
        self._waiting: dict[str, int] = {}
        self._admit = asyncio.Lock()
        #: Each run's stop, from its admission until its task ends: set by a cancel and never
        #: cleared, so a run asked to stop stops even if the cancel's ``CancelledError`` was lost
        #: on the way (see ``cancel``).
        self._stops: dict[str, asyncio.Event] = {}
        #: Runs recording their end (a cancel now is refused, not raised in that cleanup); runs
        #: whose task took its first step.
        self._ending: set[str] = set()
        self._begun: set[str] = set()
        #: Threads being deleted here: no run starts on them.
        self._deleting: set[str] = set()
        #: Who runs this process's runs (written in their records; see ``orphaned``).
        self.owner = process_owner()
        self._memos = ThreadMemos()

    def stream(self, run_id: str) -> RunStream | None:
        return self.streams.get(run_id)

    def busy(self, thread_id: str) -> bool:
        return self._waiting.get(thread_id, 0) > 0

    async def start(self, plan: RunPlan) -> tuple[dict[str, Any], RunStream]:
        async with self._admit:  # check-and-register is atomic within this process
            if plan.thread_id in self._deleting:
                raise ThreadNotFound(plan.thread_id)
            local = [
                run_id
                for run_id, s in self.streams.items()
                if s.thread_id == plan.thread_id and not s.done.is_set()
            ]
            run_id = str(uuid.uuid4())
            plan.config = with_run_id(plan.config, run_id)
            self._stops[run_id] = asyncio.Event()  # a cancel during the admission is kept
            try:
                record, stream, lost = await self._register(plan, local, run_id)
            except BaseException:
                self._stops.pop(run_id, None)
                raise
        if lost:  # runs of a stopped process on this thread: their records say so now
            await self._on_lost(lost)
        return record, stream

    async def _register(
        self, plan: RunPlan, local: list[str], run_id: str
    ) -> tuple[dict[str, Any], RunStream, list[LostRun]]:
        """Admit the run and make its task (under the admission lock)."""
        # On PostgreSQL atomic across processes (under the thread's advisory lock); refused when
        # the thread's record is gone (a delete in any process).
        lost = await self.coordinator.admit(
            plan.thread_id,
            run_id,
            resumable=plan.resumable,
            check=lambda active: self._admission(
                plan, local, [r for r in active if r not in local]
            ),
        )
        try:
            if plan.multitask_strategy == "interrupt":
                # A run seen above may have ended during the awaits since: cancel() knows.
                for local_id in local:
                    self.cancel(local_id)
            now = iso_now()
            record: dict[str, Any] = {
                "run_id": run_id,
                "thread_id": plan.thread_id,
                "assistant_id": plan.assistant_id,
                "created_at": now,
                "updated_at": now,
                "status": "pending",
                "metadata": plan.metadata,
                "multitask_strategy": plan.multitask_strategy,
                "kwargs": {},
                "owner": self.owner,
            }
            await self.records.put_run(record)
        except BaseException:
            # Admitted but never started: the thread must not stay held by this run.
            await asyncio.shield(self.coordinator.release(run_id))
            raise
        stream = self.coordinator.stream(run_id, plan.thread_id, resumable=plan.resumable)
        stream.emit("metadata", dumps({"run_id": run_id, "attempt": 1}))
        self.streams[run_id] = stream
        self._waiting[plan.thread_id] = self._waiting.get(plan.thread_id, 0) + 1
        self._writes.open(run_id)  # with the task: a delete from now on closes it
        task = asyncio.create_task(self._execute(plan, record, stream))
        self.tasks[run_id] = task
        return record, stream, lost

    def _admission(self, plan: RunPlan, local: list[str], remote: list[str]) -> list[str]:
        """Refuse the run (``ThreadBusy``) or say which runs of other processes to cancel first
        (a coordinator that cannot reach them refuses with ``RunInAnotherProcess``)."""
        if (local or remote) and plan.multitask_strategy == "reject":
            raise ThreadBusy(plan.thread_id, (local or remote)[0])
        if remote and plan.multitask_strategy == "interrupt":
            return remote
        return []

    def orphaned(self, record: dict[str, Any]) -> bool:
        """Whether an active run record belongs to no live process (``run_orphaned``)."""
        return run_orphaned(record, owner=self.owner, run_timeout=self.run_timeout)

    async def recover(self) -> int:
        """End the runs that no live process owns (a process killed mid-run): their records say
        ``error`` and their threads are free again. Returns how many runs were ended. Run when the
        gateway starts; on PostgreSQL it also runs with every heartbeat, by the heartbeat rule."""
        return len(await self._on_lost(await self.coordinator.reap()))

    async def _on_lost(self, lost: Sequence[LostRun]) -> list[str]:
        ended = []
        for run_id, thread_id in [(run.run_id, run.thread_id) for run in lost]:
            record = await self.records.run(thread_id, run_id)
            if record is not None and record.get("status") in ACTIVE_RUN_STATUSES:
                record.update(status="error", updated_at=iso_now())
                await self.records.put_run(record)
                ended.append(run_id)
        for thread_id in sorted({run.thread_id for run in lost}):
            if self._waiting.get(thread_id):
                continue  # a run of this process holds it and records its status itself
            if not await self.coordinator.active(thread_id):
                await self.records.touch_thread(thread_id, status="idle", only_if="busy")
        if ended:
            _log.warning("ended %d run(s) left by a gateway process that stopped", len(ended))
        return ended

    async def delete_thread(self, thread_id: str, forget: Any) -> None:
        """Delete a thread so that nothing brings it back: no run starts on it from here on, its
        runs (in any process) are cancelled and have ended before ``forget`` removes its
        checkpoints and records."""
        async with self._admit:
            self._deleting.add(thread_id)
        try:
            # On PostgreSQL under the admission lock of every process: gone for admission, the
            # runs of other processes told.
            for run_id in await self.coordinator.close_thread(thread_id):
                self.cancel(run_id)
            local = {
                run_id: task
                for run_id, task in self.tasks.items()
                if (found := self.streams.get(run_id)) is not None and found.thread_id == thread_id
            }
            for run_id in local:
                self.cancel(run_id)
                # Whatever the run's graph still saves from now on is dropped, even if the run
                # outlasts the wait below.
                self._writes.close(run_id)
            if local:
                done, _ = await asyncio.wait(local.values(), timeout=DELETE_WAIT_SECONDS)
                if len(done) < len(local):
                    _log.warning("a run of thread %s did not stop before its delete", thread_id)
            await self.coordinator.wait_idle(thread_id, timeout=DELETE_WAIT_SECONDS)
            await self._writes.settled(thread_id)
            await forget(thread_id)
        finally:
            self._deleting.discard(thread_id)

    def cancel(self, run_id: str) -> bool:
        """Stop the run if it is in progress or queued here; False when it is not (or ended).

        The run's stop is set for good, and its task is cancelled once, to break off whatever it
        awaits. A cancelled task may still not stop: on Python 3.11 ``asyncio.wait_for`` returns
        instead of raising when its event fires in the step it is cancelled (CPython gh-86296),
        and a library may swallow the cancel too; so the run reads its stop after every wait and
        waits for its graph and its stop together. A second ``task.cancel()`` could land inside
        some cleanup — a connection going back to its pool, or the run recording its end, which
        would leave its stream open and its thread held — so later cancels only find the stop
        set (and a run recording its end is not cancelled at all)."""
        stop = self._stops.get(run_id)
        task = self.tasks.get(run_id)
        if stop is None or (task is not None and task.done()):
            return False
        if run_id in self._ending or stop.is_set():
            return True
        stop.set()
        # A task cancelled before its first step never runs its cleanup: it reads its stop.
        if task is not None and run_id in self._begun:
            task.cancel()
        return True

    async def drain(self, timeout: float) -> None:
        pending = [t for t in self.tasks.values() if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=timeout)

    async def _execute(self, plan: RunPlan, record: dict[str, Any], stream: RunStream) -> None:
        thread_id, run_id = plan.thread_id, record["run_id"]
        lane = self._lanes.setdefault(thread_id, asyncio.Lock())
        leftover: asyncio.Task[None] | None = None
        ended = False
        stop = self._stops[run_id]
        self._begun.add(run_id)
        try:
            _unless_stopped(stop)
            async with lane:
                # Runs of the thread in other processes go first.
                await self.coordinator.wait_turn(thread_id, run_id)
                _unless_stopped(stop)  # its cancel may have come as its turn did, and been lost
                record.update(status="running", updated_at=iso_now())
                await self.records.put_run(record)
                await self.records.touch_thread(thread_id, status="busy")
                _unless_stopped(stop)
                status, leftover = await self._run_graph(plan, stream, stop)
                # From here on the run is ending: a cancel is refused, not raised in the cleanup.
                self._ending.add(run_id)
                await self._end(plan, record, stream, status, counted=True)
                ended = True
                if leftover is not None:
                    # A stopped graph may still be unwinding a step stuck in a worker thread; the
                    # thread's next run waits for it, so their writes never interleave.
                    await asyncio.wait({leftover})
                # The graph has ended, but a save it started may not have reached the saver yet
                # (LangGraph does not wait for them when a run stops): it is dropped now, and the
                # writes in flight land before the thread's next run or a delete goes on.
                self._writes.close(run_id)
                await self._writes.settled(thread_id)
        except asyncio.CancelledError:
            pass  # stopped while waiting its turn
        finally:
            self._ending.add(run_id)
            self._waiting[thread_id] -= 1
            if not self._waiting[thread_id]:
                del self._waiting[thread_id]
                self._lanes.pop(thread_id, None)
            try:
                if not ended:
                    await self._end(plan, record, stream, "interrupted", counted=False)
            finally:
                self._forget_old()
                try:
                    # Released only once no write of this run can land any more: a delete in
                    # another process waits for the release, then removes the checkpoints.
                    self._writes.close(run_id)
                    await self._writes.settled(thread_id)
                    await self.coordinator.release(run_id)
                finally:
                    # The run is this process's until it is released: a drain or a delete waits
                    # for its task through the release, and a cancel meanwhile finds it ending.
                    self.tasks.pop(run_id, None)
                    for marks in (self._ending, self._begun):
                        marks.discard(run_id)
                    self._stops.pop(run_id, None)

    async def _end(
        self,
        plan: RunPlan,
        record: dict[str, Any],
        stream: RunStream,
        status: str,
        *,
        counted: bool,
    ) -> None:
        # ``counted``: this run is still in the thread's count of waiting runs.
        others = self._waiting.get(plan.thread_id, 0) - (1 if counted else 0)
        try:
            await self._finish(plan, record, status, others_waiting=others > 0)
        except Exception:
            _log.exception("recording the end of run %s failed", record["run_id"])
        finally:
            stream.finish()  # whatever happened above: a join never waits for an ended run

    async def _run_graph(
        self, plan: RunPlan, stream: RunStream, stop: asyncio.Event
    ) -> tuple[str, asyncio.Task[None] | None]:
        translator = EventTranslator(
            stream, plan.modes, subgraphs=plan.subgraphs, encoder=WireEncoder(self._memo(plan))
        )
        options: dict[str, Any] = {
            "stream_mode": translator.graph_modes(),
            "subgraphs": plan.subgraphs,
            "interrupt_before": plan.interrupt_before,
            "interrupt_after": plan.interrupt_after,
            "context": plan.context,
        }
        if plan.durability is not None:
            options["durability"] = plan.durability

        async def consume() -> None:
            self._writes.act_for(stream.run_id)  # the saves of this task and those it starts
            async for part in self.graph.astream(plan.graph_input, plan.config, **options):
                if translator.closed:
                    return
                translator.feed(part)

        started = time.monotonic()
        graph = asyncio.create_task(consume())
        stopped = asyncio.ensure_future(stop.wait())
        try:
            done, _ = await asyncio.wait(
                {graph, stopped}, timeout=self.run_timeout, return_when=asyncio.FIRST_COMPLETED
            )
        except asyncio.CancelledError:  # cancelled by a client (cancel, on_disconnect)
            stop.set()
        finally:
            stopped.cancel()
        if stop.is_set():  # by its cancel, or by its stop alone if the cancel was lost
            translator.closed = True
            graph.cancel()
            return "interrupted", graph
        if not done:
            # Stop the run now: its stream and record end at once, even if a step cannot be
            # interrupted (a worker thread); the graph task unwinds in the background.
            translator.closed = True
            graph.cancel()
            _log.warning("run %s exceeded its time budget", stream.run_id)
            message = (
                f"The run exceeded its time budget of {self.run_timeout:g} s "
                f"and was stopped after {time.monotonic() - started:.1f} s."
            )
            stream.emit("error", dumps({"error": "TimeoutError", "message": message}))
            return "timeout", graph
        error = graph.exception()
        if isinstance(
            error, Exception
        ):  # the stream must end with a clear event, not a dropped socket
            _log.error("run %s failed", stream.run_id, exc_info=error)
            stream.emit(
                "error",
                dumps({"error": type(error).__name__, "message": _run_error_message(error)}),
            )
            return "error", None
        # A run that stopped at an interrupt succeeded; its thread waits for a resume.
        plan.stopped_at_interrupt = translator.interrupted
        return "success", None

    async def _finish(
        self, plan: RunPlan, record: dict[str, Any], status: str, *, others_waiting: bool
    ) -> None:
        record.update(status=status, updated_at=iso_now())
        await self.records.put_run(record)
        if plan.delete_thread_after:
            # The graph of a stopped run may still be unwinding: nothing it saves may outlive
            # the thread.
            self._writes.close(record["run_id"])
            await self._writes.settled(plan.thread_id)
            if self.on_thread_done is not None:
                await self.on_thread_done(plan.thread_id)
            return
        thread_status = "error" if status in ("error", "timeout") else "idle"
        if plan.stopped_at_interrupt:
            thread_status = "interrupted"
        if others_waiting:
            thread_status = "busy"
        await self.records.touch_thread(
            plan.thread_id, status=thread_status, state_updated_at=iso_now()
        )

    def _memo(self, plan: RunPlan) -> dict[Any, Any]:
        """The thread's message memo: its history is encoded once, not once per run."""
        return self._memos.checkout(plan.thread_id)

    def _forget_old(self) -> None:
        finished = [(rid, s.size) for rid, s in self.streams.items() if s.done.is_set()]
        for run_id in runs_to_forget(
            finished, most=self.finished_runs_kept, most_bytes=self.finished_run_bytes_kept
        ):
            del self.streams[run_id]


def _unless_stopped(stop: asyncio.Event) -> None:
    """Raise ``CancelledError`` if the run was asked to stop (its cancel may have been lost)."""
    if stop.is_set():
        raise asyncio.CancelledError


def runs_to_forget(finished: Sequence[tuple[str, int]], *, most: int, most_bytes: int) -> list[str]:
    """The oldest of ``finished`` (run id, bytes; oldest first) to drop so that at most ``most``
    runs and ``most_bytes`` bytes stay; the newest run stays whatever its size."""
    kept_bytes = 0
    keep = 0
    for _, size in reversed(finished):
        if keep == most or (keep and kept_bytes + size > most_bytes):
            break
        kept_bytes += size
        keep += 1
    return [run_id for run_id, _ in finished[: len(finished) - keep]]


def _run_error_message(exc: Exception) -> str:
    from langgraph.errors import GraphRecursionError, InvalidUpdateError

    from deerflow.knowledge.constrain import GrammarRefusedError

    if isinstance(exc, GraphRecursionError | InvalidUpdateError | GrammarRefusedError):
        return str(exc)
    return f"The run failed ({type(exc).__name__})."
