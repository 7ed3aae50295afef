"""The trust boundary: callers never get to write evidence (docs/RATIONALE.md#trust-boundary).

Readers trust the reserved artifact keys — ``knowledge_sources``, ``knowledge_sources_version`` and
``retrieval_sources`` — because only a server-side retrieval tool is supposed to write them. A
caller can nonetheless post a ``ToolMessage`` (or its dict form) with a forged artifact in the run
input or in a thread-state write, and LangChain carries the artifact onto the stored message. So
everything a caller sends passes through :func:`strip_reserved_keys` before it is stored or run.

The walk is deliberately broad: an ``artifact`` is any message object's ``artifact`` attribute and
any mapping's ``"artifact"`` entry whose value is a mapping. That covers LangChain message objects,
``convert_to_messages`` dicts (``{"type": ...}`` / ``{"role": ...}``), ``messages_to_dict`` output
(``{"type": ..., "data": {...}}``) and the serialized constructor form (``{"lc": 1, ...,
"kwargs": {...}}``), whatever the role and whichever channel holds them, at any depth. Stripping a
reserved key from something that was not really a message costs nothing a caller may claim.

The input is never mutated. Containers and messages are copied the way ``copy.deepcopy`` does it
(a memo keyed by identity), so shared references stay shared and cycles are rebuilt in the copy
instead of looping. Leaves (strings, numbers, unknown objects) are shared with the input. A value
met in an artifact position is stripped even if the same object was already copied elsewhere.

Tool-call arguments travel as JSON *strings* in some forms — OpenAI's ``tool_calls[].function.
arguments`` (also under ``additional_kwargs``), ``tool_call_chunks[].args`` and
``invalid_tool_calls[].args`` — and LangChain decodes them only after the boundary. So a string under
an ``arguments`` or ``args`` key is decoded the way LangChain decodes it (``json.loads(strict=False)``,
then its partial-JSON parser for a streamed chunk), walked like any other value, and re-encoded only
if something was removed (or its objects repeat a key, which parsers resolve differently); otherwise
the original string is kept byte for byte. A string no parser can decode is kept as well, unless it
mentions a reserved key: then it is refused, since a later merge of chunks could complete it.

It fails closed: containers it cannot copy faithfully (sets, deques, generators, dict views, …)
and nesting past ``max_depth`` raise :class:`StripRefusedError` instead of passing through
unvisited. An artifact that is not a mapping (a pydantic model, a dataclass) is stripped in its
JSON wire form, since that is what a reader on the far side of a serializer sees.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Generic, NamedTuple, TypeVar

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from deerflow.knowledge.envelope import RESERVED_KEYS

if TYPE_CHECKING:
    from langgraph.types import Send

__all__ = [
    "ARGUMENT_KEYS",
    "ARTIFACT_KEY",
    "MAX_STRIP_DEPTH",
    "StripDepthError",
    "StripRefusedError",
    "StripTypeError",
    "Stripped",
    "strip_reserved_keys",
]

#: How deep containers may nest. JSON bodies nest a few levels; anything deeper is hostile, and the
#: walk refuses it (fail closed) rather than leaving an unvisited subtree that could hide evidence.
MAX_STRIP_DEPTH: Final = 100
ARTIFACT_KEY: Final = "artifact"
#: Keys whose string value is a tool call's JSON-encoded arguments.
ARGUMENT_KEYS: Final = frozenset({"arguments", "args"})

T = TypeVar("T")


class StripRefusedError(ValueError):
    """The value cannot be stripped safely; reject it (the caller's fault: fail closed)."""


class StripDepthError(StripRefusedError):
    """The value nests deeper than :data:`MAX_STRIP_DEPTH`, or loops through an immutable
    container (a tuple or a ``Send``) that cannot be rebuilt around itself; reject it."""


class StripTypeError(StripRefusedError):
    """The value holds a container the walk cannot copy faithfully (a set, a deque, a generator,
    a dict view, …): readers downstream could still iterate it, so it is refused, not skipped."""


class Stripped(NamedTuple, Generic[T]):
    """``(value, removed)``: the stripped copy and how many reserved keys were removed.

    A named tuple, so both ``value, removed = strip_reserved_keys(x)`` and ``.value`` work.
    """

    value: T
    removed: int


def strip_reserved_keys(value: T, *, max_depth: int = MAX_STRIP_DEPTH) -> Stripped[T]:
    """A copy of ``value`` without any reserved key in any message artifact.

    Raises :class:`StripRefusedError` (a ``ValueError``: the caller's fault) — :class:`StripDepthError`
    for input nested deeper than ``max_depth`` or cycling through a tuple or a ``Send``,
    :class:`StripTypeError` for a container it cannot copy. A gateway answers it with a client
    error: failing closed never stores a forgery.
    """
    walker = _Walker(max_depth)
    try:
        stripped = walker.walk(value, 0)
    except RecursionError as exc:  # only if the caller's own stack was already nearly exhausted
        raise StripDepthError("the value nests too deeply") from exc
    return Stripped(stripped, walker.removed)


_SCALARS: Final = (str, bytes, bytearray, memoryview, int, float, complex)


def _is_reserved(name: object) -> bool:
    # A serializer turns bytes keys into strings, so b"knowledge_sources" is reserved too.
    if isinstance(name, bytes | bytearray):
        name = bytes(name).decode("utf-8", "replace")
    return isinstance(name, str) and name in RESERVED_KEYS


_JSON_ESCAPE_RE = re.compile(r"\\u([0-9a-fA-F]{4})")


def _mentions_reserved(text: str) -> bool:
    unescaped = _JSON_ESCAPE_RE.sub(lambda m: chr(int(m.group(1), 16)), text)
    return any(key in text or key in unescaped for key in RESERVED_KEYS)


class _Walker:
    __slots__ = ("artifact_memo", "decoded", "in_progress", "max_depth", "memo", "removed")

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.removed = 0
        # id(original) -> copy; the originals are kept alive by the input itself during the walk.
        self.memo: dict[int, Any] = {}
        # Copies made in an artifact position, kept apart: an object first copied as an ordinary
        # value (reserved keys intact) must still be stripped where it is an artifact.
        self.artifact_memo: dict[int, Any] = {}
        # Tuples are built after their items, so a cycle through one cannot use the memo.
        self.in_progress: set[int] = set()
        # Values decoded from argument strings: kept alive so that their ids stay unique in memo.
        self.decoded: list[Any] = []

    def walk(self, value: Any, depth: int) -> Any:
        if value is None or isinstance(value, _SCALARS):
            return value
        key = id(value)
        if key in self.memo:
            return self.memo[key]
        if key in self.in_progress:
            raise StripDepthError("the value loops through a tuple")
        if depth > self.max_depth:
            raise StripDepthError(f"the value nests deeper than {self.max_depth} levels")
        if isinstance(value, Mapping):
            return self._mapping(value, depth)
        if isinstance(value, list):
            return self._list(value, depth)
        if isinstance(value, tuple):
            return self._tuple(value, depth)
        if isinstance(value, BaseModel):
            return self._model(value, depth)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self._dataclass(value, depth)
        if _is_send(value):
            return self._send(value, depth)
        if isinstance(value, Iterable):
            raise StripTypeError(
                f"cannot strip a {type(value).__name__}: send lists and objects (JSON) instead"
            )
        return value  # an opaque object: nothing a reader would look into

    def _strip_artifact(self, artifact: Any, depth: int) -> Any:
        """An artifact without reserved keys; its other values are walked like anything else."""
        if isinstance(artifact, BaseModel) or (
            dataclasses.is_dataclass(artifact) and not isinstance(artifact, type)
        ):
            # Readers past a serializer see the JSON form (``model_dump(mode="json")``).
            try:
                artifact = to_jsonable_python(artifact)
            except Exception:
                raise StripTypeError(
                    f"cannot strip a {type(artifact).__name__} artifact: it has no JSON form"
                ) from None
        if not isinstance(artifact, Mapping):
            return self.walk(artifact, depth)
        key = id(artifact)
        if key in self.artifact_memo:
            return self.artifact_memo[key]
        if depth > self.max_depth:
            raise StripDepthError(f"the value nests deeper than {self.max_depth} levels")
        clean: dict[Any, Any] = {}
        self.artifact_memo[key] = clean
        for name, item in artifact.items():
            if _is_reserved(name):
                self.removed += 1
            else:  # an artifact is a mapping too: its own "artifact" entry is stripped as well
                clean[name] = self._field(name, item, depth + 1)
        return clean

    def _mapping(self, value: Mapping[Any, Any], depth: int) -> Any:
        # A plain dict for any mapping: a reader sees JSON objects, and subclasses with custom
        # constructors cannot be rebuilt generically.
        clean: dict[Any, Any] = {}
        self.memo[id(value)] = clean
        for name, item in value.items():
            clean[name] = self._field(name, item, depth + 1)
        return clean

    def _field(self, name: object, item: Any, depth: int) -> Any:
        if name == ARTIFACT_KEY:
            return self._strip_artifact(item, depth)
        if isinstance(item, str) and name in ARGUMENT_KEYS:
            return self._arguments(item, depth)
        return self.walk(item, depth)

    def _arguments(self, text: str, depth: int) -> str:
        """Tool-call arguments encoded as JSON, stripped in their decoded form."""
        repeated = False

        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
            nonlocal repeated
            obj = dict(items)
            repeated = repeated or len(obj) != len(items)
            return obj

        try:
            decoded = json.loads(text, strict=False, object_pairs_hook=pairs)
        except RecursionError:
            raise StripDepthError("tool-call arguments nest too deeply") from None
        except ValueError:
            # LangChain's lenient decoder, imported only here so that the pure core stays free
            # of langchain-core at import time.
            from langchain_core.utils.json import parse_partial_json

            try:
                decoded = parse_partial_json(text)
            except RecursionError:
                raise StripDepthError("tool-call arguments nest too deeply") from None
            except ValueError:
                decoded = None
            if decoded is None:
                if _mentions_reserved(text):
                    raise StripRefusedError(
                        "tool-call arguments that are not JSON mention a reserved key"
                    ) from None
                return text
        if not isinstance(decoded, dict | list):
            return text
        self.decoded.append(decoded)
        before = self.removed
        clean = self.walk(decoded, depth)
        if self.removed == before and not repeated:
            return text
        return json.dumps(clean, ensure_ascii=False)

    def _list(self, value: list[Any], depth: int) -> list[Any]:
        clean: list[Any] = []
        self.memo[id(value)] = clean
        clean.extend(self.walk(item, depth + 1) for item in value)
        return clean

    def _tuple(self, value: tuple[Any, ...], depth: int) -> tuple[Any, ...]:
        self.in_progress.add(id(value))
        items = [self.walk(item, depth + 1) for item in value]
        self.in_progress.discard(id(value))
        if hasattr(value, "_fields"):  # a named tuple is rebuilt from its fields
            clean: tuple[Any, ...] = type(value)(*items)
        else:
            clean = tuple(items)
        self.memo[id(value)] = clean
        return clean

    def _model(self, value: BaseModel, depth: int) -> BaseModel:
        # A shallow copy first, registered before its fields are walked, so cycles resolve to it.
        clean = value.model_copy()
        self.memo[id(value)] = clean
        fields = dict(clean.__dict__)
        extra = dict(clean.__pydantic_extra__ or {})
        for store, target in ((fields, clean.__dict__), (extra, clean.__pydantic_extra__)):
            for name, item in store.items():
                target[name] = self._field(name, item, depth + 1)  # type: ignore[index]
        return clean

    def _send(self, value: Send, depth: int) -> Send:
        # A ``Send`` carries a node's whole input; it is immutable, so it is rebuilt after its arg.
        self.in_progress.add(id(value))
        arg = self.walk(value.arg, depth + 1)
        self.in_progress.discard(id(value))
        clean = type(value)(value.node, arg, timeout=value.timeout)
        self.memo[id(value)] = clean
        return clean

    def _dataclass(self, value: Any, depth: int) -> Any:
        # Covers LangGraph's ``Command`` (a dataclass): its ``update`` is a state write.
        clean = copy.copy(value)
        self.memo[id(value)] = clean
        for field in dataclasses.fields(value):
            item = getattr(value, field.name, None)
            new = self._field(field.name, item, depth + 1)
            if new is not item:
                object.__setattr__(clean, field.name, new)
        return clean


def _is_send(value: object) -> bool:
    # A ``Send`` can exist only once langgraph.types is imported, so the walk need not import it
    # (importing it costs the whole LangChain core; this module is part of the light core).
    send = getattr(sys.modules.get("langgraph.types"), "Send", None)
    return send is not None and isinstance(value, send)
