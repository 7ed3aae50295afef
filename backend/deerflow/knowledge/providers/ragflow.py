"""RAGFlow retrieval through ``POST /api/v1/retrieval`` (shapes of RAGFlow v0.19 to v0.27).

One search is three steps:

1. **Scope.** An operator allowlist of dataset ids is resolved live, one
   ``GET /api/v1/datasets?id=<id>`` each (at most 4 in flight); an id that does not resolve fails
   the call closed with its ordinal ("the 2nd configured dataset"), never the id. Without an
   allowlist every dataset the key can access is enumerated page by page (100 per page, at most 100
   pages).
2. **Embedding groups.** RAGFlow refuses to search datasets with different embedding models in one
   request, so datasets are grouped by ``embedding_model`` (datasets without chunks are skipped) and
   each group gets one ``POST /api/v1/retrieval`` (groups in sorted order, at most 4 in flight).
   Similarities from different embedding spaces are not comparable: results are interleaved by
   rank up to ``page_size`` and scores are dropped when more than one group answered. Any group
   failure fails the call.
3. **Mapping.** A chunk's title is its ``document_keyword``, else the ``doc_aggs`` name for its
   ``document_id``, else nothing (unattributed: shown, never cited). A page comes only from a
   ``positions`` row ``[page, left, right, top, bottom]`` that describes a real box (TXT, DOCX and
   Markdown chunks carry fake rows built from the chunk ordinal). RAGFlow has no document URL, so
   none is ever built.

**Native snapshots.** DeerFlow's own RAGFlow tool answers with a native v1 snapshot
(:mod:`deerflow.knowledge.native`). :meth:`RAGFlowProvider.format_for_tool` keeps producing it when
every displayed chunk has complete provider locators (``dataset_id``, ``document_id``, chunk ``id``,
each 1-256 characters, inside the resolved scope); otherwise the tool falls back to the shared
envelope. Locators are never fabricated and native ids never rewritten.

**Secrets.** The API key is replaced by ``[REDACTED]`` in everything that leaves the provider —
texts, names, locators, messages, logs. On error paths every 32-hex or UUID token additionally
becomes ``[DATASET_ID]``, so dataset ids stay out of what a model or a user sees.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import urllib.parse
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, TypeVar

import httpx
from pydantic import BaseModel, ConfigDict, model_validator

from deerflow.knowledge.contract import (
    KnowledgeCapabilities,
    RetrievalHit,
    RetrievalResult,
    is_blank,
)
from deerflow.knowledge.native import (
    MAX_NATIVE_LOCATOR_CHARS,
    MAX_NATIVE_NAME_CHARS,
    MAX_NATIVE_SOURCES,
    NativeSource,
    build_native_snapshot,
    native_entry,
    native_link,
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
    "DATASET_ID_MARKER",
    "DATASET_PAGE_SIZE",
    "DEFAULT_BASE_URL",
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_SIMILARITY_THRESHOLD",
    "DEFAULT_TIMEOUT_SECONDS",
    "DEFAULT_TOP_K",
    "DEFAULT_VECTOR_SIMILARITY_WEIGHT",
    "KNOWLEDGE_GRAPH_DOCUMENT",
    "MAX_CONCURRENT_REQUESTS",
    "MAX_DATASETS",
    "MAX_DATASET_PAGES",
    "MAX_PAGE_SIZE",
    "MAX_QUERY_CHARS",
    "MAX_TOP_K",
    "RAGFLOW_TOOL_DESCRIPTION",
    "UNKNOWN_DOCUMENT",
    "DatasetUnavailableError",
    "RAGFlowChunk",
    "RAGFlowDataset",
    "RAGFlowProvider",
    "RAGFlowResult",
    "format_native",
    "real_pages",
]

logger = logging.getLogger(__name__)

PROVIDER_NAME: Final = "ragflow"
_SERVICE: Final = "RAGFlow"
_DATASETS_PATH: Final = "/api/v1/datasets"
_RETRIEVAL_PATH: Final = "/api/v1/retrieval"

DEFAULT_BASE_URL: Final = "http://localhost:9380"
DEFAULT_PAGE_SIZE: Final = 8
MAX_PAGE_SIZE: Final = 100  # RAGFlow >= 0.26 refuses more (code 100)
DEFAULT_SIMILARITY_THRESHOLD: Final = 0.2
DEFAULT_VECTOR_SIMILARITY_WEIGHT: Final = 0.3
DEFAULT_TOP_K: Final = 256
MAX_TOP_K: Final = 1024
DEFAULT_TIMEOUT_SECONDS: Final = 30.0
MAX_DATASETS: Final = 100
DATASET_PAGE_SIZE: Final = 100
MAX_DATASET_PAGES: Final = 100
MAX_CONCURRENT_REQUESTS: Final = 4
MAX_QUERY_CHARS: Final = 65_536
#: At most this many ``positions`` rows of a chunk are read for pages.
_MAX_POSITION_ROWS: Final = 100

#: DeerFlow's native document name for a chunk whose document has no name (native records only;
#: the shared envelope leaves such a chunk unattributed instead of inventing a title).
UNKNOWN_DOCUMENT: Final = "Unknown document"
#: ``document_keyword`` of RAGFlow's knowledge-graph pseudo-chunk (``use_kg``): not a document.
KNOWLEDGE_GRAPH_DOCUMENT: Final = "Related content in Knowledge Graph"
DATASET_ID_MARKER: Final = "[DATASET_ID]"

RAGFLOW_TOOL_DESCRIPTION: Final = (
    "Search the operator-approved RAGFlow knowledge base and return relevant excerpts of real "
    "documents. Each citable result comes with a ready-made citation link, such as "
    "[citation:1](#knowledge-0123456789abcdef0123456789abcdef-1) or "
    "[citation:Title](#knowledge-source-0123456789abcdef0123456789abcdef). When you use a "
    "result, copy its citation link exactly as given, right after the sentence it supports. "
    "Never invent, shorten or renumber citation links, and never cite a result marked unattributed."
)

_ID_TOKEN_RE = re.compile(
    r"(?<![0-9A-Za-z])(?:[0-9A-Fa-f]{32}|[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-"
    r"[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})(?![0-9A-Za-z])"
)
_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")
_CONTROL_RUN_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]+")
_EMBEDDING_MISMATCH = (
    "Datasets use different embedding models",
    "Cannot search across datasets",
)
_NO_ACCESS = "You don't own the dataset"

_T = TypeVar("_T")


class DatasetUnavailableError(UpstreamError):
    """A configured dataset did not resolve, or the key can access no dataset at all."""


@dataclass(frozen=True, slots=True)
class RAGFlowDataset:
    """A resolved dataset: only what grouping and naming need."""

    id: str
    name: str
    embedding_model: str | None
    chunk_count: int | None


class RAGFlowChunk(BaseModel):
    """The provider evidence behind one hit: what a native record needs, and nothing invented.

    ``document_name`` is the document's real name (``document_keyword`` or the ``doc_aggs`` name)
    or None; ``dataset_name`` is set only when the chunk's dataset is in the resolved scope.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    chunk_id: str | None = None
    dataset_id: str | None = None
    document_id: str | None = None
    document_name: str | None = None
    dataset_name: str | None = None
    pages: tuple[int, ...] = ()

    @property
    def has_locators(self) -> bool:
        """True when DeerFlow's native snapshot can describe this chunk without inventing anything."""
        return self.dataset_name is not None and all(
            isinstance(value, str)
            and 1 <= len(value) <= MAX_NATIVE_LOCATOR_CHARS
            and _SURROGATE_RE.search(value) is None
            for value in (self.dataset_id, self.document_id, self.chunk_id)
        )


