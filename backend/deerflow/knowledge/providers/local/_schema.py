"""The local index file: its schema (DDL, version, upgrade) and how connections open it.

The writer (:mod:`._writer`) and the reader (:mod:`._provider`) share what is here: the format
marker and schema version a file must carry, the busy timeout, and the journal rules. The
database is in WAL mode, so a reader sees the index as it was before a run or after it, never
half-way; a first build, into an index with no documents yet, uses a rollback journal instead
(:func:`journal_for_first_build`) and switches back to WAL when it ends, so a reader then waits
for the commit, up to the busy timeout, instead of seeing the empty index. The writer syncs at
commit (``synchronous = FULL``): a finished run survives a crash or power loss.

Every failure to open the file becomes a :class:`ProviderConfigError` (missing, foreign,
still locked by a first build) or an :class:`UpstreamError` (another run writes it), with a
message that says what to do.

Tested in tests/test_providers_local.py (the schema version and the upgrade of older files).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Final

from deerflow.knowledge._provider_settings import LOCAL as PROVIDER_NAME
from deerflow.knowledge.providers.documents import one_line_path
from deerflow.knowledge.providers.errors import ProviderConfigError, UpstreamError

logger = logging.getLogger(__package__)

SCHEMA_VERSION: Final = 3
#: Index schemas this version reads. Version 1 kept the full-text index in step with triggers;
#: version 2 writes it from code (in bulk for a full build), otherwise the same tables; version 3
#: records the folder each document was indexed from (an index can hold several). The first
#: ``index`` run on an older file upgrades it in place.
READABLE_SCHEMAS: Final = frozenset({"1", "2", str(SCHEMA_VERSION)})

FORMAT: Final = "deerflow-knowledge-local"
BUSY_TIMEOUT_MS: Final = 30_000

TOKENIZER: Final = "porter unicode61 remove_diacritics 2"
#: The schema, one statement per item (run inside the creating transaction).
SCHEMA: Final = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE documents (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        sha256 TEXT NOT NULL,
        size INTEGER NOT NULL,
        chunks INTEGER NOT NULL,
        folder TEXT NOT NULL DEFAULT ''
    )""",
    """CREATE TABLE chunks (
        id INTEGER PRIMARY KEY,
        document_id INTEGER NOT NULL REFERENCES documents(id),
        ordinal INTEGER NOT NULL,
        page INTEGER,
        title TEXT NOT NULL,
        text TEXT NOT NULL
    )""",
    "CREATE INDEX chunks_by_document ON chunks(document_id)",
    f"""CREATE VIRTUAL TABLE chunks_fts USING fts5(
        text, title, content='chunks', content_rowid='id',
        tokenize="{TOKENIZER}"
    )""",
    f"INSERT INTO meta(key, value) VALUES ('format', '{FORMAT}'), "
    f"('schema_version', '{SCHEMA_VERSION}')",
)


class ForeignIndex(Exception):
    pass


