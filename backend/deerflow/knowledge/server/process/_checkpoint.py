"""Whether the checkpoint store opens, asked once before the gateway announces its URL.

A gateway whose Postgres database is missing or unreachable would otherwise start, print its
address and fail on the first request. :func:`probe_checkpoint` opens the store as the gateway
will and says what went wrong as a typed error named by whose fault it is: the operator's setup
(the ``postgres`` extra is not installed) or the database's (it refused, failed or did not
answer in time). Messages never carry the URL's password. It runs its own event loop, so it is
called before the gateway's starts. ``tests/test_cli.py`` covers it through ``serve`` (the
missing extra, an unreachable database) and ``tests/test_server_checkpoint.py`` directly.
"""

from __future__ import annotations

import asyncio
import urllib.parse

from deerflow.knowledge._redaction import PASSWORD_MARKER, redact, without_password
from deerflow.knowledge.server._defaults import is_postgres_url

__all__ = [
    "CheckpointDatabaseError",
    "CheckpointError",
    "CheckpointSetupError",
    "probe_checkpoint",
]


class CheckpointError(Exception):
    """The checkpoint store did not open; ``str(error)`` says why, without secrets."""


class CheckpointSetupError(CheckpointError):
    """The operator's setup cannot open the store: the ``postgres`` extra is missing, or the URL
    is not one (an unclosed ``[`` of an IPv6 host)."""


class CheckpointDatabaseError(CheckpointError):
    """The database refused, failed or did not answer within the time given."""


def probe_checkpoint(target: str, *, timeout: float) -> None:
    """Open and close the store at ``target`` (a SQLite path or a ``postgres://`` URL) once.

    A SQLite file is created on first use, so only a Postgres URL is opened; ``timeout`` bounds
    the wait, in seconds.
    """
    if not is_postgres_url(target):
        return
    try:
        shown = without_password(target)
    except ValueError as exc:  # the URL cannot be shown safely: its password has no known place
        raise CheckpointSetupError(f"the checkpoint URL is not a valid URL ({exc}).") from None
    try:
        import langgraph.checkpoint.postgres  # noqa: F401 - the extra's presence is the check
    except ImportError:
        raise CheckpointSetupError(
            "a Postgres checkpoint needs the postgres extra: "
            "pip install 'deerflow-knowledge[postgres]'."
        ) from None
    from deerflow.knowledge.server.process._wiring import open_checkpointer

    async def opened() -> None:
        async with open_checkpointer(target):
            pass

    try:
        asyncio.run(asyncio.wait_for(opened(), timeout))
    except TimeoutError:
        raise CheckpointDatabaseError(
            f"the checkpoint database {shown} did not answer within {timeout:.0f} s."
        ) from None
    except Exception as exc:  # psycopg's OperationalError and kin; its text names host and port
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise CheckpointDatabaseError(
            f"cannot open the checkpoint database {shown}: {_redacted(detail, target)}"
        ) from None  # the driver's exception may quote the password: it is not kept as a cause


def _redacted(detail: str, target: str) -> str:
    """``detail`` without the URL's password, as written in the URL or decoded (as sent)."""
    password = urllib.parse.urlsplit(target).password
    if not password:
        return detail
    return redact(detail, (password, urllib.parse.unquote(password)), marker=PASSWORD_MARKER)
