"""What an upstream answered, made safe: error details, the decoded reply. Pure.

The pure ``parse_*`` modules read a :class:`JSONReply` and quote :func:`error_detail`; the HTTP
client (:mod:`deerflow.knowledge.providers._http`) builds the reply. Nothing here imports httpx;
secrets are redacted by the one rule of :mod:`deerflow.knowledge._redaction`. Tested in
tests/test_providers_http.py, with the client.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from deerflow.knowledge._redaction import redact
from deerflow.knowledge.text import one_line

__all__ = [
    "MAX_DETAIL_CHARS",
    "NOT_JSON",
    "JSONReply",
    "chunk_contents",
    "error_detail",
]

#: Upstream error text is cut to this many characters before it enters a message.
MAX_DETAIL_CHARS: Final = 300


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


# --------------------------------------------------------------------------- chunks


def chunk_contents(
    chunks: list[object], shape_error: Callable[[str], Exception]
) -> Iterator[tuple[Mapping[str, Any], str]]:
    """Each chunk object of an upstream's ``chunks`` list with its ``content`` text, in order.

    Both upstreams (LightRAG, RAGFlow) send chunks as objects with a string ``content``; anything
    else raises ``shape_error(what)`` when the walk reaches it, so a chunk's other fields are read
    (and their errors raised) in the same order as before it.
    """
    for chunk in chunks:
        if not isinstance(chunk, Mapping):
            raise shape_error("returned a chunk that is not an object")
        content = chunk.get("content")
        if not isinstance(content, str):
            raise shape_error("returned a chunk without text content")
        yield chunk, content


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
