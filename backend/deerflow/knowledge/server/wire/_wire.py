"""LangGraph values as LangGraph Server puts them on the wire, each immutable message encoded once.

A message is sent the way the SDKs read it: ``BaseMessage.model_dump()`` (``type``, ``content``,
``artifact``, ``tool_calls``, …), artifacts untouched so the browser re-verifies exactly what the
tool wrote. A run emits the whole message list after every step, so :class:`WireEncoder` keeps the
JSON of every message object it has encoded and joins those fragments into each frame: the cost of
a frame is one pass over new messages, not over the thread's history.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

import orjson
from langchain_core.messages import BaseMessage
from langgraph.types import Interrupt, StateSnapshot
from pydantic import BaseModel

__all__ = [
    "EMPTY_CHECKPOINT_NS",
    "THREAD_MEMOS_KEPT",
    "THREAD_MEMO_BYTES_KEPT",
    "ThreadMemos",
    "WireEncoder",
    "checkpoint_of",
    "dumps",
    "iso_now",
    "message_to_wire",
    "state_to_wire",
    "to_jsonable",
]

EMPTY_CHECKPOINT_NS: Final = ""
#: Threads whose encoded messages stay in memory (least recently run dropped first) ...
THREAD_MEMOS_KEPT: Final = 64
#: ... and at most this many bytes of message JSON across them (the messages themselves stay
#: too, about as much again): a long thread's memo is megabytes, so a count alone let 64 long
#: threads hold hundreds of megabytes. The thread of the run starting stays whatever its size.
THREAD_MEMO_BYTES_KEPT: Final = 8 * 1024 * 1024
_OPTIONS: Final = orjson.OPT_NON_STR_KEYS


def message_to_wire(message: BaseMessage) -> dict[str, Any]:
    """A message as the LangGraph SDK shows it (``type``, ``content``, ``artifact``, …)."""
    return message.model_dump(mode="json")


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON values (the fallback for objects orjson does not know)."""
    return orjson.loads(dumps(value))


def _default(value: Any) -> Any:
    if isinstance(value, BaseMessage):
        return message_to_wire(value)
    if isinstance(value, Interrupt):
        return {"value": value.value, "id": value.id}
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return repr(value)


def dumps(value: Any) -> bytes:
    """``value`` as JSON, in a bytes object of exactly its length. orjson (3.12 on) returns the
    whole buffer it wrote into — at least 4 KiB, rounded up to a power of two — and never trims
    it: a 2.7 KB message's JSON held 16 KB. The gateway keeps what it encodes (a run's events, a
    thread's messages), so each kept string cost up to ten times its length, outside every bound
    that counts bytes; the copy costs one ``memcpy``."""
    return bytes(memoryview(orjson.dumps(value, default=_default, option=_OPTIONS)))


class WireEncoder:
    """Encodes values frames, remembering each message's JSON.

    A message with an id is remembered by id, together with the object: the JSON is reused for the
    same object or an equal one (a run reads the thread's history from its checkpoint as new but
    equal objects), so a message replaced under its id is encoded anew. ``memo`` may be shared by
    the encoders of one thread's runs, so its history is encoded once, not once per run.
    """

    def __init__(self, memo: dict[Any, tuple[BaseMessage, bytes]] | None = None) -> None:
        self._memo: dict[Any, tuple[BaseMessage, bytes]] = {} if memo is None else memo
        self.encoded = 0

    def message(self, message: BaseMessage) -> bytes:
        key = message.id or id(message)
        hit = self._memo.get(key)
        if hit is not None:
            if hit[0] is message:
                return hit[1]
            if message.id and _same(hit[0], message):
                self._memo[key] = (message, hit[1])  # identity from now on
                return hit[1]
        data = dumps(message)
        self.encoded += 1
        self._memo[key] = (message, data)
        return data

    def messages(self, messages: list[Any]) -> bytes:
        return b"".join(self._message_parts(messages))

    def _message_parts(self, messages: list[Any]) -> list[bytes]:
        parts = [b"["]
        for m in messages:
            parts.append(self.message(m) if isinstance(m, BaseMessage) else dumps(m))
            parts.append(b",")
        parts[-1] = b"]" if len(parts) > 1 else b"[]"
        return parts

    def values(self, values: Any) -> bytes:
        """A state's values: its ``messages`` list from the memo, other channels encoded. One
        copy of the frame's bytes, however long the history (a values frame of a long thread is
        hundreds of kilobytes, four times a run)."""
        if not isinstance(values, Mapping):
            return dumps(values)
        parts = [b"{"]
        for key, value in values.items():
            parts += (dumps(str(key)), b":")
            if key == "messages" and isinstance(value, list):
                parts += self._message_parts(value)
            else:
                parts.append(dumps(value))
            parts.append(b",")
        parts[-1] = b"}" if len(parts) > 1 else b"{}"
        return b"".join(parts)


