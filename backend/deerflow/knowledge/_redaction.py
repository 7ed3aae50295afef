"""Secret redaction: the one rule for finding a secret in text and what replaces it. Pure.

A secret is matched plain and in any percent-encoded spelling (any mix of literal and ``%XX``
characters, ``+`` for a space), since upstreams echo URLs and form bodies, and regardless of case,
so an upstream that upper-cases a key does not leak it; over-redacting a look-alike is harmless.
Several secrets are replaced longest first, so a shorter one never leaves a longer one's tail.

The providers redact upstream text with it (the parsers and
:mod:`deerflow.knowledge.providers.parse._reply`), the process-wide log filter
(:mod:`deerflow.knowledge.providers._log_redaction`) scrubs log records with it, and the gateway's
checkpoint probe masks a database URL's password with it.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

__all__ = [
    "PASSWORD_MARKER",
    "REDACTION_MARKER",
    "Redactor",
    "redact",
    "secret_pattern",
    "without_password",
]

#: What replaces a secret in text that leaves the process (messages, errors, logs).
REDACTION_MARKER: Final = "[REDACTED]"
#: What replaces a password inside a URL shown to the user (``postgresql://user:***@host/db``).
PASSWORD_MARKER: Final = "***"


def secret_pattern(secret: str) -> re.Pattern[str]:
    """The pattern matching ``secret`` plain or percent-encoded, in any case."""
    parts = []
    for ch in secret:
        encoded = "".join(f"%{byte:02x}" for byte in ch.encode("utf-8", "surrogatepass"))
        alternatives = [re.escape(ch), re.escape(encoded)]
        if ch == " ":
            alternatives.append(r"\+")
        parts.append("(?:" + "|".join(alternatives) + ")")
    return re.compile("".join(parts), re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Redactor:
    """Secrets compiled once, to redact many texts (the log filter redacts every record)."""

    patterns: tuple[re.Pattern[str], ...] = ()
    marker: str = REDACTION_MARKER

    @classmethod
    def of(cls, secrets: Iterable[str | None], *, marker: str = REDACTION_MARKER) -> Redactor:
        """A redactor for ``secrets``; ``None`` and empty secrets are skipped."""
        ordered = sorted({s for s in secrets if s}, key=len, reverse=True)  # longest first
        return cls(tuple(secret_pattern(s) for s in ordered), marker)

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def __call__(self, text: str) -> str:
        for pattern in self.patterns:
            text = pattern.sub(self.marker, text)
        return text


def redact(text: str, secrets: Iterable[str | None], *, marker: str = REDACTION_MARKER) -> str:
    """Replace every secret in ``text`` with ``marker`` (``[REDACTED]``)."""
    return Redactor.of(secrets, marker=marker)(text)


def without_password(url: str, *, marker: str = PASSWORD_MARKER) -> str:
    """``url`` with the password of its user information replaced by ``marker``, if it has one.

    Only the password's place in the authority changes, so a user name equal to the password
    stays readable. Raises :class:`ValueError` for what :func:`urllib.parse.urlsplit` refuses.
    """
    parts = urllib.parse.urlsplit(url)
    password = parts.password
    if password is None:
        return url
    netloc = parts.netloc.replace(f":{password}@", f":{marker}@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
