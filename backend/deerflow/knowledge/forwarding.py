"""Carry a subagent's evidence up to the parent's ``task`` message.

A child agent's tool messages never reach the parent: only its final report does. So while the
child runs, a :class:`SourceAccumulator` fed every ``values`` frame collects the evidence its tool
messages verifiably carried — before compaction can summarize those messages away — and on
completion :func:`forward_cited_sources` keeps only the sources the report actually cites and
appends their handles and excerpts to the report, so the ``task`` message verifies on its own
(``read_envelope`` needs both in the same message). :func:`make_task_tool` wires the two around a
compiled child graph.

The accumulator is built for long runs: each frame is compared with the previous one at its ends,
and only the messages after the first changed index are examined, so a frame costs the same with
ten thousand messages of history as with a hundred.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Final

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool
from langgraph.errors import GraphBubbleUp
from pydantic import BaseModel, ConfigDict, Field

from deerflow.knowledge.budget import prune_evidence
from deerflow.knowledge.citations import find_citations, relabel_citations
from deerflow.knowledge.contract import KnowledgeSource
from deerflow.knowledge.envelope import (
    KNOWLEDGE_SOURCES_KEY,
    RETRIEVAL_SOURCES_KEY,
    VERSION_KEY,
    build_envelope,
)
from deerflow.knowledge.evidence import EvidenceSource, read_evidence
from deerflow.knowledge.fitting import WholeEntries
from deerflow.knowledge.formatting import citation_link
from deerflow.knowledge.messages import message_fields, message_view, text_parts
from deerflow.knowledge.native import NativeSource, build_native_snapshot, native_entry
from deerflow.knowledge.rules import MAX_SOURCES

__all__ = [
    "APPENDIX_HEADER",
    "DEFAULT_APPENDIX_CHARS",
    "DEFAULT_TASK_DESCRIPTION",
    "MAX_APPENDIX_CHARS",
    "TASK_TOOL_NAME",
    "EvidenceSource",
    "SourceAccumulator",
    "TaskInput",
    "final_report",
    "forward_cited_sources",
    "make_task_tool",
]

TASK_TOOL_NAME: Final = "task"
DEFAULT_APPENDIX_CHARS: Final = 16_000
#: DeerFlow's cap on the excerpt characters one ``task`` forwards.
MAX_APPENDIX_CHARS: Final = 1_000_000
APPENDIX_HEADER: Final = "\n\n---\nEvidence cited above (the subagent's sources, verbatim):"
DEFAULT_TASK_DESCRIPTION: Final = (
    "Delegate a self-contained research task to a subagent that can search the knowledge base. "
    "Its report keeps the citation links of the evidence it used; copy them exactly when you use "
    "its findings."
)
_ENTRY_SEPARATOR: Final = "\n\n"
_NO_REPORT: Final = "Error: the subagent finished without a report."


class SourceAccumulator:
    """Validated evidence from a child run's ``values`` frames, first ``limit`` kept.

    * Each tool message is read by ``read_evidence``: shared records from any tool message (the
      key is the boundary, not the name), native snapshots only from tool messages named
      ``knowledge_search`` or ``task``.
    * Sources are deduplicated by id and never dropped, so compaction (a summary replacing early
      history, ``RemoveMessage``) loses nothing already collected.
    * A message is unchanged when it has the same id as the message at its index in the previous
      frame (the same object, for messages without an id). Each frame is checked at the first
      and the previous last index; if either changed, the first changed index is searched. Under
      ``add_messages`` (append, replace by id, remove) that finds every change except a wholesale
      rewrite that keeps both probed messages in place. Only messages from that index on are
      examined. A message replaced under the same id is not re-examined.
    * ``None`` (a frame with ``messages: null``) is an empty frame.
    """

    __slots__ = ("_examined", "_ids", "_keys", "_limit", "_sources")

    def __init__(self, limit: int = MAX_SOURCES) -> None:
        if not 0 <= limit <= MAX_SOURCES:
            raise ValueError(f"limit must be between 0 and {MAX_SOURCES}")
        self._limit = limit
        self._sources: list[EvidenceSource] = []
        self._ids: set[str] = set()
        self._keys: list[object] = []  # the previous frame's message keys
        self._examined = 0

    @property
    def sources(self) -> tuple[EvidenceSource, ...]:
        return tuple(self._sources)

    @property
    def examined(self) -> int:
        """How many messages have been examined so far (for tests of incremental scanning)."""
        return self._examined

    @property
    def full(self) -> bool:
        return len(self._sources) >= self._limit

    def feed(self, messages: Sequence[Any] | None) -> None:
        """Take the ``messages`` of one ``values`` frame (``None`` counts as empty)."""
        if messages is None:
            messages = ()
        keys = self._keys
        start = self._first_changed(messages)
        del keys[start:]
        for index in range(start, len(messages)):
            message = messages[index]
            keys.append(_key(message))
            self._examined += 1
            if not self.full:
                self._collect(message)

    def _first_changed(self, messages: Sequence[Any]) -> int:
        keys = self._keys
        previous = len(keys)
        if (
            previous
            and len(messages) >= previous
            and _same(_key(messages[previous - 1]), keys[-1])
            and _same(_key(messages[0]), keys[0])
        ):
            return previous  # the common case: messages were only appended
        index = 0
        end = min(previous, len(messages))
        while index < end and _same(_key(messages[index]), keys[index]):
            index += 1
        return index

    def _collect(self, message: object) -> None:
        if isinstance(message, BaseMessage) and message.type != "tool":
            return  # the common case, decided without building a view
        view = message_view(message)
        if view is None or view.role != "tool":
            return
        for source in read_evidence(view.content, view.artifact, tool_name=view.name).sources:
            if self.full:
                return
            if source.id not in self._ids:
                self._ids.add(source.id)
                self._sources.append(source)


def _key(message: object) -> object:
    """The message id when it has one, else the message itself (compared by identity)."""
    view_id: object = None
    if isinstance(message, BaseMessage):
        view_id = message.id
    elif isinstance(message, Mapping):
        view_id = message_fields(message).get("id")
    return view_id if isinstance(view_id, str) and view_id else message


def _same(a: object, b: object) -> bool:
    return a is b or (type(a) is str and type(b) is str and a == b)


def forward_cited_sources(
    sources: Iterable[EvidenceSource],
    report: str,
    *,
    max_appendix_chars: int = DEFAULT_APPENDIX_CHARS,
    limit: int = MAX_SOURCES,
) -> tuple[str, dict[str, Any] | None]:
    """The ``task`` message's ``(content, artifact)`` for a child's ``report``.

    Only sources the report cites are forwarded, in the order it first cites them, each with an
    appendix entry (its citation link and its excerpt) so the message verifies on its own. An
    entry that does not fit ``max_appendix_chars`` is left out whole and its source is not
    forwarded; a citation in the report that is not forwarded (left out, or never collected)
    becomes its plain label, so the parent is never shown a link nobody can verify. When the
    report cited both formats, the native snapshot stays in ``knowledge_sources`` and the shared
    records go to ``retrieval_sources`` beside ``knowledge_sources_version: 1`` (the dual layout).
    """
    if not 0 <= max_appendix_chars <= MAX_APPENDIX_CHARS:
        raise ValueError(f"max_appendix_chars must be between 0 and {MAX_APPENDIX_CHARS}")
    if not 0 <= limit <= MAX_SOURCES:
        raise ValueError(f"limit must be between 0 and {MAX_SOURCES}")
    by_id: dict[str, EvidenceSource] = {}
    for source in sources:
        by_id.setdefault(source.id, source)
    cited: dict[str, EvidenceSource] = {}
    for citation in find_citations(report):
        found = by_id.get(citation.source_id or "")
        if found is not None:
            cited.setdefault(found.id, found)

    entries: list[str] = []
    shared: list[KnowledgeSource] = []
    native: list[NativeSource] = []
    room = WholeEntries(max_appendix_chars, used=len(APPENDIX_HEADER))
    for source in cited.values():
        if len(shared) + len(native) == limit:
            break
        entry = _ENTRY_SEPARATOR + _entry(source, len(entries) + 1)
        if not room.take(entry):
            continue  # too big for what is left: not forwarded, a smaller one may still fit
        entries.append(entry)
        if isinstance(source, KnowledgeSource):
            shared.append(source)
        else:
            native.append(source)

    forwarded = {s.id for s in shared} | {s.id for s in native}
    content = relabel_citations(report, lambda source_id: source_id not in forwarded)
    if entries:
        content += APPENDIX_HEADER + "".join(entries)
    artifact = _artifact(shared, native)
    # Defence in depth: by construction nothing is pruned here, and if anything ever were, the
    # message must still only claim what it shows.
    return prune_evidence(content, artifact)


def _entry(source: EvidenceSource, ordinal: int) -> str:
    if isinstance(source, KnowledgeSource):
        return f"{citation_link(source)}\n{source.excerpt}"
    return native_entry(source, ordinal)


def _artifact(shared: list[KnowledgeSource], native: list[NativeSource]) -> dict[str, Any] | None:
    if shared and native:
        return {
            KNOWLEDGE_SOURCES_KEY: build_native_snapshot(native),
            VERSION_KEY: build_envelope(shared)[VERSION_KEY],
            RETRIEVAL_SOURCES_KEY: build_envelope(shared)[KNOWLEDGE_SOURCES_KEY],
        }
    if shared:
        return build_envelope(shared)
    if native:
        return {KNOWLEDGE_SOURCES_KEY: build_native_snapshot(native)}
    return None


def final_report(messages: Sequence[Any] | None) -> str | None:
    """The text of the last AI message of a frame (object or dict form), if there is one."""
    for message in reversed(messages or ()):
        view = message_view(message)
        if view is not None and view.role == "ai":
            return "".join(text_parts(view.content))
    return None


class TaskInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(
        description="The complete task for the subagent, with all context it needs."
    )


def make_task_tool(
    child_graph: Any,
    *,
    name: str = TASK_TOOL_NAME,
    description: str = DEFAULT_TASK_DESCRIPTION,
    max_appendix_chars: int = DEFAULT_APPENDIX_CHARS,
    limit: int = MAX_SOURCES,
    child_config: RunnableConfig | None = None,
) -> StructuredTool:
    """A reference ``task`` tool running ``child_graph`` (a compiled LangGraph agent) per call.

    The child streams with ``stream_mode="values"``; every frame feeds a fresh
    :class:`SourceAccumulator`; the result is :func:`forward_cited_sources` over the final report,
    as ``content_and_artifact``. Each call gets a fresh ``thread_id`` (merged under
    ``child_config``) so a checkpointed child starts clean. A failing child becomes ``Error: …``
    content without an artifact; LangGraph interrupts still propagate.
    """
    if not 0 <= max_appendix_chars <= MAX_APPENDIX_CHARS:
        raise ValueError(f"max_appendix_chars must be between 0 and {MAX_APPENDIX_CHARS}")
    if not 0 <= limit <= MAX_SOURCES:
        raise ValueError(f"limit must be between 0 and {MAX_SOURCES}")

    def run_config() -> RunnableConfig:
        config: dict[str, Any] = dict(child_config or {})
        configurable = dict(config.get("configurable") or {})
        configurable.setdefault("thread_id", uuid.uuid4().hex)
        config["configurable"] = configurable
        return config  # type: ignore[return-value]

    def finish(run: _ChildRun) -> tuple[str, Any]:
        if run.failure is not None:
            return run.failure, None
        report = final_report(run.last)
        if report is None:
            return _NO_REPORT, None
        return forward_cited_sources(
            run.accumulator.sources, report, max_appendix_chars=max_appendix_chars, limit=limit
        )

    def task(prompt: str) -> tuple[str, Any]:
        run = _ChildRun(limit)
        with run:
            for frame in child_graph.stream(
                _child_input(prompt), run_config(), stream_mode="values"
            ):
                run.feed(frame)
        return finish(run)

    async def atask(prompt: str) -> tuple[str, Any]:
        run = _ChildRun(limit)
        with run:
            async for frame in child_graph.astream(
                _child_input(prompt), run_config(), stream_mode="values"
            ):
                run.feed(frame)
        return finish(run)

    return StructuredTool.from_function(
        func=task,
        coroutine=atask,
        name=name,
        description=description,
        args_schema=TaskInput,
        response_format="content_and_artifact",
    )


class _ChildRun:
    """One ``task`` call: the evidence its child's frames showed, and whether the child failed.

    ``with run:`` wraps the child's stream, so the sync and the async tool share one failure rule:
    a LangGraph interrupt (``GraphBubbleUp``) and anything that is not an ``Exception`` (a
    cancellation) propagate; any other exception ends the call as ``Error: …``, its type only.
    """

    def __init__(self, limit: int) -> None:
        self.accumulator = SourceAccumulator(limit)
        self.last: Sequence[Any] | None = None
        self.failure: str | None = None

    def feed(self, frame: object) -> None:
        self.last = _frame_messages(frame)
        self.accumulator.feed(self.last)

    def __enter__(self) -> _ChildRun:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        if not isinstance(exc, Exception) or isinstance(exc, GraphBubbleUp):
            return False
        self.failure = _failure(exc)
        return True


def _child_input(prompt: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(content=prompt)]}


def _frame_messages(frame: object) -> Sequence[Any] | None:
    messages = frame.get("messages") if isinstance(frame, Mapping) else None
    return messages if isinstance(messages, Sequence) and not isinstance(messages, str) else None


def _failure(exc: Exception) -> str:
    # Only the type: an exception's text may carry a secret.
    return f"Error: the subagent failed ({type(exc).__name__})."
