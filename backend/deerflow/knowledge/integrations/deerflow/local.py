"""``use: deerflow.knowledge.integrations.deerflow.local:knowledge_search_tool`` — the embedded index.

Keys of the ``tools:`` entry (all optional): ``index`` (the SQLite file ``deerflow-knowledge
index`` wrote; relative to ``config.yaml``; default ``.deerflow-knowledge/index.sqlite`` in the
working directory, as the command line's), ``top_k`` (hits per search, 1 to 100, default 8),
``dataset_name`` (shown as every hit's dataset), ``max_chars_per_chunk`` and ``max_total_chars``.
``tests/test_integrations_deerflow_tools.py`` covers it; ``tests/integration/deerflow/`` uses it
inside DeerFlow.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from deerflow.knowledge._provider_settings import DEFAULT_INDEX_PATH, LOCAL
from deerflow.knowledge.contract import RetrievalProvider
from deerflow.knowledge.integrations.deerflow._tool import Flavor, make_deerflow_tool
from deerflow.knowledge.providers.errors import ProviderConfigError
from deerflow.knowledge.tools import DEFAULT_DESCRIPTION

__all__ = ["FLAVOR", "KEYS", "knowledge_search_tool"]

KEYS: Final = frozenset({"index", "top_k", "dataset_name"})


def _build(settings: Mapping[str, Any], config_dir: Path | None) -> RetrievalProvider:
    from deerflow.knowledge.providers.local import DEFAULT_LIMIT, LocalProvider

    index = settings.get("index")
    if index is None:
        path = DEFAULT_INDEX_PATH
    elif isinstance(index, str) and index.strip():
        path = Path(index).expanduser()
        if not path.is_absolute() and config_dir is not None:
            path = config_dir / path
    else:
        raise ProviderConfigError(
            "Invalid local index: expected the path of an index file.", provider=LOCAL
        )
    return LocalProvider(
        path,
        limit=settings.get("top_k", DEFAULT_LIMIT),
        dataset_name=settings.get("dataset_name"),
    )


FLAVOR: Final = Flavor(
    label="local index",
    use=f"{__name__}:knowledge_search_tool",
    keys=KEYS,
    build=_build,
    description=DEFAULT_DESCRIPTION,
)
knowledge_search_tool = make_deerflow_tool(FLAVOR)