class RAGFlowResult(RetrievalResult):
    """A :class:`RetrievalResult` whose hits carry their RAGFlow evidence (``chunks[i]`` ↔ ``hits[i]``)."""

    chunks: tuple[RAGFlowChunk, ...] = ()

    @model_validator(mode="after")
    def _parallel(self) -> RAGFlowResult:
        if len(self.chunks) != len(self.hits):
            raise ValueError("chunks and hits must be parallel")
        return self


def real_pages(positions: object) -> tuple[int, ...]:
    """Sorted unique pages of the ``positions`` rows that describe a real box.

    A row is ``[page, left, right, top, bottom]``; it is page evidence only when left < right and
    top < bottom. Non-PDF parsers write ``[i+1, i, i, i, i]`` from the chunk ordinal, which is no
    page at all.
    """
    if not isinstance(positions, list):
        return ()
    pages: set[int] = set()
    for row in positions[:_MAX_POSITION_ROWS]:
        if not isinstance(row, list) or len(row) != 5:
            continue
        if not all(type(value) in (int, float) and math.isfinite(value) for value in row):
            continue
        page, left, right, top, bottom = row
        if not (left < right and top < bottom) or float(page) != int(page):
            continue
        if 1 <= int(page) <= 1_000_000:
            pages.add(int(page))
    return tuple(sorted(pages))


