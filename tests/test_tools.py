from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from deerflow.knowledge import KnowledgeCapabilities, RetrievalHit, RetrievalResult, read_envelope
from deerflow.knowledge.providers.errors import UpstreamAuthError
from deerflow.knowledge.tools import MAX_QUERY_CHARS, make_knowledge_tool, search_text

SECRET = "sk-SECRET-MARKER-9f3a"


class FakeProvider:
    """An in-memory provider: returns fixed hits or raises a given error."""

    name = "fake"
    capabilities = KnowledgeCapabilities()

    def __init__(self, hits: tuple[RetrievalHit, ...] = (), error: Exception | None = None) -> None:
        self.hits = hits
        self.error = error
        self.queries: list[str] = []

    async def search(self, query: str, *, limit: int | None = None) -> RetrievalResult:
        self.queries.append(query)
        if self.error is not None:
            raise self.error
        return RetrievalResult(provider=self.name, query=query, hits=self.hits)


async def _call(tool: Any, query: Any) -> ToolMessage:
    message = await tool.ainvoke(
        {"type": "tool_call", "id": "call-1", "name": tool.name, "args": {"query": query}}
    )
    assert isinstance(message, ToolMessage)
    return message


def test_tool_shape() -> None:
    tool = make_knowledge_tool(FakeProvider())
    assert tool.name == "knowledge_search"
    assert tool.response_format == "content_and_artifact"
    assert set(tool.args) == {"query"}
    assert tool.metadata == {"knowledge_capabilities": {"operations": ["search", "sources"]}}
    assert "copy its citation link exactly" in tool.description
    assert tool.coroutine is not None


def test_capabilities_come_from_the_provider() -> None:
    provider = FakeProvider()
    provider.capabilities = KnowledgeCapabilities(
        operations=("search", "sources", "dataset_filter")
    )
    tool = make_knowledge_tool(provider)
    assert tool.metadata["knowledge_capabilities"]["operations"] == [
        "search",
        "sources",
        "dataset_filter",
    ]  # type: ignore[index]


def test_bad_budget_fails_at_build_time() -> None:
    with pytest.raises(ValueError):
        make_knowledge_tool(FakeProvider(), max_chars=10)


async def test_artifact_verifies_against_its_own_content() -> None:
    hits = (
        RetrievalHit(text="Deer eat acorns.", title="guide.md"),
        RetrievalHit(text="Unattributed."),
    )
    message = await _call(make_knowledge_tool(FakeProvider(hits)), "deer")
    result = read_envelope(message.content, message.artifact)
    assert len(result.sources) == 1 and result.rejected == () and result.error is None
    assert result.sources[0].title == "guide.md"


async def test_no_results() -> None:
    message = await _call(make_knowledge_tool(FakeProvider()), "deer")
    assert message.content == "No relevant content found." and message.artifact is None


@pytest.mark.parametrize("query", ["", "   ", "x" * (MAX_QUERY_CHARS + 1)])
async def test_bad_queries_are_errors_not_exceptions(query: str) -> None:
    provider = FakeProvider()
    message = await _call(make_knowledge_tool(provider), query)
    assert str(message.content).startswith("Error: ") and message.artifact is None
    assert provider.queries == []


async def test_query_at_the_limit_is_sent() -> None:
    provider = FakeProvider()
    await _call(make_knowledge_tool(provider), "x" * MAX_QUERY_CHARS)
    assert provider.queries == ["x" * MAX_QUERY_CHARS]


async def test_provider_error_becomes_error_text() -> None:
    error = UpstreamAuthError(
        "LightRAG refused the API key (HTTP 403).", provider="lightrag", status_code=403
    )
    message = await _call(make_knowledge_tool(FakeProvider(error=error)), "deer")
    assert (
        message.content == "Error: LightRAG refused the API key (HTTP 403)."
        and message.artifact is None
    )


async def test_unexpected_error_text_never_leaks(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    message = await _call(
        make_knowledge_tool(FakeProvider(error=RuntimeError(f"key={SECRET}"))), "deer"
    )
    assert str(message.content) == "Error: the knowledge search failed unexpectedly (RuntimeError)."
    assert SECRET not in caplog.text


async def test_search_text_returns_a_plain_string() -> None:
    text = await search_text(
        FakeProvider((RetrievalHit(text="Deer eat acorns.", title="g.md"),)), "deer"
    )
    assert isinstance(text, str) and "Deer eat acorns." in text and "#knowledge-source-" in text
