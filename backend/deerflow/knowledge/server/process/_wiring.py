"""Wiring the gateway: the agent, the checkpointer, the store and the run coordination.

``build_config`` turns a provider and an optional chat model into a ``GatewayConfig``: LangChain's
``create_agent`` with ``knowledge_search`` and the tool-output budget (with no model, the offline
extractive responder, so the demo needs no credentials), a checkpointer and a store on one SQLite
file or PostgreSQL database, and, on PostgreSQL, runs shared with every gateway process on it
(``_pgruns.pg_coordination``). Which storage a target names is decided once, here.

Tested by ``tests/test_server.py`` (``build_config``) and ``tests/test_server_records.py``
(``open_store``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, Final

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from deerflow.knowledge.constrain import CitationGrammarMiddleware
from deerflow.knowledge.contract import RetrievalProvider
from deerflow.knowledge.middleware import ToolOutputBudgetMiddleware
from deerflow.knowledge.responder import RESPONDER_LABEL, ExtractiveResponder
from deerflow.knowledge.rules import GATEWAY_OUTPUT_MAX_CHARS
from deerflow.knowledge.server._defaults import GATEWAY_DEFAULTS, is_postgres_url
from deerflow.knowledge.server.api._app import GatewayConfig
from deerflow.knowledge.server.engine._coordination import in_process_coordination
from deerflow.knowledge.server.postgres._pgruns import pg_coordination
from deerflow.knowledge.server.wire._serde import MessageCachingSerializer
from deerflow.knowledge.tools import MAX_QUERY_CHARS, make_knowledge_tool

__all__ = [
    "CHECKPOINT_PAGE_BYTES",
    "SYSTEM_PROMPT",
    "build_agent",
    "build_config",
    "open_checkpointer",
    "open_store",
]

#: The page size of a new SQLite checkpoint file (SQLite's largest but one).
CHECKPOINT_PAGE_BYTES: Final = 32_768
SYSTEM_PROMPT: Final = (
    "You answer questions using the knowledge_search tool. Search before answering. Support each "
    "claim with the citation link of the result it comes from, copied exactly, e.g. "
    "[citation:Title](#knowledge-source-<id>). Never invent citations; if nothing relevant is "
    "found, say so."
)
#: Connections each PostgreSQL pool (checkpointer, store) keeps at most.
_POSTGRES_POOL_SIZE: Final = 10


def build_agent(
    provider: RetrievalProvider,
    model: BaseChatModel,
    checkpointer: BaseCheckpointSaver[Any] | None,
    *,
    max_tool_output_chars: int = GATEWAY_OUTPUT_MAX_CHARS,
    constrain_citations: bool = False,
) -> Any:
    """The gateway's agent. ``constrain_citations``: send each answer to tool results a decoding
    grammar that admits only the verified links (``constrain.py``); it runs inside the budget, so
    the grammar is built from the messages the model really sees."""
    middleware: list[Any] = [ToolOutputBudgetMiddleware(max_chars=max_tool_output_chars)]
    if constrain_citations:
        middleware.append(CitationGrammarMiddleware())
    return create_agent(
        model,
        tools=[make_knowledge_tool(provider)],
        system_prompt=SYSTEM_PROMPT,
        middleware=middleware,
        checkpointer=checkpointer,
    )


def open_checkpointer(target: str) -> AbstractAsyncContextManager[BaseCheckpointSaver[Any]]:
    """An async checkpointer for a SQLite file path or a ``postgres://`` / ``postgresql://`` URL."""

    @asynccontextmanager
    async def opened() -> AsyncIterator[BaseCheckpointSaver[Any]]:
        if is_postgres_url(target):
            try:
                from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
            except ImportError:
                raise RuntimeError(
                    "a Postgres checkpoint needs the 'postgres' extra: "
                    "pip install 'deerflow-knowledge[postgres]'"
                ) from None
            async with _postgres_pool(target) as pool:
                saver = AsyncPostgresSaver(pool, serde=MessageCachingSerializer())
                await saver.setup()
                yield saver
            return
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        if target != ":memory:":
            Path(target).expanduser().parent.mkdir(parents=True, exist_ok=True)
        # ``from_conn_string`` with a serializer: it takes none.
        async with aiosqlite.connect(target) as conn:
            # Every checkpoint row holds the thread's whole state (hundreds of kilobytes on a long
            # thread, a row per step): with 4 KiB pages SQLite chains a hundred overflow pages
            # per row and spent most of a long thread's run on them. Takes effect when the file
            # is created; an existing file keeps its page size.
            await conn.execute(f"PRAGMA page_size={CHECKPOINT_PAGE_BYTES}")
            sqlite_saver = AsyncSqliteSaver(conn, serde=MessageCachingSerializer())
            await sqlite_saver.setup()
            # LangGraph's saver turns WAL on; NORMAL sync (SQLite's recommendation for WAL) keeps
            # every commit across a crash of the process and spares an fsync per checkpoint, which
            # was most of a run's time (a run writes a checkpoint per step).
            await conn.execute("PRAGMA synchronous=NORMAL")
            yield sqlite_saver

    return opened()


