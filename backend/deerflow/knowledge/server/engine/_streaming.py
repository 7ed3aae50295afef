"""One run's events: LangGraph stream parts turned into LangGraph Server's SSE events, kept for joins.

A run's events are appended to a :class:`RunStream` as the run makes them; the response that started
the run, a ``join_stream`` from another client and a reconnect with ``Last-Event-ID`` all follow
the same log, so no event is computed twice and a reader that drops can resume where it stopped.
:class:`EventTranslator` maps the requested ``stream_mode`` values onto LangGraph's stream modes and
back to the Server's event names (``values``, ``updates``, ``messages/partial``,
``messages/complete``, ``messages/metadata``, ``messages`` for ``messages-tuple``, ``custom``,
``debug``, ``tasks``, ``checkpoints``, ``tools`` (derived from the steps' updates); ``name|ns``
for subgraph events).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from langchain_core.messages import AIMessage, BaseMessage, BaseMessageChunk, ToolMessage

from deerflow.knowledge.server.wire._wire import WireEncoder, dumps

__all__ = [
    "ALWAYS_SENT",
    "MAX_BATCH_BYTES",
    "STREAM_MODES",
    "WRITE_CHUNK_BYTES",
    "Event",
    "EventTranslator",
    "RunStream",
    "event_mode",
    "sse_chunks",
    "sse_frame",
    "sse_frames",
]

#: The ``stream_mode`` values a run accepts (LangGraph Server's, less ``events``).
STREAM_MODES: Final = frozenset(
    {
        "values",
        "updates",
        "messages",
        "messages-tuple",
        "custom",
        "debug",
        "tasks",
        "checkpoints",
        "tools",
    }
)
#: Event data a reader takes per wake-up (references to the run's events, not copies).
MAX_BATCH_BYTES: Final = 1 << 20
#: The most one write to a stream's client carries. A write the client does not read stays in
#: the connection's buffer, and the next one waits for it (uvicorn's flow control) — as a copy
#: per layer (the SSE frame, h11's chunk, asyncio's buffer): with 1 MiB writes a stuck reader
#: held 3.4 MiB. Small events are joined up to this size; a larger event's data is sent in
#: slices of the run's own copy of it.
WRITE_CHUNK_BYTES: Final = 64 * 1024
#: Events every reader gets, whatever stream modes it asked for.
ALWAYS_SENT: Final = frozenset({"metadata", "error", "end"})
#: Modes LangGraph streams under another name, or (``tools``) derives from ``updates``.
_GRAPH_MODE: Final = {"messages-tuple": "messages", "messages": "messages", "tools": "updates"}


@dataclass(frozen=True)
class Event:
    id: int
    name: str
    data: bytes


def sse_frame(event: Event, *, with_id: bool) -> bytes:
    return sse_frames([event], with_id=with_id)


def sse_frames(events: Iterable[Event], *, with_id: bool) -> bytes:
    """Events as SSE, joined in one copy (a values frame can be hundreds of kilobytes)."""
    parts: list[bytes] = []
    for event in events:
        parts += (b"event: ", event.name.encode(), b"\ndata: ", event.data, b"\n")
        parts.append(b"id: %d\n\n" % event.id if with_id else b"\n")
    return b"".join(parts)


def sse_chunks(
    events: Iterable[Event], *, with_id: bool, max_chunk: int = WRITE_CHUNK_BYTES
) -> Iterator[bytes | memoryview]:
    """The SSE frames of ``events`` as writes of at most ``max_chunk`` bytes, in order: small
    frames joined into one write, a larger event's data as slices of it (no copy). What a reader
    holds beyond the run's own events is one write, however large its events."""
    pending: list[bytes] = []
    size = 0
    for event in events:
        head = b"event: " + event.name.encode() + b"\ndata: "
        tail = b"\nid: %d\n\n" % event.id if with_id else b"\n\n"
        if size + len(head) + len(event.data) + len(tail) <= max_chunk:
            pending += (head, event.data, tail)
            size += len(head) + len(event.data) + len(tail)
            continue
        for part in (head, event.data, tail):
            if not part:
                continue
            if size + len(part) <= max_chunk:
                pending.append(part)
                size += len(part)
                continue
            if size:
                yield b"".join(pending)
                pending, size = [], 0
            if len(part) <= max_chunk:
                pending.append(part)
                size = len(part)
                continue
            view = memoryview(part)
            for start in range(0, len(part), max_chunk):
                yield view[start : start + max_chunk]
    if size:
        yield b"".join(pending)


