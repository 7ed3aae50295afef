"""Provider settings and search arguments, checked before anything is sent.

A provider binds one :class:`Service` (its display name and provider name) and asks it to check
each setting; the rejected value is never echoed, since it may hold credentials. This module does
no I/O and does not import httpx, so the local index uses it too.
"""

from __future__ import annotations

import math
import re
import urllib.parse
from dataclasses import dataclass
from typing import Final

from deerflow.knowledge.providers.errors import ProviderConfigError, ProviderQueryError
from deerflow.knowledge.text import has_space_or_control, is_blank

__all__ = ["MAX_API_KEY_CHARS", "MAX_TIMEOUT_SECONDS", "Service"]

MAX_TIMEOUT_SECONDS: Final = 600.0
MAX_API_KEY_CHARS: Final = 4096

_API_KEY_RE = re.compile(r"[\x21-\x7e]+")  # visible ASCII: a valid HTTP header value, no spaces


@dataclass(frozen=True, slots=True)
class Service:
    """Who is being talked to: ``name`` for messages ("LightRAG"), ``provider`` for errors.

    Bound once per provider module, so the validators and
    :func:`~deerflow.knowledge.providers._http.send_json` take one value instead of a pair
    threaded through every call.
    """

    name: str
    provider: str

    def config_error(self, setting: str, expected: str) -> ProviderConfigError:
        return ProviderConfigError(
            f"Invalid {self.name} {setting}: {expected}.", provider=self.provider
        )

    def base_url(self, value: object) -> str:
        """An absolute http(s) URL with a host, no credentials, query or fragment; no trailing
        slash. The rejected value is never echoed: it may hold credentials."""

        def bad(reason: str) -> ProviderConfigError:
            return self.config_error("base_url", reason)

        if not isinstance(value, str) or not value.strip():
            raise bad("expected a non-empty string such as http://localhost:9621")
        if value != value.strip() or has_space_or_control(value):
            raise bad("it must not contain whitespace or control characters")
        if "\\" in value:
            raise bad("it must not contain backslashes")
        try:
            parts = urllib.parse.urlsplit(value)
        except ValueError:
            raise bad("it is not a valid URL") from None
        if parts.scheme not in ("http", "https"):
            raise bad("the scheme must be http or https")
        if "@" in parts.netloc:
            raise bad(
                "it must not contain credentials (user:password@host); "
                "configure the API key separately instead"
            )
        try:
            parts.port  # noqa: B018  (raises ValueError for a non-numeric or out-of-range port)
        except ValueError:
            raise bad("its port is not a number from 0 to 65535") from None
        if not parts.hostname:
            raise bad("it must include a host")
        if parts.query or parts.fragment or value.endswith(("?", "#")):
            raise bad("it must not contain a query string or fragment")
        return value.rstrip("/")

    def api_key(self, value: object) -> str | None:
        """``None`` (no key) or a header-safe key: visible ASCII without spaces, bounded length."""
        if value is None:
            return None
        if (
            not isinstance(value, str)
            or not 1 <= len(value) <= MAX_API_KEY_CHARS
            or _API_KEY_RE.fullmatch(value) is None
        ):
            raise self.config_error(
                "api_key",
                f"expected None or 1-{MAX_API_KEY_CHARS} visible ASCII characters without spaces",
            )
        return value

    def bounded_int(self, value: object, *, name: str, minimum: int, maximum: int) -> int:
        if type(value) is not int or not minimum <= value <= maximum:
            raise self.config_error(name, f"expected an integer from {minimum} to {maximum}")
        return value

    def timeout(self, value: object) -> float:
        if (
            type(value) not in (int, float)
            or not math.isfinite(value)  # type: ignore[arg-type]
            or not 0 < value <= MAX_TIMEOUT_SECONDS  # type: ignore[operator]
        ):
            raise self.config_error(
                "timeout",
                f"expected seconds, more than 0 and at most {MAX_TIMEOUT_SECONDS:g}",
            )
        return float(value)  # type: ignore[arg-type]

    def search_arguments(self, query: object, limit: object, *, max_query_chars: int) -> None:
        """Raise :class:`ProviderQueryError` (the caller's fault; nothing is sent) for a blank or
        over-long query or a ``limit`` that is not ``None`` or a positive integer."""
        if not isinstance(query, str) or is_blank(query):
            raise ProviderQueryError(
                "The query must be a non-empty string.", provider=self.provider
            )
        if len(query) > max_query_chars:
            raise ProviderQueryError(
                f"The query is too long for {self.name} (at most {max_query_chars} characters).",
                provider=self.provider,
            )
        if limit is not None and (type(limit) is not int or limit < 1):
            raise ProviderQueryError(
                "limit must be None or a positive integer.", provider=self.provider
            )
