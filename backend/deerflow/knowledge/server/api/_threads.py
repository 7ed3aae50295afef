"""``/threads``: create, get, patch, delete, search, count, state (read, write, at a checkpoint),
history — LangGraph Server's paths, bodies and response shapes.

State writes and a new thread's ``supersteps`` are caller-written values: they pass
``trusted_values`` (the trust boundary) before they reach the checkpointer.
"""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from langgraph.errors import InvalidUpdateError
from langgraph.types import StateUpdate as GraphStateUpdate

from deerflow.knowledge.server.api._gateway import Gateway, gateway
from deerflow.knowledge.server.api._http import ApiError, read_json, validate
from deerflow.knowledge.server.api._schemas import (
    MAX_THREAD_METADATA_BYTES,
    CheckpointRequest,
    HistoryRequest,
    StateUpdate,
    ThreadCreate,
    ThreadId,
    ThreadPatch,
    ThreadSearch,
    canonical_thread_id,
    metadata_bytes,
)
from deerflow.knowledge.server.engine._threadmeta import thread_with_state_time
from deerflow.knowledge.server.engine._values import (
    storable_values,
    subgraphs_refused,
    trusted_values,
)
from deerflow.knowledge.server.wire._wire import (
    WireEncoder,
    checkpoint_of,
    dumps,
    iso_now,
    state_to_wire,
)

__all__ = ["router"]

router = APIRouter()


def bounded_metadata(
    metadata: dict[str, Any], *, max_bytes: int = MAX_THREAD_METADATA_BYTES
) -> dict[str, Any]:
    """``metadata`` if a thread may hold it; a 422 saying how much it weighs otherwise."""
    size = metadata_bytes(metadata)
    if size > max_bytes:
        raise ApiError(
            422, f"a thread's metadata may hold at most {max_bytes} bytes of JSON (this: {size})"
        )
    return metadata


def _json(data: bytes, status_code: int = 200) -> Response:
    return Response(data, status_code=status_code, media_type="application/json")


async def _thread_wire(gw: Gateway, record: dict[str, Any], encoder: WireEncoder) -> bytes:
    snapshot = await gw.graph.aget_state(gw.thread_config(record["thread_id"]))
    values = encoder.values(snapshot.values) if snapshot.created_at else b"null"
    interrupts: dict[str, list[Any]] = {}
    for task in snapshot.tasks:
        if task.interrupts:
            interrupts[task.id] = list(task.interrupts)
    rest = {**thread_with_state_time(record), "interrupts": interrupts, "config": {}}
    return dumps(rest)[:-1] + b',"values":' + values + b"}"


@router.post("/threads")
async def create_thread(request: Request, gw: Gateway = Depends(gateway)) -> Response:
    body = validate(ThreadCreate, await read_json(request))
    if body.ttl is not None:
        raise ApiError(422, "ttl is not supported by this gateway")
    thread_id = canonical_thread_id(body.thread_id or str(uuid.uuid4()))
    try:
        uuid.UUID(thread_id)
    except ValueError:
        raise ApiError(422, "thread_id must be a UUID") from None
    existing = await gw.records.thread(thread_id)
    if existing is not None:
        if body.if_exists == "raise":
            raise ApiError(409, f"Thread {thread_id} already exists")
        return _json(await _thread_wire(gw, existing, WireEncoder()))
    metadata = dict(body.metadata)
    if body.graph_id is not None:
        gw.assistant_id(body.graph_id)
        metadata["graph_id"] = body.graph_id
    bounded_metadata(metadata)
    updates: list[list[GraphStateUpdate]] = []
    for step in body.supersteps or []:
        batch = []
        for update in step.updates:
            if update.command is not None:
                raise ApiError(422, "supersteps with a command are not supported by this gateway")
            gw.check_node(update.as_node)
            values, _ = trusted_values(storable_values(update.values))
            batch.append(GraphStateUpdate(values, update.as_node))
        updates.append(batch)
    if updates:
        try:
            await gw.graph.abulk_update_state(gw.thread_config(thread_id), updates)
        except InvalidUpdateError as exc:
            raise ApiError(422, f"invalid supersteps: {exc}") from None
    record = await gw.records.new_thread(thread_id, metadata)
    return _json(await _thread_wire(gw, record, WireEncoder()))


@router.get("/threads/{thread_id}")
async def get_thread(thread_id: ThreadId, gw: Gateway = Depends(gateway)) -> Response:
    return _json(await _thread_wire(gw, await gw.thread(thread_id), WireEncoder()))


@router.patch("/threads/{thread_id}")
async def patch_thread(
    thread_id: ThreadId, request: Request, gw: Gateway = Depends(gateway)
) -> Response:
    body = validate(ThreadPatch, await read_json(request))
    record = await gw.thread(thread_id)
    metadata = bounded_metadata({**record["metadata"], **body.metadata})
    record = await gw.records.touch_thread(thread_id, metadata=metadata) or record
    return _json(await _thread_wire(gw, record, WireEncoder()))


@router.delete("/threads/{thread_id}", status_code=204)
async def delete_thread(thread_id: ThreadId, gw: Gateway = Depends(gateway)) -> Response:
    await gw.thread(thread_id)

    async def forget(thread_id: str) -> None:
        await gw.saver.adelete_thread(thread_id)
        await gw.records.delete_thread(thread_id)

    # The thread's runs, in any process, stop before its checkpoints go: none writes after.
    await gw.runs.delete_thread(thread_id, forget)
    return Response(status_code=204)


def _refuse_unsupported(body: ThreadSearch) -> None:
    if body.values is not None:
        raise ApiError(422, "searching threads by values is not supported by this gateway")
    if body.extract is not None:
        raise ApiError(422, "extract is not supported by this gateway")