def format_native(
    chunks: Sequence[RAGFlowChunk],
    *,
    max_chars: int,
    max_chars_per_hit: int,
    call_id: str | None = None,
) -> tuple[str, dict[str, Any]] | None:
    """DeerFlow's native content and ``knowledge_sources`` snapshot for ``chunks``, or None.

    Entries ``[citation:N](#knowledge-<call>-<N>) dataset / document`` + newline + excerpt, joined
    by a blank line; at most 100. Per entry the excerpt may use ``min(max_chars_per_hit,
    remaining - header - separators)`` characters; a longer text is cut (right-stripped, ``…``
    appended outside the record's ``text``) and marked ``truncated``; when nothing fits, the
    remaining chunks are not shown. None when a chunk lacks locators or nothing fits.
    """
    if not chunks or not all(chunk.has_locators for chunk in chunks):
        return None
    call = call_id if call_id is not None else uuid.uuid4().hex
    remaining = max_chars
    entries: list[str] = []
    sources: list[NativeSource] = []
    for chunk in chunks[:MAX_NATIVE_SOURCES]:
        ordinal = len(sources) + 1
        source_id = f"{call}-{ordinal}"
        dataset = _native_name(chunk.dataset_name or "")
        document = _native_name(chunk.document_name or UNKNOWN_DOCUMENT)
        header = f"{native_link(source_id, ordinal)} {dataset} / {document}\n"
        separator = 2 if entries else 0
        allowance = min(max_chars_per_hit, remaining - len(header) - separator)
        if allowance < 1:
            break
        text, ellipsis = chunk.text, ""
        if len(text) > allowance:
            text, ellipsis = text[: allowance - 1].rstrip(), "…"
            if not text:
                break
        assert chunk.dataset_id and chunk.document_id and chunk.chunk_id  # has_locators
        source = NativeSource(
            id=source_id,
            dataset_id=chunk.dataset_id,
            document_id=chunk.document_id,
            chunk_id=chunk.chunk_id,
            dataset_name=dataset,
            document_name=document,
            text=text,
            truncated=bool(ellipsis),
            pages=chunk.pages[:100],
        )
        entry = native_entry(source, ordinal, ellipsis=ellipsis)
        entries.append(entry)
        sources.append(source)
        remaining -= len(entry) + separator
    if not sources:
        return None
    return "\n\n".join(entries), {"knowledge_sources": build_native_snapshot(sources)}


