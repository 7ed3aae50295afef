"""``use: deerflow.knowledge.integrations.deerflow.lightrag:knowledge_search_tool`` — LightRAG.

Keys of the ``tools:`` entry, DeerFlow's names: ``base_url`` (default ``http://localhost:9621``),
``api_key`` (write ``$LIGHTRAG_API_KEY``: DeerFlow resolves ``$VAR`` references), ``mode``
(``naive``, ``local``, ``global``, ``hybrid``, ``mix``; default ``mix``), ``timeout`` (seconds),
``top_k``, ``chunk_top_k``, ``max_chars_per_chunk`` and ``max_total_chars``.
``tests/test_integrations_deerflow_tools.py`` covers it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from deerflow.knowledge.contract import RetrievalProvider
from deerflow.knowledge.integrations.deerflow._tool import Flavor, make_deerflow_tool
from deerflow.knowledge.tools import DEFAULT_DESCRIPTION

__all__ = ["FLAVOR", "KEYS", "knowledge_search_tool"]

KEYS: Final = frozenset({"base_url", "api_key", "mode", "timeout", "top_k", "chunk_top_k"})


def _build(settings: Mapping[str, Any], config_dir: Path | None) -> RetrievalProvider:
    from deerflow.knowledge.providers.lightrag import DEFAULT_BASE_URL, LightRAGProvider

    options = {k: settings[k] for k in ("api_key", "mode", "timeout", "top_k", "chunk_top_k")
               if settings.get(k) is not None}  # fmt: skip
    return LightRAGProvider(settings.get("base_url", DEFAULT_BASE_URL), **options)


FLAVOR: Final = Flavor(
    label="LightRAG",
    use=f"{__name__}:knowledge_search_tool",
    keys=KEYS,
    build=_build,
    description=DEFAULT_DESCRIPTION,
)
knowledge_search_tool = make_deerflow_tool(FLAVOR)
