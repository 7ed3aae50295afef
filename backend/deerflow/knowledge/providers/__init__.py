"""Retrieval providers: LightRAG, RAGFlow and the embedded local index (with the gateway and the
command line, the modules that do I/O; see docs/ARCHITECTURE.md for the pure ones among them).

Import the one you need; nothing is imported eagerly. :func:`build_provider` constructs the
provider that the settings (:mod:`deerflow.knowledge.settings`) name, importing only that one.

Tested in tests/test_settings.py (:func:`build_provider` for each name).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from deerflow.knowledge._provider_settings import LIGHTRAG, LOCAL, RAGFLOW, unknown_provider
from deerflow.knowledge.providers.errors import ProviderConfigError, SettingsError

if TYPE_CHECKING:
    from deerflow.knowledge.contract import RetrievalProvider
    from deerflow.knowledge.settings import KnowledgeSettings

__all__ = ["build_provider"]


def build_provider(name: str, settings: KnowledgeSettings) -> RetrievalProvider:
    """The provider called ``name`` configured from ``settings``.

    Raises :class:`~deerflow.knowledge.providers.errors.ProviderConfigError` (never echoing a
    secret) when a setting is invalid or the provider is not available in this installation, and
    :class:`~deerflow.knowledge.providers.errors.SettingsError` for an unknown name.
    """
    if name == LOCAL:
        from deerflow.knowledge.providers.local import LocalProvider

        return LocalProvider(settings.index_path, dataset_name=settings.local_dataset_name)
    if name == LIGHTRAG:
        from deerflow.knowledge.providers.lightrag import DEFAULT_BASE_URL, LightRAGProvider

        kwargs: dict[str, Any] = {"api_key": settings.lightrag_api_key}
        if settings.lightrag_mode is not None:
            kwargs["mode"] = settings.lightrag_mode
        return LightRAGProvider(settings.lightrag_base_url or DEFAULT_BASE_URL, **kwargs)
    if name == RAGFLOW:
        try:
            module = importlib.import_module("deerflow.knowledge.providers.ragflow")
        except ModuleNotFoundError as exc:
            if exc.name != "deerflow.knowledge.providers.ragflow":
                raise
            raise ProviderConfigError(
                "The RAGFlow provider is not available in this installation.", provider=RAGFLOW
            ) from None
        if not settings.ragflow_base_url:
            raise ProviderConfigError(
                "RAGFlow needs a base URL: set RAGFLOW_BASE_URL, --base-url or [ragflow] base_url.",
                provider=RAGFLOW,
            )
        provider: RetrievalProvider = module.RAGFlowProvider(
            settings.ragflow_base_url,
            api_key=settings.ragflow_api_key,
            datasets=list(settings.ragflow_datasets) or None,
        )
        return provider
    raise SettingsError(unknown_provider(name))
