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
3. **Mapping.** The pure parser :mod:`deerflow.knowledge.providers.parse.ragflow` turns each answer
   into hits (titles, real pages, scope admission; nothing invented). This module is the thin I/O
   client around it.

**Native snapshots.** DeerFlow's own RAGFlow tool answers with a native v1 snapshot
(:mod:`deerflow.knowledge.native`). :meth:`RAGFlowProvider.format_for_tool` keeps producing it
(:func:`~deerflow.knowledge.native.format_native`) when every displayed chunk has complete provider locators (``dataset_id``, ``document_id``, chunk ``id``,
each 1-256 characters, inside the resolved scope); otherwise the tool falls back to the shared
envelope. Locators are never fabricated and native ids never rewritten.

**Secrets.** The API key is replaced by ``[REDACTED]`` in everything that leaves the provider —
texts, names, locators, messages, logs. On error paths every 32-hex or UUID token additionally
becomes ``[DATASET_ID]``, so dataset ids stay out of what a model or a user sees.
"""

from __future__ import annotations

import asyncio
import logging
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

import httpx

from deerflow.knowledge._redaction import redact
from deerflow.knowledge.contract import (
    KnowledgeCapabilities,
    OutputBudget,
    RetrievalHit,
    RetrievalResult,
)
from deerflow.knowledge.native import MAX_NATIVE_LOCATOR_CHARS, format_native
from deerflow.knowledge.providers._client import ClientLifecycle
from deerflow.knowledge.providers._http import JSONReply, send_json
from deerflow.knowledge.providers._log_redaction import install_log_redaction
from deerflow.knowledge.providers._service import Service
from deerflow.knowledge.providers.errors import ProviderConfigError, UpstreamError
from deerflow.knowledge.providers.parse.ragflow import (
    DATASET_ID_MARKER,
    KNOWLEDGE_GRAPH_DOCUMENT,
    PROVIDER_NAME,
    DatasetUnavailableError,
    RAGFlowChunk,
    RAGFlowDataset,
    RAGFlowReply,
    RAGFlowResult,
    embedding_groups,
    merge_groups,
    real_pages,
    scrub_ids,
)
from deerflow.knowledge.text import CONTROL_RE

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
    "DatasetUnavailableError",
    "RAGFlowChunk",
    "RAGFlowDataset",
    "RAGFlowProvider",
    "RAGFlowResult",
    "real_pages",
]

logger = logging.getLogger(__name__)

_SERVICE: Final = Service(name="RAGFlow", provider=PROVIDER_NAME)
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

RAGFLOW_TOOL_DESCRIPTION: Final = (
    "Search the operator-approved RAGFlow knowledge base and return relevant excerpts of real "
    "documents. Each citable result comes with a ready-made citation link, such as "
    "[citation:1](#knowledge-0123456789abcdef0123456789abcdef-1) or "
    "[citation:Title](#knowledge-source-0123456789abcdef0123456789abcdef). When you use a "
    "result, copy its citation link exactly as given, right after the sentence it supports. "
    "Never invent, shorten or renumber citation links, and never cite a result marked unattributed."
)

_T = TypeVar("_T")


class RAGFlowProvider(ClientLifecycle):
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
        self._base_url = _SERVICE.base_url(base_url)
        key = _SERVICE.api_key(api_key)
        if key is None:
            raise ProviderConfigError(
                "RAGFlow api_key is required (prefer reading it from $RAGFLOW_API_KEY).",
                provider=PROVIDER_NAME,
            )
        self._api_key: str = key
        install_log_redaction([key])
        self._datasets = _validate_datasets(datasets)
        self._page_size = _SERVICE.bounded_int(
            page_size, name="page_size", minimum=1, maximum=MAX_PAGE_SIZE
        )
        self._similarity_threshold = _validate_fraction(
            similarity_threshold, "similarity_threshold"
        )
        self._vector_similarity_weight = _validate_fraction(
            vector_similarity_weight, "vector_similarity_weight"
        )
        self._top_k = _SERVICE.bounded_int(top_k, name="top_k", minimum=1, maximum=MAX_TOP_K)
        self._init_client(timeout=_SERVICE.timeout(timeout), transport=transport)
        self._reply = RAGFlowReply(self._base_url, (key,))

    # ------------------------------------------------------------------ protocol surface

    #: Constant for every instance (the protocol's read-only ``name`` and ``capabilities``, and
    #: the ``DescribesTool`` hook).
    name: Final = PROVIDER_NAME
    capabilities: Final = KnowledgeCapabilities()
    tool_description: Final = RAGFLOW_TOOL_DESCRIPTION

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

        Raises a :class:`~deerflow.knowledge.providers.errors.ProviderError` subclass on failure;
        its message never holds the API key or a dataset id.
        """
        _SERVICE.search_arguments(query, limit, max_query_chars=MAX_QUERY_CHARS)
        page_size = self._page_size if limit is None else min(self._page_size, limit)
        try:
            async with self._client_scope() as client:
                datasets = await self._resolve_scope(client)
                groups = embedding_groups(datasets)
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
        result = merge_groups(query, answers, page_size)
        logger.debug("RAGFlow search: %d group(s), %d hit(s)", len(groups), len(result.hits))
        return result

    def format_for_tool(
        self, result: RetrievalResult, budget: OutputBudget
    ) -> tuple[str, dict[str, Any]] | None:
        """DeerFlow's native ``(content, artifact)`` within ``budget`` when every displayed chunk
        has complete locators; None otherwise (the tool then formats the shared envelope)."""
        if not isinstance(result, RAGFlowResult):
            return None
        return format_native(result.chunks, budget)

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
                raise self._unavailable(index, code=body["code"], detail=self._reply.detail(body))
            data = self._reply.data(reply.status_code, reply.body, list)
            for item in data:
                if isinstance(item, Mapping) and item.get("id") == dataset_id:
                    return self._reply.dataset(item)
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
            data = self._reply.data(reply.status_code, reply.body, list)
            reported = reply.body.get("total_datasets")
            if type(reported) is int and reported >= 0:
                total = reported
            if not data:
                if total is not None and received < total:
                    raise self._reply.shape_error("listed fewer datasets than it reported")
                break
            received += len(data)
            for item in data:
                if not isinstance(item, Mapping):
                    raise self._reply.shape_error("listed a dataset that is not an object")
                dataset = self._reply.dataset(item)
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
            data = self._reply.data(reply.status_code, reply.body, Mapping)
            return self._reply.chunks(data, {dataset.id: dataset for dataset in group})

        return call

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
            secrets=self._secrets(),
        )

    def _scrubbed(self, exc: UpstreamError) -> UpstreamError:
        message = scrub_ids(redact(exc.message, self._secrets()))
        return type(exc)(message, provider=exc.provider, status_code=exc.status_code)


# --------------------------------------------------------------------------- helpers


def _validate_datasets(datasets: object) -> tuple[str, ...] | None:
    def bad(reason: str) -> ProviderConfigError:
        return _SERVICE.config_error("datasets", reason)

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
        if not cleaned or len(cleaned) > MAX_NATIVE_LOCATOR_CHARS or CONTROL_RE.search(cleaned):
            raise bad(
                f"the {_ordinal(index + 1)} entry must be a dataset id of 1-"
                f"{MAX_NATIVE_LOCATOR_CHARS} characters"
            )
        if cleaned not in ids:
            ids.append(cleaned)
    return tuple(ids)


def _validate_fraction(value: object, name: str) -> float:
    if type(value) not in (int, float) or not 0 <= value <= 1:  # type: ignore[operator]
        raise _SERVICE.config_error(name, "expected a number from 0 to 1")
    return float(value)  # type: ignore[arg-type]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


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
