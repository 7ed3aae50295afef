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
it has no ``Content-Type`` or an ``application/json`` / ``application/*+json`` one — is checked by
:func:`~deerflow.knowledge.integrations.deerflow._body.check_body` and handed on with the reserved
keys removed (byte for byte when there were none). That covers run input and ``command`` on every
run route, state writes, and anything a later DeerFlow adds. Other bodies (uploads, forms) pass
untouched.

The wrapper costs nothing before the app: it hands DeerFlow a ``receive`` that reads and checks
the body only when DeerFlow first asks for it, so DeerFlow's authentication answers an anonymous
caller before a byte of the body is read, and the app still never sees a byte the check has not
passed. The check runs in a worker thread (at most ``max_concurrent_checks`` at once), so other
requests keep being served while it runs. A body it refuses answers with a reason and the app is
told the client left: 413 past ``max_body_bytes`` or ``max_body_tokens``, 422 nested past
``max_depth`` or otherwise impossible to check. Failing closed never stores a forgery.
"""

from __future__ import annotations

import asyncio
import email.message
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

from deerflow.knowledge.integrations.deerflow import _body
from deerflow.knowledge.integrations.deerflow._body import MAX_BODY_TOKENS
from deerflow.knowledge.trust import MAX_STRIP_DEPTH

__all__ = ["MAX_BODY_BYTES", "MAX_BODY_TOKENS", "MAX_CONCURRENT_CHECKS", "KnowledgeTrustBoundary"]

#: The largest JSON body the boundary reads; a larger one is refused, never passed unread. A run
#: DeerFlow's UI starts is under a kilobyte (attachments travel as multipart uploads, which pass
#: untouched; the message carries their names). The limit is for the largest JSON DeerFlow's
#: routes take: GitHub webhook deliveries (up to 25 MB) and run input with inline base64 images,
#: which a model provider takes up to 32 MB a request (Anthropic's Messages API). The bytes cost
#: only linear passes; what a body can make the check build is bounded by MAX_BODY_TOKENS.
MAX_BODY_BYTES: Final = 32 * 1024 * 1024
#: Bodies checked at once, each in a worker thread; more wait their turn. The check holds the GIL
#: most of the time, so more threads would add no throughput, only memory.
MAX_CONCURRENT_CHECKS: Final = 2

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_WRITE_METHODS: Final = frozenset({"POST", "PUT", "PATCH"})
#: Each refusal's HTTP status, here and nowhere else.
_STATUS: Final[dict[type[_body.Refuse], int]] = {_body.TooLarge: 413, _body.Unchecked: 422}
_DISCONNECT: Final = {"type": "http.disconnect"}
_log = logging.getLogger(__name__)


def _positive(name: str, value: object) -> int:
    if type(value) is not int or value < 1:
        raise ValueError(f"{name} must be a positive integer")
    return value


class KnowledgeTrustBoundary:
    """ASGI middleware: strip the reserved evidence keys from every JSON request body."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_body_tokens: int = MAX_BODY_TOKENS,
        max_depth: int = MAX_STRIP_DEPTH,
        max_concurrent_checks: int = MAX_CONCURRENT_CHECKS,
    ) -> None:
        self.app = app
        self.max_body_bytes = _positive("max_body_bytes", max_body_bytes)
        self.max_body_tokens = _positive("max_body_tokens", max_body_tokens)
        self.max_depth = _positive("max_depth", max_depth)
        self.max_concurrent_checks = _positive("max_concurrent_checks", max_concurrent_checks)
        self._checks = asyncio.Semaphore(max_concurrent_checks)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope.get("type") != "http"
            or scope.get("method") not in _WRITE_METHODS
            or not _parsed_as_json(scope)
        ):
            await self.app(scope, receive, send)
            return
        guard = _GuardedBody(self, receive, send)
        await self.app(scope, guard.receive, guard.send)

    async def _check(self, body: bytes) -> _body.Pass | _body.Replace | _body.Refuse:
        async with self._checks:
            return await asyncio.to_thread(
                _body.check_body, body, max_tokens=self.max_body_tokens, max_depth=self.max_depth
            )


class _GuardedBody:
    """One request's ``receive`` and ``send`` as the app sees them: the body is read and checked
    on the app's first ``receive()``; after a refusal the app hears that the client left, and
    what it sends is dropped (the refusal was the answer)."""

    __slots__ = ("_boundary", "_closed", "_lock", "_receive", "_refused", "_send", "_started")

    def __init__(self, boundary: KnowledgeTrustBoundary, receive: Receive, send: Send) -> None:
        self._boundary = boundary
        self._receive = receive
        self._send = send
        self._lock = asyncio.Lock()
        self._closed: bool | None = None  # None: the body is not read yet
        self._refused = False
        self._started = False

    async def send(self, message: Message) -> None:
        if self._refused:
            return
        if message.get("type") == "http.response.start":
            self._started = True
        await self._send(message)

    async def receive(self) -> Message:
        if self._closed is None:
            async with self._lock:
                if self._closed is None:
                    return await self._read()
        if self._closed:
            return dict(_DISCONNECT)
        return await self._receive()  # later calls wait for the disconnect, as the app expects

    async def _read(self) -> Message:
        limit = self._boundary.max_body_bytes
        body = bytearray()
        while True:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self._closed = True  # the client is gone; nothing is run or stored
                return message
            body += message.get("body", b"")
            if len(body) > limit:
                return await self._refuse(
                    _body.TooLarge(f"the request body is larger than {limit} bytes")
                )
            if not message.get("more_body", False):
                break
        received = bytes(body)
        del body
        verdict = await self._boundary._check(received)
        if isinstance(verdict, _body.Refuse):
            return await self._refuse(verdict)
        if isinstance(verdict, _body.Replace):
            _log.info("removed %d caller-written evidence key(s) from a request body",
                      verdict.removed)  # fmt: skip
            received = verdict.body
        self._closed = False
        return {"type": "http.request", "body": received, "more_body": False}

    async def _refuse(self, refusal: _body.Refuse) -> Message:
        self._closed = self._refused = True
        if not self._started:  # else the app answered before reading; its answer is cut short
            await _answer(self._send, _STATUS[type(refusal)], refusal.reason)
        return dict(_DISCONNECT)


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


async def _answer(send: Send, status: int, reason: str) -> None:
    payload = json.dumps({"detail": reason}).encode("utf-8")
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode("ascii"))],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": payload})
