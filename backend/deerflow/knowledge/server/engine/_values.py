"""Caller-written values at the trust boundary, checked once for every path that stores them.

A run's input, its command, its ``configurable`` and a state write all come from the caller: each
passes ``strip_reserved_keys`` (no evidence a caller wrote), holds only text every store can keep,
and its messages are parsed in one call. These checks are the engine's, not the HTTP layer's,
so the run plan (``_runplan``) and the thread routes (``api/_threads.py``) share them and they are
tested without a web stack (``tests/test_server_values.py``). A refusal is a ``RequestRefused``: the caller's fault, with a message
for the caller; ``api/_http.py`` alone gives each kind its status.
"""

from __future__ import annotations

import re
from typing import Any, Final

from langchain_core.messages import BaseMessage, convert_to_messages

from deerflow.knowledge.trust import Stripped, StripRefusedError, strip_reserved_keys

__all__ = [
    "MAX_INPUT_MESSAGES",
    "UNSTORABLE_NUL",
    "UNSTORABLE_SURROGATE",
    "OptionsConflict",
    "RequestRefused",
    "RequestTooLarge",
    "nul_free_nodes",
    "parse_messages",
    "storable_values",
    "strip",
    "subgraphs_refused",
    "trusted_values",
]

#: The most messages one request may carry.
MAX_INPUT_MESSAGES: Final = 200
#: Why a request is refused: PostgreSQL's ``jsonb`` and ``text`` cannot hold U+0000, so on
#: PostgreSQL such metadata or ids would be a 500; every backend refuses them alike.
UNSTORABLE_NUL: Final = "metadata and thread ids cannot hold the character U+0000"
#: A lone UTF-16 surrogate (``"\ud800"`` in JSON) is no character: no store can encode it.
UNSTORABLE_SURROGATE: Final = "text cannot hold a lone surrogate (U+D800..U+DFFF)"
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


class RequestRefused(Exception):
    """The caller sent a value the gateway will not take; ``str(error)`` says why (422)."""


class OptionsConflict(RequestRefused):
    """The caller set two options that exclude each other (400, as LangGraph Server answers)."""


class RequestTooLarge(RequestRefused):
    """The caller sent more than a limit allows (413)."""


def nul_free_nodes(value: Any, *, nul: bool = False) -> int:
    """How many values ``value`` holds (itself, keys, items, nested); ``ValueError`` if a string
    among them holds a lone surrogate, or U+0000 (unless ``nul``). One visit per value, on a
    stack: no recursion, linear."""
    stack = [value]
    visited = 0
    while stack:
        item = stack.pop()
        visited += 1
        if isinstance(item, str):
            if not nul and "\x00" in item:
                raise ValueError(UNSTORABLE_NUL)
            if _SURROGATE.search(item):
                raise ValueError(UNSTORABLE_SURROGATE)
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return visited


def strip(value: Any) -> Stripped[Any]:
    """``strip_reserved_keys`` with its refusal a ``RequestRefused``."""
    try:
        return strip_reserved_keys(value)
    except StripRefusedError:
        raise RequestRefused(
            "the request nests too deeply or holds a value that cannot be checked"
        ) from None


def storable_values(values: Any) -> Any:
    """Caller-written state values, refused when they hold text no store encodes."""
    try:
        nul_free_nodes(values, nul=True)
    except ValueError as exc:
        raise RequestRefused(str(exc)) from None
    return values


def subgraphs_refused(checkpoint: dict[str, Any] | None) -> None:
    """Refuse a checkpoint of a subgraph (``checkpoint_ns``): this gateway reads and writes the
    state of the graph itself only."""
    if checkpoint and checkpoint.get("checkpoint_ns"):
        raise RequestRefused("checkpoint_ns (a subgraph's state) is not supported by this gateway")


def parse_messages(raw: Any, *, max_messages: int = MAX_INPUT_MESSAGES) -> list[BaseMessage]:
    """Caller-sent messages (dicts, ``(role, content)`` pairs, strings) as LangChain messages;
    ``RequestTooLarge`` past ``max_messages``."""
    if isinstance(raw, dict | str):
        raw = [raw]
    if not isinstance(raw, list):
        raise RequestRefused("messages must be a list")
    if len(raw) > max_messages:
        raise RequestTooLarge(f"at most {max_messages} messages per request")
    try:
        return list(convert_to_messages(raw))
    except (ValueError, TypeError, KeyError, NotImplementedError, AttributeError) as exc:
        raise RequestRefused(f"invalid messages ({type(exc).__name__})") from None


def trusted_values(values: Any) -> tuple[Any, int]:
    """Caller-sent state values, reserved evidence keys removed and messages parsed; with how
    many keys were removed."""
    stripped = strip(values)
    value = stripped.value
    if isinstance(value, dict) and "messages" in value:
        value = {**value, "messages": parse_messages(value["messages"])}
    return value, stripped.removed
