"""``use: deerflow.knowledge.integrations.deerflow.ragflow:knowledge_search_tool`` — RAGFlow.

Keys of the ``tools:`` entry, DeerFlow's names and defaults: ``base_url``
(``http://localhost:9380``), ``api_key`` (required; write ``$RAGFLOW_API_KEY``), ``datasets``
(an optional allowlist of dataset ids; omit it to search every dataset the key can read),
``timeout``, ``page_size``, ``similarity_threshold``, ``vector_similarity_weight``, ``top_k``,
``max_chars_per_chunk`` and ``max_total_chars``. Results keep DeerFlow's native
``knowledge_sources`` snapshots and ``[citation:N](#knowledge-…)`` links, so DeerFlow's own
readers and UI accept them unchanged. ``tests/test_integrations_deerflow_tools.py`` covers it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from deerflow.knowledge.contract import RetrievalProvider
from deerflow.knowledge.integrations.deerflow._tool import Flavor, make_deerflow_tool
from deerflow.knowledge.providers.ragflow import RAGFLOW_TOOL_DESCRIPTION

__all__ = ["FLAVOR", "KEYS", "knowledge_search_tool"]

_OPTIONS: Final = (
    "datasets",
    "timeout",
    "page_size",
    "similarity_threshold",
    "vector_similarity_weight",
    "top_k",
)
KEYS: Final = frozenset({"base_url", "api_key", *_OPTIONS})


def _build(settings: Mapping[str, Any], config_dir: Path | None) -> RetrievalProvider:
    from deerflow.knowledge.providers.ragflow import DEFAULT_BASE_URL, RAGFlowProvider

    options = {k: settings[k] for k in _OPTIONS if k in settings}
    return RAGFlowProvider(
        settings.get("base_url", DEFAULT_BASE_URL),
        api_key=settings.get("api_key"),  # type: ignore[arg-type]  # the provider checks it
        **options,
    )


FLAVOR: Final = Flavor(
    label="RAGFlow",
    use=f"{__name__}:knowledge_search_tool",
    keys=KEYS,
    build=_build,
    description=RAGFLOW_TOOL_DESCRIPTION,
)
knowledge_search_tool = make_deerflow_tool(FLAVOR)
