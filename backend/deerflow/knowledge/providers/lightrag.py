"""LightRAG retrieval through ``POST /query/data`` (LightRAG >= 1.4.9; checked live with 1.5.7).

The thin I/O client: it checks the settings, sends the request and hands the answer to the pure
parser :func:`~deerflow.knowledge.providers.parse.lightrag.parse_query_data`, whose docstring says
how chunks become hits (titles from ``file_path``, unattributed sources, nothing invented).
"""

from __future__ import annotations

import logging
from typing import Any, Final, Literal, get_args

import httpx

from deerflow.knowledge.contract import KnowledgeCapabilities, RetrievalResult
from deerflow.knowledge.providers._client import ClientLifecycle
from deerflow.knowledge.providers._http import send_json
from deerflow.knowledge.providers._log_redaction import install_log_redaction
from deerflow.knowledge.providers._service import Service
from deerflow.knowledge.providers.errors import UpstreamError
from deerflow.knowledge.providers.parse.lightrag import (
    ENDPOINT,
    PROVIDER_NAME,
    UNATTRIBUTED_FILE_PATHS,
    parse_query_data,
)

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

_SERVICE: Final = Service(name="LightRAG", provider=PROVIDER_NAME)


class LightRAGProvider(ClientLifecycle):
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
        self._base_url = _SERVICE.base_url(base_url)
        self._api_key = _SERVICE.api_key(api_key)
        install_log_redaction([self._api_key])
        if mode not in MODES:
            raise _SERVICE.config_error("mode", f"expected one of {', '.join(MODES)}")
        self._mode: LightRAGMode = mode
        self._top_k = _SERVICE.bounded_int(
            top_k, name="top_k", minimum=MIN_TOP_K, maximum=MAX_TOP_K
        )
        self._chunk_top_k = (
            None
            if chunk_top_k is None
            else _SERVICE.bounded_int(
                chunk_top_k, name="chunk_top_k", minimum=MIN_CHUNK_TOP_K, maximum=MAX_CHUNK_TOP_K
            )
        )
        self._init_client(timeout=_SERVICE.timeout(timeout), transport=transport)

    # ------------------------------------------------------------------ protocol surface

    #: Constant for every instance (the protocol's read-only ``name`` and ``capabilities``).
    name: Final = PROVIDER_NAME
    capabilities: Final = KnowledgeCapabilities()

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

        Raises a :class:`~deerflow.knowledge.providers.errors.ProviderError` subclass on failure.
        A query that finds nothing returns a result without hits.
        """
        _SERVICE.search_arguments(query, limit, max_query_chars=MAX_QUERY_CHARS)
        payload: dict[str, Any] = {"query": query, "mode": self._mode, "top_k": self._top_k}
        if self._chunk_top_k is not None:
            payload["chunk_top_k"] = self._chunk_top_k
        headers = {"Accept": "application/json"}
        if self._api_key is not None:
            headers["X-API-Key"] = self._api_key
        secrets = (self._api_key,)
        logger.debug("LightRAG %s mode=%s top_k=%s", ENDPOINT, self._mode, self._top_k)
        try:
            async with self._client_scope() as client:
                reply = await send_json(
                    client,
                    "POST",
                    self._base_url + ENDPOINT,
                    payload=payload,
                    headers=headers,
                    service=_SERVICE,
                    secrets=secrets,
                )
            result = parse_query_data(
                reply.status_code,
                reply.body,
                query=query,
                base_url=self._base_url,
                secrets=secrets,
            )
        except UpstreamError as exc:
            logger.warning("LightRAG search failed: %s", exc)
            raise
        if limit is not None:
            result = result.model_copy(update={"hits": result.hits[:limit]})
        return result
