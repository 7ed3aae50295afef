"""The reference gateway: the LangGraph Platform API subset under ``/api``, the chat page at ``/``.

``useStream``, ``@langchain/langgraph-sdk``'s ``Client`` and the Python ``langgraph-sdk`` talk to it
unchanged (point them at ``http://HOST:PORT/api``). Routes live in ``_threads``, ``_runs`` and
``_assistants``; this module wires them to the checkpointer and the store, adds CORS for the
configured origins only, refuses requests for hosts it does not serve and writes from origins it
does not allow (``_origin``), and makes sure the chat page never shadows an API path: anything under
``/api`` that no route serves is a JSON 404.

Everything a caller writes passes ``strip_reserved_keys`` before it is stored or run, so the only
evidence in a thread is evidence a server-side tool produced.

Tested by ``tests/test_server.py`` and, against ``langgraph dev``,
``tests/test_server_reference.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from deerflow.knowledge.server._defaults import GATEWAY_DEFAULTS, bundled_page_dir
from deerflow.knowledge.server.api import _assistants as assistants
from deerflow.knowledge.server.api import _runs as runs
from deerflow.knowledge.server.api import _threads as threads
from deerflow.knowledge.server.api._gateway import Gateway
from deerflow.knowledge.server.api._http import (
    MAX_REQUEST_BYTES,
    ApiError,
    api_error,
    error_body,
    refusal_error,
)
from deerflow.knowledge.server.api._origin import OriginGuard
from deerflow.knowledge.server.engine._coordination import Coordination, in_process_coordination
from deerflow.knowledge.server.engine._manager import RunManager
from deerflow.knowledge.server.engine._values import MAX_INPUT_MESSAGES, RequestRefused
from deerflow.knowledge.server.errors import GatewayError
from deerflow.knowledge.server.wire._wire import message_to_wire

__all__ = [
    "API_PREFIX",
    "MAX_INPUT_MESSAGES",
    "MAX_REQUEST_BYTES",
    "RUN_DRAIN_SECONDS",
    "GatewayConfig",
    "create_app",
    "message_to_wire",
]

API_PREFIX: Final = "/api"
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
    #: Names a request's ``Host`` may give (``_origin.host_allowed``); None: not checked here.
    #: ``serve`` always checks: the address it is bound to, ``localhost`` and these.
    allowed_hosts: Sequence[str] | None = None
    run_timeout: float = GATEWAY_DEFAULTS.run_timeout
    #: The records and the run coordinator, opened on the store: this process alone by default;
    #: ``_pgruns.pg_coordination`` shares runs with the other gateway processes on a PostgreSQL.
    open_coordination: Callable[[BaseStore], AbstractAsyncContextManager[Coordination]] = (
        in_process_coordination
    )


@asynccontextmanager
async def _memory_store() -> AsyncIterator[BaseStore]:
    from langgraph.store.memory import InMemoryStore

    yield InMemoryStore()


def create_app(config: GatewayConfig) -> FastAPI:
    """The gateway as an ASGI app. Creating and running it changes nothing process-wide (the
    executor, the switch interval, the collector, LangSmith's hooks): ``serve`` tunes the process
    it owns, an application that mounts the app keeps its own settings."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        open_store = config.open_store or _memory_store
        async with (
            config.open_checkpointer() as saver,
            open_store() as store,
            config.open_coordination(store) as coordination,
        ):
            graph = config.build_agent(saver)
            records = coordination.records

            async def forget_thread(thread_id: str) -> None:
                await saver.adelete_thread(thread_id)
                await records.delete_thread(thread_id)

            manager = RunManager(
                graph,
                records,
                run_timeout=config.run_timeout,
                on_thread_done=forget_thread,
                coordinator=coordination.runs,
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

    @app.exception_handler(GatewayError)
    async def refused(request: Request, exc: GatewayError) -> JSONResponse:
        return await http_error(request, api_error(exc))

    @app.exception_handler(RequestRefused)
    async def value_refused(request: Request, exc: RequestRefused) -> JSONResponse:
        return await http_error(request, refusal_error(exc))

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

    static_dir = config.static_dir or bundled_page_dir()
    if static_dir is not None and (static_dir / "index.html").is_file():
        index = static_dir / "index.html"

        @app.get("/", include_in_schema=False)
        async def page() -> FileResponse:
            return FileResponse(index, headers={"Cache-Control": "no-cache"})

        app.mount("/", StaticFiles(directory=static_dir), name="static")
    return app