class RAGFlowProvider:
    """A :class:`~deerflow.knowledge.contract.RetrievalProvider` for a RAGFlow server.

    Each ``search`` uses a short-lived HTTP client; inside ``async with provider:`` one client is
    reused until the block ends (or until :meth:`aclose`).
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        api_key: str,
        datasets: Sequence[str] | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        similarity_threshold: float = DEFAULT_SIMILARITY_THRESHOLD,
        vector_similarity_weight: float = DEFAULT_VECTOR_SIMILARITY_WEIGHT,
        top_k: int = DEFAULT_TOP_K,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        common = {"service": _SERVICE, "provider": PROVIDER_NAME}
        self._base_url = validate_base_url(base_url, **common)
        key = validate_api_key(api_key, **common)
        if key is None:
            raise ProviderConfigError(
                "RAGFlow api_key is required (prefer reading it from $RAGFLOW_API_KEY).",
                provider=PROVIDER_NAME,
            )
        self._api_key: str = key
        install_log_redaction([key])
        self._datasets = _validate_datasets(datasets)
        self._page_size = validate_bounded_int(
            page_size, name="page_size", minimum=1, maximum=MAX_PAGE_SIZE, **common
        )
        self._similarity_threshold = _validate_fraction(
            similarity_threshold, "similarity_threshold"
        )
        self._vector_similarity_weight = _validate_fraction(
            vector_similarity_weight, "vector_similarity_weight"
        )
        self._top_k = validate_bounded_int(
            top_k, name="top_k", minimum=1, maximum=MAX_TOP_K, **common
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
    def tool_description(self) -> str:
        return RAGFLOW_TOOL_DESCRIPTION

    @property
    def base_url(self) -> str:
        return self._base_url

    def __repr__(self) -> str:
        scope = "all accessible" if self._datasets is None else f"{len(self._datasets)} configured"
        return (
            f"RAGFlowProvider(base_url={self._base_url!r}, datasets=<{scope}>, "
            f"page_size={self._page_size}, similarity_threshold={self._similarity_threshold:g}, "
            f"vector_similarity_weight={self._vector_similarity_weight:g}, top_k={self._top_k}, "
            f"timeout={self._timeout:g}, api_key=<set>)"
        )

    async def search(self, query: str, *, limit: int | None = None) -> RAGFlowResult:
        """Retrieve chunks for ``query``: at most ``page_size`` (or ``limit``, if smaller) hits.

        Raises a :class:`~deerflow.knowledge.providers._http.ProviderError` subclass on failure;
        its message never holds the API key or a dataset id.
        """
        self._check_arguments(query, limit)
        page_size = self._page_size if limit is None else min(self._page_size, limit)
        try:
            async with self._client_scope() as client:
                datasets = await self._resolve_scope(client)
                groups = _embedding_groups(datasets)
                answers = await _bounded_gather(
                    [self._retrieve_call(client, query, group, page_size) for group in groups]
                )
        except UpstreamError as exc:
            failure: UpstreamError | None = self._scrubbed(exc)
        else:
            failure = None
        if failure is not None:  # raised outside the handler: no chained context to leak
            logger.warning("RAGFlow search failed: %s", failure)
            raise failure
        merged = _interleave(answers, page_size)
        keep_scores = len(answers) <= 1
        hits = tuple(
            hit if keep_scores else hit.model_copy(update={"score": None}) for hit, _ in merged
        )
        chunks = tuple(chunk for _, chunk in merged)
        logger.debug("RAGFlow search: %d group(s), %d hit(s)", len(groups), len(hits))
        return RAGFlowResult(provider=PROVIDER_NAME, query=query, hits=hits, chunks=chunks)

    def format_for_tool(
        self, result: RetrievalResult, *, max_chars: int, max_chars_per_hit: int
    ) -> tuple[str, dict[str, Any]] | None:
        """DeerFlow's native ``(content, artifact)`` when every displayed chunk has complete
        locators; None otherwise (the tool then formats the shared envelope)."""
        if not isinstance(result, RAGFlowResult):
            return None
        return format_native(
            result.chunks, max_chars=max_chars, max_chars_per_hit=max_chars_per_hit
        )

    # ------------------------------------------------------------------ client lifecycle

    def _new_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            transport=self._transport,
            timeout=httpx.Timeout(self._timeout),
            follow_redirects=False,
        )

    @asynccontextmanager
    async def _client_scope(self) -> AsyncIterator[httpx.AsyncClient]:
        if self._client is not None:
            yield self._client
        else:
            async with self._new_client() as client:
                yield client

    async def __aenter__(self) -> RAGFlowProvider:
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

    # ------------------------------------------------------------------ scope

    async def _resolve_scope(self, client: httpx.AsyncClient) -> list[RAGFlowDataset]:
        if self._datasets is None:
            return await self._enumerate(client)
        return await _bounded_gather(
            [
                self._resolve_one(client, i, dataset_id)
                for i, dataset_id in enumerate(self._datasets)
            ]
        )

    def _resolve_one(
        self, client: httpx.AsyncClient, index: int, dataset_id: str
    ) -> Callable[[], Awaitable[RAGFlowDataset]]:
        async def call() -> RAGFlowDataset:
            reply = await self._request(client, "GET", _DATASETS_PATH, params={"id": dataset_id})
            body = reply.body
            # 102 (v0.25+) / 108 (<= v0.24): not found or no permission; 101: not a dataset id.
            if (
                reply.status_code == 200
                and isinstance(body, Mapping)
                and body.get("code") in (101, 102, 108)
                and type(body.get("code")) is int
            ):
                raise self._unavailable(index, code=body["code"], detail=self._detail(body))
            data = self._data(reply, list)
            for item in data:
                if isinstance(item, Mapping) and item.get("id") == dataset_id:
                    return self._dataset(item)
            raise self._unavailable(index)

        return call

    async def _enumerate(self, client: httpx.AsyncClient) -> list[RAGFlowDataset]:
        found: dict[str, RAGFlowDataset] = {}
        received = 0
        total: int | None = None
        for page in range(1, MAX_DATASET_PAGES + 1):
            reply = await self._request(
                client, "GET", _DATASETS_PATH, params={"page": page, "page_size": DATASET_PAGE_SIZE}
            )
            data = self._data(reply, list)
            reported = reply.body.get("total_datasets")
            if type(reported) is int and reported >= 0:
                total = reported
            if not data:
                if total is not None and received < total:
                    raise self._shape_error("listed fewer datasets than it reported")
                break
            received += len(data)
            for item in data:
                if not isinstance(item, Mapping):
                    raise self._shape_error("listed a dataset that is not an object")
                dataset = self._dataset(item)
                found.setdefault(dataset.id, dataset)
            if len(data) < DATASET_PAGE_SIZE or (total is not None and received >= total):
                break
        else:
            logger.warning(
                "RAGFlow lists more than %d datasets; searching the first %d pages only.",
                MAX_DATASET_PAGES * DATASET_PAGE_SIZE,
                MAX_DATASET_PAGES,
            )
        if not found:
            raise DatasetUnavailableError(
                "No accessible RAGFlow datasets were found; configure datasets or add a dataset "
                "in RAGFlow.",
                provider=PROVIDER_NAME,
            )
        return list(found.values())

    def _dataset(self, item: Mapping[str, Any]) -> RAGFlowDataset:
        dataset_id = item.get("id")
        if not isinstance(dataset_id, str) or not dataset_id:
            raise self._shape_error("listed a dataset without an id")
        name = item.get("name")
        model = item.get("embedding_model")
        count = item.get("chunk_count")
        return RAGFlowDataset(
            id=dataset_id,
            name=name if isinstance(name, str) else "",
            embedding_model=model if isinstance(model, str) and model else None,
            chunk_count=count if type(count) is int else None,
        )

    def _unavailable(
        self, index: int, *, code: int | None = None, detail: str | None = None
    ) -> DatasetUnavailableError:
        """Our words first, then RAGFlow's own (redacted, ids scrubbed): a "not found" can really
        be an invalid credential or a tenant problem, and only RAGFlow's message tells which."""
        logger.warning("RAGFlow: the %s configured dataset did not resolve.", _ordinal(index + 1))
        upstream = f" (code {code}: {detail})" if code is not None and detail else ""
        return DatasetUnavailableError(
            f"The {_ordinal(index + 1)} configured RAGFlow dataset was not found or is not "
            f"accessible with this API key{upstream}; check the datasets setting.",
            provider=PROVIDER_NAME,
        )

    # ------------------------------------------------------------------ retrieval

    def _retrieve_call(
        self,
        client: httpx.AsyncClient,
        query: str,
        group: list[RAGFlowDataset],
        page_size: int,
    ) -> Callable[[], Awaitable[list[tuple[RetrievalHit, RAGFlowChunk]]]]:
        async def call() -> list[tuple[RetrievalHit, RAGFlowChunk]]:
            payload = {
                "question": query,
                "dataset_ids": [dataset.id for dataset in group],
                "page_size": page_size,
                "similarity_threshold": self._similarity_threshold,
                "vector_similarity_weight": self._vector_similarity_weight,
                "top_k": self._top_k,
            }
            reply = await self._request(client, "POST", _RETRIEVAL_PATH, payload=payload)
            data = self._data(reply, Mapping)
            return self._hits(data, {dataset.id: dataset for dataset in group})

        return call

    def _hits(
        self, data: Mapping[str, Any], scope: Mapping[str, RAGFlowDataset]
    ) -> list[tuple[RetrievalHit, RAGFlowChunk]]:
        chunks = data.get("chunks", [])
        if not isinstance(chunks, list):
            raise self._shape_error("returned data without a chunks list")
        names = _document_names(data.get("doc_aggs"))
        secrets = self._secrets()
        hits: list[tuple[RetrievalHit, RAGFlowChunk]] = []
        outside = 0
        for raw in chunks:
            if not isinstance(raw, Mapping):
                raise self._shape_error("returned a chunk that is not an object")
            content = raw.get("content")
            if not isinstance(content, str):
                raise self._shape_error("returned a chunk without text content")
            text = _normalize_text(redact(content, secrets))
            if not text:
                continue
            raw_dataset = raw.get("dataset_id")
            if _outside(raw_dataset, scope):
                outside += 1
                continue  # scope admission is authoritative: neither shown nor cited
            dataset_id = raw_dataset if isinstance(raw_dataset, str) else None
            document_id = _string(raw.get("document_id"))
            keyword = _string(raw.get("document_keyword"))
            graph = isinstance(raw_dataset, list) or (
                not document_id and keyword == KNOWLEDGE_GRAPH_DOCUMENT
            )
            document_name: str | None = None
            if not graph:
                if keyword is not None and not is_blank(keyword):
                    document_name = keyword
                elif document_id:
                    document_name = names.get(document_id)
            dataset = scope.get(dataset_id) if dataset_id is not None else None
            dataset_name = dataset.name if dataset is not None else None
            pages = real_pages(raw.get("positions"))
            score = _score(raw.get("similarity"))
            clean = _redactor(secrets)
            chunk = RAGFlowChunk(
                text=text,
                chunk_id=clean(_string(raw.get("id"))),
                dataset_id=clean(dataset_id),
                document_id=clean(document_id),
                document_name=clean(document_name),
                dataset_name=clean(dataset_name),
                pages=pages,
            )
            hit = RetrievalHit(
                text=text,
                title=chunk.document_name,
                dataset_name=chunk.dataset_name or None,
                page=pages[0] if pages else None,
                score=score,
            )
            hits.append((hit, chunk))
        if outside:
            logger.warning("RAGFlow returned %d chunk(s) outside the searched datasets.", outside)
        return hits

    # ------------------------------------------------------------------ transport

    def _secrets(self) -> tuple[str, ...]:
        return (self._api_key,)

    async def _request(
        self,
        client: httpx.AsyncClient,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        payload: Any = None,
    ) -> JSONReply:
        url = self._base_url + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        headers = {"Accept": "application/json", "Authorization": f"Bearer {self._api_key}"}
        return await send_json(
            client,
            method,
            url,
            payload=payload,
            headers=headers,
            service=_SERVICE,
            provider=PROVIDER_NAME,
            secrets=self._secrets(),
        )

    def _data(self, reply: JSONReply, expected: type[Any]) -> Any:
        """``data`` of a successful envelope (``code == 0``), else the matching error."""
        status, body = reply.status_code, reply.body
        kwargs: dict[str, Any] = {"provider": PROVIDER_NAME, "status_code": status}
        if not isinstance(body, Mapping):
            if status == 401:
                raise UpstreamAuthError(
                    "RAGFlow rejected the API key (HTTP 401); check api_key.", **kwargs
                )
            if status == 404:
                raise self._not_found(status)
            if 500 <= status <= 599:
                raise UpstreamServerError(
                    f"RAGFlow failed (HTTP {status}); check the RAGFlow server and any proxy in "
                    "front of it, then try again.",
                    **kwargs,
                )
            if status != 200:
                raise UpstreamRejectedError(
                    f"RAGFlow refused the request (HTTP {status}).", **kwargs
                )
            raise self._shape_error(
                "returned invalid JSON" if body is NOT_JSON else "returned a non-object JSON body"
            )
        code = body.get("code")
        detail = self._detail(body)
        suffix = f": {detail}" if detail else ""
        if status == 401 or code in (109, 401) or (code == 0 and body.get("data") is False):
            raise UpstreamAuthError(
                f"RAGFlow rejected the API key (HTTP {status}, code {code}{suffix}); check api_key.",
                **kwargs,
            )
        if status == 404:
            raise self._not_found(status)
        if type(code) is int and code == 0 and status == 200:
            data = body.get("data")
            if not isinstance(data, expected):
                raise self._shape_error("returned a success without the expected data")
            return data
        if type(code) is int and code != 0:
            if code == 102 and detail and detail.startswith(_NO_ACCESS):
                raise UpstreamAuthError(
                    f"RAGFlow denied access to a dataset (code 102{suffix}); check the datasets "
                    "setting and the API key's tenant.",
                    **kwargs,
                )
            if code == 102 and detail and detail.startswith(_EMBEDDING_MISMATCH):
                raise UpstreamRejectedError(
                    f"RAGFlow refused to search datasets with different embedding models together "
                    f"(code 102{suffix}).",
                    **kwargs,
                )
            if code == 108:
                raise UpstreamAuthError(
                    f"RAGFlow denied permission (code 108{suffix}); check the API key.", **kwargs
                )
            if code == 100 or 500 <= status <= 599:
                raise UpstreamServerError(
                    f"RAGFlow failed internally (code {code}{suffix}); check the RAGFlow server "
                    "log, then try again.",
                    **kwargs,
                )
            raise UpstreamRejectedError(
                f"RAGFlow rejected the request (code {code}{suffix}).", **kwargs
            )
        if 500 <= status <= 599:
            raise UpstreamServerError(f"RAGFlow failed (HTTP {status}{suffix}).", **kwargs)
        raise self._shape_error(f"answered HTTP {status} without a usable code")

    def _detail(self, body: Mapping[str, Any]) -> str | None:
        detail = error_detail(body, self._secrets())
        return None if detail is None else _scrub_ids(detail)

    # ------------------------------------------------------------------ errors

    def _not_found(self, status: int) -> UpstreamNotFoundError:
        return UpstreamNotFoundError(
            f"RAGFlow endpoint not found at {self._base_url} (HTTP {status}); check base_url (the "
            "RAGFlow API server, e.g. http://host:9380, or its web entry) and that the server runs "
            "the Python API (not the Go-only mode).",
            provider=PROVIDER_NAME,
            status_code=status,
        )

    def _shape_error(self, what: str) -> UpstreamResponseError:
        return UpstreamResponseError(
            f"RAGFlow {what}; is {self._base_url} a RAGFlow API server?",
            provider=PROVIDER_NAME,
            status_code=200,
        )

    def _scrubbed(self, exc: UpstreamError) -> UpstreamError:
        message = _scrub_ids(redact(exc.message, self._secrets()))
        return type(exc)(message, provider=exc.provider, status_code=exc.status_code)

    def _check_arguments(self, query: object, limit: object) -> None:
        validate_search_arguments(
            query, limit, service=_SERVICE, provider=PROVIDER_NAME, max_query_chars=MAX_QUERY_CHARS
        )


