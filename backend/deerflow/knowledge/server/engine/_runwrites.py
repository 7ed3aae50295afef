"""The checkpoint writes of runs: which are in flight, and which may still land.

LangGraph saves checkpoints in background tasks, and stopping a run (cancelling its graph's task)
can cut short the loop's wait for them at its exit: a save still waiting for the one before it
then goes on by itself and lands later — after a delete removed the thread, or among the writes of
the thread's next run. Nothing outside LangGraph can see such a save before it calls the saver,
so waiting for "the writes in flight" alone has a gap: it can return between two chained saves.

So the gateway wraps its checkpointer's ``aput`` and ``aput_writes`` (on the one instance) and
gives each run a pass (``open``). The run's graph task takes it up (``act_for``): a context
variable, which asyncio copies into every task the graph starts and LangGraph into every save.
Once the graph has ended, the manager closes the pass (``close``), and a save that comes later is
dropped: it belongs to a loop torn down by a cancel. The check and the count of writes in flight
happen in one step of the event loop, so a write either counts (``settled`` waits for it) or
never starts. Writes that no run makes (a state update) carry no pass and always land.

Tested by ``tests/test_server_runs_lifecycle.py`` (saves of runs stopped or deleted).
"""

from __future__ import annotations

import asyncio
import logging
from contextvars import ContextVar
from typing import Any

__all__ = ["RunWrites"]

_log = logging.getLogger(__name__)


class _Pass:
    """A run's leave to write checkpoints: shared by every task its graph starts."""

    __slots__ = ("open", "run_id")

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.open = True


_WRITER: ContextVar[_Pass | None] = ContextVar("deerflow_gateway_run_writes", default=None)


class RunWrites:
    """The checkpoint writes on one saver: in flight per thread, and refused once a run ended."""

    def __init__(self, saver: Any) -> None:
        self._active: dict[str, int] = {}
        self._idle: dict[str, asyncio.Event] = {}
        self._passes: dict[str, _Pass] = {}
        #: Writes dropped because their run had ended (a test reads it; a log line says it too).
        self.dropped = 0
        for name in ("aput", "aput_writes"):
            method = getattr(saver, name, None)
            if method is not None:
                setattr(saver, name, self._tracked(name, method))

    def open(self, run_id: str) -> None:
        """The run may write until ``close``."""
        self._passes[run_id] = _Pass(run_id)

    def act_for(self, run_id: str) -> None:
        """The current task, and every task it starts from now on, writes as ``run_id``."""
        found = self._passes.get(run_id)
        if found is None:  # closed before its graph started: it writes nothing
            found = _Pass(run_id)
            found.open = False
        _WRITER.set(found)

    def close(self, run_id: str) -> None:
        """No write of the run starts from now on; one in flight still counts (``settled``)."""
        found = self._passes.pop(run_id, None)
        if found is not None:
            found.open = False

    async def settled(self, thread_id: str) -> None:
        """Return once no checkpoint write of the thread is in flight."""
        while thread_id in self._active:
            await self._idle.setdefault(thread_id, asyncio.Event()).wait()

    def _tracked(self, name: str, method: Any) -> Any:
        async def tracked(config: Any, *args: Any, **kwargs: Any) -> Any:
            writer = _WRITER.get()
            if writer is not None and not writer.open:
                self.dropped += 1
                _log.info("dropped %s of run %s, which has ended", name, writer.run_id)
                return _unwritten(name, config, args)
            thread_id = str(config.get("configurable", {}).get("thread_id"))
            self._active[thread_id] = self._active.get(thread_id, 0) + 1
            try:
                return await method(config, *args, **kwargs)
            finally:
                self._active[thread_id] -= 1
                if not self._active[thread_id]:
                    del self._active[thread_id]
                    idle = self._idle.pop(thread_id, None)
                    if idle is not None:
                        idle.set()

        return tracked


def _unwritten(name: str, config: Any, args: tuple[Any, ...]) -> Any:
    """What the saver's method answers, for a write it was never given."""
    if name != "aput" or not args:
        return None
    configurable = {**config.get("configurable", {}), "checkpoint_id": args[0]["id"]}
    return {**config, "configurable": configurable}
