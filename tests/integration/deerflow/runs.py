"""Drive one DeerFlow thread through its LangGraph-compatible API and collect every view of it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tests.integration.deerflow.gateway import Gateway, SSEEvent
from tests.integration.deerflow.stub_model import MODEL_NAME

ASSISTANT = "lead_agent"
# DeerFlow's per-run context: the stub model, no thinking, no plan mode, no subagents.
CONTEXT = {
    "model_name": MODEL_NAME,
    "thinking_enabled": False,
    "is_plan_mode": False,
    "subagent_enabled": False,
}
RUN_ID = re.compile(r"/runs/([^/?#]+)$")


@dataclass
class Run:
    thread_id: str
    run_id: str
    events: list[SSEEvent] = field(default_factory=list)


def run_body(
    messages: list[dict[str, Any]], stream_mode: list[str] | str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "assistant_id": ASSISTANT,
        "input": {"messages": messages},
        "context": CONTEXT,
    }
    if stream_mode is not None:
        body["stream_mode"] = stream_mode
    return body


def user(text: str) -> dict[str, Any]:
    return {"type": "human", "content": text}


def stream_run(
    gateway: Gateway,
    messages: list[dict[str, Any]],
    stream_mode: list[str] | str,
    thread_id: str | None = None,
) -> Run:
    thread_id = thread_id or gateway.new_thread()
    events, headers = gateway.stream(
        f"/api/threads/{thread_id}/runs/stream", run_body(messages, stream_mode)
    )
    location = headers.get("content-location", "")
    found = RUN_ID.search(location)
    assert found, f"no run id in Content-Location {location!r}"
    errors = [e for e in events if e.event == "error"]
    assert not errors, f"the run failed: {errors}"
    return Run(thread_id, found.group(1), events)


def state(gateway: Gateway, thread_id: str) -> dict[str, Any]:
    return gateway.get(f"/api/threads/{thread_id}/state")


def history(gateway: Gateway, thread_id: str) -> list[dict[str, Any]]:
    return gateway.post(f"/api/threads/{thread_id}/history", {"limit": 50})
