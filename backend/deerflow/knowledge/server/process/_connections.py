"""The gateway's connections: a bounded number, each waiting a bounded time for its client.

uvicorn waits for a request's headers, and for a client to read its response, as long as either
takes. So a few hundred clients that sent half a header line held every file descriptor (other
requests failed, and each refused ``accept`` logged a traceback), and an event stream whose client
stopped reading kept its buffers, and its run's events, for good. Around uvicorn's HTTP protocol:

* At most ``max_connections`` connections, below the process's descriptor limit. A connection
  past it closes the one that has waited longest without a request in progress (a half-sent header
  costs its sender the slot, not someone else's request); when every connection has a request in
  progress, the new one gets a 503.
* A request's headers must arrive within ``header_timeout`` of the connection opening or of the
  previous response (408 if part of them came, then the connection closes). The body has its own
  limit where it is read (``_http.read_json``).
* A response whose client reads nothing for ``write_timeout`` (the transport's buffer stays above
  its high-water mark all that time) is dropped; a resumable event stream's client reconnects with
  ``Last-Event-ID``. What a response holds meanwhile is bounded by uvicorn's flow control plus one
  write (``_streaming.WRITE_CHUNK_BYTES`` for a stream).
* Each condition is logged in one line when it first happens, then at most once per
  ``log_interval`` with how many more there were.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from uvicorn.protocols.http.h11_impl import H11Protocol

from deerflow.knowledge.server.api._http import error_body
from deerflow.knowledge.server.wire._wire import dumps

__all__ = [
    "DEFAULT_DESCRIPTOR_LIMIT",
    "HEADER_TIMEOUT_SECONDS",
    "LOG_INTERVAL_SECONDS",
    "MAX_ACCEPT_BACKLOG",
    "OTHER_DESCRIPTORS",
    "WRITE_TIMEOUT_SECONDS",
    "ConnectionGuard",
    "Limits",
    "descriptor_limits",
]

HEADER_TIMEOUT_SECONDS: Final = 10.0
WRITE_TIMEOUT_SECONDS: Final = 30.0
LOG_INTERVAL_SECONDS: Final = 60.0
#: Descriptors kept for everything but client connections: the checkpoint and record files, the
#: index reader's pipes, a PostgreSQL pool, logs.
OTHER_DESCRIPTORS: Final = 128
#: Connections taken per wake-up of the listening socket (asyncio's accept batch, which is also
#: the listen queue).
MAX_ACCEPT_BACKLOG: Final = 128
#: What to assume where the process's descriptor limit cannot be read.
DEFAULT_DESCRIPTOR_LIMIT: Final = 1024

_log = logging.getLogger(__name__)
_ACCEPT_ERRNOS: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_MESSAGES: Final = {
    "idle_closed": "connection limit ({limit}) reached: closing the connections that waited "
    "longest without a request",
    "refused": "connection limit ({limit}) reached with a request on every connection: new "
    "connections get 503",
    "header_timeout": "closed a connection whose request headers did not arrive within "
    "{header:g} s",
    "write_timeout": "dropped a client that read nothing for {write:g} s (an event stream "
    "resumes with Last-Event-ID)",
    "accept": "cannot accept connections: the process is out of file descriptors",
}


@dataclass(frozen=True)
class Limits:
    """How many connections to keep, and how many to take per accept batch."""

    max_connections: int
    backlog: int


def descriptor_limits(
    descriptors: int | None = None,
    *,
    other: int = OTHER_DESCRIPTORS,
    max_backlog: int = MAX_ACCEPT_BACKLOG,
) -> Limits:
    """Connection limits for a process allowed ``descriptors`` open files (default: its soft
    ``RLIMIT_NOFILE``). asyncio takes a whole batch of connections before the guard sees the first,
    and a closed connection's descriptor is released a loop iteration later, so two batches and
    ``other`` descriptors are kept free."""
    total = _soft_descriptor_limit() if descriptors is None else descriptors
    backlog = max(8, min(max_backlog, total // 8))
    return Limits(max(total - 2 * backlog - other, total // 4, 1), backlog)


def _soft_descriptor_limit() -> int:
    try:
        import resource
    except ImportError:  # not a POSIX system
        return DEFAULT_DESCRIPTOR_LIMIT
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return DEFAULT_DESCRIPTOR_LIMIT if soft == resource.RLIM_INFINITY else int(soft)


def _response(status: int, reason: str, detail: str) -> bytes:
    body = dumps(error_body(detail))
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class ConnectionGuard:
    """The connections of one server. ``protocol()`` is the HTTP protocol class to give uvicorn
    (``uvicorn.Config(http=...)``); ``exception_handler`` is the event loop's (accept errors in
    one line). ``counts`` says how often each condition happened; ``on_note`` is called with its
    name each time."""

    def __init__(
        self,
        *,
        max_connections: int,
        header_timeout: float = HEADER_TIMEOUT_SECONDS,
        write_timeout: float = WRITE_TIMEOUT_SECONDS,
        log_interval: float = LOG_INTERVAL_SECONDS,
        on_note: Callable[[str], object] | None = None,
    ) -> None:
        self.max_connections = max_connections
        self.header_timeout = header_timeout
        self.write_timeout = write_timeout
        self.log_interval = log_interval
        self.counts: Counter[str] = Counter()
        self._on_note = on_note
        #: Every open connection; those with no request in progress, oldest first.
        self._open: set[_GuardedH11] = set()
        self._idle: OrderedDict[_GuardedH11, None] = OrderedDict()
        self._logged: dict[str, tuple[float, int]] = {}

    @property
    def open_connections(self) -> int:
        return len(self._open)

    def protocol(self) -> type[asyncio.Protocol]:
        return type("GuardedH11Protocol", (_GuardedH11,), {"_guard": self})

    def exception_handler(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error = context.get("exception")
        if (
            isinstance(error, OSError)
            and error.errno in _ACCEPT_ERRNOS
            and "accept" in str(context.get("message", ""))
        ):
            self.note("accept")  # asyncio stops accepting for a second by itself
            return
        loop.default_exception_handler(context)

    def note(self, condition: str) -> None:
        self.counts[condition] += 1
        if self._on_note is not None:
            self._on_note(condition)
        now = time.monotonic()
        last = self._logged.get(condition)
        if last is not None and now - last[0] < self.log_interval:
            self._logged[condition] = (last[0], last[1] + 1)
            return
        message = _MESSAGES[condition].format(
            limit=self.max_connections, header=self.header_timeout, write=self.write_timeout
        )
        if last is not None and last[1]:
            message += f" ({last[1]} more since the last report)"
        _log.warning(message)
        self._logged[condition] = (now, 0)

    def _admit(self, connection: _GuardedH11) -> bool:
        if len(self._open) >= self.max_connections:
            if not self._idle:
                self.note("refused")
                self._open.add(connection)
                connection.refuse()
                return False
            oldest, _ = self._idle.popitem(last=False)
            self.note("idle_closed")
            oldest.transport.close()
        self._open.add(connection)
        return True

    def _set_idle(self, connection: _GuardedH11, idle: bool) -> None:
        if idle:
            self._idle[connection] = None
        else:
            self._idle.pop(connection, None)

    def _release(self, connection: _GuardedH11) -> None:
        self._open.discard(connection)
        self._idle.pop(connection, None)


class _GuardedH11(H11Protocol):
    """uvicorn's h11 protocol under a :class:`ConnectionGuard`: it follows each connection from
    request to request (``cycle`` is uvicorn's current request) to time what it waits for."""

    _guard: ClassVar[ConnectionGuard]
    _busy = False
    _received = False
    _seen: object = None
    _headers_timer: asyncio.TimerHandle | None = None
    _write_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if self._guard._admit(self):
            self._wait_for_headers()

    def data_received(self, data: bytes) -> None:
        self._received = True
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._headers_timer, self._write_timer):
            if timer is not None:
                timer.cancel()
        self._guard._release(self)
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._write_timer is None:
            self._write_timer = self.loop.call_later(self._guard.write_timeout, self._stalled)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None

    def refuse(self) -> None:
        detail = "the gateway has too many connections; try again shortly"
        self.transport.write(_response(503, "Service Unavailable", detail))
        self.transport.close()

    def _follow(self) -> None:
        """Notice a request that started (its headers are in) or ended since the last look."""
        cycle = self.cycle
        busy = cycle is not None and not cycle.response_complete
        if busy and cycle is not self._seen:
            self._seen = cycle
            self._busy = True
            self._guard._set_idle(self, False)
            if self._headers_timer is not None:
                self._headers_timer.cancel()
                self._headers_timer = None
        elif not busy and self._busy:
            self._wait_for_headers()

    def _wait_for_headers(self) -> None:
        self._busy = False
        self._received = False
        self._guard._set_idle(self, True)
        if self._headers_timer is not None:
            self._headers_timer.cancel()
        self._headers_timer = self.loop.call_later(self._guard.header_timeout, self._headers_late)

    def _headers_late(self) -> None:
        self._headers_timer = None
        if self._busy or self.transport.is_closing():
            return
        self._guard.note("header_timeout")
        if self._received:
            detail = f"the request headers did not arrive within {self._guard.header_timeout:g} s"
            self.transport.write(_response(408, "Request Timeout", detail))
        self.transport.close()

    def _stalled(self) -> None:
        self._write_timer = None
        if not self.transport.is_closing():
            self._guard.note("write_timeout")
            # Abort, not close: close would wait for the buffer the client does not read.
            self.transport.abort()
