"""The gateway's listening socket.

``socket.create_server`` leaves the protocol number 0, and asyncio only turns Nagle's algorithm
off (``TCP_NODELAY``) on connections whose socket says ``IPPROTO_TCP``. Without it, every
response after the first on a kept-alive connection (what langgraph-sdk and ``useStream``
clients hold open) waits ~40 ms for the peer's delayed ACK, because uvicorn writes the headers
and the body separately. So the socket is made here, TCP by name.
"""

from __future__ import annotations

import os
import socket

__all__ = ["open_listener"]


def open_listener(host: str, port: int) -> socket.socket:
    """A bound, listening TCP socket on ``host:port`` (``OSError`` as ``socket.create_server``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        if os.name != "nt":  # as create_server: a restarted gateway rebinds at once
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen()
    except BaseException:
        sock.close()
        raise
    return sock
