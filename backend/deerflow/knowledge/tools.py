"""The ``knowledge_search`` LangChain tool: content for the model, evidence on the artifact.

Failures never escape into the agent loop: they become ``Error: …`` content with no artifact.
Provider errors carry messages that are already safe to show; anything unexpected is reported by
type only, because its text may hold a secret.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, ConfigDict, Field

from deerflow.knowledge._provider_errors import ProviderError
from deerflow.knowledge.contract import (
    DescribesTool,
    FormatsOwnOutput,
    OutputBudget,
    RetrievalProvider,
)
from deerflow.knowledge.formatting import format_result
from deerflow.knowledge.rules import DEFAULT_MAX_CHARS, DEFAULT_MAX_CHARS_PER_HIT

__all__ = [
    "DEFAULT_DESCRIPTION",
    "DEFAULT_TOOL_NAME",
    "MAX_QUERY_CHARS",
    "KnowledgeSearchInput",
    "make_knowledge_tool",
    "run_knowledge_search",
    "search_text",
]

DEFAULT_TOOL_NAME: Final = "knowledge_search"
MAX_QUERY_CHARS: Final = 2_000
DEFAULT_DESCRIPTION: Final = (
    "Search the configured knowledge base and return relevant excerpts of real documents. "
    "Each citable result comes with a citation link such as "
    "[citation:Title](#knowledge-source-0123456789abcdef0123456789abcdef). When you use a "
    "result, copy its citation link exactly as given, right after the sentence it supports. "
    "Never invent, shorten or renumber citation links, and never cite a result marked unattributed."
)

_log = logging.getLogger(__name__)


class KnowledgeSearchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(description="What to look for, as a natural-language question or keywords.")


async def run_knowledge_search(
    provider: RetrievalProvider,
    query: str,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    max_chars_per_hit: int = DEFAULT_MAX_CHARS_PER_HIT,
) -> tuple[str, dict[str, Any] | None]:
    """One search as ``(content, artifact)``; every failure is ``("Error: …", None)``."""
    return await _search(provider, query, OutputBudget(max_chars, max_chars_per_hit))


async def _search(
    provider: RetrievalProvider, query: str, budget: OutputBudget
) -> tuple[str, dict[str, Any] | None]:
    query = query.strip() if isinstance(query, str) else ""
    if not query:
        return "Error: the query is empty; ask for something specific.", None
    if len(query) > MAX_QUERY_CHARS:
        return f"Error: the query is longer than {MAX_QUERY_CHARS} characters; shorten it.", None
    try:
        result = await provider.search(query)
    except ProviderError as exc:
        _log.warning("knowledge search failed: %s", exc)
        return f"Error: {exc}", None
    except Exception as exc:  # a provider bug must not crash the agent loop or leak its text
        _log.warning("knowledge search failed unexpectedly: %s", type(exc).__name__)
        return f"Error: the knowledge search failed unexpectedly ({type(exc).__name__}).", None
    if isinstance(provider, FormatsOwnOutput):
        try:
            own = provider.format_for_tool(result, budget)
        except Exception as exc:  # same rule as search: report the type only
            _log.warning("knowledge search formatting failed: %s", type(exc).__name__)
            return f"Error: the knowledge search failed unexpectedly ({type(exc).__name__}).", None
        if own is not None:
            content, artifact = own
            return content, artifact
    formatted = format_result(result, budget)
    return formatted.content, formatted.artifact


async def search_text(
    provider: RetrievalProvider,
    query: str,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    max_chars_per_hit: int = DEFAULT_MAX_CHARS_PER_HIT,
) -> str:
    """The direct text API: the same content the tool returns, as a plain string."""
    content, _ = await run_knowledge_search(
        provider, query, max_chars=max_chars, max_chars_per_hit=max_chars_per_hit
    )
    return content


def _provider_description(provider: RetrievalProvider) -> str | None:
    """A provider's own tool description (its citation links may look different), if any."""
    if not isinstance(provider, DescribesTool):
        return None
    text = provider.tool_description
    return text if isinstance(text, str) and text.strip() else None


def make_knowledge_tool(
    provider: RetrievalProvider,
    *,
    name: str = DEFAULT_TOOL_NAME,
    description: str | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    max_chars_per_hit: int = DEFAULT_MAX_CHARS_PER_HIT,
) -> StructuredTool:
    """An async ``StructuredTool`` with ``response_format="content_and_artifact"``.

    ``max_chars`` / ``max_chars_per_hit`` become one ``OutputBudget`` here, checked now; every
    call hands that value whole to the provider's ``format_for_tool`` or ``format_result``."""
    budget = OutputBudget(max_chars, max_chars_per_hit)  # fail at build time

    async def knowledge_search(query: str) -> tuple[str, dict[str, Any] | None]:
        return await _search(provider, query, budget)

    return StructuredTool.from_function(
        coroutine=knowledge_search,
        name=name,
        description=description or _provider_description(provider) or DEFAULT_DESCRIPTION,
        args_schema=KnowledgeSearchInput,
        response_format="content_and_artifact",
        metadata={"knowledge_capabilities": provider.capabilities.to_metadata()},
    )
