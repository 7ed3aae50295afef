"""``/assistants`` (one assistant per configured agent), ``/info`` and ``/ok``.

Clients that list assistants (Agent Chat UI, LangGraph Studio) find the agent as graph ``agent``,
with its graph drawing and JSON schemas; it cannot be edited or versioned here.

Tested by ``tests/test_server_sdk.py`` and ``tests/test_server_reference.py``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response

from deerflow.knowledge.server.api._gateway import GRAPH_ID, Gateway, assistant_uuid, gateway
from deerflow.knowledge.server.api._http import ApiError, read_json, validate
from deerflow.knowledge.server.api._schemas import AssistantSearch
from deerflow.knowledge.server.wire._wire import dumps

__all__ = ["CREATED_AT", "router"]

#: Assistants are defined by the configuration, not created by a call: a fixed creation time.
CREATED_AT = "1970-01-01T00:00:00+00:00"

router = APIRouter()


def _assistant(gw: Gateway) -> dict[str, Any]:
    return {
        "assistant_id": assistant_uuid(GRAPH_ID),
        "graph_id": GRAPH_ID,
        "config": {},
        "context": {},
        "created_at": CREATED_AT,
        "updated_at": CREATED_AT,
        "metadata": {"created_by": "system"},
        "version": 1,
        "name": GRAPH_ID,
        "description": f"Knowledge agent over {gw.provider_label} ({gw.model_label})",
    }


def _json(value: Any) -> Response:
    return Response(dumps(value), media_type="application/json")


@router.post("/assistants/search")
async def search_assistants(request: Request, gw: Gateway = Depends(gateway)) -> Response:
    body = validate(AssistantSearch, await read_json(request))
    assistant = _assistant(gw)
    matches = (
        body.graph_id in (None, GRAPH_ID)
        and body.name in (None, GRAPH_ID)
        and all(assistant["metadata"].get(k) == v for k, v in (body.metadata or {}).items())
    )
    found = [assistant] if matches else []
    found = found[body.offset : body.offset + body.limit]
    if body.select:
        found = [{k: v for k, v in a.items() if k in body.select} for a in found]
    return _json(found)


@router.post("/assistants/count")
async def count_assistants(request: Request, gw: Gateway = Depends(gateway)) -> int:
    body = validate(AssistantSearch, await read_json(request))
    return int(body.graph_id in (None, GRAPH_ID))


@router.get("/assistants/{assistant_id}")
async def get_assistant(assistant_id: str, gw: Gateway = Depends(gateway)) -> Response:
    gw.assistant_id(assistant_id)
    return _json(_assistant(gw))


@router.get("/assistants/{assistant_id}/graph")
async def get_graph(
    assistant_id: str, xray: bool = False, gw: Gateway = Depends(gateway)
) -> Response:
    gw.assistant_id(assistant_id)
    return _json(gw.graph.get_graph(xray=xray).to_json())


@router.get("/assistants/{assistant_id}/schemas")
async def get_schemas(assistant_id: str, gw: Gateway = Depends(gateway)) -> Response:
    gw.assistant_id(assistant_id)
    graph = gw.graph
    return _json(
        {
            "graph_id": GRAPH_ID,
            "input_schema": graph.get_input_jsonschema(),
            "output_schema": graph.get_output_jsonschema(),
            "state_schema": graph.get_output_jsonschema(),
            "config_schema": graph.get_config_jsonschema(),
            "context_schema": graph.get_context_jsonschema(),
        }
    )


@router.get("/assistants/{assistant_id}/subgraphs")
async def get_subgraphs(assistant_id: str, gw: Gateway = Depends(gateway)) -> Response:
    gw.assistant_id(assistant_id)
    return _json({})


@router.api_route("/assistants", methods=["POST"])
@router.api_route("/assistants/{assistant_id}", methods=["PATCH", "DELETE"])
async def edit_assistant(assistant_id: str | None = None) -> Response:
    raise ApiError(
        501, "assistants are defined by the gateway's configuration and cannot be edited"
    )


@router.get("/info")
async def info(gw: Gateway = Depends(gateway)) -> dict[str, Any]:
    from deerflow.knowledge.server.engine._values import MAX_INPUT_MESSAGES

    return {
        "version": "deerflow-knowledge",
        "flags": {"assistants": True, "crons": False, "langsmith": False},
        "provider": gw.provider_label,
        "model": gw.model_label,
        "max_input_messages": MAX_INPUT_MESSAGES,
        "max_question_chars": gw.max_question_chars,
    }


@router.get("/ok")
async def ok() -> dict[str, bool]:
    return {"ok": True}
