"""Keep configured secrets out of every log record, whichever library writes it.

httpcore logs the wire at DEBUG — response headers, and a malformed header line inside an exception
— so an upstream that echoes the API key would put it in the logs even though the providers' own
messages are clean. A filter on a logger does not see the records of its child loggers
(``httpcore.http11``), and handlers come and go, so the redaction sits in the log record factory:
every record created in the process, from any logger, is scrubbed once, before any handler or
formatter sees it. Records without a secret are left exactly as they are. What counts as a
secret's spelling and what replaces it is the one rule of :mod:`deerflow.knowledge._redaction`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from deerflow.knowledge._redaction import Redactor

__all__ = ["SecretLogFilter", "install_log_redaction", "log_redaction_filter"]

_FORMATTER = logging.Formatter()


def _spellings(secret: str) -> set[str]:
    """The secret as logs may spell it: plain, inside a ``str`` repr and a ``bytes`` repr."""
    spellings = {secret, repr(secret)[1:-1]}
    with contextlib.suppress(UnicodeEncodeError):  # a lone surrogate has no bytes spelling
        spellings.add(repr(secret.encode("utf-8"))[2:-1])
    return {s for s in spellings if s}


class SecretLogFilter(logging.Filter):
    """Replaces registered secrets (and their percent-encoded spellings) with ``[REDACTED]`` in a
    record's message, traceback and stack text. Never drops a record."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._secrets: frozenset[str] = frozenset()
        self._redactor = Redactor()

    def add(self, secrets: Iterable[str | None]) -> None:
        new = {spelling for s in secrets if s for spelling in _spellings(s)}
        with self._lock:
            if new <= self._secrets:
                return
            self._secrets |= new
            self._redactor = Redactor.of(self._secrets)

    def redact(self, text: str) -> str:
        return self._redactor(text)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._redactor:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: the handler would print msg and args raw
            message = f"{record.msg!r} {record.args!r}"
        clean = self.redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            text = _FORMATTER.formatException(record.exc_info)
            clean = self.redact(text)
            if clean != text:
                # The formatted text replaces the exception: a formatter reading exc_info itself
                # would print the secret again.
                record.exc_text, record.exc_info = clean, None
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True


_FILTER = SecretLogFilter()
_INSTALL_LOCK = threading.Lock()
_installed_factory: Callable[..., logging.LogRecord] | None = None


def log_redaction_filter() -> SecretLogFilter:
    """The process-wide filter :func:`install_log_redaction` feeds (to attach to handlers too)."""
    return _FILTER


def install_log_redaction(secrets: Iterable[str | None]) -> None:
    """Redact ``secrets`` from every log record created from now on, in every logger.

    Idempotent and cheap to repeat; providers call it with their API key when constructed. If
    other code later replaces the record factory without chaining, it is wrapped again here.
    """
    global _installed_factory
    _FILTER.add(secrets)
    with _INSTALL_LOCK:
        current = logging.getLogRecordFactory()
        if current is _installed_factory:
            return

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = current(*args, **kwargs)
            _FILTER.filter(record)
            return record

        logging.setLogRecordFactory(factory)
        _installed_factory = factory
