"""The reference gateway: threads, streamed runs, thread state — with a trust boundary.

Everything a caller sends (run input, state writes) passes through ``strip_reserved_keys`` before
it is stored or run, so the only evidence in a thread is evidence a server-side tool produced.
Streams and state reads serialise messages with their artifacts untouched, so the browser's
renderer re-verifies exactly what the tool wrote.

Endpoints (a small, LangGraph-server-like subset):

* ``GET  /api/info``                         provider, model label, limits
* ``POST /api/threads``                      create a thread
* ``GET  /api/threads``                      list threads, newest first
* ``GET  /api/threads/{id}/state``           ``{"values": {"messages": [...]}}``
* ``POST /api/threads/{id}/state``           write state (reserved keys stripped)
* ``POST /api/threads/{id}/runs/stream``     SSE: ``values`` and ``messages`` events
* ``GET  /``                                 the bundled chat page
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final, TypeVar

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from langchain_core.messages import BaseMessage, convert_to_messages
from langgraph.checkpoint.base import BaseCheckpointSaver
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from deerflow.knowledge.trust import Stripped, StripRefusedError, strip_reserved_keys

__all__ = [
    "MAX_INPUT_MESSAGES",
    "MAX_REQUEST_BYTES",
    "RUN_DRAIN_SECONDS",
    "GatewayConfig",
    "create_app",
    "message_to_wire",
]

MAX_REQUEST_BYTES: Final = 1_000_000
MAX_INPUT_MESSAGES: Final = 200
#: How long shutdown waits for runs still in progress before closing the checkpointer.
RUN_DRAIN_SECONDS: Final = 30.0
_log = logging.getLogger(__name__)
_ModelT = TypeVar("_ModelT", bound=BaseModel)


@dataclass(frozen=True)
class GatewayConfig:
    """What the gateway serves: an agent factory bound to a checkpointer, and labels for the UI."""

    build_agent: Callable[[BaseCheckpointSaver[Any]], Any]
    open_checkpointer: Callable[[], AbstractAsyncContextManager[BaseCheckpointSaver[Any]]]
    provider_label: str
    model_label: str
    static_dir: Path | None = None


class RunRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    input: dict[str, Any] | None = None
    stream_mode: list[str] = Field(default_factory=lambda: ["values", "messages"])


class StateWrite(BaseModel):
    model_config = ConfigDict(extra="ignore")

    values: dict[str, Any]
    as_node: str | None = None


def message_to_wire(message: BaseMessage) -> dict[str, Any]:
    """A message as the LangGraph SDK shows it (``type``, ``content``, ``artifact``, …)."""
    return message.model_dump(mode="json")


def _values_to_wire(values: Any) -> dict[str, Any]:
    messages = values.get("messages", []) if isinstance(values, dict) else []
    return {"messages": [message_to_wire(m) for m in messages if isinstance(m, BaseMessage)]}


def _sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def _parse_messages(raw: Any) -> list[BaseMessage]:
    if not isinstance(raw, list):
        raise HTTPException(422, "messages must be a list")
    if len(raw) > MAX_INPUT_MESSAGES:
        raise HTTPException(413, f"at most {MAX_INPUT_MESSAGES} messages per request")
    try:
        return list(convert_to_messages(raw))
    except (ValueError, TypeError, NotImplementedError) as exc:
        raise HTTPException(422, f"invalid messages: {type(exc).__name__}") from None


def _strip(value: Any) -> Stripped[Any]:
    try:
        return strip_reserved_keys(value)
    except StripRefusedError:
        raise HTTPException(422, "the request nests too deeply") from None


def _validate(model: type[_ModelT], data: Any) -> _ModelT:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        fields = ", ".join(".".join(str(p) for p in e["loc"]) or "body" for e in exc.errors()[:5])
        raise HTTPException(422, f"invalid request: {fields}") from None


async def _json_body(request: Request) -> Any:
    body = await request.body()
    if len(body) > MAX_REQUEST_BYTES:
        raise HTTPException(413, f"request body larger than {MAX_REQUEST_BYTES} bytes")
    try:
        return json.loads(body or b"{}")
    except ValueError:
        raise HTTPException(400, "request body is not JSON") from None


def create_app(config: GatewayConfig) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with config.open_checkpointer() as saver:
            app.state.saver = saver
            app.state.agent = config.build_agent(saver)
            app.state.runs = set()
            yield
            # Let runs whose clients went away finish before the checkpointer closes.
            if app.state.runs:
                await asyncio.wait(app.state.runs, timeout=RUN_DRAIN_SECONDS)

    app = FastAPI(title="deerflow-knowledge gateway", lifespan=lifespan)

    def agent(request: Request) -> Any:
        return request.app.state.agent

    def thread_config(thread_id: str) -> dict[str, Any]:
        try:
            uuid.UUID(thread_id)
        except ValueError:
            raise HTTPException(404, "unknown thread") from None
        return {"configurable": {"thread_id": thread_id}}

    async def existing(request: Request, thread_id: str) -> dict[str, Any]:
        cfg = thread_config(thread_id)
        snapshot = await agent(request).aget_state(cfg)
        if not snapshot.created_at:
            raise HTTPException(404, "unknown thread")
        return cfg

    @app.get("/api/info")
    async def info() -> dict[str, Any]:
        return {
            "provider": config.provider_label,
            "model": config.model_label,
            "max_input_messages": MAX_INPUT_MESSAGES,
        }

    @app.post("/api/threads")
    async def create_thread(request: Request) -> dict[str, Any]:
        thread_id = str(uuid.uuid4())
        await agent(request).aupdate_state(thread_config(thread_id), {"messages": []})
        return {"thread_id": thread_id}

    @app.get("/api/threads")
    async def list_threads(request: Request) -> list[dict[str, Any]]:
        latest: dict[str, dict[str, Any]] = {}
        async for item in request.app.state.saver.alist(None):
            thread_id = item.config["configurable"]["thread_id"]
            if thread_id in latest:
                continue
            messages = item.checkpoint.get("channel_values", {}).get("messages", [])
            first = next((m for m in messages if getattr(m, "type", "") == "human"), None)
            latest[thread_id] = {
                "thread_id": thread_id,
                "updated_at": item.checkpoint.get("ts"),
                "title": (first.text[:80] if first is not None else "New conversation"),
            }
        return sorted(latest.values(), key=lambda t: t["updated_at"] or "", reverse=True)

    @app.get("/api/threads/{thread_id}/state")
    async def get_state(request: Request, thread_id: str) -> dict[str, Any]:
        cfg = await existing(request, thread_id)
        snapshot = await agent(request).aget_state(cfg)
        return {"values": _values_to_wire(snapshot.values), "next": list(snapshot.next)}

    @app.post("/api/threads/{thread_id}/state")
    async def write_state(request: Request, thread_id: str) -> dict[str, Any]:
        cfg = await existing(request, thread_id)
        body = _validate(StateWrite, await _json_body(request))
        stripped = _strip(body.values)
        values = dict(stripped.value)
        if "messages" in values:
            values["messages"] = _parse_messages(values["messages"])
        await agent(request).aupdate_state(cfg, values, as_node=body.as_node)
        return {"ok": True, "reserved_keys_removed": stripped.removed}

    @app.post("/api/threads/{thread_id}/runs/stream")
    async def stream_run(request: Request, thread_id: str) -> StreamingResponse:
        cfg = await existing(request, thread_id)
        body = _validate(RunRequest, await _json_body(request))
        modes = [m for m in body.stream_mode if m in ("values", "messages", "updates")] or [
            "values"
        ]
        stripped = _strip(body.input or {})
        run_input = dict(stripped.value)
        run_input["messages"] = _parse_messages(run_input.get("messages", []))
        graph = agent(request)
        run_id = str(uuid.uuid4())
        # The run is a task of its own: a client that disconnects (a reload mid-answer) stops
        # receiving events, but the run still finishes and is checkpointed, so a reload shows it.
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()

        async def execute() -> None:
            try:
                async for mode, chunk in graph.astream(run_input, cfg, stream_mode=modes):
                    if mode == "values":
                        queue.put_nowait(_sse("values", _values_to_wire(chunk)))
                    elif mode == "messages":
                        message, metadata = chunk
                        node = {"langgraph_node": metadata.get("langgraph_node")}
                        queue.put_nowait(_sse("messages", [message_to_wire(message), node]))
                    else:
                        payload = json.loads(json.dumps(chunk, default=_wire_default))
                        queue.put_nowait(_sse("updates", payload))
            except Exception as exc:  # the stream must end with a clear event, not a dropped socket
                _log.exception("run %s failed", run_id)
                queue.put_nowait(
                    _sse("error", {"message": f"The run failed ({type(exc).__name__})."})
                )
            finally:
                queue.put_nowait(_sse("end", {"run_id": run_id}))
                queue.put_nowait(None)

        task = asyncio.create_task(execute())
        runs: set[asyncio.Task[None]] = request.app.state.runs
        runs.add(task)
        task.add_done_callback(runs.discard)

        async def events() -> AsyncIterator[bytes]:
            yield _sse("metadata", {"run_id": run_id, "reserved_keys_removed": stripped.removed})
            while (item := await queue.get()) is not None:
                yield item

        return StreamingResponse(
            events(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse({"error": exc.detail}, status_code=exc.status_code)

    static_dir = config.static_dir or _bundled_static()
    if static_dir is not None and (static_dir / "index.html").is_file():
        index = static_dir / "index.html"

        @app.get("/", include_in_schema=False)
        async def page() -> FileResponse:
            return FileResponse(index, headers={"Cache-Control": "no-cache"})

        app.mount("/", StaticFiles(directory=static_dir), name="static")
    return app


def _wire_default(value: Any) -> Any:
    if isinstance(value, BaseMessage):
        return message_to_wire(value)
    return repr(value)


def _bundled_static() -> Path | None:
    folder = resources.files("deerflow.knowledge.server") / "static"
    path = Path(str(folder))
    return path if path.is_dir() else None
