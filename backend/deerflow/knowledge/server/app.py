"""The reference gateway: the LangGraph Platform API subset under ``/api``, the chat page at ``/``.

``useStream``, ``@langchain/langgraph-sdk``'s ``Client`` and the Python ``langgraph-sdk`` talk to it
unchanged (point them at ``http://HOST:PORT/api``). Routes live in ``threads``, ``runs`` and
``assistants``; this module wires them to the checkpointer and the store, adds CORS for the
configured origins only, refuses requests for hosts it does not serve and writes from origins it
does not allow (``origin``), and makes sure the chat page never shadows an API path: anything under
``/api`` that no route serves is a JSON 404.

Everything a caller writes passes ``strip_reserved_keys`` before it is stored or run, so the only
evidence in a thread is evidence a server-side tool produced.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager, nullcontext
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore
from langsmith import set_runtime_overrides
from langsmith._runtime_overrides import get_runtime_overrides
from langsmith.utils import tracing_is_enabled

from deerflow.knowledge.server import assistants, runs, threads
from deerflow.knowledge.server.gateway import MAX_INPUT_MESSAGES, Gateway
from deerflow.knowledge.server.http import MAX_REQUEST_BYTES, ApiError, error_body
from deerflow.knowledge.server.manager import DEFAULT_RUN_TIMEOUT_SECONDS, RunManager
from deerflow.knowledge.server.origin import OriginGuard
from deerflow.knowledge.server.pgruns import PgRuns
from deerflow.knowledge.server.pgthreads import PgThreadSearch
from deerflow.knowledge.server.records import Records
from deerflow.knowledge.server.wire import message_to_wire

__all__ = [
    "API_PREFIX",
    "MAX_INPUT_MESSAGES",
    "MAX_REQUEST_BYTES",
    "RUN_DRAIN_SECONDS",
    "SWITCH_INTERVAL_SECONDS",
    "WORKER_THREADS",
    "GatewayConfig",
    "create_app",
    "message_to_wire",
]

API_PREFIX: Final = "/api"
SWITCH_INTERVAL_SECONDS: Final = 0.0005
#: Worker threads for the agent's blocking steps (shared by all runs of the process).
WORKER_THREADS: Final = 64
#: How long shutdown waits for runs still in progress before closing the checkpointer.
RUN_DRAIN_SECONDS: Final = 30.0


@dataclass(frozen=True)
class GatewayConfig:
    """What the gateway serves: an agent factory bound to a checkpointer, and labels for the UI."""

    build_agent: Callable[[BaseCheckpointSaver[Any]], Any]
    open_checkpointer: Callable[[], AbstractAsyncContextManager[BaseCheckpointSaver[Any]]]
    provider_label: str
    model_label: str
    #: The longest question a caller may ask (code points), told to the page by ``/info``; the
    #: offline responder searches with the question itself, so the query limit is the question's.
    max_question_chars: int | None = None
    open_store: Callable[[], AbstractAsyncContextManager[BaseStore]] | None = None
    static_dir: Path | None = None
    #: Origins allowed to call the API from a browser (CORS); none by default.
    cors_origins: Sequence[str] = ()
    #: Names a request's ``Host`` may give (``origin.host_allowed``); None: not checked here.
    #: ``serve`` always checks: the address it is bound to, ``localhost`` and these.
    allowed_hosts: Sequence[str] | None = None
    run_timeout: float = DEFAULT_RUN_TIMEOUT_SECONDS
    #: Runs shared with other gateway processes on the same PostgreSQL (``pgruns``).
    open_shared: Callable[[], AbstractAsyncContextManager[PgRuns]] | None = None
    #: Tune the whole process for serving (a bounded default executor, a shorter GIL switch
    #: interval, ``gc.freeze`` after start-up, LangSmith's untraced steps kept on the loop).
    #: ``serve`` sets it: the process is the gateway's. An application that embeds the app keeps
    #: its own process settings (the default, False).
    tune_process: bool = False


async def _inline_unless_tracing(
    default: Callable[..., Any],
    ctx: contextvars.Context,
    func: Callable[..., Any],
    /,
    *args: Any,
    **kwargs: Any,
) -> Any:
    # LangChain's agent wraps each model and tool call in LangSmith's ``traceable``, which hands
    # its run setup and teardown to a worker thread even when nothing is traced: a dozen thread
    # round trips per run, each a GIL hand-off. Untraced, that bookkeeping is a few dict reads.
    if ctx.run(tracing_is_enabled):
        return await default(ctx, func, *args, **kwargs)
    return ctx.run(func, *args, **kwargs)


@contextmanager
def _untraced_steps_inline() -> Iterator[None]:
    """LangSmith's ``aio_to_thread`` override (its public runtime hook) while the app runs,
    unless the embedding application installed one of its own."""
    if get_runtime_overrides().aio_to_thread is not None:
        yield
        return
    set_runtime_overrides(aio_to_thread=_inline_unless_tracing)
    try:
        yield
    finally:
        if get_runtime_overrides().aio_to_thread is _inline_unless_tracing:
            set_runtime_overrides()


@asynccontextmanager
async def _memory_store() -> AsyncIterator[BaseStore]:
    from langgraph.store.memory import InMemoryStore

    yield InMemoryStore()


def create_app(config: GatewayConfig) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if config.tune_process:
            # The agent's CPU-heavy steps run in the loop's default executor; Python's default of
            # cpu_count + 4 workers lets a few stuck runs queue every other user's steps behind.
            asyncio.get_running_loop().set_default_executor(
                ThreadPoolExecutor(max_workers=WORKER_THREADS, thread_name_prefix="gateway-step")
            )
            # A worker thread stuck in pure-Python work holds the GIL for a whole switch interval
            # each time the event loop wakes; a shorter interval keeps the loop serving others.
            sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
        open_store = config.open_store or _memory_store
        shared_runs = config.open_shared() if config.open_shared else nullcontext(None)
        with _untraced_steps_inline() if config.tune_process else nullcontext():
            async with (
                config.open_checkpointer() as saver,
                open_store() as store,
                shared_runs as shared,
            ):
                graph = config.build_agent(saver)
                records = Records(store, search=PgThreadSearch(shared.pool) if shared else None)

                async def forget_thread(thread_id: str) -> None:
                    await saver.adelete_thread(thread_id)
                    await records.delete_thread(thread_id)

                manager = RunManager(
                    graph,
                    records,
                    run_timeout=config.run_timeout,
                    on_thread_done=forget_thread,
                    shared=shared,
                )
                app.state.gateway = Gateway(
                    graph=graph,
                    saver=saver,
                    records=records,
                    runs=manager,
                    provider_label=config.provider_label,
                    model_label=config.model_label,
                    max_question_chars=config.max_question_chars,
                )
                await manager.recover()  # runs a killed process left are ended, not stuck
                # What the process holds by now (modules, the graph, the agent's tools: over a
                # hundred thousand objects) lives as long as the app; the collector need not
                # walk it again every time a run's garbage triggers a full collection.
                if config.tune_process:
                    gc.freeze()
                yield
                # Let runs whose clients went away finish before the checkpointer closes.
                await manager.drain(RUN_DRAIN_SECONDS)

    app = FastAPI(title="deerflow-knowledge gateway", lifespan=lifespan)
    for module in (threads, runs, assistants):
        app.include_router(module.router, prefix=API_PREFIX)

    @app.api_route(
        API_PREFIX + "/{path:path}",
        methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
        include_in_schema=False,
    )
    async def unknown(path: str) -> JSONResponse:
        raise ApiError(404, f"no API operation at /api/{path}")

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse(
            error_body(str(exc.detail)), status_code=exc.status_code, headers=exc.headers
        )

    @app.exception_handler(RequestValidationError)
    async def query_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        where = ", ".join(".".join(str(p) for p in e["loc"]) for e in exc.errors()[:5])
        return JSONResponse(error_body(f"invalid request: {where}"), status_code=422)

    try:
        from psycopg import OperationalError  # the postgres extra; PoolTimeout is one too
    except ImportError:
        pass
    else:

        @app.exception_handler(OperationalError)
        async def database_down(_: Request, exc: OperationalError) -> JSONResponse:
            # The database is restarting or unreachable: a client may retry, nothing is lost.
            detail = "the database is unavailable; try again shortly"
            return JSONResponse(error_body(detail), status_code=503, headers={"Retry-After": "2"})

    if config.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(config.cors_origins),
            allow_methods=["GET", "POST", "PATCH", "DELETE", "OPTIONS"],
            allow_headers=["*"],
            expose_headers=["Content-Location", "Location"],
        )

    # Outermost: a refused request reaches neither CORS nor a route.
    app.add_middleware(
        OriginGuard, allowed_hosts=config.allowed_hosts, cors_origins=config.cors_origins
    )

    static_dir = config.static_dir or _bundled_static()
    if static_dir is not None and (static_dir / "index.html").is_file():
        index = static_dir / "index.html"

        @app.get("/", include_in_schema=False)
        async def page() -> FileResponse:
            return FileResponse(index, headers={"Cache-Control": "no-cache"})

        app.mount("/", StaticFiles(directory=static_dir), name="static")
    return app


def _bundled_static() -> Path | None:
    folder = resources.files("deerflow.knowledge.server") / "static"
    path = Path(str(folder))
    return path if path.is_dir() else None
