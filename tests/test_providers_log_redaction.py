"""Secrets never reach a log record, even when httpcore logs an upstream that echoes them.

The upstream here is a real socket server on 127.0.0.1 (not MockTransport): httpcore only logs
the wire when there is one.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from typing import Literal

import pytest

from deerflow.knowledge.providers._http import REDACTION_MARKER
from deerflow.knowledge.providers._log_redaction import (
    install_log_redaction,
    log_redaction_filter,
)
from deerflow.knowledge.providers.errors import ProviderError
from deerflow.knowledge.providers.lightrag import LightRAGProvider
from deerflow.knowledge.providers.ragflow import RAGFlowProvider

KEY = "sk-echo-8c1d0f5e9a7b4c2d"

Mode = Literal["header", "malformed", "body"]


class EchoServer:
    """Answers each request by echoing its ``X-API-Key`` / ``Authorization`` value back."""

    def __init__(self, mode: Mode) -> None:
        self.mode = mode
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            conn.settimeout(5)
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                echoed = b"none"
                for line in data.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.lower() in (b"x-api-key", b"authorization"):
                        echoed = value.strip()
                body = b'{"detail": "bad key ' + echoed + b'"}'
                if self.mode == "header":
                    head = b"HTTP/1.1 401 Unauthorized\r\nX-Echo: " + echoed + b"\r\n"
                elif self.mode == "malformed":
                    head = b"HTTP/1.1 200 OK\r\nthis line has no colon " + echoed + b"\r\n"
                else:
                    head = b"HTTP/1.1 500 Oops\r\n"
                conn.sendall(
                    head
                    + b"Content-Type: application/json\r\nContent-Length: "
                    + str(len(body)).encode()
                    + b"\r\nConnection: close\r\n\r\n"
                    + body
                )

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)
        self.sock.close()


@pytest.fixture(params=["header", "malformed", "body"])
def echo(request: pytest.FixtureRequest) -> Iterator[EchoServer]:
    server = EchoServer(request.param)
    yield server
    server.close()


@pytest.fixture
def wire_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)  # root: httpx, httpcore.* and ours all propagate here
    caplog.handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
    return caplog


def _assert_clean(caplog: pytest.LogCaptureFixture) -> None:
    wire = [r for r in caplog.records if r.name.startswith("httpcore")]
    assert wire, "httpcore logged nothing: the test would prove nothing"
    assert KEY not in caplog.text
    for record in caplog.records:
        assert KEY not in record.getMessage()
        assert KEY not in (record.exc_text or "")


async def test_lightrag_key_echoed_by_the_upstream_stays_out_of_logs(
    echo: EchoServer, wire_logs: pytest.LogCaptureFixture
) -> None:
    provider = LightRAGProvider(f"http://127.0.0.1:{echo.port}", api_key=KEY)
    with pytest.raises(ProviderError) as raised:
        await provider.search("deer")
    assert KEY not in str(raised.value)
    _assert_clean(wire_logs)
    assert REDACTION_MARKER in wire_logs.text  # the echo was logged, redacted


async def test_ragflow_key_echoed_by_the_upstream_stays_out_of_logs(
    echo: EchoServer, wire_logs: pytest.LogCaptureFixture
) -> None:
    provider = RAGFlowProvider(f"http://127.0.0.1:{echo.port}", api_key=KEY, datasets=["d" * 32])
    with pytest.raises(ProviderError):
        await provider.search("deer")
    _assert_clean(wire_logs)


def test_every_logger_is_covered_including_children_and_tracebacks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    install_log_redaction([KEY])
    caplog.set_level(logging.DEBUG)
    logging.getLogger("some.library.child").warning("token=%s", KEY)
    try:
        raise ValueError(f"Illegal header value b'{KEY}'")
    except ValueError:
        logging.getLogger("other").exception("failed")
    logging.getLogger("x").error("percent-encoded: %s", KEY.replace("-", "%2D"))
    logging.getLogger("x").error("bad format %s %s", KEY)  # the handler would print args raw
    assert KEY not in caplog.text
    assert caplog.text.count(REDACTION_MARKER) >= 3
    assert "ValueError" in caplog.text  # the traceback is kept, only the secret goes


def test_records_without_a_secret_are_untouched() -> None:
    install_log_redaction([KEY])
    record = logging.getLogger("plain").makeRecord(
        "plain", logging.INFO, "f", 1, "a %s", ("b",), None
    )
    assert (record.msg, record.args) == ("a %s", ("b",))
    assert log_redaction_filter().filter(record) is True


def test_a_replaced_record_factory_is_wrapped_again() -> None:
    install_log_redaction([KEY])
    wrapped = logging.getLogRecordFactory()
    logging.setLogRecordFactory(logging.LogRecord)
    try:
        install_log_redaction([KEY])
        record = logging.getLogger("y").makeRecord("y", logging.INFO, "f", 1, KEY, None, None)
        assert record.getMessage() == REDACTION_MARKER
    finally:
        logging.setLogRecordFactory(wrapped)
