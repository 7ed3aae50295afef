"""The checkpoint probe: the store opens, or a typed error says whose fault it is, without secrets.

``deerflow-knowledge serve`` runs it before it announces a URL (``tests/test_cli.py`` drives that
end to end); these tests call it directly, against a real PostgreSQL cluster, a port nothing
listens on, a peer that accepts and never answers, and a driver whose error quotes the password.
"""

from __future__ import annotations

import socket
import sys
import threading
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deerflow.knowledge.server.process import _wiring
from deerflow.knowledge.server.process._checkpoint import (
    CheckpointDatabaseError,
    CheckpointError,
    CheckpointSetupError,
    probe_checkpoint,
)

SECRET = "pw-CHECKPOINT-SECRET-4b2e"


def _closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        return int(closed.getsockname()[1])  # free once closed: nothing listens there


def test_a_sqlite_file_is_not_opened(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "threads.db"
    probe_checkpoint(str(target), timeout=1)
    assert not target.parent.exists()  # created on first use by the gateway, not by the probe


def test_the_missing_extra_is_the_operators_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langgraph.checkpoint.postgres", None)
    with pytest.raises(CheckpointSetupError) as caught:
        probe_checkpoint("postgres://h/db", timeout=1)
    assert str(caught.value) == (
        "a Postgres checkpoint needs the postgres extra: pip install 'deerflow-knowledge[postgres]'."
    )


def test_a_malformed_url_is_the_operators_setup_and_never_shown() -> None:
    with pytest.raises(CheckpointSetupError) as caught:
        probe_checkpoint(f"postgresql://deer:{SECRET}@[::1/threads", timeout=1)
    assert str(caught.value) == "the checkpoint URL is not a valid URL (Invalid IPv6 URL)."


def test_an_unreachable_database_is_the_databases_fault_and_keeps_no_secret() -> None:
    port = _closed_port()
    with pytest.raises(CheckpointDatabaseError) as caught:
        probe_checkpoint(f"postgresql://deer:{SECRET}@127.0.0.1:{port}/threads", timeout=30)
    message = str(caught.value)
    assert message.startswith(
        f"cannot open the checkpoint database postgresql://deer:***@127.0.0.1:{port}/threads: "
    )
    assert SECRET not in message
    # The driver's exception is not kept: a traceback or a logger would print its text.
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


@pytest.fixture
def silent_peer() -> Iterator[int]:
    """A port that accepts connections and never says a word (a hung database)."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not done.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        done.set()
        thread.join()
        for conn in accepted:
            conn.close()
        server.close()


def test_a_database_that_does_not_answer_is_given_up_after_the_timeout(silent_peer: int) -> None:
    target = f"postgresql://deer:{SECRET}@127.0.0.1:{silent_peer}/threads"
    with pytest.raises(CheckpointDatabaseError) as caught:
        probe_checkpoint(target, timeout=1)
    assert str(caught.value) == (
        f"the checkpoint database postgresql://deer:***@127.0.0.1:{silent_peer}/threads did not "
        "answer within 1 s."
    )


def _failing_driver(monkeypatch: pytest.MonkeyPatch, message: str) -> None:
    @asynccontextmanager
    async def refuses(target: str) -> AsyncIterator[object]:
        raise RuntimeError(message)
        yield  # pragma: no cover - an async generator that never yields

    monkeypatch.setattr(_wiring, "open_checkpointer", refuses)


def test_the_password_is_redacted_as_written_and_as_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    # The URL carries the password percent-encoded; a driver quotes what it sent: the decoded one.
    _failing_driver(monkeypatch, "password authentication failed: p@ss:word (p%40ss%3Aword)")
    with pytest.raises(CheckpointDatabaseError) as caught:
        probe_checkpoint("postgresql://deer:p%40ss%3Aword@db.internal/threads", timeout=5)
    assert str(caught.value) == (
        "cannot open the checkpoint database postgresql://deer:***@db.internal/threads: "
        "password authentication failed: *** (***)"
    )


@settings(max_examples=60, deadline=None)
@given(
    password=st.text(
        alphabet=st.characters(
            min_codepoint=0x21,
            max_codepoint=0x2FFF,
            exclude_characters="*",
            exclude_categories=("Cs",),
        ),
        min_size=1,
        max_size=24,
    )
)
def test_no_spelling_of_a_password_reaches_the_message(password: str) -> None:
    encoded = urllib.parse.quote(password, safe="")
    with pytest.MonkeyPatch.context() as monkeypatch:
        _failing_driver(monkeypatch, f"rejected {password} / {encoded}")
        with pytest.raises(CheckpointDatabaseError) as caught:
            probe_checkpoint(f"postgresql://deer:{encoded}@db.internal/threads", timeout=5)
    prefix = "cannot open the checkpoint database postgresql://deer:***@db.internal/threads: "
    message = str(caught.value)
    assert message.startswith(prefix)
    detail = message.removeprefix(prefix)
    assert password not in detail and encoded not in detail, detail


def test_every_probe_error_is_a_checkpoint_error() -> None:
    assert issubclass(CheckpointSetupError, CheckpointError)
    assert issubclass(CheckpointDatabaseError, CheckpointError)
    assert not issubclass(CheckpointSetupError, CheckpointDatabaseError)


@pytest.mark.postgres
def test_a_real_postgres_database_opens(postgres_url: str) -> None:
    import psycopg

    probe_checkpoint(postgres_url, timeout=30)
    with psycopg.connect(postgres_url) as conn:  # the saver set its tables up, as the gateway will
        tables = {row[0] for row in conn.execute("select tablename from pg_tables")}
    assert "checkpoints" in tables