def event_mode(name: str) -> str:
    """The stream mode an event belongs to (``messages/partial`` → ``messages``)."""
    base = name.split("|", 1)[0]
    if base == "messages":
        return "messages-tuple"
    return base.split("/", 1)[0]


class RunStream:
    """The events of one run in this process, in order, with their ids (0, 1, …)."""

    def __init__(self, run_id: str, thread_id: str, *, resumable: bool) -> None:
        self.run_id = run_id
        self.thread_id = thread_id
        self.resumable = resumable
        self.events: list[Event] = []
        #: Bytes of event data held (what a finished run costs to keep for replays).
        self.size = 0
        self.done = asyncio.Event()
        self._wake = asyncio.Event()

    def emit(self, name: str, data: bytes) -> None:
        self.events.append(Event(len(self.events), name, data))
        self.size += len(data)
        self._wake.set()
        self._wake = asyncio.Event()

    def finish(self) -> None:
        self.done.set()
        self._wake.set()

    async def follow(
        self,
        *,
        after: int = -1,
        modes: Collection[str] | None = None,
        max_batch_bytes: int = MAX_BATCH_BYTES,
    ) -> AsyncIterator[list[Event]]:
        """Events with an id above ``after``, then each new one until the run ends, in batches:
        whatever is there when the reader wakes (a model streams tokens faster than a socket
        write per event), up to ``max_batch_bytes`` of event data (one event, however large, is
        always a batch). A batch is the run's own events, not copies; it is written in
        ``sse_chunks``, so a reader that falls behind holds one write in its socket's buffer, not a
        copy of every event since it stopped reading."""
        position = max(after + 1, 0)
        while True:
            wake = self._wake
            # Checked before the events are read: every event is in by the time ``done`` is set.
            finished = self.done.is_set()
            end = len(self.events)
            batch: list[Event] = []
            size = 0
            while position < end:
                event = self.events[position]
                if modes is None or event.name in ALWAYS_SENT or event_mode(event.name) in modes:
                    if batch and size + len(event.data) > max_batch_bytes:
                        break
                    batch.append(event)
                    size += len(event.data)
                position += 1
            if batch:
                yield batch
            if position < len(self.events):
                continue
            if finished:
                return
            await wake.wait()


