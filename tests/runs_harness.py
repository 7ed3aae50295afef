"""A graph and records the tests can hold at any point, to drive the run manager event by event.

``HeldGraph`` streams one ``updates`` part per run and, when a test holds a run's input, waits at
that point until the test lets it go. ``HookedRecords`` are real records on a real LangGraph store
whose writes and reads call a test's hook first, so a test can stop a run inside its cleanup, or
end another run in the middle of an admission, without any timing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from deerflow.knowledge.server.engine._records import Records
from deerflow.knowledge.server.postgres._pgthreads import PgRecords

__all__ = [
    "HeldGraph",
    "HeldWrites",
    "HookedPgRecords",
    "HookedRecords",
    "echo_graph",
    "gateway_app",
    "plan",
]


class HeldGraph:
    """A stand-in for the agent: ``astream`` yields one update per run."""

    nodes: dict[str, Any] = {"agent": None}  # noqa: RUF012 - read-only, like a graph's

    def __init__(self) -> None:
        #: Inputs whose run waits at this gate before its update.
        self.gates: dict[Any, asyncio.Event] = {}
        #: Inputs of the runs that started, in order.
        self.started: list[Any] = []
        self.arrived = asyncio.Condition()
        #: Per-run hook: awaited before the update (a seeded storm yields here).
        self.before_step: Callable[[Any], Awaitable[None]] | None = None

    def hold(self, graph_input: Any) -> asyncio.Event:
        gate = self.gates[graph_input] = asyncio.Event()
        return gate

    async def wait_started(self, count: int) -> None:
        async with self.arrived:
            await self.arrived.wait_for(lambda: len(self.started) >= count)

    async def astream(self, graph_input: Any, config: Any, **options: Any) -> AsyncIterator[Any]:
        async with self.arrived:
            self.started.append(graph_input)
            self.arrived.notify_all()
        if self.before_step is not None:
            await self.before_step(graph_input)
        gate = self.gates.get(graph_input)
        if gate is not None:
            await gate.wait()
        yield ("updates", {"agent": {"messages": []}})


class HookedRecords(Records):
    """Records whose run writes and active-run reads await ``hook(kind, value)`` first."""

    def __init__(self, store: Any, *args: Any) -> None:
        super().__init__(store, *args)
        self.hook: Callable[[str, Any], Awaitable[None]] | None = None

    async def put_run(self, record: dict[str, Any]) -> dict[str, Any]:
        if self.hook is not None:
            await self.hook("put_run", dict(record))
        return await super().put_run(record)

    async def active_runs(self, thread_id: str) -> list[dict[str, Any]]:
        if self.hook is not None:
            await self.hook("active_runs", thread_id)
        return await super().active_runs(thread_id)

    async def touch_thread(
        self, thread_id: str, *, only_if: str | None = None, **changes: Any
    ) -> dict[str, Any] | None:
        if self.hook is not None:
            await self.hook("touch_thread", thread_id)
        return await super().touch_thread(thread_id, only_if=only_if, **changes)


class HookedPgRecords(HookedRecords, PgRecords):
    """``HookedRecords`` on PostgreSQL (thread search and touches in SQL): ``(store, pool)``."""


def plan(thread_id: str, graph_input: Any, strategy: str = "reject") -> Any:
    from deerflow.knowledge.server.engine._manager import RunPlan

    return RunPlan(
        thread_id=thread_id,
        assistant_id="agent",
        graph_input=graph_input,
        config={"configurable": {"thread_id": thread_id}},
        modes=["values"],
        multitask_strategy=strategy,
    )


class HeldWrites:
    """Holds a real async checkpointer's saves (``aput``): while ``held`` each waits for
    ``release``; after ``arm(n)`` only the ``n``-th save from then on does. Installed before the
    gateway wraps the saver, a held save is a write in flight (the gateway counts it); installed on
    the gateway's saver afterwards, it is one LangGraph has not given the saver yet (a save waiting
    for the one before it)."""

    def __init__(self, saver: Any) -> None:
        self.held = False
        self.release = asyncio.Event()
        self.waiting = asyncio.Event()
        self.landed = asyncio.Event()
        self._countdown: int | None = None
        put = saver.aput

        async def aput(*args: Any, **kwargs: Any) -> Any:
            if not self._holds():
                return await put(*args, **kwargs)
            self.waiting.set()
            await self.release.wait()
            try:
                return await put(*args, **kwargs)
            finally:
                self.landed.set()

        saver.aput = aput

    def arm(self, n: int) -> None:
        """Hold the ``n``-th save from now (1: the next), with fresh events."""
        self.release, self.waiting, self.landed = asyncio.Event(), asyncio.Event(), asyncio.Event()
        self._countdown = n

    def _holds(self) -> bool:
        if self._countdown is None:
            return self.held
        self._countdown -= 1
        if self._countdown:
            return False
        self._countdown = None
        return True


def echo_graph(saver: Any) -> Any:
    """A real LangGraph graph (one node answering each human message) on ``saver``."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, MessagesState, StateGraph

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"echo {len(state['messages'])}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    return builder.compile(checkpointer=saver)


@asynccontextmanager
async def gateway_app(
    folder: Path, *, postgres: str | None = None, **options: Any
) -> AsyncIterator[tuple[Any, HeldWrites]]:
    """The gateway app over ``echo_graph`` on SQLite files in ``folder`` (or on the PostgreSQL
    database at ``postgres``, with its run coordination), started (its lifespan entered), with an
    HTTP client on it and the hold on its checkpoint writes."""
    import httpx

    from deerflow.knowledge.server import open_checkpointer, open_store
    from deerflow.knowledge.server.api._app import GatewayConfig, create_app

    holds: list[HeldWrites] = []

    def build(saver: Any) -> Any:
        holds.append(HeldWrites(saver))
        return echo_graph(saver)

    target = postgres or str(folder / "threads.sqlite")
    if postgres is not None:
        from deerflow.knowledge.server.postgres._pgruns import pg_coordination

        options.setdefault("open_coordination", pg_coordination(postgres))
    config = GatewayConfig(
        build_agent=build,
        open_checkpointer=lambda: open_checkpointer(target),
        open_store=lambda: open_store(target),
        provider_label="test",
        model_label="echo",
        **options,
    )
    app = create_app(config)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            yield client, holds[0]
