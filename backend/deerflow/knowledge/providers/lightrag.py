"""LightRAG retrieval through ``POST /query/data`` (LightRAG >= 1.4.9; checked live with 1.5.7).

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

import logging
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Final, Literal, get_args

import httpx

from deerflow.knowledge.contract import (
    KnowledgeCapabilities,
    RetrievalHit,
    RetrievalResult,
    is_blank,
    is_valid_title,
)
from deerflow.knowledge.providers._http import (
    NOT_JSON,
    JSONReply,
    ProviderConfigError,
    UpstreamAuthError,
    UpstreamError,
    UpstreamNotFoundError,
    UpstreamRejectedError,
    UpstreamResponseError,
    UpstreamServerError,
    error_detail,
    redact,
    send_json,
    validate_api_key,
    validate_base_url,
    validate_bounded_int,
    validate_search_arguments,
    validate_timeout,
)
from deerflow.knowledge.providers._log_redaction import install_log_redaction

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MODE",
    "DEFAULT_TIMEOUT_SECONDS",
    "DEFAULT_TOP_K",
    "MAX_CHUNK_TOP_K",
    "MAX_QUERY_CHARS",
    "MAX_TOP_K",
    "MIN_CHUNK_TOP_K",
    "MIN_TOP_K",
    "MODES",
    "UNATTRIBUTED_FILE_PATHS",
    "LightRAGMode",
    "LightRAGProvider",
]

logger = logging.getLogger(__name__)

LightRAGMode = Literal["naive", "local", "global", "hybrid", "mix"]
#: Retrieval modes. ``bypass`` is left out on purpose: it retrieves nothing.
MODES: Final[tuple[str, ...]] = get_args(LightRAGMode)

DEFAULT_BASE_URL: Final = "http://localhost:9621"
DEFAULT_MODE: Final = "mix"
DEFAULT_TOP_K: Final = 60
DEFAULT_TIMEOUT_SECONDS: Final = 30.0
# LightRAG's own request validation (QueryRequest in 1.5.7) bounds both to 1..1000.
MIN_TOP_K: Final = 1
MAX_TOP_K: Final = 1000
MIN_CHUNK_TOP_K: Final = 1
MAX_CHUNK_TOP_K: Final = 1000
#: LightRAG refuses longer queries (64 KiB); refuse them here without a round trip.
MAX_QUERY_CHARS: Final = 65_536

#: ``file_path`` values that mean "this chunk's document has no source".
UNATTRIBUTED_FILE_PATHS: Final = frozenset({"", "unknown_source", "no-file-path"})

PROVIDER_NAME: Final = "lightrag"
_SERVICE: Final = "LightRAG"
_ENDPOINT: Final = "/query/data"
_UPGRADE_HINT: Final = "LightRAG 1.4.9 or newer is required for /query/data"


class LightRAGProvider:
    """A :class:`~deerflow.knowledge.contract.RetrievalProvider` for a LightRAG server.

    Each ``search`` uses a short-lived HTTP client, so the provider is safe to share across event
    loops. Inside ``async with provider:`` one client is reused until the block ends (or until
    :meth:`aclose`).
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        api_key: str | None = None,
        mode: LightRAGMode = DEFAULT_MODE,
        top_k: int = DEFAULT_TOP_K,
        chunk_top_k: int | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        common = {"service": _SERVICE, "provider": PROVIDER_NAME}
        self._base_url = validate_base_url(base_url, **common)
        self._api_key = validate_api_key(api_key, **common)
        install_log_redaction([self._api_key])
        if mode not in MODES:
            raise ProviderConfigError(
                f"Invalid LightRAG mode: expected one of {', '.join(MODES)}.",
                provider=PROVIDER_NAME,
            )
        self._mode: LightRAGMode = mode
        self._top_k = validate_bounded_int(
            top_k, name="top_k", minimum=MIN_TOP_K, maximum=MAX_TOP_K, **common
        )
        self._chunk_top_k = (
            None
            if chunk_top_k is None
            else validate_bounded_int(
                chunk_top_k,
                name="chunk_top_k",
                minimum=MIN_CHUNK_TOP_K,
                maximum=MAX_CHUNK_TOP_K,
                **common,
            )
        )
        self._timeout = validate_timeout(timeout, **common)
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    # ------------------------------------------------------------------ protocol surface

    @property
    def name(self) -> str:
        return PROVIDER_NAME

    @property
    def capabilities(self) -> KnowledgeCapabilities:
        return KnowledgeCapabilities()

    @property
    def base_url(self) -> str:
        return self._base_url

    @property
    def mode(self) -> LightRAGMode:
        return self._mode

    def __repr__(self) -> str:
        key = "<set>" if self._api_key else None
        return (
            f"LightRAGProvider(base_url={self._base_url!r}, mode={self._mode!r}, "
            f"top_k={self._top_k}, chunk_top_k={self._chunk_top_k}, "
            f"timeout={self._timeout:g}, api_key={key})"
        )

    async def search(self, query: str, *, limit: int | None = None) -> RetrievalResult:
        """Retrieve chunks for ``query``; at most ``limit`` hits when given.

        Raises a :class:`~deerflow.knowledge.providers._http.ProviderError` subclass on failure.
        A query that finds nothing returns a result without hits.
        """
        self._check_arguments(query, limit)
        payload: dict[str, Any] = {"query": query, "mode": self._mode, "top_k": self._top_k}
        if self._chunk_top_k is not None:
            payload["chunk_top_k"] = self._chunk_top_k
        try:
            if self._client is not None:
                reply = await self._post(self._client, payload)
            else:
                async with self._new_client() as client:
                    reply = await self._post(client, payload)
            hits = self._hits(reply)
        except UpstreamError as exc:
            logger.warning("LightRAG search failed: %s", exc)
            raise
        if limit is not None:
            hits = hits[:limit]
        return RetrievalResult(provider=PROVIDER_NAME, query=query, hits=tuple(hits))

    # ------------------------------------------------------------------ client lifecycle

    def _new_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            transport=self._transport,
            timeout=httpx.Timeout(self._timeout),
            follow_redirects=False,
        )

    async def __aenter__(self) -> LightRAGProvider:
        if self._client is None:
            self._client = self._new_client()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the shared client opened by ``async with`` (a no-op otherwise)."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    # ------------------------------------------------------------------ request / response

    def _check_arguments(self, query: object, limit: object) -> None:
        validate_search_arguments(
            query, limit, service=_SERVICE, provider=PROVIDER_NAME, max_query_chars=MAX_QUERY_CHARS
        )

    def _secrets(self) -> tuple[str | None, ...]:
        return (self._api_key,)

    async def _post(self, client: httpx.AsyncClient, payload: dict[str, Any]) -> JSONReply:
        headers = {"Accept": "application/json"}
        if self._api_key is not None:
            headers["X-API-Key"] = self._api_key
        logger.debug("LightRAG %s mode=%s top_k=%s", _ENDPOINT, self._mode, self._top_k)
        return await send_json(
            client,
            "POST",
            self._base_url + _ENDPOINT,
            payload=payload,
            headers=headers,
            service=_SERVICE,
            provider=PROVIDER_NAME,
            secrets=self._secrets(),
        )

    def _hits(self, reply: JSONReply) -> list[RetrievalHit]:
        status, body = reply.status_code, reply.body
        if status != 200:
            raise self._status_error(status, body)
        if not isinstance(body, Mapping):
            raise self._shape_error(
                "returned invalid JSON" if body is NOT_JSON else "returned a non-object JSON body"
            )
        if "status" not in body and any(k in body for k in ("chunks", "entities", "relationships")):
            raise UpstreamResponseError(
                f"LightRAG answered in the pre-1.4.9 format; {_UPGRADE_HINT}.",
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

        secrets = self._secrets()
        hits: list[RetrievalHit] = []
        for chunk in chunks:
            if not isinstance(chunk, Mapping):
                raise self._shape_error("returned a chunk that is not an object")
            content = chunk.get("content")
            if not isinstance(content, str):
                raise self._shape_error("returned a chunk without text content")
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
            f"LightRAG {what}; is {self._base_url} a LightRAG server? ({_UPGRADE_HINT}.)",
            provider=PROVIDER_NAME,
            status_code=200,
        )

    def _status_error(self, status: int, body: object) -> UpstreamError:
        detail = error_detail(body, self._secrets())
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
                f"LightRAG endpoint {_ENDPOINT} not found at {self._base_url} (HTTP 404); check "
                f"base_url, or upgrade the server: {_UPGRADE_HINT}.",
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