# --------------------------------------------------------------------------- helpers


def _validate_datasets(datasets: object) -> tuple[str, ...] | None:
    def bad(reason: str) -> ProviderConfigError:
        return ProviderConfigError(f"Invalid RAGFlow datasets: {reason}.", provider=PROVIDER_NAME)

    if datasets is None:
        return None
    if isinstance(datasets, str | bytes) or not isinstance(datasets, Sequence):
        raise bad("expected a list of dataset ids, or omit it to search every accessible dataset")
    if not datasets:
        raise bad("the list is empty; omit it to search every accessible dataset")
    if len(datasets) > MAX_DATASETS:
        raise bad(f"at most {MAX_DATASETS} dataset ids")
    ids: list[str] = []
    for index, value in enumerate(datasets):
        cleaned = value.strip() if isinstance(value, str) else None
        if (
            not cleaned
            or len(cleaned) > MAX_NATIVE_LOCATOR_CHARS
            or _CONTROL_RUN_RE.search(cleaned)
        ):
            raise bad(
                f"the {_ordinal(index + 1)} entry must be a dataset id of 1-"
                f"{MAX_NATIVE_LOCATOR_CHARS} characters"
            )
        if cleaned not in ids:
            ids.append(cleaned)
    return tuple(ids)


def _validate_fraction(value: object, name: str) -> float:
    if type(value) not in (int, float) or not 0 <= value <= 1:  # type: ignore[operator]
        raise ProviderConfigError(
            f"Invalid RAGFlow {name}: expected a number from 0 to 1.", provider=PROVIDER_NAME
        )
    return float(value)  # type: ignore[arg-type]