def check_format(connection: sqlite3.Connection) -> str:
    """The schema version of a readable deerflow-knowledge index, else :class:`ForeignIndex`."""
    try:
        rows = dict(connection.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY:
            raise  # locked, not foreign
        raise ForeignIndex(one_line_path(str(exc)) or "no meta table") from None
    if rows.get("format") != FORMAT:
        raise ForeignIndex("unknown format")
    version = rows.get("schema_version")
    if version not in READABLE_SCHEMAS:
        raise ForeignIndex(
            f"schema version {version}, this version reads {', '.join(sorted(READABLE_SCHEMAS))}"
        )
    return str(version)


def upgrade(connection: sqlite3.Connection) -> None:
    """Versions 1 and 2 to 3. From 1: the full-text index is the same; only its triggers go (the
    writer keeps it in step now, and would otherwise index every row twice). From 2: each
    document records its folder, the one the index was last built from (an older index held
    one folder, kept in its ``root`` entry)."""
    connection.execute("DROP TRIGGER IF EXISTS chunks_ai")
    connection.execute("DROP TRIGGER IF EXISTS chunks_ad")
    columns = {row[1] for row in connection.execute("PRAGMA table_info(documents)")}
    if "folder" not in columns:
        connection.execute("ALTER TABLE documents ADD COLUMN folder TEXT NOT NULL DEFAULT ''")
    root = meta(connection, "root")
    if root:
        connection.execute(
            "UPDATE documents SET folder = ? WHERE folder = ''",
            (Path(os.path.realpath(root)).as_posix(),),
        )
    connection.execute("DELETE FROM meta WHERE key = 'root'")
    connection.execute(
        "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
    )


def journal_for_first_build(connection: sqlite3.Connection) -> bool:
    """Switch an index with no documents yet to a rollback journal for its first build, and say
    whether it did.

    In WAL mode every page of a first build is written twice, to the WAL and then to the file at
    the checkpoint that follows the commit (about 0.4 s of 110 MB at 100k chunks). With a rollback
    journal the pages go to the file once, and the journal holds only the few pages that existed
    (an interrupted build still rolls back to the empty index). A reader waits for the commit
    (up to the busy timeout) instead of seeing an empty index. SQLite refuses the switch while
    another connection has the file open; the build then stays in WAL mode.
    """
    (documents,) = connection.execute("SELECT count(*) FROM documents").fetchone()
    if documents:
        return False
    try:
        (mode,) = connection.execute("PRAGMA journal_mode = DELETE").fetchone()
    except sqlite3.OperationalError:
        return False
    return str(mode).lower() == "delete"


def back_to_wal(connection: sqlite3.Connection) -> None:
    """Back to WAL after a first build (if a reader holds the file open, the next run does it)."""
    with contextlib.suppress(sqlite3.OperationalError):
        connection.execute("PRAGMA journal_mode = WAL")


def meta(connection: sqlite3.Connection, key: str) -> str | None:
    row = connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


class Notice:
    """Tells once (the log and the caller's ``waiting``) that the run waits for another."""

    def __init__(self, waiting: Callable[[], None] | None, index_path: Path) -> None:
        self._waiting = waiting
        self._index_path = index_path
        self._told = False

    def __call__(self) -> None:
        if self._told:
            return
        self._told = True
        logger.info("waiting for another index run on %s to finish", self._index_path)
        if self._waiting is not None:
            self._waiting()


def begin_write(connection: sqlite3.Connection, notice: Notice) -> None:
    """``BEGIN IMMEDIATE``: at once if no other run writes, else after telling ``notice`` and
    waiting for the write lock up to the busy timeout."""
    connection.execute("PRAGMA busy_timeout = 0")
    try:
        connection.execute("BEGIN IMMEDIATE")
        return
    except sqlite3.OperationalError as exc:
        if not is_busy(exc):
            raise
    finally:
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    notice()
    connection.execute("BEGIN IMMEDIATE")


def is_busy(exc: sqlite3.Error) -> bool:
    return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY


# --------------------------------------------------------------------------- opening the file


def missing(index_path: Path) -> ProviderConfigError:
    return ProviderConfigError(
        f"No index at {index_path}; run `deerflow-knowledge index PATH` first.",
        provider=PROVIDER_NAME,
    )


def foreign(index_path: Path, what: str) -> ProviderConfigError:
    return ProviderConfigError(
        f"The file at {index_path} is not a usable deerflow-knowledge index ({what}); "
        "delete it and run `deerflow-knowledge index PATH` again.",
        provider=PROVIDER_NAME,
    )


def unreadable(index_path: Path, exc: sqlite3.Error) -> ProviderConfigError:
    if is_busy(exc):
        return ProviderConfigError(
            f"The index at {index_path} is still locked by its first build after "
            f"{BUSY_TIMEOUT_MS // 1000} s; search again when `deerflow-knowledge index` "
            "finishes.",
            provider=PROVIDER_NAME,
        )
    return foreign(index_path, one_line_path(str(exc)) or type(exc).__name__)


def busy(index_path: Path) -> UpstreamError:
    return UpstreamError(
        f"Another `deerflow-knowledge index` run is writing {index_path} and did not "
        f"finish within {BUSY_TIMEOUT_MS // 1000} s; run this again when it has finished "
        "(this run changed nothing).",
        provider=PROVIDER_NAME,
    )


def connect_reader(index_path: Path) -> sqlite3.Connection:
    """A read-only connection to a readable index (usable from any thread)."""
    if not index_path.is_file():
        raise missing(index_path)
    uri = "file:" + urllib.parse.quote(index_path.as_posix()) + "?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
    except sqlite3.Error as exc:
        raise foreign(index_path, type(exc).__name__) from None
    try:
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        check_format(connection)
    except ForeignIndex as exc:
        connection.close()
        raise foreign(index_path, str(exc)) from None
    except sqlite3.Error as exc:
        connection.close()
        raise unreadable(index_path, exc) from None
    return connection


def connect_writer(index_path: Path, notice: Notice) -> sqlite3.Connection:
    """A connection in WAL mode to an index of the current schema: created if the file is new,
    upgraded in place if it is older (see :data:`READABLE_SCHEMAS`)."""
    try:
        connection = sqlite3.connect(index_path, isolation_level=None)
    except sqlite3.Error as exc:
        raise foreign(index_path, type(exc).__name__) from None
    try:
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _wait_for_wal(connection, notice)
        # Synced at every commit: once ``index`` returns, its run survives a power loss (at
        # the cost of one fsync per run).
        connection.execute("PRAGMA synchronous = FULL")
        begin_write(connection, notice)  # a concurrent creator waits here
        try:
            (objects,) = connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
            if objects == 0:
                for statement in SCHEMA:
                    connection.execute(statement)
            elif check_format(connection) != str(SCHEMA_VERSION):
                upgrade(connection)
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
    except ForeignIndex as exc:
        connection.close()
        raise foreign(index_path, str(exc)) from None
    except sqlite3.Error as exc:
        connection.close()
        if is_busy(exc):
            raise busy(index_path) from None
        raise foreign(index_path, one_line_path(str(exc)) or type(exc).__name__) from None
    return connection


def _wait_for_wal(connection: sqlite3.Connection, notice: Notice) -> None:
    """Switch to WAL, waiting for another run's first build if there is one.

    SQLite answers "locked" at once, without waiting the busy timeout, when the journal mode
    cannot change because another connection writes in rollback-journal mode (a first
    build, see :func:`journal_for_first_build`). Taking the write lock does wait: once it
    is granted, that build has committed (and gone back to WAL itself).
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() > deadline:
                raise
        notice()
        connection.execute("BEGIN IMMEDIATE")  # waits (up to the busy timeout) for it
        connection.execute("ROLLBACK")
