"""DeerFlow's ``task`` carries the evidence its subagent cited, through DeerFlow's extension API.

DeerFlow's built-in ``task`` tool answers with the child's report as a plain ``ToolMessage``, so
the child's ``knowledge_search`` evidence never reaches the lead and every citation the lead
copies is unverifiable. DeerFlow's extension API has what is needed to fix that without touching
DeerFlow or its ``task`` tool:

* a **subagent**-scoped middleware observes every tool result the child's model sees
  (``awrap_tool_call`` at ``TOOL_VISIBLE``; observation only — the result is returned as is) and
  feeds it to a :class:`~deerflow.knowledge.forwarding.SourceAccumulator` kept under the child's
  identity: the lead's thread and run, and the ``task`` call id DeerFlow scopes the child's task
  store by. Collected as each tool returns, so a later compaction of the child loses nothing;
* a **lead**-scoped middleware's ``before_model`` (DeerFlow applies a lifecycle hook's state
  update; only wrap-hook results are discarded) takes that evidence for each ``task`` message of
  the step just run and replaces the message, by its id, with
  :func:`~deerflow.knowledge.forwarding.forward_cited_sources`' content and artifact: the sources
  the report cites, with a bounded appendix. Everything else on the message — DeerFlow's status,
  ``additional_kwargs``, token usage — is kept as DeerFlow wrote it. Placed at ``TOOL_VISIBLE``
  (outermost), its ``before_model`` runs before any other, so nothing compacts the message first.

Evidence the lead never takes (a failed child, a run that ended) is dropped when the lead's run
stops, and at most :data:`MAX_PENDING_CHILDREN` children are held at once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, ToolMessage

from deerflow.knowledge.forwarding import (
    DEFAULT_APPENDIX_CHARS,
    TASK_TOOL_NAME,
    EvidenceSource,
    SourceAccumulator,
    forward_cited_sources,
)
from deerflow.knowledge.integrations.deerflow._host import deerflow_trigger

__all__ = [
    "COMPLETED",
    "MAX_PENDING_CHILDREN",
    "ChildEvidenceCollector",
    "ChildKey",
    "EvidenceRelay",
    "SubagentEvidence",
    "TaskEvidenceForwarder",
]

#: Children whose evidence may wait for the lead at once; the oldest is dropped past it.
MAX_PENDING_CHILDREN: Final = 256
#: DeerFlow's ``subagent_status`` of a child that produced a report.
COMPLETED: Final = "completed"
#: DeerFlow's host-owned runtime-context key of the task store (``deerflow_extension_api``).
_TASK_STORE_KEY: Final = "__deerflow_extension_task_store"

#: (lead thread id, lead run id, ``task`` tool call id).
ChildKey = tuple[str, str, str]


class EvidenceRelay:
    """Evidence of running and finished children, until the lead takes it. Thread-safe: DeerFlow
    runs each child on its own event loop."""

    __slots__ = ("_children", "_limit", "_lock")

    def __init__(self, *, max_children: int = MAX_PENDING_CHILDREN) -> None:
        if max_children < 1:
            raise ValueError("max_children must be at least 1")
        self._limit = max_children
        self._lock = threading.Lock()
        self._children: OrderedDict[ChildKey, SourceAccumulator] = OrderedDict()

    def __len__(self) -> int:
        with self._lock:
            return len(self._children)

    def observe(self, key: ChildKey, messages: Iterable[object] = ()) -> None:
        """Record what ``messages`` (the child's new tool results) verifiably carry; with none,
        only that the child runs (its report's unverifiable links then become their labels)."""
        with self._lock:
            accumulator = self._children.get(key)
            if accumulator is None:
                accumulator = self._children[key] = SourceAccumulator()
                while len(self._children) > self._limit:
                    self._children.popitem(last=False)
        for message in messages:
            with self._lock:
                accumulator.feed((message,))  # a one-message frame: examined once, in order

    def take(self, key: ChildKey) -> tuple[EvidenceSource, ...] | None:
        """The child's evidence, removed; None when no child ran under ``key``."""
        with self._lock:
            accumulator = self._children.pop(key, None)
        return None if accumulator is None else accumulator.sources

    def drop_run(self, thread_id: str, run_id: str) -> None:
        with self._lock:
            for key in [k for k in self._children if k[0] == thread_id and k[1] == run_id]:
                del self._children[key]


class ChildEvidenceCollector(AgentMiddleware):
    """Subagent scope: observes each tool result and hands it to the relay, unchanged."""

    name = "deerflow_knowledge_child_evidence"

    def __init__(self, relay: EvidenceRelay) -> None:
        super().__init__()
        self._relay = relay

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        result = handler(request)
        self._observe(request, result)
        return result

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        result = await handler(request)
        self._observe(request, result)
        return result

    def _observe(self, request: Any, result: object) -> None:
        key = _child_key(getattr(getattr(request, "runtime", None), "context", None))
        if key is not None:
            self._relay.observe(key, _tool_results(result))


class TaskEvidenceForwarder(AgentMiddleware):
    """Lead scope: before each model call, the ``task`` messages of the step just run get the
    evidence their child cited (see the module docstring)."""

    name = "deerflow_knowledge_task_evidence"

    def __init__(
        self,
        relay: EvidenceRelay,
        *,
        appendix_chars: Callable[[], int | None] | None = None,
        max_appendix_chars: int = DEFAULT_APPENDIX_CHARS,
    ) -> None:
        super().__init__()
        self._relay = relay
        self._max_appendix_chars = max_appendix_chars
        self._task_budget = appendix_chars or _deerflow_task_budget

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self._forward(state, runtime)

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self._forward(state, runtime)

    def _forward(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        messages = state.get("messages") if isinstance(state, Mapping) else None
        if not isinstance(messages, Sequence) or not messages:
            return None
        lead = _lead_ids(getattr(runtime, "context", None))
        if lead is None:
            return None
        replaced = []
        for message in _last_step_results(messages):
            if message.name != TASK_TOOL_NAME or not message.tool_call_id:
                continue
            sources = self._relay.take((*lead, message.tool_call_id))
            if sources is None or message.artifact is not None:
                continue
            if message.additional_kwargs.get("subagent_status") != COMPLETED:
                continue
            if not isinstance(message.content, str):
                continue
            update = self._forwarded(message, sources)
            if update is not None:
                replaced.append(update)
        return {"messages": replaced} if replaced else None

    def _forwarded(
        self, message: ToolMessage, sources: tuple[EvidenceSource, ...]
    ) -> ToolMessage | None:
        report = str(message.content)
        room = self._max_appendix_chars
        budget = self._task_budget()
        if budget is not None:  # DeerFlow's tool-output budget for `task`: never exceed it
            room = max(0, min(room, budget - len(report)))
        content, artifact = forward_cited_sources(sources, report, max_appendix_chars=room)
        if artifact is None and content == report:
            return None
        return message.model_copy(update={"content": content, "artifact": artifact})


class SubagentEvidence:
    """The extension contribution: both middlewares over one relay kept in DeerFlow's app store,
    and the lead's task-stop hook that drops evidence its run never took."""

    def contribute_middlewares(self, app_store: Any, ctx: Any) -> Sequence[Any]:
        from deerflow_extension_api import AgentScope, MiddlewarePlacement, Placement

        relay = _relay(app_store)
        return (
            MiddlewarePlacement(
                ChildEvidenceCollector(relay), Placement.TOOL_VISIBLE, scope=AgentScope.SUBAGENT
            ),
            MiddlewarePlacement(
                TaskEvidenceForwarder(relay), Placement.TOOL_VISIBLE, scope=AgentScope.LEAD
            ),
        )

    async def on_task_start(self, app_store: Any, task_store: Any, info: Any) -> None:
        if getattr(info, "kind", None) != "subagent":
            return
        # DeerFlow scopes a child's task store by the lead's ``task`` call id.
        key = _key(info.thread_id, info.run_id, getattr(task_store, "scope_id", None))
        if key is not None:
            _relay(app_store).observe(key)

    async def on_task_stop(self, app_store: Any, task_store: Any, info: Any, outcome: Any) -> None:
        if getattr(info, "kind", None) == "lead":
            _relay(app_store).drop_run(str(info.thread_id), str(info.run_id))


def _relay(app_store: Any) -> EvidenceRelay:
    found: EvidenceRelay = app_store.get_or_init(EvidenceRelay, EvidenceRelay)
    return found


def _child_key(context: object) -> ChildKey | None:
    """The child's identity from the context DeerFlow's executor builds (never a caller's)."""
    if not isinstance(context, Mapping) or context.get("is_subagent") is not True:
        return None
    return _key(context.get("thread_id"), context.get("run_id", ""),
                getattr(context.get(_TASK_STORE_KEY), "scope_id", None))  # fmt: skip


def _key(thread_id: object, run_id: object, task_call_id: object) -> ChildKey | None:
    lead = _lead_ids({"thread_id": thread_id, "run_id": run_id})
    if lead is None or not isinstance(task_call_id, str) or not task_call_id:
        return None
    return (*lead, task_call_id)


def _lead_ids(context: object) -> tuple[str, str] | None:
    if not isinstance(context, Mapping):
        return None
    thread_id, run_id = context.get("thread_id"), context.get("run_id", "")
    if not isinstance(thread_id, str) or not thread_id:
        return None
    return thread_id, run_id if isinstance(run_id, str) else ""  # no run id: an embedded run


def _tool_results(result: object) -> list[object]:
    """The tool messages a tool call produced: its ``ToolMessage``, or those of a ``Command``."""
    if isinstance(result, ToolMessage):
        return [result]
    update = getattr(result, "update", None)
    messages = update.get("messages") if isinstance(update, Mapping) else None
    if isinstance(messages, Sequence) and not isinstance(messages, str):
        return [m for m in messages if isinstance(m, ToolMessage)]
    return []


def _last_step_results(messages: Sequence[Any]) -> list[ToolMessage]:
    """The tool messages after the last AI message: the step just run (cost: that step only)."""
    found: list[ToolMessage] = []
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            break
        if isinstance(message, ToolMessage):
            found.append(message)
    found.reverse()
    return found


def _deerflow_task_budget() -> int | None:
    """The longest ``task`` content DeerFlow's ``tool_output`` budget leaves uncut, or None."""
    try:
        from deerflow.config import get_app_config

        tool_output = getattr(get_app_config(), "tool_output", None)
    except Exception:  # outside DeerFlow, or its config cannot load: no host budget applies
        return None
    return deerflow_trigger(TASK_TOOL_NAME, tool_output)