def _outside(dataset_id: object, scope: Mapping[str, RAGFlowDataset]) -> bool:
    """True when a chunk names a dataset the request did not search (a string id, or any id of a
    knowledge-graph chunk's list). A chunk naming no dataset is not known to be outside."""
    if isinstance(dataset_id, str):
        return dataset_id not in scope
    if isinstance(dataset_id, list):
        return any(not isinstance(item, str) or item not in scope for item in dataset_id)
    return False


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _scrub_ids(text: str) -> str:
    return _ID_TOKEN_RE.sub(DATASET_ID_MARKER, text)


def _score(value: object) -> float | None:
    """``similarity`` as given (it can exceed 1 with pagerank or tag features), if a number."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _string(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _redactor(secrets: tuple[str, ...]) -> Callable[[str | None], str | None]:
    def clean(value: str | None) -> str | None:
        return None if value is None else redact(value, secrets)

    return clean


def _normalize_text(text: str) -> str:
    """Chunk content as shown: newlines unified, lone surrogates replaced, outer space stripped."""
    text = _SURROGATE_RE.sub("\ufffd", text.replace("\r\n", "\n").replace("\r", "\n"))
    return text.strip()


def _native_name(name: str) -> str:
    """A name as DeerFlow's native header shows it: one line, at most 512 code points."""
    name = _SURROGATE_RE.sub("\ufffd", _CONTROL_RUN_RE.sub(" ", name))
    return name.strip()[:MAX_NATIVE_NAME_CHARS]


