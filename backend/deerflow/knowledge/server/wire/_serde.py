"""LangGraph's checkpoint serializer, with each message encoded and decoded once, not every step.

LangGraph writes a thread's whole message list into every checkpoint (a run of the agent writes
four) and reads it back at the start of every run, so with the stock ``JsonPlusSerializer`` a
run's cost grows with the thread's history: every message is dumped by pydantic and rebuilt by
pydantic validation again and again although it never changes. :class:`MessageCachingSerializer`
writes and reads exactly the same bytes (checkpoints stay readable by any LangGraph saver and by
other gateway processes) but remembers, for the most recent messages, the msgpack form of each
message and the message each such form decodes to.

A message is a value here, as LangGraph treats it: ``add_messages`` replaces a message by id and
never edits one in place. A cached form is reused only for a message of the same type whose fields
are the very same values as when it was encoded (a field reassigned, e.g. the id ``add_messages``
gives an id-less message, means a new encoding); a decoded message is handed out as a fresh
shallow copy, so reassigning a field of it never reaches the cache.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, Final

import ormsgpack
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.serde.jsonplus import (
    EXT_PYDANTIC_V2,
    JsonPlusSerializer,
    _msgpack_default,
    _option,
)

__all__ = ["CACHED_BYTES", "MessageCachingSerializer"]

#: Encoded bytes of the messages whose encoded form (and, separately, whose decoded object) stay
#: cached, least recently used dropped first: the histories of the threads in use (some 5,000
#: messages of an agent's run). Resident, the two caches cost about 4.5 times this (the decoded
#: messages and their field copies; measured on the agent's messages): 8 MiB holds about 36 MiB.
#: At 32 MiB they reached 150 MiB only after six waves of 20 long threads, so the process kept
#: growing long after every other cache had reached its bound.
CACHED_BYTES: Final = 8 * 1024 * 1024

_Fields = tuple[type, dict[str, Any], dict[str, Any] | None]


def _fields(message: BaseMessage) -> _Fields:
    extra = message.__pydantic_extra__
    return (type(message), dict(message.__dict__), None if extra is None else dict(extra))


def _unchanged(message: BaseMessage, fields: _Fields) -> bool:
    # The values themselves are shared with the snapshot, so this is an identity check per field
    # (``==`` on containers short-cuts on identical items) unless a field was reassigned.
    return (
        type(message) is fields[0]
        and message.__dict__ == fields[1]
        and message.__pydantic_extra__ == fields[2]
    )


class MessageCachingSerializer(JsonPlusSerializer):
    """``JsonPlusSerializer`` (same options, same bytes) that encodes and decodes each message
    once while it stays among the most recently used (``cached_bytes`` of their encoded forms,
    for each of the two caches)."""

    def __init__(self, *, cached_bytes: int = CACHED_BYTES, **options: Any) -> None:
        super().__init__(**options)
        self.cached_bytes = cached_bytes
        self._encoded: OrderedDict[str, tuple[_Fields, ormsgpack.Ext, int]] = OrderedDict()
        self._encoded_bytes = 0
        self._decoded: OrderedDict[bytes, BaseMessage] = OrderedDict()
        self._decoded_bytes = 0
        self._decode_ext: Callable[[int, bytes], Any] = self._unpack_ext_hook
        self._unpack_ext_hook = self._ext_hook

    def with_msgpack_allowlist(
        self, extra_allowlist: Iterable[tuple[str, ...] | type]
    ) -> JsonPlusSerializer:
        clone = super().with_msgpack_allowlist(extra_allowlist)
        if clone is self or not isinstance(clone, MessageCachingSerializer):
            return clone
        # Another allowlist decodes differently: the clone starts with caches of its own.
        clone._encoded, clone._decoded = OrderedDict(), OrderedDict()
        clone._encoded_bytes = clone._decoded_bytes = 0
        clone._decode_ext = clone._unpack_ext_hook
        clone._unpack_ext_hook = clone._ext_hook
        return clone

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        if obj is None or isinstance(obj, bytes | bytearray):
            return super().dumps_typed(obj)
        try:
            return "msgpack", ormsgpack.packb(obj, default=self._default, option=_option)
        except ormsgpack.MsgpackEncodeError:
            return super().dumps_typed(obj)  # the stock path: its pickle fallback or its error

    def _default(self, value: Any) -> Any:
        if not isinstance(value, BaseMessage) or not value.id:
            return _msgpack_default(value)
        hit = self._encoded.get(value.id)
        if hit is not None and _unchanged(value, hit[0]):
            self._encoded.move_to_end(value.id)
            return hit[1]
        encoded = _msgpack_default(value)
        if isinstance(encoded, ormsgpack.Ext):
            self._remember_encoded(value, encoded, len(ormsgpack.packb(encoded)))
        return encoded

    def _ext_hook(self, code: int, data: bytes) -> Any:
        if code != EXT_PYDANTIC_V2:
            return self._decode_ext(code, data)
        hit = self._decoded.get(data)
        if hit is None:
            decoded = self._decode_ext(code, data)
            if not isinstance(decoded, BaseMessage) or not decoded.id:
                return decoded
            self._decoded[data] = hit = decoded
            self._decoded_bytes += len(data)
            while self._decoded_bytes > self.cached_bytes:
                self._decoded_bytes -= len(self._decoded.popitem(last=False)[0])
        else:
            self._decoded.move_to_end(data)
        copy = hit.model_copy()
        # Saving the message again (the next checkpoint) reuses the bytes it came from.
        self._remember_encoded(copy, ormsgpack.Ext(code, data), len(data))
        return copy

    def _remember_encoded(self, message: BaseMessage, encoded: ormsgpack.Ext, size: int) -> None:
        assert message.id
        previous = self._encoded.pop(message.id, None)
        if previous is not None:
            self._encoded_bytes -= previous[2]
        self._encoded[message.id] = (_fields(message), encoded, size)
        self._encoded_bytes += size
        while self._encoded_bytes > self.cached_bytes:
            self._encoded_bytes -= self._encoded.popitem(last=False)[1][2]
