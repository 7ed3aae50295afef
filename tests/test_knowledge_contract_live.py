"""Opt-in live check of the evidence contract against YOUR LightRAG server (read-only).

    DEER_FLOW_RUN_LIVE_TESTS=1 LIGHTRAG_BASE_URL=http://localhost:9621 \
    LIGHTRAG_EVIDENCE_QUERY='a question your corpus answers' [LIGHTRAG_API_KEY=…] \
    uv run pytest tests/test_knowledge_contract_live.py -m live -q

It sends queries only (no uploads, no changes). Every citation the ``knowledge_search`` tool emits
is checked against the chunks the server really returned for the same query: the title is that
chunk's file path, the excerpt a prefix of that chunk's content, the id recomputes and the handle is
in the tool's own text. ``make test`` runs it against the real server the suite starts.
"""

from __future__ import annotations

import os
from typing import Any

import httpx
import pytest
from langchain_core.messages import ToolMessage

from deerflow.knowledge import find_citations, read_envelope, source_id
from deerflow.knowledge.providers.lightrag import LightRAGProvider
from deerflow.knowledge.tools import make_knowledge_tool

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        os.environ.get("DEER_FLOW_RUN_LIVE_TESTS") != "1",
        reason="opt-in: set DEER_FLOW_RUN_LIVE_TESTS=1, LIGHTRAG_BASE_URL and LIGHTRAG_EVIDENCE_QUERY",
    ),
]

UNATTRIBUTED = {"", "unknown_source", "no-file-path"}


def _settings() -> tuple[str, str, str | None]:
    base_url = os.environ.get("LIGHTRAG_BASE_URL", "http://localhost:9621")
    query = os.environ.get("LIGHTRAG_EVIDENCE_QUERY", "").strip()
    if not query:
        pytest.fail(
            "LIGHTRAG_EVIDENCE_QUERY must name a question your corpus answers", pytrace=False
        )
    return base_url, query, os.environ.get("LIGHTRAG_API_KEY") or None


def _raw_chunks(base_url: str, query: str, api_key: str | None, mode: str) -> list[dict[str, Any]]:
    headers = {"X-API-Key": api_key} if api_key else {}
    response = httpx.post(
        f"{base_url.rstrip('/')}/query/data",
        json={"query": query, "mode": mode, "top_k": 60},
        headers=headers,
        timeout=60,
    )
    response.raise_for_status()
    data = response.json().get("data") or {}
    references = {r.get("reference_id"): r.get("file_path") for r in data.get("references") or []}
    chunks = []
    for chunk in data.get("chunks") or []:
        path = chunk.get("file_path") or references.get(chunk.get("reference_id"))
        chunks.append({"file_path": path, "content": chunk.get("content") or ""})
    return chunks


@pytest.mark.parametrize("mode", ["naive", "mix"])
async def test_every_citation_matches_real_chunk_evidence(mode: str) -> None:
    base_url, query, api_key = _settings()
    tool = make_knowledge_tool(LightRAGProvider(base_url, api_key=api_key, mode=mode))
    message = await tool.ainvoke(
        {"type": "tool_call", "id": "live-1", "name": tool.name, "args": {"query": query}}
    )
    assert isinstance(message, ToolMessage)
    content = str(message.content)
    assert not content.startswith("Error:"), content
    evidence = read_envelope(content, message.artifact)
    assert evidence.error is None and evidence.rejected == ()
    assert evidence.sources, (
        "the query found no attributable chunk; pick a query your corpus answers"
    )

    chunks = _raw_chunks(base_url, query, api_key, mode)
    attributable = [c for c in chunks if c["file_path"] not in UNATTRIBUTED and c["file_path"]]
    assert attributable, "the server returned no chunk with a file path"
    cited = {c.source_id for c in find_citations(content) if c.kind == "shared"}
    assert cited == {s.id for s in evidence.sources}
    for source in evidence.sources:
        assert source.provider == "lightrag"
        assert source_id(source.to_record()) == source.id
        assert f"#knowledge-source-{source.id}" in content
        assert source.page is None and source.url is None and source.dataset_name is None
        matching = [
            c
            for c in attributable
            if c["file_path"] == source.title and c["content"].strip().startswith(source.excerpt)
        ]
        assert matching, (
            f"{source.title!r}: no returned chunk has this path and starts with the excerpt"
        )