@asynccontextmanager
async def _postgres_pool(url: str, *, max_size: int = _POSTGRES_POOL_SIZE) -> AsyncIterator[Any]:
    """A connection pool as LangGraph's PostgreSQL saver and store use a connection (autocommit,
    no prepared statements, dict rows) whose connections are checked before use: after a
    database restart a broken connection is replaced, so service comes back by itself."""
    import psycopg
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    # One direct connection first: an unreachable database fails the start at once with psycopg's
    # own error, instead of a pool retrying (and logging each retry) until its timeout.
    probe = await psycopg.AsyncConnection.connect(url, autocommit=True)
    await probe.close()
    async with AsyncConnectionPool(
        url,
        min_size=1,
        max_size=max_size,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        check=AsyncConnectionPool.check_connection,
        open=False,
    ) as pool:
        yield pool


def open_store(target: str) -> AbstractAsyncContextManager[BaseStore]:
    """The LangGraph store holding thread and run records: on the checkpointer's PostgreSQL
    database, or in a SQLite file next to the checkpoints (``threads.sqlite`` →
    ``threads.records.sqlite``: two connections writing one SQLite file would lock each other)."""

    @asynccontextmanager
    async def opened() -> AsyncIterator[BaseStore]:
        if is_postgres_url(target):
            from langgraph.store.postgres.aio import AsyncPostgresStore

            async with _postgres_pool(target) as pool:
                pg_store = AsyncPostgresStore(pool)
                await pg_store.setup()
                yield pg_store
            return
        from langgraph.store.sqlite.aio import AsyncSqliteStore

        path = target
        if target != ":memory:":
            file = Path(target).expanduser()
            file.parent.mkdir(parents=True, exist_ok=True)
            path = str(file.with_name(file.stem + ".records" + (file.suffix or ".sqlite")))
        async with AsyncSqliteStore.from_conn_string(path) as store:
            await store.setup()
            # Records are rewritten a few times per run; WAL with NORMAL sync survives a crash of
            # the process (not of the machine) and spares an fsync per write.
            await store.conn.execute("PRAGMA journal_mode=WAL")
            await store.conn.execute("PRAGMA synchronous=NORMAL")
            yield store

    return opened()


def build_config(
    provider: RetrievalProvider,
    *,
    model: BaseChatModel | None = None,
    model_label: str | None = None,
    checkpoint: str = GATEWAY_DEFAULTS.checkpoint,
    static_dir: Path | None = None,
    cors_origins: Sequence[str] = (),
    allowed_hosts: Sequence[str] | None = None,
    run_timeout: float = GATEWAY_DEFAULTS.run_timeout,
    constrain_citations: bool = False,
) -> GatewayConfig:
    chat_model = model or ExtractiveResponder()
    return GatewayConfig(
        build_agent=lambda saver: build_agent(
            provider, chat_model, saver, constrain_citations=constrain_citations
        ),
        open_checkpointer=lambda: open_checkpointer(checkpoint),
        open_store=lambda: open_store(checkpoint),
        provider_label=provider.name,
        model_label=model_label or (RESPONDER_LABEL if model is None else type(model).__name__),
        max_question_chars=MAX_QUERY_CHARS if model is None else None,
        static_dir=static_dir,
        cors_origins=tuple(cors_origins),
        allowed_hosts=None if allowed_hosts is None else tuple(allowed_hosts),
        run_timeout=run_timeout,
        open_coordination=(
            pg_coordination(checkpoint) if is_postgres_url(checkpoint) else in_process_coordination
        ),
    )
