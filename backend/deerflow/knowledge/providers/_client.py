"""The httpx client lifecycle shared by the HTTP providers, written once.

Each search uses a short-lived client, so a provider is safe to share across event loops; inside
``async with provider:`` one client is reused until the block ends (or until ``aclose()``).
Redirects are never followed: a redirect to another host would carry the API key there.

Tested in tests/test_providers_lightrag.py and tests/test_providers_ragflow.py (the client's
lifecycle through each provider).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Self

import httpx

__all__ = ["ClientLifecycle"]


class ClientLifecycle:
    """Mixin: ``async with`` / ``aclose()`` and :meth:`_client_scope` for one httpx client."""

    _timeout: float
    _transport: httpx.AsyncBaseTransport | None
    _client: httpx.AsyncClient | None

    def _init_client(self, *, timeout: float, transport: httpx.AsyncBaseTransport | None) -> None:
        self._timeout = timeout
        self._transport = transport
        self._client = None

    def _new_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            transport=self._transport,
            timeout=httpx.Timeout(self._timeout),
            follow_redirects=False,
        )

    @asynccontextmanager
    async def _client_scope(self) -> AsyncIterator[httpx.AsyncClient]:
        """The shared client inside ``async with``, else a new one closed after the call."""
        if self._client is not None:
            yield self._client
        else:
            async with self._new_client() as client:
                yield client

    async def __aenter__(self) -> Self:
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
