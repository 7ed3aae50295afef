"""HTTP plumbing shared by the HTTP retrieval providers (LightRAG now, RAGFlow later).

* The exception family of :mod:`deerflow.knowledge.providers.errors`, re-exported here.
* :func:`send_json` is the only place where httpx exceptions become provider errors.
* :func:`redact` removes secrets from any text that came from, or goes near, the upstream.
* Settings validators (:func:`validate_base_url`, :func:`validate_api_key`, ...) raise
  :class:`ProviderConfigError` without echoing the rejected value.
"""

from __future__ import annotations

import json
import math
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import httpx

from deerflow.knowledge.providers.errors import (
    ProviderConfigError,
    ProviderError,
    ProviderQueryError,
    UpstreamAuthError,
    UpstreamError,
    UpstreamNotFoundError,
    UpstreamRejectedError,
    UpstreamResponseError,
    UpstreamServerError,
    UpstreamTimeoutError,
    UpstreamUnreachableError,
)

__all__ = [
    "MAX_API_KEY_CHARS",
    "MAX_DETAIL_CHARS",
    "MAX_RESPONSE_BYTES",
    "MAX_TIMEOUT_SECONDS",
    "NOT_JSON",
    "REDACTION_MARKER",
    "JSONReply",
    "ProviderConfigError",
    "ProviderError",
    "ProviderQueryError",
    "UpstreamAuthError",
    "UpstreamError",
    "UpstreamNotFoundError",
    "UpstreamRejectedError",
    "UpstreamResponseError",
    "UpstreamServerError",
    "UpstreamTimeoutError",
    "UpstreamUnreachableError",
    "error_detail",
    "redact",
    "send_json",
    "validate_api_key",
    "validate_base_url",
    "validate_bounded_int",
    "validate_search_arguments",
    "validate_timeout",
]

REDACTION_MARKER: Final = "[REDACTED]"
#: Upstream error text is cut to this many characters before it enters a message.
MAX_DETAIL_CHARS: Final = 300
#: A response body larger than this is refused (a sane /query/data answer is far smaller).
MAX_RESPONSE_BYTES: Final = 32 * 1024 * 1024
MAX_TIMEOUT_SECONDS: Final = 600.0
MAX_API_KEY_CHARS: Final = 4096

_API_KEY_RE = re.compile(r"[\x21-\x7e]+")  # visible ASCII: a valid HTTP header value, no spaces
_SPACE_OR_CONTROL_RE = re.compile(r"[\s\x00-\x1f\x7f-\x9f]+")


# --------------------------------------------------------------------------- redaction


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """Replace every secret in ``text`` with ``[REDACTED]``.

    Percent-encoded spellings (any mix of literal and ``%XX`` characters, ``+`` for a space) are
    caught too, since upstreams echo URLs and form bodies. Matching ignores case, so an upstream
    that upper-cases a key does not leak it; over-redacting a look-alike is harmless.
    """
    patterns = [
        _secret_pattern(s) for s in sorted({s for s in secrets if s}, key=len, reverse=True)
    ]
    for pattern in patterns:  # longest first: a shorter secret never leaves a longer one's tail
        text = pattern.sub(REDACTION_MARKER, text)
    return text


def _secret_pattern(secret: str) -> re.Pattern[str]:
    parts = []
    for ch in secret:
        encoded = "".join(f"%{byte:02x}" for byte in ch.encode("utf-8", "surrogatepass"))
        alternatives = [re.escape(ch), re.escape(encoded)]
        if ch == " ":
            alternatives.append(r"\+")
        parts.append("(?:" + "|".join(alternatives) + ")")
    return re.compile("".join(parts), re.IGNORECASE)


