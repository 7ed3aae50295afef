"""One sequence of requests, sent to a LangGraph Platform API server, recorded for comparison.

The differential test plays it against the gateway and against ``langgraph dev`` serving the same
graph over the same (gated) LightRAG upstream, through raw HTTP (``httpx``, JSON bodies) and the
official Python client. Each step records the status code, the body (ids and timestamps
normalised), the headers clients read, and for SSE the event names in order. ``diff`` lists where
two recordings differ, as ``(step, path, what)``.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Awaitable
from typing import Any

import httpx
from langgraph_sdk import get_client

from tests.gated_upstream import GatedLightRAG

__all__ = ["DEERFLOW_CONTEXT", "deerflow_run", "diff", "normalise", "play"]

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)?$")
_HEADERS = ("content-type", "location", "content-location")
QUESTION = "How does a reader verify the evidence of a citation?"
ALL_MODES = [
    "values",
    "updates",
    "messages",
    "messages-tuple",
    "custom",
    "debug",
    "tasks",
    "checkpoints",
]


#: The context DeerFlow's chat page sends with every message (``core/threads/hooks.ts``, "pro"
#: mode; ``thread_id`` is added per thread).
DEERFLOW_CONTEXT = {
    "model_name": "deepseek-v3",
    "mode": "pro",
    "thinking_enabled": True,
    "is_plan_mode": True,
    "subagent_enabled": False,
    "reasoning_effort": "medium",
}


def deerflow_run(thread_id: str | None) -> dict[str, Any]:
    """A run as DeerFlow's ``useStream`` submits a message: the stream modes its callbacks ask for
    (``values`` and ``updates`` always, ``messages-tuple`` for its messages, ``custom`` for
    subtask progress), resumable with ``on_disconnect: continue`` (``reconnectOnMount``), its
    recursion limit, a human message of text blocks, and its context."""
    context = (
        dict(DEERFLOW_CONTEXT)
        if thread_id is None
        else {**DEERFLOW_CONTEXT, "thread_id": thread_id}
    )
    message = {
        "type": "human",
        "content": [{"type": "text", "text": QUESTION}],
        "additional_kwargs": {},
    }
    return {
        "assistant_id": "agent",
        "input": {"messages": [message]},
        "config": {"recursion_limit": 1000},
        "context": context,
        "stream_mode": ["values", "updates", "messages-tuple", "custom"],
        "stream_resumable": True,
        "on_disconnect": "continue",
    }


def normalise(value: Any) -> Any:
    """``value`` with UUIDs and timestamps replaced by placeholders."""
    if isinstance(value, dict):
        return {_UUID.sub("<id>", str(k)): normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, str):
        if _TIME.match(value):
            return "<time>"
        return _UUID.sub("<id>", value)
    return value


def _sse(text: str) -> list[tuple[str, Any]]:
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            if ":" in line and not line.startswith(":"):
                key, _, val = line.partition(":")
                fields[key] = val[1:] if val.startswith(" ") else val
        if "event" in fields:
            data = fields.get("data", "")
            events.append((fields["event"], json.loads(data) if data else None))
    return events


class _Recorder:
    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        self.steps: dict[str, dict[str, Any]] = {}

    async def call(
        self,
        step: str,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any, httpx.Headers]:
        content = raw if raw is not None else None if body is None else json.dumps(body).encode()
        response = await self.http.request(
            method,
            path,
            content=content,
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        kind = response.headers.get("content-type", "")
        parsed: Any
        if kind.startswith("text/event-stream"):
            parsed = _sse(response.text)
            recorded: Any = {"events": [name for name, _ in parsed]}
            recorded["data"] = [data for _, data in parsed]
        elif response.content:
            try:
                parsed = response.json()
            except ValueError:
                parsed = response.text
            recorded = parsed
        else:
            parsed = recorded = None
        self.steps[step] = {
            "status": response.status_code,
            "body": normalise(recorded),
            "headers": {h: normalise(response.headers.get(h)) for h in _HEADERS},
        }
        return response.status_code, parsed, response.headers

    def record(self, step: str, value: Any) -> None:
        self.steps[step] = {"status": None, "body": normalise(value), "headers": {}}


async def play(base: str, upstream: GatedLightRAG, marker: str) -> dict[str, dict[str, Any]]:
    """Play the sequence against the API at ``base``; every step's recording by name."""
    question = {"messages": [{"role": "user", "content": QUESTION}]}
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        r = _Recorder(http)
        await r.call("ok", "GET", "/ok")
        await r.call("info", "GET", "/info")
        await r.call("assistants.search", "POST", "/assistants/search", {"graph_id": "agent"})
        await r.call("assistants.count", "POST", "/assistants/count", {})
        await r.call("assistants.get", "GET", "/assistants/agent")
        await r.call("assistants.schemas", "GET", "/assistants/agent/schemas")
        await r.call("assistants.subgraphs", "GET", "/assistants/agent/subgraphs")
        await r.call("assistants.graph", "GET", "/assistants/agent/graph")

        # A thread's life.
        _, thread, _ = await r.call(
            "threads.create", "POST", "/threads", {"metadata": {"marker": marker}}
        )
        tid = thread["thread_id"]
        await r.call("threads.create.again", "POST", "/threads", {"thread_id": tid})
        await r.call(
            "threads.create.raise", "POST", "/threads", {"thread_id": tid, "if_exists": "raise"}
        )
        await r.call("threads.get", "GET", f"/threads/{tid}")
        await r.call("threads.patch", "PATCH", f"/threads/{tid}", {"metadata": {"tag": 1}})
        await r.call(
            "threads.search.before-run",
            "POST",
            "/threads/search",
            {"metadata": {"marker": marker, "graph_id": "agent"}},
        )
        await r.call("state.empty", "GET", f"/threads/{tid}/state")
        await r.call(
            "runs.stream.all-modes",
            "POST",
            f"/threads/{tid}/runs/stream",
            {"assistant_id": "agent", "input": question, "stream_mode": ALL_MODES},
        )
        await r.call("threads.get.after-run", "GET", f"/threads/{tid}")
        for mode in ("tools", "events"):  # each server's extension the other refuses
            await r.call(
                f"runs.stream.{mode}",
                "POST",
                f"/threads/{tid}/runs/stream",
                {"assistant_id": "agent", "input": question, "stream_mode": mode},
            )
        for name, query in (
            ("graph", {"marker": marker, "graph_id": "agent"}),
            ("marker", {"marker": marker}),
        ):
            await r.call(f"threads.search.{name}", "POST", "/threads/search", {"metadata": query})
        await r.call("threads.count", "POST", "/threads/count", {"metadata": {"marker": marker}})
        _, state, _ = await r.call("state.get", "GET", f"/threads/{tid}/state")
        checkpoint_id = state["checkpoint"]["checkpoint_id"]
        await r.call("state.at", "GET", f"/threads/{tid}/state/{checkpoint_id}")
        await r.call(
            "state.checkpoint",
            "POST",
            f"/threads/{tid}/state/checkpoint",
            {"checkpoint": {"checkpoint_id": checkpoint_id}},
        )
        await r.call("history.post", "POST", f"/threads/{tid}/history", {"limit": 3})
        await r.call("history.get", "GET", f"/threads/{tid}/history?limit=2")
        await r.call(
            "runs.stream.default",
            "POST",
            f"/threads/{tid}/runs/stream",
            {"assistant_id": "agent", "input": question},
        )
        await r.call(
            "runs.wait",
            "POST",
            f"/threads/{tid}/runs/wait",
            {"assistant_id": "agent", "input": question},
        )
        await r.call(
            "state.update",
            "POST",
            f"/threads/{tid}/state",
            {"values": {"messages": [{"role": "user", "content": "a note"}]}, "as_node": "model"},
        )
        _, run, _ = await r.call(
            "runs.create",
            "POST",
            f"/threads/{tid}/runs",
            {"assistant_id": "agent", "input": question},
        )
        await r.call("runs.join", "GET", f"/threads/{tid}/runs/{run['run_id']}/join")
        await r.call("runs.get", "GET", f"/threads/{tid}/runs/{run['run_id']}")
        await r.call("runs.list", "GET", f"/threads/{tid}/runs")

        # A resumable stream, rejoined after its third event.
        _, _, headers = await r.call(
            "runs.stream.resumable",
            "POST",
            f"/threads/{tid}/runs/stream",
            {
                "assistant_id": "agent",
                "input": question,
                "stream_mode": ["values", "messages-tuple"],
                "stream_resumable": True,
            },
        )
        location = headers.get("location", "")
        raw = await http.post(
            f"/threads/{tid}/runs/stream",
            content=json.dumps(
                {
                    "assistant_id": "agent",
                    "input": question,
                    "stream_mode": ["values"],
                    "stream_resumable": True,
                }
            ),
            headers={"Content-Type": "application/json"},
        )
        ids = re.findall(r"^id: ([^\r\n]+)", raw.text, flags=re.M)
        rejoin = raw.headers.get("location", location)
        await r.call(
            "runs.join_stream.last-event-id",
            "GET",
            rejoin,
            headers={"Last-Event-ID": ids[2] if len(ids) > 2 else "0"},
        )
        r.record("runs.stream.resumable.ids", {"count": len(ids), "distinct": len(set(ids))})

        # DeerFlow's chat page (``useStream``: ``reconnectOnMount``, ``fetchStateHistory``, its
        # stream modes, ``streamResumable``, the context sent with every message), then the
        # same context on every other run route.
        deerflow_tid = str(uuid.uuid4())
        await r.call("deerflow.threads.create", "POST", "/threads", {"thread_id": deerflow_tid})
        _, _, headers = await r.call(
            "deerflow.runs.stream",
            "POST",
            f"/threads/{deerflow_tid}/runs/stream",
            deerflow_run(deerflow_tid),
        )
        await r.call(
            "deerflow.join_stream.reconnect",
            "GET",
            f"{headers.get('location', '')}?cancel_on_disconnect=0",
            headers={"Last-Event-ID": "-1"},
        )
        await r.call(
            "deerflow.history.limit-1", "POST", f"/threads/{deerflow_tid}/history", {"limit": 1}
        )
        await r.call("deerflow.state", "GET", f"/threads/{deerflow_tid}/state")
        context = {**DEERFLOW_CONTEXT, "thread_id": deerflow_tid}
        await r.call(
            "context.runs.wait",
            "POST",
            f"/threads/{deerflow_tid}/runs/wait",
            {"assistant_id": "agent", "input": question, "context": context},
        )
        _, with_context, _ = await r.call(
            "context.runs.create",
            "POST",
            f"/threads/{deerflow_tid}/runs",
            {"assistant_id": "agent", "input": question, "context": context},
        )
        await r.call(
            "context.runs.join",
            "GET",
            # A refused run has no id: the join then says so with a 404.
            f"/threads/{deerflow_tid}/runs/{with_context.get('run_id', uuid.uuid4())}/join",
        )
        await r.call(
            "context.runs.stream.configurable",
            "POST",
            f"/threads/{deerflow_tid}/runs/stream",
            {
                "assistant_id": "agent",
                "input": question,
                "config": {"configurable": {"model_name": "m"}},
            },
        )
        await r.call("context.history", "GET", f"/threads/{deerflow_tid}/history?limit=2")
        await r.call(
            "context.error.with-configurable",
            "POST",
            f"/threads/{deerflow_tid}/runs/wait",
            {
                "assistant_id": "agent",
                "input": question,
                "context": context,
                "config": {"configurable": {"model_name": "m"}},
            },
        )
        deep: Any = "x"
        for _ in range(16):  # the gateway's limit is 16 levels, the object itself the first
            deep = [deep]
        for name, bad in (
            ("array", [context]),
            ("string", "pro"),
            ("number", 1),
            ("too-deep", {"k": deep}),
        ):
            await r.call(
                f"context.error.{name}",
                "POST",
                f"/threads/{deerflow_tid}/runs/stream",
                {"assistant_id": "agent", "input": question, "context": bad},
            )

        # A busy thread: a run held at the upstream, then each multitask strategy.
        _, busy, _ = await r.call("threads.create.busy", "POST", "/threads", {})
        bid = busy["thread_id"]
        upstream.hold()
        _, held, _ = await r.call(
            "runs.create.held",
            "POST",
            f"/threads/{bid}/runs",
            {"assistant_id": "agent", "input": question},
        )
        upstream.wait_for_queries(1)
        await r.call("threads.get.busy", "GET", f"/threads/{bid}")
        await r.call(
            "busy.reject",
            "POST",
            f"/threads/{bid}/runs",
            {"assistant_id": "agent", "input": question, "multitask_strategy": "reject"},
        )
        _, queued, _ = await r.call(
            "busy.enqueue",
            "POST",
            f"/threads/{bid}/runs",
            {"assistant_id": "agent", "input": question, "multitask_strategy": "enqueue"},
        )
        await r.call(
            "busy.state-update",
            "POST",
            f"/threads/{bid}/state",
            {"values": {"messages": [{"role": "user", "content": "x"}]}},
        )
        await r.call("busy.cancel-queued", "POST", f"/threads/{bid}/runs/{queued['run_id']}/cancel")
        upstream.release()
        await r.call("busy.join-held", "GET", f"/threads/{bid}/runs/{held['run_id']}/join")
        await r.call("busy.get-queued", "GET", f"/threads/{bid}/runs/{queued['run_id']}")
        upstream.hold()
        _, first, _ = await r.call(
            "runs.create.held-again",
            "POST",
            f"/threads/{bid}/runs",
            {"assistant_id": "agent", "input": question},
        )
        upstream.wait_for_queries(1)
        await r.call(
            "busy.interrupt",
            "POST",
            f"/threads/{bid}/runs/wait",
            {"assistant_id": "agent", "input": question, "multitask_strategy": "interrupt"},
        )
        upstream.release()
        await r.call("busy.interrupted-run", "GET", f"/threads/{bid}/runs/{first['run_id']}")
        await r.call("busy.thread-after", "GET", f"/threads/{bid}")

        # Errors.
        unknown = str(uuid.uuid4())
        await r.call("error.thread-unknown", "GET", f"/threads/{unknown}")
        await r.call(
            "error.run-on-unknown-thread",
            "POST",
            f"/threads/{unknown}/runs/wait",
            {"assistant_id": "agent", "input": question},
        )
        await r.call("error.run-unknown", "GET", f"/threads/{tid}/runs/{unknown}")
        await r.call(
            "error.assistant-unknown",
            "POST",
            f"/threads/{tid}/runs/wait",
            {"assistant_id": "nobody", "input": question},
        )
        await r.call("error.bad-json", "POST", "/threads", raw=b"{not json")
        await r.call("error.bad-metadata", "POST", "/threads", {"metadata": 5})
        await r.call(
            "error.bad-stream-mode",
            "POST",
            f"/threads/{tid}/runs/stream",
            {"assistant_id": "agent", "input": question, "stream_mode": "bogus"},
        )
        await r.call("error.search-bad-limit", "POST", "/threads/search", {"limit": "many"})

        # Stateless runs.
        await r.call(
            "stateless.wait", "POST", "/runs/wait", {"assistant_id": "agent", "input": question}
        )
        await r.call(
            "stateless.stream",
            "POST",
            "/runs/stream",
            {"assistant_id": "agent", "input": question, "stream_mode": ["values", "updates"]},
        )
        await r.call(
            "stateless.context.wait",
            "POST",
            "/runs/wait",
            {"assistant_id": "agent", "input": question, "context": DEERFLOW_CONTEXT},
        )
        await r.call(
            "stateless.context.stream",
            "POST",
            "/runs/stream",
            {**deerflow_run(None), "stream_resumable": False},
        )
        await r.call(
            "stateless.context.create",
            "POST",
            "/runs",
            {"assistant_id": "agent", "input": question, "context": DEERFLOW_CONTEXT},
        )

        # The official client.
        sdk = get_client(url=base)
        created = await sdk.threads.create(metadata={"marker": marker, "via": "sdk"})
        sid = created["thread_id"]
        r.record("sdk.threads.create", created)
        r.record("sdk.runs.wait", await sdk.runs.wait(sid, "agent", input=question))
        parts = [
            (part.event, part.data)
            async for part in sdk.runs.stream(
                sid, "agent", input=question, stream_mode=["messages-tuple", "values"]
            )
        ]
        r.record(
            "sdk.runs.stream", {"events": [p[0] for p in parts], "data": [p[1] for p in parts]}
        )
        found = await sdk.threads.search(metadata={"graph_id": "agent", "via": "sdk"})
        r.record("sdk.threads.search.graph", found)
        r.record("sdk.threads.get_history", await sdk.threads.get_history(sid, limit=2))
        r.record("sdk.assistants.search", await sdk.assistants.search(graph_id="agent"))
        r.record("sdk.error.unknown-thread", await _error(sdk.threads.get(unknown)))

        await r.call("threads.delete", "DELETE", f"/threads/{tid}")
        await r.call("threads.get.deleted", "GET", f"/threads/{tid}")
        return r.steps


async def _error(call: Awaitable[Any]) -> str:
    try:
        await call
    except Exception as exc:
        return type(exc).__name__
    return "no error"


def diff(reference: Any, gateway: Any, path: str = "") -> list[tuple[str, str]]:
    """Where ``gateway`` differs from ``reference``: ``(path, what)`` pairs."""
    if isinstance(reference, dict) and isinstance(gateway, dict):
        found = []
        for key in reference.keys() - gateway.keys():
            found.append((f"{path}/{key}", "missing"))
        for key in gateway.keys() - reference.keys():
            found.append((f"{path}/{key}", "extra"))
        for key in reference.keys() & gateway.keys():
            found += diff(reference[key], gateway[key], f"{path}/{key}")
        return found
    if isinstance(reference, list) and isinstance(gateway, list):
        if len(reference) != len(gateway):
            return [(path, f"length {len(reference)} != {len(gateway)}")]
        found = []
        for n, (a, b) in enumerate(zip(reference, gateway, strict=True)):
            found += diff(a, b, f"{path}/{n}")
        return found
    if type(reference) is not type(gateway):
        return [(path, f"type {type(reference).__name__} != {type(gateway).__name__}")]
    if reference != gateway:
        return [(path, "value")]
    return []
