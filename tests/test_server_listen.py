"""The gateway's listening socket turns Nagle off on every accepted connection.

Without it, every response after the first on a kept-alive connection waits for the peer's
delayed ACK (~40 ms on Linux): the SDK clients keep connections open.
"""

from __future__ import annotations

import asyncio
import errno
import socket

import pytest

from deerflow.knowledge.server.process._listen import open_listener


async def _nodelay_of_accepted(sock: socket.socket) -> int:
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            raw = transport.get_extra_info("socket")
            accepted.set_result(raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    server = await asyncio.get_running_loop().create_server(Probe, sock=sock)
    async with server:
        host, port = sock.getsockname()[:2]
        _, writer = await asyncio.open_connection(host, port)
        try:
            return await asyncio.wait_for(accepted, 5)
        finally:
            writer.close()


def test_accepted_connections_have_nagle_off() -> None:
    assert asyncio.run(_nodelay_of_accepted(open_listener("127.0.0.1", 0))) != 0


def test_the_stdlib_listener_would_not() -> None:
    # Why the module exists: proto 0 makes asyncio skip TCP_NODELAY. If a Python release changes
    # that, this fails and ``open_listener`` can go.
    assert asyncio.run(_nodelay_of_accepted(socket.create_server(("127.0.0.1", 0)))) == 0


def test_a_busy_port_raises_address_in_use() -> None:
    with open_listener("127.0.0.1", 0) as busy, pytest.raises(OSError) as raised:
        open_listener("127.0.0.1", busy.getsockname()[1])
    assert raised.value.errno == errno.EADDRINUSE
