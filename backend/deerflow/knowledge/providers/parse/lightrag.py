"""LightRAG's ``POST /query/data`` answer, parsed: plain JSON in, a :class:`RetrievalResult` out.

Pure: no I/O, no httpx. :mod:`deerflow.knowledge.providers.lightrag` sends the request and hands
the status and the decoded body here; this module decides what they mean (hits, or the
:mod:`~deerflow.knowledge.providers.errors` exception that names whose fault a failure is).

``/query/data`` returns retrieval data without LLM generation::

    {"status": "success", "message": "...", "metadata": {...},
     "data": {"entities": [...], "relationships": [...],
              "chunks": [{"reference_id", "content", "file_path", "chunk_id"}],
              "references": [{"reference_id", "file_path"}]}}

Only ``chunks`` become hits, in the server's order. A hit's title is the chunk's ``file_path``
(LightRAG reduces it to a basename); a chunk without one is joined through its ``reference_id`` to
``references[]``. ``""``, ``"unknown_source"`` and the legacy ``"no-file-path"`` mean the document
has no source: such a hit keeps its text and gets no title (unattributed, never cited). Entities and
relationships never become hits: their ``file_path`` may join several documents with ``<SEP>``, and
they are not retrieved document text. LightRAG supplies no page, URL, dataset or score, and none is
invented.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from deerflow.knowledge._provider_errors import (
    UpstreamAuthError,
    UpstreamError,
    UpstreamNotFoundError,
    UpstreamRejectedError,
    UpstreamResponseError,
    UpstreamServerError,
)
from deerflow.knowledge._provider_settings import LIGHTRAG
from deerflow.knowledge._redaction import redact
from deerflow.knowledge.contract import RetrievalHit, RetrievalResult
from deerflow.knowledge.providers.parse._reply import NOT_JSON, chunk_contents, error_detail
from deerflow.knowledge.rules import is_valid_title
from deerflow.knowledge.text import is_blank

__all__ = [
    "ENDPOINT",
    "PROVIDER_NAME",
    "UNATTRIBUTED_FILE_PATHS",
    "UPGRADE_HINT",
    "parse_query_data",
]

PROVIDER_NAME: Final = LIGHTRAG
ENDPOINT: Final = "/query/data"
UPGRADE_HINT: Final = "LightRAG 1.4.9 or newer is required for /query/data"

#: ``file_path`` values that mean "this chunk's document has no source".
UNATTRIBUTED_FILE_PATHS: Final = frozenset({"", "unknown_source", "no-file-path"})


def parse_query_data(
    status_code: int,
    body: object,
    *,
    query: str,
    base_url: str,
    secrets: Iterable[str | None] = (),
) -> RetrievalResult:
    """The hits of a ``/query/data`` answer, in the server's order, with ``secrets`` redacted.

    ``body`` is the decoded JSON (or :data:`~deerflow.knowledge.providers._http.NOT_JSON`).
    Raises an :class:`~deerflow.knowledge.providers.errors.UpstreamError` subclass for an error
    status or a body this parser does not understand; a query that finds nothing returns a
    result without hits.
    """
    reply = _Reply(base_url, tuple(secrets))
    hits = reply.hits(status_code, body)
    return RetrievalResult(provider=PROVIDER_NAME, query=query, hits=tuple(hits))


class _Reply:
    """One answer being parsed: what its error messages need (base URL, secrets to redact)."""

    def __init__(self, base_url: str, secrets: tuple[str | None, ...]) -> None:
        self._base_url = base_url
        self._secrets = secrets

    def hits(self, status: int, body: object) -> list[RetrievalHit]:
        if status != 200:
            raise self._status_error(status, body)
        if not isinstance(body, Mapping):
            raise self._shape_error(
                "returned invalid JSON" if body is NOT_JSON else "returned a non-object JSON body"
            )
        if "status" not in body and any(k in body for k in ("chunks", "entities", "relationships")):
            raise UpstreamResponseError(
                f"LightRAG answered in the pre-1.4.9 format; {UPGRADE_HINT}.",
                provider=PROVIDER_NAME,
                status_code=status,
            )
        outcome = body.get("status")
        data = body.get("data")
        if outcome == "failure":
            # "No relevant document chunks found." / "Query returned no results": data is {}.
            # "Query returned empty dataset.": four empty lists. Both mean: nothing retrieved.
            if data is None or (isinstance(data, Mapping) and not data.get("chunks")):
                return []
            raise self._shape_error("reported a failure together with data")
        if outcome != "success":
            raise self._shape_error("returned an unknown status")
        if not isinstance(data, Mapping):
            raise self._shape_error("returned no data object")
        return self._hits_from_data(data)

    def _hits_from_data(self, data: Mapping[str, Any]) -> list[RetrievalHit]:
        chunks = data.get("chunks")
        references = data.get("references", [])
        if not isinstance(chunks, list):
            raise self._shape_error("returned data without a chunks list")
        if not isinstance(references, list):
            raise self._shape_error("returned a references value that is not a list")
        paths_by_reference: dict[str, str] = {}
        for reference in references:
            if not isinstance(reference, Mapping):
                raise self._shape_error("returned a reference that is not an object")
            ref_id = _reference_id(reference.get("reference_id"))
            path = reference.get("file_path")
            if ref_id is None or not isinstance(path, str):
                raise self._shape_error("returned a reference without reference_id/file_path")
            paths_by_reference.setdefault(ref_id, path)

        secrets = self._secrets
        hits: list[RetrievalHit] = []
        for chunk, content in chunk_contents(chunks, self._shape_error):
            if is_blank(content):
                continue
            path = chunk.get("file_path")
            if path is not None and not isinstance(path, str):
                raise self._shape_error("returned a chunk whose file_path is not a string")
            if not path:  # missing or "": the reference list may still name the file
                ref_id = _reference_id(chunk.get("reference_id"))
                path = paths_by_reference.get(ref_id) if ref_id else None
            hits.append(RetrievalHit(text=redact(content, secrets), title=_title(path, secrets)))
        return hits

    # ------------------------------------------------------------------ errors

    def _shape_error(self, what: str) -> UpstreamResponseError:
        return UpstreamResponseError(
            f"LightRAG {what}; is {self._base_url} a LightRAG server? ({UPGRADE_HINT}.)",
            provider=PROVIDER_NAME,
            status_code=200,
        )

    def _status_error(self, status: int, body: object) -> UpstreamError:
        detail = error_detail(body, self._secrets)
        suffix = f": {detail}" if detail else ""
        kwargs: dict[str, Any] = {"provider": PROVIDER_NAME, "status_code": status}
        if status == 401:
            return UpstreamAuthError(
                f"LightRAG refused the request (HTTP 401{suffix}); this provider sends an API key "
                "(X-API-Key) but the server asks for a login or a bearer token.",
                **kwargs,
            )
        if status == 403:
            if detail == "API Key required":
                message = "LightRAG requires an API key (HTTP 403); configure api_key."
            elif detail == "Invalid API Key":
                message = "LightRAG rejected the API key (HTTP 403); check api_key."
            else:
                message = f"LightRAG denied access (HTTP 403{suffix}); check api_key."
            return UpstreamAuthError(message, **kwargs)
        if status == 404:
            return UpstreamNotFoundError(
                f"LightRAG endpoint {ENDPOINT} not found at {self._base_url} (HTTP 404); check "
                f"base_url, or upgrade the server: {UPGRADE_HINT}.",
                **kwargs,
            )
        if status in (400, 422):
            return UpstreamRejectedError(
                f"LightRAG rejected the query (HTTP {status}{suffix}).", **kwargs
            )
        if 500 <= status <= 599:
            return UpstreamServerError(
                f"LightRAG failed internally (HTTP {status}{suffix}); check the LightRAG server "
                "log and its LLM/embedding backends, then try again.",
                **kwargs,
            )
        if 400 <= status <= 499:
            return UpstreamRejectedError(
                f"LightRAG refused the request (HTTP {status}{suffix}).", **kwargs
            )
        return UpstreamResponseError(
            f"LightRAG answered with unexpected HTTP status {status}; is base_url right?",
            **kwargs,
        )


def _reference_id(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if type(value) is int:
        return str(value)
    return None


def _title(path: str | None, secrets: tuple[str | None, ...]) -> str | None:
    """The citation title for a chunk's ``file_path``, or None when the chunk is unattributed."""
    if path is None or path.strip() in UNATTRIBUTED_FILE_PATHS:
        return None
    title = redact(path, secrets)
    # A path that cannot be a contract title (control characters, over 512 code points) is
    # not shortened or cleaned into something the provider never said: the hit stays unattributed.
    return title if is_valid_title(title) else None