class ThreadMemos:
    """The :class:`WireEncoder` memos of the threads run last, bounded by a count of threads and
    by the bytes of JSON they hold (least recently run dropped first)."""

    def __init__(
        self, *, most: int = THREAD_MEMOS_KEPT, most_bytes: int = THREAD_MEMO_BYTES_KEPT
    ) -> None:
        self.most = most
        self.most_bytes = most_bytes
        self._memos: OrderedDict[str, dict[Any, tuple[BaseMessage, bytes]]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._memos)

    def held_bytes(self) -> int:
        """Bytes of message JSON the memos hold (one pass over their entries)."""
        return sum(_memo_bytes(memo) for memo in self._memos.values())

    def checkout(self, thread_id: str) -> dict[Any, tuple[BaseMessage, bytes]]:
        """The thread's memo (new if none), now the most recent; older memos past the bounds
        are dropped. One pass over the memos' entries, once per run."""
        memo = self._memos.pop(thread_id, None)
        if memo is None:
            memo = {}
        sizes = [(key, _memo_bytes(held)) for key, held in self._memos.items()]
        total = sum(size for _, size in sizes) + _memo_bytes(memo)
        for key, size in sizes:
            if len(self._memos) < self.most and total <= self.most_bytes:
                break
            del self._memos[key]
            total -= size
        self._memos[thread_id] = memo
        return memo


def _memo_bytes(memo: Mapping[Any, tuple[BaseMessage, bytes]]) -> int:
    return sum(len(data) for _, data in memo.values())


def _same(a: BaseMessage, b: BaseMessage) -> bool:
    # Field-for-field equality (what ``==`` checks, without pydantic's slower generic path).
    return (
        type(a) is type(b)
        and a.__dict__ == b.__dict__
        and a.__pydantic_extra__ == b.__pydantic_extra__
    )


def checkpoint_of(config: Mapping[str, Any] | None, thread_id: str) -> dict[str, Any] | None:
    """A ``RunnableConfig``'s checkpoint as the SDK's ``Checkpoint``."""
    if not config:
        return None
    configurable = config.get("configurable", {})
    return {
        "thread_id": configurable.get("thread_id", thread_id),
        "checkpoint_ns": configurable.get("checkpoint_ns", EMPTY_CHECKPOINT_NS),
        "checkpoint_id": configurable.get("checkpoint_id"),
        "checkpoint_map": configurable.get("checkpoint_map"),
    }


def state_to_wire(snapshot: StateSnapshot, thread_id: str, encoder: WireEncoder) -> bytes:
    """A ``StateSnapshot`` as the SDK's ``ThreadState``, encoded."""
    checkpoint = checkpoint_of(snapshot.config, thread_id) or {
        "thread_id": thread_id,
        "checkpoint_ns": EMPTY_CHECKPOINT_NS,
        "checkpoint_id": None,
        "checkpoint_map": None,
    }
    tasks = [
        {
            "id": task.id,
            "name": task.name,
            "error": None if task.error is None else f"{type(task.error).__name__}",
            "interrupts": list(task.interrupts),
            "checkpoint": None,
            "state": None,
            "result": task.result if task.result is None else to_jsonable(task.result),
        }
        for task in snapshot.tasks
    ]
    rest = {
        "next": list(snapshot.next),
        "tasks": tasks,
        "checkpoint": checkpoint,
        "parent_checkpoint": checkpoint_of(snapshot.parent_config, thread_id),
        "metadata": snapshot.metadata or {},
        "created_at": snapshot.created_at,
        "interrupts": list(snapshot.interrupts),
    }
    values = encoder.values(snapshot.values if snapshot.values else {})
    return b'{"values":' + values + b"," + dumps(rest)[1:]


def iso_now() -> str:
    return datetime.now(UTC).isoformat()
