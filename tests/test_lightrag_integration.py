"""The LightRAG provider against a REAL lightrag-server 1.5.7 (tests/live; fixtures in tests.live.fixtures).

The server runs on 127.0.0.1 with an offline OpenAI-compatible shim (lexical hash embeddings, a
rule-based entity extractor), an API key, the corpus in ``tests/live/corpus`` seeded over HTTP and
one document without a file path inserted through the SDK.
"""

from __future__ import annotations

import logging
import socket

import pytest

from deerflow.knowledge.contract import RetrievalHit, RetrievalProvider
from deerflow.knowledge.providers.errors import (
    UpstreamAuthError,
    UpstreamError,
    UpstreamNotFoundError,
    UpstreamRejectedError,
    UpstreamUnreachableError,
)
from deerflow.knowledge.providers.lightrag import LightRAGMode, LightRAGProvider
from tests.live.lightrag_server import LightRAGServer, http_json

pytestmark = pytest.mark.lightrag

COMET_QUESTION = "Who discovered Comet Vossberg-7 with the Lantern Eye telescope?"


def provider(server: LightRAGServer, **kwargs: object) -> LightRAGProvider:
    return LightRAGProvider(server.base_url, api_key=server.api_key, **kwargs)  # type: ignore[arg-type]


def seeded_text(server: LightRAGServer, file_path: str) -> str:
    [doc] = [d for d in server.documents if d.file_path == file_path]
    return doc.text


def assert_hits_are_real(server: LightRAGServer, hits: tuple[RetrievalHit, ...]) -> None:
    """Attributed hits carry a seeded file name and that file's exact (stripped) text."""
    known = {d.file_path: d.text.strip() for d in server.documents}
    for hit in hits:
        assert (hit.page, hit.url, hit.dataset_name, hit.score) == (None, None, None, None)
        if hit.title is None:
            assert hit.text == server.unattributed_text.strip()
        else:
            assert hit.title in known, hit.title
            assert hit.text == known[hit.title]


@pytest.mark.parametrize("mode", ["naive", "mix", "local"])
async def test_modes_return_cited_chunks(
    lightrag_server: LightRAGServer, mode: LightRAGMode
) -> None:
    p = provider(lightrag_server, mode=mode, top_k=10, chunk_top_k=5)
    assert isinstance(p, RetrievalProvider)
    result = await p.search(COMET_QUESTION)
    assert result.provider == "lightrag"
    assert result.query == COMET_QUESTION
    assert result.hits, f"{mode}: no hits"
    assert_hits_are_real(lightrag_server, result.hits)
    titles = [h.title for h in result.hits]
    assert "ada_vossberg.txt" in titles
    assert "Ada Vossberg discovered Comet Vossberg-7" in seeded_text(
        lightrag_server, "ada_vossberg.txt"
    )


async def test_naive_ranks_the_answering_document_first(lightrag_server: LightRAGServer) -> None:
    result = await provider(lightrag_server, mode="naive").search(
        "Grey Petrel ferry Tuesday Friday passengers"
    )
    assert result.hits[0].title == "grey_petrel_ferry.md"
    assert "carries at most 96 passengers" in result.hits[0].text


async def test_limit_caps_real_hits(lightrag_server: LightRAGServer) -> None:
    p = provider(lightrag_server, mode="naive")
    full = await p.search(COMET_QUESTION)
    assert len(full.hits) > 2
    capped = await p.search(COMET_QUESTION, limit=2)
    assert capped.hits == full.hits[:2]


async def test_unattributed_document_yields_hit_without_title(
    lightrag_server: LightRAGServer,
) -> None:
    # The server reports this chunk with file_path "unknown_source" and reference_id "".
    status, raw = http_json(
        "POST",
        lightrag_server.base_url + "/query/data",
        {"query": "Cinderwick Lamp Harrow Lifeboat Guild", "mode": "naive"},
        api_key=lightrag_server.api_key,
    )
    assert status == 200
    unknown = [c for c in raw["data"]["chunks"] if c["file_path"] == "unknown_source"]
    assert [c["reference_id"] for c in unknown] == [""]

    async with provider(lightrag_server, mode="naive") as p:
        result = await p.search("Cinderwick Lamp Harrow Lifeboat Guild")
    assert result.hits[0] == RetrievalHit(
        text=lightrag_server.unattributed_text.strip(), title=None
    )
    assert_hits_are_real(lightrag_server, result.hits)
    assert any(h.title is not None for h in result.hits[1:])  # attributed neighbours keep titles


async def test_no_match_is_an_empty_result(lightrag_server: LightRAGServer) -> None:
    # HTTP 200 {"status": "failure", "data": {}}. The shim's embeddings are lexical hashes, so an
    # unrelated query can still collide with a document; this one (deterministically) does not.
    result = await provider(lightrag_server, mode="naive").search("photosynthesis enzyme kinetics")
    assert result.hits == ()


async def test_missing_api_key_is_a_typed_auth_error(
    lightrag_server_with_key: LightRAGServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(UpstreamAuthError, match="requires an API key") as info:
        await LightRAGProvider(lightrag_server_with_key.base_url).search(COMET_QUESTION)
    assert info.value.status_code == 403


async def test_wrong_api_key_is_rejected_and_never_echoed(
    lightrag_server_with_key: LightRAGServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "wrong-" + (lightrag_server_with_key.api_key or "")
    p = LightRAGProvider(lightrag_server_with_key.base_url, api_key=wrong)
    with pytest.raises(UpstreamAuthError, match="rejected the API key") as info:
        await p.search(COMET_QUESTION)
    for text in (str(info.value), repr(info.value), caplog.text, repr(p)):
        assert wrong not in text


async def test_server_validation_error_is_typed(lightrag_server: LightRAGServer) -> None:
    # LightRAG 1.5.7 needs an "English-equivalent length" of at least 3: "ab" fails with a 400.
    with pytest.raises(UpstreamRejectedError, match="HTTP 400") as info:
        await provider(lightrag_server).search("ab")
    assert (lightrag_server.api_key or "?") not in str(info.value)


async def test_wrong_path_prefix_is_not_found(lightrag_server: LightRAGServer) -> None:
    p = LightRAGProvider(lightrag_server.base_url + "/api/v1", api_key=lightrag_server.api_key)
    with pytest.raises(UpstreamNotFoundError, match=r"1\.4\.9"):
        await p.search(COMET_QUESTION)


async def test_closed_port_is_unreachable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connections are refused
        with pytest.raises(UpstreamUnreachableError, match="Cannot connect"):
            await LightRAGProvider(f"http://127.0.0.1:{port}", timeout=5).search(COMET_QUESTION)


async def test_errors_share_one_base(lightrag_server: LightRAGServer) -> None:
    with pytest.raises(UpstreamError):
        await LightRAGProvider(lightrag_server.base_url).search(COMET_QUESTION)