class EventTranslator:
    """Turns ``graph.astream`` parts into events on a :class:`RunStream`."""

    def __init__(
        self,
        stream: RunStream,
        modes: Collection[str],
        *,
        subgraphs: bool,
        encoder: WireEncoder | None = None,
    ) -> None:
        self.stream = stream
        self.modes = frozenset(modes)
        self.subgraphs = subgraphs
        self.encoder = encoder or WireEncoder()
        self._partial: dict[str, BaseMessageChunk] = {}
        self._seen: set[str] = set()
        #: The last chunk metadata encoded (LangGraph passes one dict per model call, per token).
        self._metadata: tuple[dict[str, Any], bytes] = ({}, b"{}")
        #: Whether the run stopped at an interrupt (seen in its ``updates``, which are always asked
        #: for: re-reading the state afterwards would cost a full checkpoint load per run).
        self.interrupted = False
        #: Set when the run was stopped: parts the graph still yields are dropped.
        self.closed = False

    def graph_modes(self) -> list[str]:
        # ``updates`` always: a streamed message is complete when its node's update lands, and an
        # interrupt shows up there.
        return sorted({_GRAPH_MODE.get(m, m) for m in self.modes} | {"updates"})

    def feed(self, part: Any) -> None:
        if self.subgraphs:
            namespace, mode, chunk = part
        else:
            (mode, chunk), namespace = part, ()
        suffix = "".join("|" + str(n) for n in namespace)
        if mode == "values":
            if "values" in self.modes:
                self.stream.emit("values" + suffix, self.encoder.values(chunk))
        elif mode == "messages":
            self._message(chunk, suffix)
        elif mode == "updates":
            if not namespace and isinstance(chunk, dict) and "__interrupt__" in chunk:
                self.interrupted = True
            if "updates" in self.modes:
                self.stream.emit("updates" + suffix, dumps(chunk))
            if "messages" in self.modes:
                self._completed(chunk, suffix)
            if "tools" in self.modes:
                self._tools(chunk, suffix)
        else:
            self.stream.emit(mode + suffix, dumps(chunk))

    def _message(self, chunk: Any, suffix: str) -> None:
        message, metadata = chunk
        if "messages-tuple" in self.modes:
            self.stream.emit(
                "messages" + suffix, b"[" + dumps(message) + b"," + self._meta(metadata) + b"]"
            )
        if "messages" not in self.modes or not isinstance(message, BaseMessage):
            return
        key = message.id or ""
        if key not in self._seen:
            self._seen.add(key)
            self.stream.emit("messages/metadata" + suffix, dumps({key: {"metadata": metadata}}))
        if isinstance(message, BaseMessageChunk):
            previous = self._partial.get(key)
            whole = message if previous is None else previous + message
            self._partial[key] = whole
            self.stream.emit("messages/partial" + suffix, b"[" + dumps(whole) + b"]")
        else:
            self.stream.emit(
                "messages/complete" + suffix, b"[" + self.encoder.message(message) + b"]"
            )

    def _meta(self, metadata: Any) -> bytes:
        if not isinstance(metadata, dict):
            return dumps(metadata)
        seen, data = self._metadata
        if metadata != seen:  # equal field for field: the same dict, untouched since
            data = dumps(metadata)
            self._metadata = (dict(metadata), data)
        return data

    def _tools(self, update: Any, suffix: str) -> None:
        """``tools`` events (``on_tool_start`` / ``on_tool_end`` / ``on_tool_error``), as
        ``useStream``'s ``toolProgress`` reads them, from the steps that call and run tools."""
        for message in _update_messages(update):
            if isinstance(message, AIMessage):
                for call in message.tool_calls:
                    start = {
                        "event": "on_tool_start",
                        "toolCallId": call["id"],
                        "name": call["name"],
                        "input": call["args"],
                    }
                    self.stream.emit("tools" + suffix, dumps(start))
            elif isinstance(message, ToolMessage):
                failed = message.status == "error"
                end = {
                    "event": "on_tool_error" if failed else "on_tool_end",
                    "toolCallId": message.tool_call_id,
                    "name": message.name,
                    ("error" if failed else "output"): message,
                }
                self.stream.emit("tools" + suffix, dumps(end))

    def _completed(self, update: Any, suffix: str) -> None:
        if not isinstance(update, dict) or not self._partial:
            return
        for message in _update_messages(update):
            if isinstance(message, BaseMessage) and (message.id or "") in self._partial:
                del self._partial[message.id or ""]
                self.stream.emit(
                    "messages/complete" + suffix, b"[" + self.encoder.message(message) + b"]"
                )


def _update_messages(update: Any) -> list[Any]:
    """The messages an ``updates`` part writes, across its nodes."""
    found: list[Any] = []
    if isinstance(update, dict):
        for node_update in update.values():
            messages = node_update.get("messages") if isinstance(node_update, dict) else None
            if isinstance(messages, list):
                found.extend(messages)
    return found