async def _search(gw: Gateway, body: ThreadSearch) -> list[dict[str, Any]]:
    """The page of matching thread records ``body`` asks for."""
    _refuse_unsupported(body)
    return await gw.records.search(
        metadata=body.metadata,
        status=body.status,
        ids=body.ids,
        sort_by=body.sort_by,
        sort_order=body.sort_order,
        limit=body.limit,
        offset=body.offset,
    )


@router.post("/threads/search")
async def search_threads(request: Request, gw: Gateway = Depends(gateway)) -> Response:
    body = validate(ThreadSearch, await read_json(request))
    page = await _search(gw, body)
    encoder = WireEncoder()
    items = [await _thread_wire(gw, record, encoder) for record in page]
    if body.select:
        import orjson

        keep = set(body.select)
        items = [dumps({k: v for k, v in orjson.loads(i).items() if k in keep}) for i in items]
    return _json(b"[" + b",".join(items) + b"]")


@router.post("/threads/count")
async def count_threads(request: Request, gw: Gateway = Depends(gateway)) -> int:
    body = validate(ThreadSearch, await read_json(request))
    _refuse_unsupported(body)
    return await gw.records.count(metadata=body.metadata, status=body.status, ids=body.ids)


async def _state(gw: Gateway, thread_id: str, checkpoint: dict[str, Any] | None) -> Response:
    subgraphs_refused(checkpoint)
    await gw.thread(thread_id)
    snapshot = await gw.graph.aget_state(gw.thread_config(thread_id, checkpoint))
    if checkpoint and checkpoint.get("checkpoint_id") and not snapshot.created_at:
        raise ApiError(404, f"Checkpoint {checkpoint['checkpoint_id']} not found")
    return _json(state_to_wire(snapshot, thread_id, WireEncoder()))


@router.get("/threads/{thread_id}/state")
async def get_state(
    thread_id: ThreadId, subgraphs: bool = False, gw: Gateway = Depends(gateway)
) -> Response:
    return await _state(gw, thread_id, None)


@router.get("/threads/{thread_id}/state/{checkpoint_id}")
async def get_state_at(
    thread_id: ThreadId, checkpoint_id: str, subgraphs: bool = False, gw: Gateway = Depends(gateway)
) -> Response:
    return await _state(gw, thread_id, {"checkpoint_id": checkpoint_id})


@router.post("/threads/{thread_id}/state/checkpoint")
async def post_state_at(
    thread_id: ThreadId, request: Request, gw: Gateway = Depends(gateway)
) -> Response:
    body = validate(CheckpointRequest, await read_json(request))
    return await _state(gw, thread_id, body.checkpoint)


@router.post("/threads/{thread_id}/state")
async def update_state(
    thread_id: ThreadId, request: Request, gw: Gateway = Depends(gateway)
) -> Response:
    body = validate(StateUpdate, await read_json(request))
    await gw.thread(thread_id)
    gw.check_node(body.as_node)
    if gw.runs.busy(thread_id) or await gw.runs.coordinator.active(thread_id):
        raise ApiError(409, f"Thread {thread_id} is busy with a run; write its state afterwards")
    checkpoint = body.checkpoint or (
        {"checkpoint_id": body.checkpoint_id} if body.checkpoint_id else None
    )
    subgraphs_refused(checkpoint)
    values, removed = trusted_values(storable_values(body.values))
    try:
        config = await gw.graph.aupdate_state(
            gw.thread_config(thread_id, checkpoint), values, as_node=body.as_node
        )
    except InvalidUpdateError as exc:
        raise ApiError(422, f"invalid state update: {exc}") from None
    await gw.records.touch_thread(thread_id, state_updated_at=iso_now())
    return _json(
        dumps({"checkpoint": checkpoint_of(config, thread_id), "reserved_keys_removed": removed})
    )


@router.post("/threads/{thread_id}/history")
async def history(
    thread_id: ThreadId, request: Request, gw: Gateway = Depends(gateway)
) -> Response:
    body = validate(HistoryRequest, await read_json(request))
    await gw.thread(thread_id)
    before = body.before
    if isinstance(before, str):
        before = {"checkpoint_id": before}
    subgraphs_refused(before if isinstance(before, dict) else None)
    subgraphs_refused(body.checkpoint)
    before_config = gw.thread_config(thread_id, before) if before else None
    encoder = WireEncoder()
    states = []
    async for snapshot in gw.graph.aget_state_history(
        gw.thread_config(thread_id, body.checkpoint),
        filter=body.metadata or None,
        before=before_config,
        limit=body.limit,
    ):
        states.append(state_to_wire(snapshot, thread_id, encoder))
    return _json(b"[" + b",".join(states) + b"]")


@router.get("/threads/{thread_id}/history")
async def history_get(
    thread_id: ThreadId, limit: int = 10, before: str | None = None, gw: Gateway = Depends(gateway)
) -> Response:
    await gw.thread(thread_id)
    encoder = WireEncoder()
    states = []
    before_config = gw.thread_config(thread_id, {"checkpoint_id": before}) if before else None
    async for snapshot in gw.graph.aget_state_history(
        gw.thread_config(thread_id), before=before_config, limit=max(1, min(limit, 1000))
    ):
        states.append(state_to_wire(snapshot, thread_id, encoder))
    return _json(b"[" + b",".join(states) + b"]")


@router.post("/threads/{thread_id}/copy")
async def copy_thread(thread_id: ThreadId, gw: Gateway = Depends(gateway)) -> Response:
    await gw.thread(thread_id)
    raise ApiError(501, "copying threads is not supported by this gateway")
