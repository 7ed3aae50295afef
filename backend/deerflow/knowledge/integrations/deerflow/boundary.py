"""The trust boundary in front of DeerFlow's gateway: callers never write evidence
(docs/RATIONALE.md#trust-boundary).

Readers trust the reserved artifact keys (``knowledge_sources``, ``knowledge_sources_version``,
``retrieval_sources``) because only a server-side retrieval tool writes them. DeerFlow's gateway
turns a caller's message dicts into LangChain messages — a ``tool`` message with its ``artifact``
included — and strips only its own server-owned keys, so a caller-sent tool message with a
self-consistent envelope would be stored and verify as genuine. DeerFlow offers no hook for run
input or state writes (its extensions may observe a run, not rewrite it), so the boundary is an
ASGI wrapper around DeerFlow's app.

Every request body that DeerFlow's routes would parse as JSON — FastAPI parses a body as JSON when
it has no ``Content-Type`` or an ``application/json`` / ``application/*+json`` one — is parsed
here the same way, passed through :func:`deerflow.knowledge.trust.strip_reserved_keys`, and
handed on re-encoded only when something was removed (byte for byte otherwise). That covers run
input and ``command`` on every run route, state writes, and anything a later DeerFlow adds. A body
the walk refuses (nested too deeply) answers 422 and one larger than ``max_body_bytes`` 413, with
a reason: failing closed never stores a forgery. Other bodies (uploads, forms) pass untouched.
"""

from __future__ import annotations

import email.message
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

from deerflow.knowledge.trust import StripRefusedError, strip_reserved_keys

__all__ = ["MAX_BODY_BYTES", "KnowledgeTrustBoundary"]

#: The largest JSON body the boundary reads; a larger one is refused, never passed unread.
MAX_BODY_BYTES: Final = 32 * 1024 * 1024

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_WRITE_METHODS: Final = frozenset({"POST", "PUT", "PATCH"})
_log = logging.getLogger(__name__)


class KnowledgeTrustBoundary:
    """ASGI middleware: strip the reserved evidence keys from every JSON request body."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        if type(max_body_bytes) is not int or max_body_bytes < 1:
            raise ValueError("max_body_bytes must be a positive integer")
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope.get("type") != "http"
            or scope.get("method") not in _WRITE_METHODS
            or not _parsed_as_json(scope)
        ):
            await self.app(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client is gone; nothing is run or stored
            body += message.get("body", b"")
            if len(body) > self.max_body_bytes:
                await _refuse(send, 413, f"the request body is larger than "
                              f"{self.max_body_bytes} bytes")  # fmt: skip
                return
            if not message.get("more_body", False):
                break
        replaced = _strip(bytes(body))
        if isinstance(replaced, _Refusal):
            await _refuse(send, 422, replaced.reason)
            return
        if replaced is not None:
            scope = dict(scope)
            scope["headers"] = [
                (k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"
            ] + [(b"content-length", str(len(replaced)).encode("ascii"))]
        await self.app(scope, _replay(replaced if replaced is not None else bytes(body), receive),
                       send)  # fmt: skip


class _Refusal:
    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _parsed_as_json(scope: Scope) -> bool:
    """FastAPI's rule: no Content-Type, or application/json, or application/*+json."""
    values = [v for k, v in scope.get("headers", []) if k.lower() == b"content-type"]
    if not values:
        return True
    header = email.message.Message()
    header["content-type"] = values[0].decode("latin-1")
    if header.get_content_maintype() != "application":
        return False
    subtype = header.get_content_subtype()
    return subtype == "json" or subtype.endswith("+json")


def _strip(body: bytes) -> bytes | _Refusal | None:
    """The body without reserved keys; None when nothing was removed (or it is not JSON: the app
    answers that itself)."""
    if not body:
        return None
    try:
        value = json.loads(body)
    except ValueError:
        return None
    try:
        stripped, removed = strip_reserved_keys(value)
    except StripRefusedError as exc:
        return _Refusal(f"the request body cannot be checked for forged evidence: {exc}")
    if not removed:
        return None
    _log.info("removed %d caller-written evidence key(s) from a request body", removed)
    return json.dumps(stripped).encode("utf-8")


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # later calls wait for the disconnect, as the app expects

    return replay


async def _refuse(send: Send, status: int, reason: str) -> None:
    payload = json.dumps({"detail": reason}).encode("utf-8")
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode("ascii"))],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": payload})
