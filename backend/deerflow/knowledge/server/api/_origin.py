"""Who may talk to the gateway: requests naming a host it serves, writes from its own origin.

A gateway on 127.0.0.1 is reachable by every page the user's browser opens. A page may send it a
cross-origin POST that needs no preflight (a ``text/plain`` body, an empty one), and through DNS
rebinding (its own name made to resolve to 127.0.0.1) read every answer as if same-origin. So a
request's ``Host`` must name an address the gateway serves (a rebinding page can only send its own
name), and a write that carries an ``Origin`` must come from the gateway's own origin or one
``--cors-origin`` allows. Reads need no ``Origin`` check: without CORS the browser keeps the answer
from the page. JSON bodies must also say ``application/json`` (``_http.read_json``), which no page
can send cross-origin without a preflight the gateway refuses.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Iterable
from typing import Any, Final

from starlette.types import ASGIApp, Receive, Scope, Send

from deerflow.knowledge.server.api._http import error_body
from deerflow.knowledge.server.wire._wire import dumps

__all__ = [
    "SAFE_METHODS",
    "OriginGuard",
    "host_allowed",
    "host_name",
    "origin_allowed",
    "served_hosts",
]

#: Methods that change nothing (CORS preflights included): only their ``Host`` is checked.
SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
_MAX_PORT_DIGITS: Final = 5
_UNSPECIFIED: Final = frozenset({"0.0.0.0", "[::]"})


def host_name(header: str) -> str | None:
    """The host a ``Host`` header names, lowercased (an IPv6 address keeps its brackets), without
    the port; None when the header is not ``host`` or ``host:port``."""
    value = header.lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[: end + 1], value[end + 1 :]
    else:
        name, colon, port = value.partition(":")
        rest = colon + port
    if rest:
        port = rest[1:]
        if not (rest[0] == ":" and port.isascii() and port.isdigit()):
            return None
        if len(port) > _MAX_PORT_DIGITS:
            return None
    if not name or any(c in name for c in " \t/\\@?#"):
        return None
    return name


def _canonical_address(name: str) -> bool:
    """Whether ``name`` is an IP address written the one way browsers write it."""
    inner = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    try:
        address = ipaddress.ip_address(inner)
    except ValueError:
        return False
    written = str(address)
    return (f"[{written}]" if address.version == 6 else written) == name


def served_hosts(bound: str, *, requested: str | None = None) -> frozenset[str]:
    """The names a gateway bound to the address ``bound`` answers to: that address (in ``Host``
    form), ``localhost`` when it is a loopback or unspecified address, and ``requested`` (the
    ``--host`` as given, e.g. a name that resolved to ``bound``)."""
    try:
        address = ipaddress.ip_address(bound.split("%", 1)[0])
    except ValueError:
        names = {bound.lower()}
    else:
        names = {f"[{address}]" if address.version == 6 else str(address)}
        if address.is_loopback or address.is_unspecified:
            names.add("localhost")
    if requested:
        names.add(requested)
    return frozenset(_normalized(n) for n in names)


def _normalized(name: str) -> str:
    """A configured host as ``host_name`` reads headers (an IPv6 address bracketed, no port)."""
    if name.count(":") > 1 and not name.startswith("["):
        name = f"[{name}]"
    return host_name(name) or name.lower()


def host_allowed(header: str | None, allowed: Collection[str]) -> bool:
    """Whether a request's ``Host`` names one of ``allowed`` (``host_name`` form; any port: a
    port cannot make a rebinding page's name ours, and a proxy may map ports). An unspecified address
    (``0.0.0.0``, ``[::]``) in ``allowed`` admits every IP address written canonically: a
    rebinding page cannot make its ``Host`` an address, only a name."""
    name = None if header is None else host_name(header)
    if name is None:
        return False
    if name in allowed:
        return True
    return not _UNSPECIFIED.isdisjoint(allowed) and _canonical_address(name)


def origin_allowed(origin: str, host: str | None, cors_origins: Collection[str]) -> bool:
    """Whether a write carrying ``Origin: origin`` may proceed: the gateway's own origin (the
    authority the request's ``Host`` names) or one of ``cors_origins`` (exactly as configured)."""
    if origin in cors_origins:
        return True
    scheme, separator, authority = origin.partition("://")
    return (
        bool(separator)
        and scheme.lower() in ("http", "https")
        and host is not None
        and authority.lower() == host.lower()
    )


class OriginGuard:
    """ASGI middleware refusing requests for hosts the gateway does not serve (400) and writes
    from origins it does not allow (403), each with a reason, before any route runs.

    ``allowed_hosts`` None turns the ``Host`` check off (an application serving the gateway
    behind its own server, which knows its names); ``serve`` always sets it."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: Iterable[str] | None,
        cors_origins: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.allowed_hosts = (
            None if allowed_hosts is None else frozenset(_normalized(h) for h in allowed_hosts)
        )
        self.cors_origins = frozenset(cors_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = origin = None
        for name, value in scope["headers"]:
            if name == b"host":
                host = value.decode("latin-1")
            elif name == b"origin":
                origin = value.decode("latin-1")
        if self.allowed_hosts is not None and not host_allowed(host, self.allowed_hosts):
            await _refuse(
                send,
                400,
                "this gateway does not serve the host named in the request's Host header; "
                "start it with --allowed-host NAME to serve another name",
            )
            return
        if (
            origin is not None
            and scope["method"] not in SAFE_METHODS
            and not origin_allowed(origin, host, self.cors_origins)
        ):
            await _refuse(
                send,
                403,
                "cross-origin writes are refused: this page's origin is not allowed "
                "(start the gateway with --cors-origin ORIGIN to allow it)",
            )
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, detail: str) -> None:
    body = dumps(error_body(detail))
    headers: list[Any] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