def _one_line(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    text = _SPACE_OR_CONTROL_RE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def error_detail(body: object, secrets: Iterable[str | None]) -> str | None:
    """A short, redacted, single-line error text from a JSON error body, if it has one.

    Understands ``{"message": str}`` (LightRAG's /query/data envelope, RAGFlow),
    ``{"detail": str}`` and FastAPI's ``{"detail": [{"msg": str, ...}]}`` (only ``msg`` is read:
    ``input`` may echo the request), and ``{"error": str | {"message": str}}``.
    """
    if not isinstance(body, Mapping):
        return None
    candidates: list[object] = [body.get("message"), body.get("detail"), body.get("error")]
    detail = body.get("detail")
    if isinstance(detail, list) and detail and isinstance(detail[0], Mapping):
        candidates.insert(0, detail[0].get("msg"))
    error = body.get("error")
    if isinstance(error, Mapping):
        candidates.append(error.get("message"))
    for candidate in candidates:
        if isinstance(candidate, str) and candidate.strip():
            text = candidate.strip()
            text = text.removeprefix("Value error, ")
            return _one_line(redact(text, secrets))
    return None


# --------------------------------------------------------------------------- settings


def validate_base_url(value: object, *, service: str, provider: str) -> str:
    """An absolute http(s) URL with a host, no credentials, query or fragment; no trailing slash.

    The rejected value is never echoed: it may hold credentials.
    """

    def bad(reason: str) -> ProviderConfigError:
        return ProviderConfigError(f"Invalid {service} base_url: {reason}.", provider=provider)

    if not isinstance(value, str) or not value.strip():
        raise bad("expected a non-empty string such as http://localhost:9621")
    if value != value.strip() or _SPACE_OR_CONTROL_RE.search(value):
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


def validate_api_key(value: object, *, service: str, provider: str) -> str | None:
    """``None`` (no key) or a header-safe key: visible ASCII without spaces, bounded length."""
    if value is None:
        return None
    if (
        not isinstance(value, str)
        or not 1 <= len(value) <= MAX_API_KEY_CHARS
        or _API_KEY_RE.fullmatch(value) is None
    ):
        raise ProviderConfigError(
            f"Invalid {service} api_key: expected None or 1-{MAX_API_KEY_CHARS} visible ASCII "
            "characters without spaces.",
            provider=provider,
        )
    return value


def validate_bounded_int(
    value: object, *, name: str, minimum: int, maximum: int, service: str, provider: str
) -> int:
    if type(value) is not int or not minimum <= value <= maximum:
        raise ProviderConfigError(
            f"Invalid {service} {name}: expected an integer from {minimum} to {maximum}.",
            provider=provider,
        )
    return value


def validate_timeout(value: object, *, service: str, provider: str) -> float:
    if (
        type(value) not in (int, float)
        or not math.isfinite(value)  # type: ignore[arg-type]
        or not 0 < value <= MAX_TIMEOUT_SECONDS  # type: ignore[operator]
    ):
        raise ProviderConfigError(
            f"Invalid {service} timeout: expected seconds, more than 0 and at most "
            f"{MAX_TIMEOUT_SECONDS:g}.",
            provider=provider,
        )
    return float(value)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- transport


class _NotJSON:
    def __repr__(self) -> str:
        return "NOT_JSON"


#: ``JSONReply.body`` when the response body was empty or not valid JSON.
NOT_JSON: Final = _NotJSON()


@dataclass(frozen=True, slots=True)
class JSONReply:
    """A complete HTTP answer: the status and the parsed JSON body (or :data:`NOT_JSON`)."""

    status_code: int
    body: Any


async def send_json(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    payload: Any,
    headers: Mapping[str, str],
    service: str,
    provider: str,
    secrets: Iterable[str | None],
    max_bytes: int = MAX_RESPONSE_BYTES,
) -> JSONReply:
    """Send ``payload`` as JSON and read the whole reply, bounded by ``max_bytes``.

    The single place where httpx exceptions are translated. HTTP error statuses are returned, not
    raised: what they mean is the provider's business. Causes are not chained (``from None``):
    httpx exceptions carry the request, whose headers hold the API key.
    """
    secrets = tuple(secrets)
    error: UpstreamError
    try:
        async with client.stream(method, url, json=payload, headers=dict(headers)) as response:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > max_bytes:
                    raise UpstreamResponseError(
                        f"{service} sent a response larger than {max_bytes} bytes; refused.",
                        provider=provider,
                        status_code=response.status_code,
                    )
                chunks.append(chunk)
            status = response.status_code
    except httpx.TimeoutException:
        error = UpstreamTimeoutError(
            f"{service} did not answer in time; try again later or raise the timeout.",
            provider=provider,
        )
    except httpx.ConnectError as exc:
        error = UpstreamUnreachableError(
            f"Cannot connect to {service} at {_origin(url)} ({_describe(exc, secrets)}); "
            "check that the server is running and base_url is right.",
            provider=provider,
        )
    except httpx.NetworkError as exc:  # read/write/close errors after connecting
        error = UpstreamUnreachableError(
            f"The connection to {service} failed ({_describe(exc, secrets)}); try again later.",
            provider=provider,
        )
    except (httpx.RemoteProtocolError, httpx.DecodingError, httpx.TooManyRedirects) as exc:
        error = UpstreamResponseError(
            f"{service} sent a malformed HTTP response ({_describe(exc, secrets)}).",
            provider=provider,
        )
    except httpx.HTTPError as exc:  # anything else httpx raises (local protocol, proxy, ...)
        error = UpstreamError(
            f"The request to {service} failed ({_describe(exc, secrets)}).", provider=provider
        )
    else:
        raw = b"".join(chunks)
        try:
            body: Any = json.loads(raw) if raw.strip() else NOT_JSON
        except ValueError:  # invalid JSON or undecodable bytes
            body = NOT_JSON
        return JSONReply(status_code=status, body=body)
    raise error from None


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _describe(exc: Exception, secrets: tuple[str | None, ...]) -> str:
    text = str(exc)
    name = type(exc).__name__
    return _one_line(redact(f"{name}: {text}" if text else name, secrets), 160)


def validate_search_arguments(
    query: object, limit: object, *, service: str, provider: str, max_query_chars: int
) -> None:
    """Raise :class:`ProviderQueryError` (the caller's fault; nothing is sent) for a blank or
    over-long query or a ``limit`` that is not ``None`` or a positive integer."""
    from deerflow.knowledge.contract import is_blank

    if not isinstance(query, str) or is_blank(query):
        raise ProviderQueryError("The query must be a non-empty string.", provider=provider)
    if len(query) > max_query_chars:
        raise ProviderQueryError(
            f"The query is too long for {service} (at most {max_query_chars} characters).",
            provider=provider,
        )
    if limit is not None and (type(limit) is not int or limit < 1):
        raise ProviderQueryError("limit must be None or a positive integer.", provider=provider)
