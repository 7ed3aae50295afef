"""pytest fixtures for the real LightRAG server (a plugin: ``pytest_plugins = ["tests.live.fixtures"]``).

One session-scoped server is started the first time a test asks for it: lightrag-server 1.5.7 on a
free 127.0.0.1 port with fresh storage, an API key, the corpus of ``tests/live/corpus`` seeded over
HTTP, and one unattributed document inserted through the SDK. It is stopped by PID at the end of
the session. Nothing starts when no selected test uses these fixtures.

A server with an API key covers both auth paths: a request without the key gets the real 403.
``lightrag_server`` and ``lightrag_server_with_key`` are therefore the same server; use its
``api_key`` attribute for authenticated calls.

If the cached venv cannot be built (no access to PyPI), the requesting tests fail with the reason.

``postgres_url`` gives each test module that asks for it its own throwaway PostgreSQL cluster.
"""

from __future__ import annotations

import atexit
import secrets
from collections.abc import Iterator

import pytest

from tests.live.lightrag_server import LightRAGHarnessError, LightRAGServer, start
from tests.live.postgres_server import PostgresUnavailable
from tests.live.postgres_server import start as start_postgres

#: Recognisable in any leak: tests assert it never appears in messages, reprs or logs.
SECRET_MARKER_PREFIX = "deerflow-live-secret-"

_timings: list[dict[str, float]] = []


@pytest.fixture(scope="session")
def lightrag_server_with_key() -> Iterator[LightRAGServer]:
    """The live server; ``api_key`` is a fresh secret marker the server requires (X-API-Key)."""
    api_key = SECRET_MARKER_PREFIX + secrets.token_hex(8)
    try:
        server = start(api_key=api_key)
    except LightRAGHarnessError as exc:
        pytest.fail(f"could not start the live LightRAG server: {exc}", pytrace=False)
    atexit.register(server.stop)  # also on an aborted session
    _timings.append(dict(server.timings))
    try:
        yield server
    finally:
        server.stop()  # by PID; also deletes the run directory
        atexit.unregister(server.stop)


@pytest.fixture(scope="session")
def lightrag_server(lightrag_server_with_key: LightRAGServer) -> LightRAGServer:
    """The same live server (it has an API key: pass ``server.api_key``; omit it to get 403)."""
    return lightrag_server_with_key


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for t in _timings:
        venv = (
            "cached" if t.get("venv_cached") else f"installed in {t.get('venv_install_s', 0):.1f} s"
        )
        terminalreporter.write_line(
            f"live LightRAG 1.5.7: venv {venv}; shim {t.get('shim_start_s', 0):.2f} s, "
            f"SDK insert {t.get('sdk_insert_s', 0):.1f} s, server start "
            f"{t.get('server_start_s', 0):.1f} s, seed {t.get('seed_s', 0):.1f} s"
        )


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A throwaway PostgreSQL cluster on 127.0.0.1 for one test module, stopped by PID."""
    try:
        server = start_postgres()
    except PostgresUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield server.url
    finally:
        server.stop()
