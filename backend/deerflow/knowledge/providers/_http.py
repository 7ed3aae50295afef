"""HTTP plumbing shared by the HTTP retrieval providers (LightRAG, RAGFlow).

* The exception family of :mod:`deerflow.knowledge.providers.errors`, re-exported here.
* :func:`send_json` is the only place where httpx exceptions become provider errors.
* :func:`redact` removes secrets from any text that came from, or goes near, the upstream.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import httpx

from deerflow.knowledge.providers._service import Service
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
from deerflow.knowledge.text import one_line

__all__ = [
    "MAX_DETAIL_CHARS",
    "MAX_RESPONSE_BYTES",
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
]

REDACTION_MARKER: Final = "[REDACTED]"
#: Upstream error text is cut to this many characters before it enters a message.
MAX_DETAIL_CHARS: Final = 300
#: A response body larger than this is refused (a sane /query/data answer is far smaller).
MAX_RESPONSE_BYTES: Final = 32 * 1024 * 1024
#: An httpx failure quoted in a message is cut to this many characters (the message adds advice).
_MAX_CAUSE_CHARS: Final = 160


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
            return one_line(redact(text, secrets), MAX_DETAIL_CHARS)
    return None


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
    service: Service,
    secrets: Iterable[str | None],
    max_bytes: int = MAX_RESPONSE_BYTES,
) -> JSONReply:
    """Send ``payload`` as JSON and read the whole reply, bounded by ``max_bytes``.

    The single place where httpx exceptions are translated. HTTP error statuses are returned, not
    raised: what they mean is the provider's business. Causes are not chained (``from None``):
    httpx exceptions carry the request, whose headers hold the API key.
    """
    secrets = tuple(secrets)
    provider, name = service.provider, service.name
    error: UpstreamError
    try:
        async with client.stream(method, url, json=payload, headers=dict(headers)) as response:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > max_bytes:
                    raise UpstreamResponseError(
                        f"{name} sent a response larger than {max_bytes} bytes; refused.",
                        provider=provider,
                        status_code=response.status_code,
                    )
                chunks.append(chunk)
            status = response.status_code
    except httpx.TimeoutException:
        error = UpstreamTimeoutError(
            f"{name} did not answer in time; try again later or raise the timeout.",
            provider=provider,
        )
    except httpx.ConnectError as exc:
        error = UpstreamUnreachableError(
            f"Cannot connect to {name} at {_origin(url)} ({_describe(exc, secrets)}); "
            "check that the server is running and base_url is right.",
            provider=provider,
        )
    except httpx.NetworkError as exc:  # read/write/close errors after connecting
        error = UpstreamUnreachableError(
            f"The connection to {name} failed ({_describe(exc, secrets)}); try again later.",
            provider=provider,
        )
    except (httpx.RemoteProtocolError, httpx.DecodingError, httpx.TooManyRedirects) as exc:
        error = UpstreamResponseError(
            f"{name} sent a malformed HTTP response ({_describe(exc, secrets)}).",
            provider=provider,
        )
    except httpx.HTTPError as exc:  # anything else httpx raises (local protocol, proxy, ...)
        error = UpstreamError(
            f"The request to {name} failed ({_describe(exc, secrets)}).", provider=provider
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
    return one_line(redact(f"{name}: {text}" if text else name, secrets), _MAX_CAUSE_CHARS)
