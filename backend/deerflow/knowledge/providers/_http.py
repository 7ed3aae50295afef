"""HTTP plumbing shared by the HTTP retrieval providers (LightRAG, RAGFlow).

* :func:`send_json` is the only place where httpx exceptions become provider errors.
* :func:`error_detail` and :class:`JSONReply` live in the pure
  :mod:`~deerflow.knowledge.providers.parse._reply`, :func:`redact` in the pure
  :mod:`~deerflow.knowledge._redaction`; they are re-exported here.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any, Final

import httpx

from deerflow.knowledge._redaction import REDACTION_MARKER, redact
from deerflow.knowledge.providers._service import Service
from deerflow.knowledge.providers.errors import (
    UpstreamError,
    UpstreamResponseError,
    UpstreamTimeoutError,
    UpstreamUnreachableError,
)
from deerflow.knowledge.providers.parse._reply import (
    MAX_DETAIL_CHARS,
    NOT_JSON,
    JSONReply,
    error_detail,
)
from deerflow.knowledge.text import one_line

__all__ = [
    "MAX_DETAIL_CHARS",
    "MAX_RESPONSE_BYTES",
    "NOT_JSON",
    "REDACTION_MARKER",
    "JSONReply",
    "error_detail",
    "redact",
    "send_json",
]

#: A response body larger than this is refused (a sane /query/data answer is far smaller).
MAX_RESPONSE_BYTES: Final = 32 * 1024 * 1024
#: An httpx failure quoted in a message is cut to this many characters (the message adds advice).
_MAX_CAUSE_CHARS: Final = 160


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
