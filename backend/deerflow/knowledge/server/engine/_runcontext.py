"""A run's ``context``: the graph's runtime context (LangGraph's ``Runtime.context``), parsed once.

LangGraph Server takes a run's ``context`` (LangGraph 0.6 on) as the replacement of
``config.configurable``, and clients send it on every run: DeerFlow's ``useStream`` sends
``thinking_enabled``, ``is_plan_mode``, ``subagent_enabled``, ``thread_id`` … with each message.
The gateway hands it to the graph as LangGraph Server does: the context becomes the graph's
runtime context, keys its context schema does not name dropped, and its keys are mirrored into
``configurable`` (where graphs written before 0.6 read them). A run without one gets its
``configurable`` as runtime context. The context is caller-written: it is a JSON object under a
size and a depth limit, holds only characters every store can keep, and passes the trust
boundary before the graph sees it.

Tested by ``tests/test_server_context.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from deerflow.knowledge.server.engine._values import nul_free_nodes

__all__ = [
    "CONTEXT_AND_CONFIGURABLE",
    "MAX_CONTEXT_BYTES",
    "MAX_CONTEXT_DEPTH",
    "ContextRefused",
    "check_context",
    "fit_context",
    "mirrored_keys",
    "within_depth",
]

#: The most a run's context may weigh (compact JSON, UTF-8). DeerFlow's is under 1 KiB; its
#: primitive values are copied into every checkpoint's metadata, as LangGraph Server does.
MAX_CONTEXT_BYTES: Final = 64 * 1024
#: How deeply a context may nest objects and arrays (the object itself is depth 1).
MAX_CONTEXT_DEPTH: Final = 16
#: LangGraph Server's refusal (400) of a run that sets both, in its words.
CONTEXT_AND_CONFIGURABLE: Final = (
    "Cannot specify both configurable and context. Prefer setting context alone."
)
#: ``configurable`` keys the gateway sets itself: a context key of that name is not mirrored.
_GATEWAY_KEYS: Final = frozenset({"thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map"})


class ContextRefused(ValueError):
    """The caller's ``context`` is not one the gateway can hand to a graph; ``str`` says why."""


def check_context(
    value: Any,
    *,
    max_bytes: int = MAX_CONTEXT_BYTES,
    max_depth: int = MAX_CONTEXT_DEPTH,
) -> dict[str, Any]:
    """``value`` (a request's ``context``, parsed JSON) as a context; ``ContextRefused`` if it is
    not a JSON object, nests deeper than ``max_depth``, weighs more than ``max_bytes`` or holds
    U+0000 or a lone surrogate. One visit per value, on a stack: linear, no recursion."""
    if not isinstance(value, dict):
        raise ContextRefused(f"context must be an object, not {_json_type(value)}")
    within_depth(value, max_depth=max_depth)
    try:
        nul_free_nodes(value)
    except ValueError as exc:
        raise ContextRefused(f"context: {exc}") from None
    size = len(orjson.dumps(value))
    if size > max_bytes:
        raise ContextRefused(f"context is {size} bytes of JSON; at most {max_bytes} are accepted")
    return value


def within_depth(value: Any, *, max_depth: int) -> int:
    """How many values ``value`` holds (itself and nested, keys aside); ``ContextRefused`` at the
    first container deeper than ``max_depth``. Each value is visited once, on a stack."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    visited = 0
    while stack:
        item, depth = stack.pop()
        visited += 1
        if isinstance(item, dict | list):
            if depth > max_depth:
                raise ContextRefused(f"context nests deeper than {max_depth} levels")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return visited


def fit_context(context: dict[str, Any], schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The context a graph gets: only the keys its context schema (JSON schema) names, when it
    names any — as LangGraph Server filters it."""
    properties = (schema or {}).get("properties") or {}
    if not properties:
        return context
    return {key: item for key, item in context.items() if key in properties}


def mirrored_keys(context: Mapping[str, Any]) -> dict[str, Any]:
    """The context's entries copied into ``configurable``: not the keys the gateway sets itself
    (``thread_id`` is the path's), nor LangGraph's own run wiring (``__…``)."""
    return {
        key: item
        for key, item in context.items()
        if key not in _GATEWAY_KEYS and not key.startswith("__")
    }


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array"