def _document_names(doc_aggs: object) -> dict[str, str]:
    """``doc_id`` → ``doc_name`` from ``doc_aggs`` (a list; ``{}`` on RAGFlow's early-success paths)."""
    names: dict[str, str] = {}
    items: Iterable[object] = doc_aggs if isinstance(doc_aggs, list) else ()
    for item in items:
        if not isinstance(item, Mapping):
            continue
        doc_id, doc_name = item.get("doc_id"), item.get("doc_name")
        if isinstance(doc_id, str) and isinstance(doc_name, str) and not is_blank(doc_name):
            names.setdefault(doc_id, doc_name)
    return names


def _embedding_groups(datasets: Iterable[RAGFlowDataset]) -> list[list[RAGFlowDataset]]:
    groups: dict[str, list[RAGFlowDataset]] = {}
    for dataset in datasets:
        if dataset.chunk_count == 0:
            continue  # nothing to search; RAGFlow may not even have an embedding model for it
        if dataset.embedding_model is None:
            raise UpstreamResponseError(
                "RAGFlow listed a dataset with chunks but no embedding_model; cannot search it.",
                provider=PROVIDER_NAME,
                status_code=200,
            )
        groups.setdefault(dataset.embedding_model, []).append(dataset)
    return [groups[model] for model in sorted(groups)]


def _interleave(answers: Sequence[Sequence[_T]], limit: int) -> list[_T]:
    """Rank 0 of every group in group order, then rank 1, …, until ``limit`` items."""
    merged: list[_T] = []
    rank = 0
    while len(merged) < limit and any(rank < len(answer) for answer in answers):
        for answer in answers:
            if rank < len(answer) and len(merged) < limit:
                merged.append(answer[rank])
        rank += 1
    return merged


async def _bounded_gather(
    calls: Sequence[Callable[[], Awaitable[_T]]], limit: int = MAX_CONCURRENT_REQUESTS
) -> list[_T]:
    """Run ``calls`` with at most ``limit`` in flight; results in input order.

    The first failure (in input order among those finished) is raised and every other call is
    cancelled, so nothing keeps running against a client that is about to close.
    """
    if not calls:
        return []
    semaphore = asyncio.Semaphore(limit)

    async def run(call: Callable[[], Awaitable[_T]]) -> _T:
        async with semaphore:
            return await call()

    tasks = [asyncio.ensure_future(run(call)) for call in calls]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in tasks:
            if task.done() and not task.cancelled() and task.exception() is not None:
                error = task.exception()
                assert error is not None
                raise error
        return [task.result() for task in tasks]
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
