"""The connection guard (server/_connections.py) around a real uvicorn server on 127.0.0.1.

Every wait here is for an event (a connection closed by the server, a condition noted); the
timeouts on those waits only turn a hang into a failure.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import uvicorn

from deerflow.knowledge.server.process import _connections as connections
from deerflow.knowledge.server.process._connections import (
    ConnectionGuard,
    Limits,
    descriptor_limits,
)
from deerflow.knowledge.server.process._listen import open_listener
from tests.gateway_process import gateway_process

WAIT = 20.0  # seconds before a missing event fails the test
PARTIAL = b"GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


class App:
    """``/ok`` answers at once, ``/hold`` when ``release`` is set, ``/big`` streams forever."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.streams_closed = asyncio.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] == "/hold":
            await self.release.wait()
        if scope["path"] == "/big":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            gone = asyncio.create_task(_disconnected(receive))
            try:
                while not gone.done():
                    await send(
                        {"type": "http.response.body", "body": b"x" * 65536, "more_body": True}
                    )
            finally:
                self.streams_closed.set()
            return
        headers = [(b"content-length", b"2")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"ok"})


async def _disconnected(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


@asynccontextmanager
async def served(app: App, guard: ConnectionGuard | None) -> AsyncIterator[int]:
    """``app`` on 127.0.0.1 (a free port) behind ``guard`` (None: uvicorn alone)."""
    sock = open_listener("127.0.0.1", 0)
    options: dict[str, Any] = {} if guard is None else {"http": guard.protocol()}
    config = uvicorn.Config(app, log_level="warning", lifespan="off", **options)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        await task


async def _connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


async def _get(port: int, path: str = "/ok") -> bytes:
    reader, writer = await _connect(port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    try:
        return await asyncio.wait_for(reader.read(), WAIT)
    finally:
        writer.close()


def _guard(**options: Any) -> ConnectionGuard:
    return ConnectionGuard(**{"max_connections": 64, **options})


def test_limits_keep_two_accept_batches_and_other_descriptors_free() -> None:
    assert descriptor_limits(1024) == Limits(max_connections=640, backlog=128)
    assert descriptor_limits(256) == Limits(max_connections=64, backlog=32)
    assert descriptor_limits(65536) == Limits(max_connections=65152, backlog=128)
    assert descriptor_limits(16) == Limits(max_connections=4, backlog=8)
    assert descriptor_limits(1024, other=0, max_backlog=8) == Limits(1008, 8)
    limits = descriptor_limits()
    assert 1 <= limits.max_connections < limits.max_connections + 2 * limits.backlog


async def test_half_sent_headers_get_a_408_and_the_connection_closes() -> None:
    guard = _guard(header_timeout=0.2)
    async with served(App(), guard) as port:
        reader, writer = await _connect(port)
        writer.write(PARTIAL)
        answer = await asyncio.wait_for(reader.read(), WAIT)
        assert answer.startswith(b"HTTP/1.1 408 ") and b"did not arrive" in answer
        writer.close()
        # A connection that sends nothing is closed without an answer.
        reader, writer = await _connect(port)
        assert await asyncio.wait_for(reader.read(), WAIT) == b""
        writer.close()
    assert guard.counts["header_timeout"] == 2


async def test_the_header_timeout_restarts_after_each_response() -> None:
    guard = _guard(header_timeout=0.3)
    async with served(App(), guard) as port:
        reader, writer = await _connect(port)
        for _ in range(3):  # keep-alive requests are served one after another
            writer.write(b"GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            head = await asyncio.wait_for(reader.readuntil(b"ok"), WAIT)
            assert head.startswith(b"HTTP/1.1 200 ")
        writer.write(PARTIAL)
        rest = await asyncio.wait_for(reader.read(), WAIT)
        assert rest.startswith(b"HTTP/1.1 408 ")
        writer.close()
    assert guard.counts["header_timeout"] == 1


async def test_uvicorn_alone_waits_for_half_sent_headers_forever() -> None:
    # The defect: the same client is never answered. (Bounded by a short wait: nothing will come.)
    async with served(App(), None) as port:
        reader, writer = await _connect(port)
        writer.write(PARTIAL)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(reader.read(), 0.5)
        writer.close()


async def test_a_flood_of_half_sent_headers_does_not_lock_out_requests(
    caplog: pytest.LogCaptureFixture,
) -> None:
    guard = _guard(max_connections=8, header_timeout=600)
    caplog.set_level(logging.WARNING, logger=connections.__name__)
    async with served(App(), guard) as port:
        flood = []
        for _ in range(40):
            reader, writer = await _connect(port)
            writer.write(PARTIAL)
            await writer.drain()
            flood.append((reader, writer))
        for _ in range(5):
            assert (await _get(port)).startswith(b"HTTP/1.1 200 ")
        assert guard.open_connections == 7
        # The oldest half-sent requests lost their connections, the newest kept theirs.
        closed = 0
        for reader, writer in flood:
            with suppress(TimeoutError):
                closed += await asyncio.wait_for(reader.read(), 0.01) == b""
            writer.close()
        # The first request took the slot of the oldest flood connection left; each later one
        # found the slot the one before it left.
        assert closed == 40 - 8 + 1
    assert guard.counts["idle_closed"] == 40 - 8 + 1
    lines = [r for r in caplog.records if "connection limit" in r.getMessage()]
    assert len(lines) == 1 and "(8)" in lines[0].getMessage()


async def test_when_every_connection_has_a_request_a_new_one_gets_503() -> None:
    app = App()
    guard = _guard(max_connections=3)
    async with served(app, guard) as port:
        held = [asyncio.create_task(_get(port, "/hold")) for _ in range(3)]
        while guard.open_connections < 3 or guard._idle:
            await asyncio.sleep(0.01)
        refused = await _get(port)
        assert refused.startswith(b"HTTP/1.1 503 ") and b"too many connections" in refused
        app.release.set()
        for answer in await asyncio.gather(*held):
            assert answer.startswith(b"HTTP/1.1 200 ")
    assert guard.counts["refused"] == 1


async def test_a_client_that_reads_nothing_is_dropped_and_its_response_released() -> None:
    app = App()
    noted: list[str] = []
    dropped = asyncio.Event()

    def note(condition: str) -> None:
        noted.append(condition)
        if condition == "write_timeout":
            dropped.set()

    guard = _guard(write_timeout=0.2, on_note=note)
    async with served(app, guard) as port:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        sock.send(b"GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await asyncio.wait_for(dropped.wait(), WAIT)
        await asyncio.wait_for(app.streams_closed.wait(), WAIT)
        sock.close()
    assert noted == ["write_timeout"]


def test_accept_errors_are_one_line_not_a_traceback_each(caplog: pytest.LogCaptureFixture) -> None:
    guard = _guard()
    caplog.set_level(logging.WARNING)
    loop = asyncio.new_event_loop()
    try:
        error = OSError(errno.EMFILE, "Too many open files")
        for _ in range(1000):
            guard.exception_handler(
                loop, {"message": "socket.accept() out of system resource", "exception": error}
            )
        other = {"message": "something else", "exception": ValueError("x")}
        guard.exception_handler(loop, other)  # the loop's own handler: a traceback, as before
    finally:
        loop.close()
    assert guard.counts["accept"] == 1000
    ours = [r for r in caplog.records if r.name == connections.__name__]
    assert len(ours) == 1 and ours[0].exc_info is None
    assert any(r.name == "asyncio" and "something else" in r.getMessage() for r in caplog.records)


def test_a_repeated_condition_is_reported_again_once_per_interval(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [0.0]
    monkeypatch.setattr(connections.time, "monotonic", lambda: now[0])
    caplog.set_level(logging.WARNING, logger=connections.__name__)
    guard = _guard(log_interval=60)
    for step in range(180):  # one a second for three minutes
        now[0] = float(step)
        guard.note("header_timeout")
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 3
    assert messages[1].endswith("(59 more since the last report)")


def test_a_real_gateway_at_a_low_descriptor_limit_survives_a_flood(tmp_path: Path) -> None:
    """The reported case, scaled down: more half-sent requests than the process has descriptors."""
    limit = 256
    index = tmp_path / "no-index.sqlite"  # /api/ok needs none
    with gateway_process(index, str(tmp_path / "t.sqlite"), tmp_path, max_open_files=limit) as base:
        url = urlsplit(base)
        flood = []
        try:
            for _ in range(limit + 44):
                sock = socket.create_connection((url.hostname, url.port), timeout=30)
                sock.sendall(PARTIAL)
                flood.append(sock)
            answers = [urllib.request.urlopen(base + "api/ok", timeout=30).read() for _ in range(5)]
            assert answers == [b"true"] * 5 or all(answers), answers
        finally:
            for sock in flood:
                sock.close()
        log = (tmp_path / f"gateway-{url.port}.log").read_text()
    assert "Traceback" not in log and "out of file descriptors" not in log
    assert log.count("connection limit") == 1, log[-2000:]
