"""Runs: on a thread (``stream``, ``wait``, background ``create``, ``get``, ``list``, ``join``,
``join_stream``, ``cancel``, ``delete``) and stateless (``/runs/stream``, ``/runs/wait``, ``/runs``).

A route reads and validates the request and finds its thread; the run's plan (its input, its
``command``, its config and ``context``, all caller-written values that pass the trust boundary
before the graph sees them) is made by the engine's ``_runplan``, and the run by ``_manager``.
Options the gateway does not implement answer 422. A run started by another gateway process on
the same database can be joined too: on PostgreSQL its events are in the database
(``postgres/_pgruns.py``: replayed, then followed through ``LISTEN``/``NOTIFY``), otherwise the
join follows its record and the checkpoints it writes (``values`` only).

Tested by ``tests/test_server_runs_lifecycle.py``, ``tests/test_server_sdk.py`` (the official
clients) and ``tests/test_server_reference.py``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any, Final

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import StreamingResponse

from deerflow.knowledge.server.api._gateway import GRAPH_ID, Gateway, gateway
from deerflow.knowledge.server.api._http import ApiError, last_event_id, read_json, validate
from deerflow.knowledge.server.api._schemas import (
    RunCreate,
    ThreadId,
    canonical_thread_id,
    unsupported_options,
)
from deerflow.knowledge.server.engine._manager import RunPlan
from deerflow.knowledge.server.engine._records import TERMINAL_RUN_STATUSES
from deerflow.knowledge.server.engine._runplan import request_metadata, run_plan, stream_modes
from deerflow.knowledge.server.engine._streaming import Event, RunStream, sse_chunks, sse_frame
from deerflow.knowledge.server.engine._threadmeta import (
    started_thread_metadata,
)
from deerflow.knowledge.server.wire._wire import WireEncoder, dumps

__all__ = ["REMOTE_POLL_SECONDS", "router"]

#: How often a join of another process's run reads the shared database.
REMOTE_POLL_SECONDS: Final = 0.25
_SSE_HEADERS: Final = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

router = APIRouter()


async def _plan(gw: Gateway, request: Request, thread_id: str | None) -> tuple[RunPlan, RunCreate]:
    body = validate(RunCreate, await read_json(request))
    unsupported = unsupported_options(body)
    if unsupported:
        raise ApiError(422, f"{', '.join(unsupported)}: not supported by this gateway")
    assistant_id = gw.assistant_id(body.assistant_id)
    metadata = request_metadata(body, graph_id=GRAPH_ID, assistant_id=assistant_id)
    stateless = thread_id is None
    thread: dict[str, Any] | None = None
    thread_id = str(uuid.uuid4()) if thread_id is None else canonical_thread_id(thread_id)
    if not stateless and body.if_not_exists == "create":
        try:
            thread = await gw.thread(thread_id)
        except ApiError as exc:
            if exc.status_code != 404:
                raise
            try:
                uuid.UUID(thread_id)
            except ValueError:
                raise ApiError(422, "thread_id must be a UUID") from None
            thread = await gw.records.new_thread(thread_id, metadata.new_thread)
    elif not stateless:
        thread = await gw.thread(thread_id)
    # The merge is written once the request is known to be valid (below).
    started = (
        started_thread_metadata(
            thread["metadata"],
            status=thread["status"],
            graph_id=GRAPH_ID,
            assistant_id=assistant_id,
        )
        if thread is not None
        else None
    )
    # A stateless run's record has no thread metadata (graph_id): LangGraph Server's has none.
    thread_metadata = started or (thread["metadata"] if thread is not None else {})
    schema = gw.graph.get_context_jsonschema() if gw.graph.context_schema is not None else None
    plan = run_plan(
        body,
        thread_id=thread_id,
        assistant_id=assistant_id,
        graph_id=GRAPH_ID,
        thread_metadata=thread_metadata,
        metadata=metadata,
        stateless=stateless,
        nodes=gw.graph.nodes,
        context_schema=schema,
    )
    if started is not None:
        await gw.records.touch_thread(thread_id, metadata=started)
    if stateless:
        await gw.records.new_thread(thread_id, metadata.new_thread)
    return plan, body


def _run_headers(record: dict[str, Any], *, location: str | None) -> dict[str, str]:
    """``Content-Location`` (the run) and ``Location`` (``location``: its ``stream`` or ``join``),
    as LangGraph Server sends them, relative to the API root as the SDKs resolve them."""
    base = f"/threads/{record['thread_id']}/runs/{record['run_id']}"
    headers = {"Content-Location": base}
    if location is not None:
        headers["Location"] = f"{base}/{location}"
    return headers


def _sse(
    gw: Gateway,
    stream: RunStream,
    *,
    after: int = -1,
    modes: list[str] | None = None,
    cancel_on_disconnect: bool = False,
    headers: dict[str, str] | None = None,
) -> StreamingResponse:
    async def frames() -> AsyncIterator[bytes | memoryview]:
        try:
            async for batch in stream.follow(after=after, modes=modes):
                for chunk in sse_chunks(batch, with_id=stream.resumable):
                    yield chunk
        finally:
            if cancel_on_disconnect and not stream.done.is_set():
                gw.runs.cancel(stream.run_id)

    return StreamingResponse(
        frames(), media_type="text/event-stream", headers={**_SSE_HEADERS, **(headers or {})}
    )


async def _stream(gw: Gateway, request: Request, thread_id: str | None) -> StreamingResponse:
    plan, body = await _plan(gw, request, thread_id)
    record, stream = await gw.runs.start(plan)
    return _sse(
        gw,
        stream,
        cancel_on_disconnect=body.on_disconnect == "cancel",
        # LangGraph Server names the join stream of every streamed run, resumable or not.
        headers=_run_headers(record, location="stream"),
    )


async def _final_values(gw: Gateway, stream: RunStream, thread_id: str) -> bytes:
    errors = [e for e in stream.events if e.name == "error"]
    if errors:
        return b'{"__error__":' + errors[-1].data + b"}"
    snapshot = await gw.graph.aget_state(gw.thread_config(thread_id))
    return WireEncoder().values(snapshot.values or {})


async def _wait(gw: Gateway, request: Request, thread_id: str | None) -> Response:
    plan, body = await _plan(gw, request, thread_id)
    plan.modes = ["values"]  # a stateless thread is gone when the run ends: keep its last values
    record, stream = await gw.runs.start(plan)
    try:
        await stream.done.wait()
    except asyncio.CancelledError:
        if body.on_disconnect == "cancel":
            gw.runs.cancel(stream.run_id)
        raise
    if plan.delete_thread_after:
        errors = [e for e in stream.events if e.name == "error"]
        last = [e for e in stream.events if e.name == "values"]
        values = (
            b'{"__error__":' + errors[-1].data + b"}"
            if errors
            else last[-1].data
            if last
            else b"null"
        )
    else:
        values = await _final_values(gw, stream, plan.thread_id)
    return Response(
        values,
        media_type="application/json",
        headers=_run_headers(record, location="join"),
    )


@router.post("/threads/{thread_id}/runs/stream")
async def stream_run(
    thread_id: ThreadId, request: Request, gw: Gateway = Depends(gateway)
) -> Response:
    return await _stream(gw, request, thread_id)


@router.post("/runs/stream")
async def stream_stateless(request: Request, gw: Gateway = Depends(gateway)) -> Response:
    return await _stream(gw, request, None)


@router.post("/threads/{thread_id}/runs/wait")
async def wait_run(
    thread_id: ThreadId, request: Request, gw: Gateway = Depends(gateway)
) -> Response:
    return await _wait(gw, request, thread_id)


@router.post("/runs/wait")
async def wait_stateless(request: Request, gw: Gateway = Depends(gateway)) -> Response:
    return await _wait(gw, request, None)


@router.post("/threads/{thread_id}/runs")
async def create_run(
    thread_id: ThreadId, request: Request, gw: Gateway = Depends(gateway)
) -> Response:
    plan, _ = await _plan(gw, request, thread_id)
    record = (await gw.runs.start(plan))[0]
    return Response(
        dumps(_wire_run(record)),
        media_type="application/json",
        headers=_run_headers(record, location="stream" if plan.resumable else None),
    )


@router.post("/runs")
async def create_stateless(request: Request, gw: Gateway = Depends(gateway)) -> Response:
    plan, _ = await _plan(gw, request, None)
    record = (await gw.runs.start(plan))[0]
    return Response(
        dumps(_wire_run(record)),
        media_type="application/json",
        headers=_run_headers(record, location=None),
    )


@router.get("/threads/{thread_id}/runs")
async def list_runs(
    thread_id: ThreadId,
    limit: int = Query(10, ge=1, le=1000),
    offset: int = Query(0, ge=0),
    status: str | None = None,
    gw: Gateway = Depends(gateway),
) -> Response:
    await gw.thread(thread_id)
    runs = await gw.records.runs(thread_id)
    if status is not None:
        runs = [r for r in runs if r["status"] == status]
    page = [_wire_run(r) for r in runs[offset : offset + limit]]
    return Response(dumps(page), media_type="application/json")


def _wire_run(record: dict[str, Any]) -> dict[str, Any]:
    # ``owner`` (host and pid of the process running it) is the gateway's own bookkeeping.
    return {k: v for k, v in record.items() if k != "owner"}


async def _run(gw: Gateway, thread_id: str, run_id: str) -> dict[str, Any]:
    await gw.thread(thread_id)
    record = await gw.records.run(thread_id, run_id)
    if record is None:
        raise ApiError(404, f"Run {run_id} not found")
    return record


@router.get("/threads/{thread_id}/runs/{run_id}")
async def get_run(thread_id: ThreadId, run_id: str, gw: Gateway = Depends(gateway)) -> Response:
    record = _wire_run(await _run(gw, thread_id, run_id))
    return Response(dumps(record), media_type="application/json")


@router.delete("/threads/{thread_id}/runs/{run_id}", status_code=204)
async def delete_run(thread_id: ThreadId, run_id: str, gw: Gateway = Depends(gateway)) -> Response:
    record = await _run(gw, thread_id, run_id)
    if record["status"] not in TERMINAL_RUN_STATUSES:
        raise ApiError(409, f"Run {run_id} is still {record['status']}; cancel it first")
    await gw.records.delete_run(thread_id, run_id)
    return Response(status_code=204)


@router.post("/threads/{thread_id}/runs/{run_id}/cancel")
async def cancel_run(
    thread_id: ThreadId,
    run_id: str,
    wait: bool = False,
    action: str = "interrupt",
    gw: Gateway = Depends(gateway),
) -> Response:
    record = await _run(gw, thread_id, run_id)
    if action != "interrupt":
        raise ApiError(422, f"cancel action {action!r} is not supported by this gateway")
    if record["status"] in TERMINAL_RUN_STATUSES:
        raise ApiError(409, f"Run {run_id} has already ended ({record['status']})")
    stream = gw.runs.stream(run_id)
    if stream is None:
        coordinator = gw.runs.coordinator
        if not await coordinator.cancel(run_id):
            raise ApiError(409, f"Run {run_id} runs in another gateway process; cancel it there")
        if wait:
            async for _ in coordinator.follow(run_id, modes=()):
                pass
        return Response(status_code=204 if wait else 202)
    gw.runs.cancel(run_id)
    if wait:
        await stream.done.wait()
    # LangGraph Server: 202, the cancellation is under way.
    return Response(status_code=204 if wait else 202)


@router.get("/threads/{thread_id}/runs/{run_id}/join")
async def join_run(thread_id: ThreadId, run_id: str, gw: Gateway = Depends(gateway)) -> Response:
    await _run(gw, thread_id, run_id)
    stream = gw.runs.stream(run_id)
    if stream is not None:
        await stream.done.wait()
        values = await _final_values(gw, stream, thread_id)
    elif await gw.runs.coordinator.run(run_id) is not None:
        errors = [
            e async for e in gw.runs.coordinator.follow(run_id, modes=()) if e.name == "error"
        ]
        if errors:
            values = b'{"__error__":' + errors[-1].data + b"}"
        else:
            snapshot = await gw.graph.aget_state(gw.thread_config(thread_id))
            values = WireEncoder().values(snapshot.values or {})
    else:
        record = await _await_remote(gw, thread_id, run_id)
        if record["status"] in ("error", "timeout"):
            values = dumps({"__error__": {"error": record["status"], "message": "The run failed."}})
        else:
            snapshot = await gw.graph.aget_state(gw.thread_config(thread_id))
            values = WireEncoder().values(snapshot.values or {})
    return Response(
        values,
        media_type="application/json",
        headers=_run_headers({"thread_id": thread_id, "run_id": run_id}, location="join"),
    )


async def _await_remote(gw: Gateway, thread_id: str, run_id: str) -> dict[str, Any]:
    while True:
        record = await gw.records.run(thread_id, run_id)
        if record is None:
            raise ApiError(404, f"Run {run_id} not found")
        if record["status"] in TERMINAL_RUN_STATUSES or gw.runs.orphaned(record):
            return record
        await asyncio.sleep(REMOTE_POLL_SECONDS)


@router.get("/threads/{thread_id}/runs/{run_id}/stream")
async def join_stream(
    thread_id: ThreadId,
    run_id: str,
    request: Request,
    stream_mode: list[str] | None = Query(None),
    cancel_on_disconnect: bool = False,
    gw: Gateway = Depends(gateway),
) -> Response:
    record = await _run(gw, thread_id, run_id)
    requested = [m for mode in stream_mode or [] for m in mode.split(",") if m]
    modes = stream_modes(requested) if requested else None
    after = last_event_id(request.headers.get("last-event-id"))
    stream = gw.runs.stream(run_id)
    headers = _run_headers(record, location="stream")
    if stream is not None:
        return _sse(
            gw,
            stream,
            after=after,
            modes=modes,
            cancel_on_disconnect=cancel_on_disconnect,
            headers=headers,
        )
    coordinator = gw.runs.coordinator
    found = await coordinator.run(run_id)
    if found is not None:
        frames = coordinator.frames(found, after=after, modes=modes, cancel=cancel_on_disconnect)
        return StreamingResponse(
            frames, media_type="text/event-stream", headers={**_SSE_HEADERS, **headers}
        )
    return StreamingResponse(
        _remote_frames(gw, record),
        media_type="text/event-stream",
        headers={**_SSE_HEADERS, **headers},
    )


async def _remote_frames(gw: Gateway, record: dict[str, Any]) -> AsyncIterator[bytes]:
    """A run of another process, followed through the checkpoints it writes (``values`` only)."""
    thread_id, run_id = record["thread_id"], record["run_id"]
    yield sse_frame(Event(0, "metadata", dumps({"run_id": run_id, "attempt": 1})), with_id=False)
    seen: str | None = None
    encoder = WireEncoder()
    while True:
        current = await gw.records.run(thread_id, run_id)
        ended = (
            current is None
            or current["status"] in TERMINAL_RUN_STATUSES
            or gw.runs.orphaned(current)
        )
        snapshot = await gw.graph.aget_state(gw.thread_config(thread_id))
        checkpoint_id = (snapshot.config or {}).get("configurable", {}).get("checkpoint_id")
        if checkpoint_id != seen and snapshot.created_at:
            seen = checkpoint_id
            if snapshot.created_at >= record["created_at"] or ended:
                yield sse_frame(Event(0, "values", encoder.values(snapshot.values)), with_id=False)
        if ended:
            if current is not None and current["status"] in ("error", "timeout"):
                error = {"error": current["status"], "message": "The run failed."}
                yield sse_frame(Event(0, "error", dumps(error)), with_id=False)
            return
        await asyncio.sleep(REMOTE_POLL_SECONDS)
