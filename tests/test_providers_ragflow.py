"""Unit tests of the RAGFlow provider and its native / shared tool output.

Every response body below is SYNTHETIC: hand-written JSON shaped like what RAGFlow's Python API
server (v0.19 - v0.27) returns from ``GET /api/v1/datasets`` and ``POST /api/v1/retrieval`` (no
RAGFlow server runs here). Dataset ids, document ids, chunk ids, names and texts are made up. All
traffic goes through ``httpx.MockTransport``; nothing here touches the network.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import urllib.parse
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from langchain_core.messages import ToolMessage

from deerflow.knowledge import read_envelope
from deerflow.knowledge.contract import OutputBudget, RetrievalProvider
from deerflow.knowledge.native import UNKNOWN_DOCUMENT, format_native, read_native
from deerflow.knowledge.providers._http import REDACTION_MARKER
from deerflow.knowledge.providers.errors import (
    ProviderConfigError,
    ProviderError,
    ProviderQueryError,
    UpstreamAuthError,
    UpstreamError,
    UpstreamNotFoundError,
    UpstreamRejectedError,
    UpstreamResponseError,
    UpstreamServerError,
    UpstreamTimeoutError,
)
from deerflow.knowledge.providers.ragflow import (
    DATASET_ID_MARKER,
    DatasetUnavailableError,
    RAGFlowChunk,
    RAGFlowProvider,
    RAGFlowResult,
    real_pages,
)
from deerflow.knowledge.rules import MIN_MAX_CHARS
from deerflow.knowledge.tools import make_knowledge_tool, run_knowledge_search

SECRET = "ragflow-SECRETMARKER0c9d8e7f6a5b4c3d2e1f0a9b"
BASE = "http://ragflow.test:9380"

MODEL_A = "BAAI/bge-small-en-v1.5@Local@Builtin"
MODEL_B = "text-embedding-3-small@OpenAI"
DS_HR = "5b1e7c2a6f3d11f0b1a40242ac120006"
DS_ENG = "6c2f8d3b6f3d11f0b1a40242ac120007"
DS_LEGAL = "7d3a9e4c6f3d11f0b1a40242ac120008"
DS_EMPTY = "8e4b0f5d6f3d11f0b1a40242ac120009"
DOC_HANDBOOK = "a6c3d2e06f3e11f0b1a40242ac120006"
DOC_GUIDE = "b7d4e3f16f3e11f0b1a40242ac120007"
DOC_CONTRACT = "c8e5f4027f3e11f0b1a40242ac120008"
DOC_NAMELESS = "d9f605137f3e11f0b1a40242ac120009"

NATIVE_ID_RE = re.compile(r"^[0-9a-f]{32}-[1-9][0-9]{0,2}$")


# --------------------------------------------------------------------------- synthetic data


def dataset(
    dataset_id: str, name: str, model: str, chunk_count: int = 12, **extra: Any
) -> dict[str, Any]:
    """A SYNTHETIC dataset object as ``GET /api/v1/datasets`` lists it (abridged)."""
    return {
        "id": dataset_id,
        "name": name,
        "embedding_model": model,
        "chunk_count": chunk_count,
        "document_count": 2,
        "chunk_method": "naive",
        "permission": "me",
        "similarity_threshold": 0.2,
        "vector_similarity_weight": 0.3,
        **extra,
    }


DATASETS = {
    DS_HR: dataset(DS_HR, "HR Policies", MODEL_A),
    DS_ENG: dataset(DS_ENG, "Engineering", MODEL_A),
    DS_LEGAL: dataset(DS_LEGAL, "Legal", MODEL_B),
    DS_EMPTY: dataset(DS_EMPTY, "Empty", "", chunk_count=0),
}


def chunk(
    chunk_id: str,
    content: str,
    *,
    dataset_id: Any = DS_HR,
    document_id: str = DOC_HANDBOOK,
    keyword: str = "Employee_Handbook_2026.pdf",
    positions: Any = None,
    similarity: float = 0.84888,
    **extra: Any,
) -> dict[str, Any]:
    """A SYNTHETIC v0.26-shaped retrieval chunk."""
    return {
        "content": content,
        "content_ltks": "accru leav day",
        "dataset_id": dataset_id,
        "doc_type_kwd": "",
        "document_id": document_id,
        "document_keyword": keyword,
        "id": chunk_id,
        "image_id": "",
        "important_keywords": [],
        "mom_id": "",
        "positions": [[14, 72, 523, 318, 412]] if positions is None else positions,
        "row_id": None,
        "similarity": similarity,
        "tag_kwd": [],
        "term_similarity": 0.8715,
        "vector_similarity": 0.7961,
        **extra,
    }


def kg_chunk(dataset_ids: list[str]) -> dict[str, Any]:
    """The SYNTHETIC knowledge-graph pseudo-chunk (``use_kg``): list dataset_id, no document."""
    return {
        "id": "3f2a1b0c-9d8e-4f7a-8b6c-5d4e3f2a1b0c",
        "content": "Entity,Description\nLeave policy,Annual leave rules\n---\nCommunity report: HR",
        "content_ltks": "",
        "document_id": "",
        "document_keyword": "Related content in Knowledge Graph",
        "dataset_id": dataset_ids,
        "image_id": "",
        "important_keywords": [],
        "positions": [],
        "similarity": 1.0,
        "vector_similarity": 1.0,
        "term_similarity": 0,
    }


def parent_chunk(chunk_id: str, content: str) -> dict[str, Any]:
    """A SYNTHETIC merged parent chunk: the reduced key set, no highlight/mom_id/row_id."""
    return {
        "id": chunk_id,
        "content": content,
        "content_ltks": "child tokens joined",
        "document_id": DOC_GUIDE,
        "document_keyword": "Onboarding_Guide.md",
        "dataset_id": DS_ENG,
        "important_keywords": [],
        "image_id": "",
        "similarity": 0.61,
        "term_similarity": 0.61,
        "vector_similarity": 0.61,
        "positions": [[3, 2, 2, 2, 2]],
        "doc_type_kwd": "",
    }


def ok(data: Any, **extra: Any) -> httpx.Response:
    return httpx.Response(200, json={"code": 0, "data": data, **extra})


def retrieval_data(chunks: list[dict[str, Any]], doc_aggs: Any = None) -> dict[str, Any]:
    if doc_aggs is None:
        doc_aggs = []
    return {"chunks": chunks, "doc_aggs": doc_aggs, "total": len(chunks)}


def fail(code: int, message: str, status: int = 200) -> httpx.Response:
    return httpx.Response(status, json={"code": code, "message": message})


class FakeRAGFlow:
    """A SYNTHETIC RAGFlow: routes requests, records them, answers from per-group tables."""

    def __init__(
        self,
        *,
        datasets: dict[str, dict[str, Any]] | None = None,
        groups: dict[tuple[str, ...], Any] | None = None,
        listing: list[dict[str, Any]] | None = None,
    ) -> None:
        self.datasets = DATASETS if datasets is None else datasets
        self.groups = groups or {}
        self.listing = listing
        self.requests: list[httpx.Request] = []
        self.retrievals: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        assert request.headers["authorization"] == f"Bearer {SECRET}"
        path = request.url.path
        params = dict(urllib.parse.parse_qsl(request.url.query.decode()))
        if request.method == "GET" and path == "/api/v1/datasets":
            if "id" in params:
                found = self.datasets.get(params["id"])
                if found is None:
                    return fail(102, f"User 'tenant' lacks permission for dataset '{params['id']}'")
                return ok([found], total_datasets=1)
            listing = list(self.datasets.values()) if self.listing is None else self.listing
            page, size = int(params["page"]), int(params["page_size"])
            return ok(listing[(page - 1) * size : page * size], total_datasets=len(listing))
        if request.method == "POST" and path == "/api/v1/retrieval":
            body = json.loads(request.content)
            self.retrievals.append(body)
            answer = self.groups.get(tuple(body["dataset_ids"]))
            if answer is None:
                return ok(retrieval_data([]))
            if isinstance(answer, httpx.Response):
                return answer
            return ok(answer)
        return httpx.Response(404, json={"code": 404, "data": None, "message": "Not Found"})


def provider(handler: Any, **kwargs: Any) -> RAGFlowProvider:
    kwargs.setdefault("api_key", SECRET)
    return RAGFlowProvider(BASE, transport=httpx.MockTransport(handler), **kwargs)


HR_CHUNKS = [
    chunk("9f2c41d07be3a5e8", "Full-time employees accrue 25 days of annual leave."),
    chunk(
        "9f2c41d07be3a5e9",
        "Leave requests need two weeks' notice.",
        positions=[[15, 72, 523, 100, 180], [16, 72, 523, 40, 90]],
        similarity=0.71,
    ),
]
ENG_CHUNKS = [
    chunk(
        "1a2b3c4d5e6f7081",
        "New engineers pair with a buddy for the first month.",
        dataset_id=DS_ENG,
        document_id=DOC_GUIDE,
        keyword="Onboarding_Guide.md",
        positions=[[1, 0, 0, 0, 0]],
        similarity=0.66,
    )
]
LEGAL_CHUNKS = [
    chunk(
        "2b3c4d5e6f708192",
        "Either party may terminate with 30 days' written notice.",
        dataset_id=DS_LEGAL,
        document_id=DOC_CONTRACT,
        keyword="Master_Services_Agreement.pdf",
        positions=[[7, 50, 500, 600, 700]],
        similarity=1.37,
    ),
    chunk(
        "2b3c4d5e6f708193",
        "Disputes are settled by arbitration in Singapore.",
        dataset_id=DS_LEGAL,
        document_id=DOC_CONTRACT,
        keyword="Master_Services_Agreement.pdf",
        positions=[[9, 50, 500, 100, 200]],
        similarity=0.9,
    ),
]


def two_groups() -> FakeRAGFlow:
    return FakeRAGFlow(
        groups={
            (DS_HR, DS_ENG): retrieval_data(
                HR_CHUNKS + ENG_CHUNKS,
                [
                    {"doc_name": "Employee_Handbook_2026.pdf", "doc_id": DOC_HANDBOOK, "count": 2},
                    {"doc_name": "Onboarding_Guide.md", "doc_id": DOC_GUIDE, "count": 1},
                ],
            ),
            (DS_LEGAL,): retrieval_data(LEGAL_CHUNKS),
        }
    )


# --------------------------------------------------------------------------- configuration


def test_is_a_retrieval_provider_with_search_and_sources() -> None:
    p = provider(FakeRAGFlow())
    assert isinstance(p, RetrievalProvider)
    assert p.name == "ragflow"
    assert p.capabilities.to_metadata() == {"operations": ["search", "sources"]}
    tool = make_knowledge_tool(p)
    assert tool.metadata == {"knowledge_capabilities": {"operations": ["search", "sources"]}}
    assert "#knowledge-0123456789abcdef0123456789abcdef-1" in tool.description
    assert set(tool.args) == {"query"}


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"api_key": None}, "api_key is required"),
        ({"api_key": ""}, "api_key"),
        ({"api_key": "has space"}, "api_key"),
        ({"datasets": []}, "omit it"),
        ({"datasets": "5b1e7c2a"}, "list of dataset ids"),
        ({"datasets": [DS_HR, " "]}, "the 2nd entry"),
        ({"datasets": ["x" * 257]}, "the 1st entry"),
        ({"datasets": [f"{i:032x}" for i in range(101)]}, "at most 100"),
        ({"page_size": 0}, "page_size"),
        ({"page_size": 101}, "page_size"),
        ({"top_k": 1025}, "top_k"),
        ({"similarity_threshold": 1.5}, "similarity_threshold"),
        ({"vector_similarity_weight": -0.1}, "vector_similarity_weight"),
        ({"timeout": 0}, "timeout"),
    ],
)
def test_invalid_settings_fail_at_construction(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ProviderConfigError, match=re.escape(fragment)):
        provider(FakeRAGFlow(), **kwargs)


def test_base_url_with_credentials_is_refused_without_echo() -> None:
    with pytest.raises(ProviderConfigError) as info:
        RAGFlowProvider(f"http://user:{SECRET}@ragflow.test", api_key=SECRET)
    assert SECRET not in str(info.value)


def test_datasets_are_stripped_and_deduplicated() -> None:
    p = provider(FakeRAGFlow(), datasets=[f" {DS_HR} ", DS_HR, DS_LEGAL])
    assert p._datasets == (DS_HR, DS_LEGAL)
    assert "2 configured" in repr(p)


def test_repr_hides_the_key() -> None:
    text = repr(provider(FakeRAGFlow()))
    assert SECRET not in text
    assert "api_key=<set>" in text


# --------------------------------------------------------------------------- scope


async def test_allowlist_resolves_each_dataset_live() -> None:
    fake = two_groups()
    await provider(fake, datasets=[DS_LEGAL, DS_HR]).search("leave")
    lookups = [r.url.params.get("id") for r in fake.requests if r.method == "GET"]
    assert lookups == [DS_LEGAL, DS_HR]
    # Only the allowlisted datasets are searched, grouped by embedding model.
    assert sorted(tuple(b["dataset_ids"]) for b in fake.retrievals) == [(DS_HR,), (DS_LEGAL,)]


@pytest.mark.parametrize(
    "response",
    [
        fail(102, f"User 'tenant' lacks permission for dataset '{DS_ENG}'"),
        fail(108, f"User 'tenant' lacks permission for dataset '{DS_ENG}'"),
        fail(101, "Field: <id> - Message: <Invalid UUID format> - Value: <nope>"),
        ok([], total_datasets=0),
        ok([dataset(DS_HR, "HR Policies", MODEL_A)], total_datasets=1),  # another id answered
    ],
)
async def test_unresolvable_allowlisted_dataset_fails_closed_by_ordinal(
    response: httpx.Response, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeRAGFlow()

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("id") == DS_ENG:
            fake.requests.append(request)
            return response
        return fake(request)

    caplog.set_level(logging.DEBUG)
    with pytest.raises(DatasetUnavailableError) as info:
        await provider(handler, datasets=[DS_HR, DS_ENG, DS_LEGAL]).search("leave")
    message = str(info.value)
    assert "2nd configured RAGFlow dataset" in message
    ours = [r.getMessage() for r in caplog.records if r.name.startswith("deerflow")]
    assert DS_ENG not in message and ours and not any(DS_ENG in text for text in ours)
    assert fake.retrievals == []  # nothing is searched when the scope is incomplete


async def test_enumeration_pages_until_the_reported_total() -> None:
    listing = [dataset(f"{i:032x}", f"Set {i}", MODEL_A) for i in range(1, 106)]
    fake = FakeRAGFlow(listing=listing)
    result = await provider(fake).search("anything")
    pages = [r.url.params.get("page") for r in fake.requests if r.method == "GET"]
    assert pages == ["1", "2"]
    assert all(r.url.params.get("page_size") == "100" for r in fake.requests if r.method == "GET")
    assert len(fake.retrievals) == 1
    assert len(fake.retrievals[0]["dataset_ids"]) == 105
    assert result.hits == ()


async def test_enumeration_stops_on_a_short_page_without_a_total() -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            calls.append(request.url.params["page"])
            return httpx.Response(200, json={"code": 0, "data": [DATASETS[DS_HR]]})
        return ok(retrieval_data([]))

    await provider(handler).search("q")
    assert calls == ["1"]


async def test_enumeration_empty_page_before_total_is_a_protocol_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return ok([], total_datasets=3)

    with pytest.raises(UpstreamResponseError, match="fewer datasets"):
        await provider(handler).search("q")


async def test_no_accessible_dataset_is_an_error() -> None:
    with pytest.raises(DatasetUnavailableError, match="No accessible RAGFlow datasets"):
        await provider(FakeRAGFlow(datasets={}, listing=[])).search("q")


async def test_only_empty_datasets_means_no_results_without_retrieval() -> None:
    fake = FakeRAGFlow(listing=[DATASETS[DS_EMPTY]])
    result = await provider(fake).search("q")
    assert result.hits == () and fake.retrievals == []


async def test_dataset_with_chunks_but_no_embedding_model_is_a_protocol_error() -> None:
    fake = FakeRAGFlow(listing=[dataset(DS_HR, "HR", "", chunk_count=3)])
    with pytest.raises(UpstreamResponseError, match="no embedding_model"):
        await provider(fake).search("q")


# --------------------------------------------------------------------------- groups


async def test_two_embedding_groups_are_searched_separately_and_interleaved() -> None:
    fake = two_groups()
    result = await provider(fake, page_size=4).search("notice periods")
    # Empty dataset skipped; groups in sorted embedding-model order; one request each.
    assert {tuple(b["dataset_ids"]) for b in fake.retrievals} == {(DS_HR, DS_ENG), (DS_LEGAL,)}
    for body in fake.retrievals:
        assert body["question"] == "notice periods"
        assert body["page_size"] == 4
        assert body["similarity_threshold"] == 0.2
        assert body["vector_similarity_weight"] == 0.3
        assert body["top_k"] == 256
        assert "document_ids" not in body
    # MODEL_A < MODEL_B: rank 0 of HR/ENG, rank 0 of Legal, rank 1 of HR/ENG, rank 1 of Legal.
    assert [h.text[:12] for h in result.hits] == [
        "Full-time em",
        "Either party",
        "Leave reques",
        "Disputes are",
    ]
    assert all(h.score is None for h in result.hits)  # scores of two embedding spaces dropped


async def test_one_group_keeps_scores_even_above_one() -> None:
    fake = two_groups()
    result = await provider(fake, datasets=[DS_LEGAL]).search("termination")
    assert [h.score for h in result.hits] == [1.37, 0.9]


async def test_limit_narrows_page_size() -> None:
    fake = two_groups()
    result = await provider(fake, datasets=[DS_LEGAL]).search("termination", limit=1)
    assert fake.retrievals[0]["page_size"] == 1
    assert len(result.hits) == 1


async def test_any_group_failure_fails_the_call() -> None:
    fake = two_groups()
    fake.groups[(DS_LEGAL,)] = fail(100, "ValueError('rerank model not found')")
    with pytest.raises(UpstreamServerError, match="code 100"):
        await provider(fake).search("q")


async def test_at_most_four_requests_in_flight() -> None:
    ids = [f"{i:032x}" for i in range(1, 11)]
    models = {dataset_id: f"model-{i}" for i, dataset_id in enumerate(ids)}
    state = {"now": 0, "peak": 0}

    async def handler(request: httpx.Request) -> httpx.Response:
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await asyncio.sleep(0.01)
        state["now"] -= 1
        if request.method == "GET":
            dataset_id = request.url.params["id"]
            return ok([dataset(dataset_id, "n", models[dataset_id])])
        return ok(retrieval_data([]))

    await provider(handler, datasets=ids).search("q")
    assert state["peak"] == 4


# --------------------------------------------------------------------------- mapping


async def test_titles_pages_and_dataset_names() -> None:
    nameless = chunk(
        "4d5e6f7081920a1b",
        "A note whose document has no recorded name.",
        document_id=DOC_NAMELESS,
        keyword="",
        positions=[],
    )
    from_aggs = chunk(
        "4d5e6f7081920a1c",
        "Named only through doc_aggs.",
        document_id=DOC_GUIDE,
        keyword="",
        positions=[[2, 0, 0, 0, 0]],
    )
    fake = FakeRAGFlow(
        groups={
            (DS_HR,): retrieval_data(
                [*HR_CHUNKS, nameless, from_aggs],
                [{"doc_name": "Guide.docx", "doc_id": DOC_GUIDE, "count": 1}],
            )
        }
    )
    result = await provider(fake, datasets=[DS_HR]).search("leave")
    titles = [h.title for h in result.hits]
    assert titles == ["Employee_Handbook_2026.pdf"] * 2 + [None, "Guide.docx"]
    assert [h.page for h in result.hits] == [14, 15, None, None]
    assert result.chunks[1].pages == (15, 16)
    assert {h.dataset_name for h in result.hits} == {"HR Policies"}
    assert all(h.url is None for h in result.hits)


def test_real_pages_only_from_real_boxes() -> None:
    assert real_pages([[14, 72, 523, 318, 412]]) == (14,)
    assert real_pages([[2, 1, 1, 1, 1]]) == ()  # TXT/DOCX/Markdown: ordinal-built fake row
    assert real_pages([[1, 0, 0, 0, 0]]) == ()
    assert real_pages([[3, 10, 5, 1, 2], [4, 1, 2, 5, 5]]) == ()  # inverted / empty boxes
    assert real_pages([[5, 1.5, 9.25, 3, 8], [5, 1, 2, 3, 4], [4, 1, 2, 3, 4]]) == (4, 5)
    assert real_pages([[True, 1, 2, 3, 4], [0, 1, 2, 3, 4], [2.5, 1, 2, 3, 4]]) == ()
    assert real_pages([[1, 2, 3, 4]]) == () and real_pages("x") == () and real_pages(None) == ()
    assert real_pages([["7", 1, 2, 3, 4], [1_000_001, 1, 2, 3, 4]]) == ()


async def test_knowledge_graph_chunk_and_merged_parent_survive() -> None:
    fake = FakeRAGFlow(
        groups={
            (DS_HR, DS_ENG): retrieval_data(
                [kg_chunk([DS_HR, DS_ENG]), parent_chunk("5e6f708192a3b4c5", "Parent text.")]
            )
        }
    )
    result = await provider(fake, datasets=[DS_HR, DS_ENG]).search("leave")
    graph, parent = result.hits
    assert graph.title is None and graph.dataset_name is None and graph.page is None
    assert result.chunks[0].dataset_id is None and not result.chunks[0].has_locators
    assert parent.title == "Onboarding_Guide.md" and parent.page is None
    assert parent.dataset_name == "Engineering"


async def test_minimal_chunks_and_empty_doc_aggs_object() -> None:
    # Only `id` and `content` are guaranteed; `doc_aggs` is {} on early-success paths.
    fake = FakeRAGFlow(
        groups={
            (DS_HR,): {
                "chunks": [{"id": "0011223344556677", "content": "  Bare\r\nchunk  "}],
                "doc_aggs": {},
                "total": 1,
            }
        }
    )
    result = await provider(fake, datasets=[DS_HR]).search("q")
    (hit,) = result.hits
    assert hit.text == "Bare\nchunk" and hit.title is None and hit.score is None
    assert not result.chunks[0].has_locators


async def test_blank_chunks_are_skipped_and_bad_chunks_refused() -> None:
    fake = FakeRAGFlow(groups={(DS_HR,): retrieval_data([chunk("1", "   ")])})
    assert (await provider(fake, datasets=[DS_HR]).search("q")).hits == ()
    fake.groups[(DS_HR,)] = retrieval_data([{"id": "1", "content": 5}])
    with pytest.raises(UpstreamResponseError, match="without text content"):
        await provider(fake, datasets=[DS_HR]).search("q")
    fake.groups[(DS_HR,)] = {"chunks": "nope"}
    with pytest.raises(UpstreamResponseError, match="chunks list"):
        await provider(fake, datasets=[DS_HR]).search("q")


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("response", "error", "fragment"),
    [
        (
            fail(100, "ValueError('page_size must be less than or equal to 100')"),
            UpstreamServerError,
            "code 100",
        ),
        (fail(102, f"You don't own the dataset {DS_HR}."), UpstreamAuthError, "denied access"),
        (
            fail(102, "Datasets use different embedding models."),
            UpstreamRejectedError,
            "different embedding models",
        ),
        (
            fail(102, f"Datasets use different embedding models: ['{MODEL_A}', '{MODEL_B}']"),
            UpstreamRejectedError,
            "different embedding models",
        ),
        (fail(102, "`question` is required."), UpstreamRejectedError, "code 102"),
        (
            fail(109, "Authentication error: API key is invalid!"),
            UpstreamAuthError,
            "rejected the API key",
        ),
        (
            httpx.Response(
                401,
                json={
                    "code": 109,
                    "data": None,
                    "message": "Authentication error: API key is invalid!",
                },
            ),
            UpstreamAuthError,
            "HTTP 401",
        ),
        (
            httpx.Response(
                401,
                json={"code": 401, "data": None, "message": "<Unauthorized '401: Unauthorized'>"},
            ),
            UpstreamAuthError,
            "code 401",
        ),
        (
            httpx.Response(
                200, json={"code": 0, "data": False, "message": "`Authorization` can't be empty"}
            ),
            UpstreamAuthError,
            "rejected the API key",
        ),
        (httpx.Response(401, text="Unauthorized"), UpstreamAuthError, "HTTP 401"),
        (
            httpx.Response(
                404,
                json={
                    "code": 404,
                    "data": None,
                    "error": "Not Found",
                    "message": "Not Found: /api/v1/retrieval",
                },
            ),
            UpstreamNotFoundError,
            "not found",
        ),
        (httpx.Response(502, text="<html>Bad Gateway</html>"), UpstreamServerError, "HTTP 502"),
        (httpx.Response(413, text="Request Entity Too Large"), UpstreamRejectedError, "HTTP 413"),
        (httpx.Response(200, text="{not json"), UpstreamResponseError, "invalid JSON"),
        (httpx.Response(200, json=[1, 2]), UpstreamResponseError, "non-object"),
        (httpx.Response(200, json={"code": 0, "data": []}), UpstreamResponseError, "expected data"),
        (
            httpx.Response(200, json={"status": "ok"}),
            UpstreamResponseError,
            "without a usable code",
        ),
    ],
)
async def test_retrieval_errors(
    response: httpx.Response, error: type[UpstreamError], fragment: str
) -> None:
    fake = FakeRAGFlow(groups={(DS_HR,): response})
    with pytest.raises(error, match=re.escape(fragment)) as info:
        await provider(fake, datasets=[DS_HR]).search("q")
    assert DS_HR not in str(info.value)
    assert SECRET not in str(info.value)


async def test_error_messages_scrub_hex_and_uuid_tokens() -> None:
    uuid_text = "3f2a1b0c-9d8e-4f7a-8b6c-5d4e3f2a1b0c"
    fake = FakeRAGFlow(
        groups={
            (DS_HR,): fail(102, f"The datasets don't own the document {DOC_HANDBOOK} ({uuid_text})")
        }
    )
    with pytest.raises(UpstreamRejectedError) as info:
        await provider(fake, datasets=[DS_HR]).search("q")
    assert str(info.value).count(DATASET_ID_MARKER) == 2
    assert DOC_HANDBOOK not in str(info.value) and uuid_text not in str(info.value)


async def test_timeout_and_bad_query() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(UpstreamTimeoutError):
        await provider(handler, datasets=[DS_HR]).search("q")
    with pytest.raises(ProviderQueryError):
        await provider(handler).search("   ")
    with pytest.raises(ProviderQueryError):
        await provider(handler).search("q", limit=0)


async def test_tool_turns_failures_into_error_text_without_artifact() -> None:
    fake = FakeRAGFlow(groups={(DS_HR,): fail(109, "Authentication error: API key is invalid!")})
    content, artifact = await run_knowledge_search(provider(fake, datasets=[DS_HR]), "leave")
    assert content.startswith("Error: RAGFlow rejected the API key") and artifact is None


# --------------------------------------------------------------------------- native vs shared


async def test_complete_locators_keep_the_native_snapshot() -> None:
    fake = two_groups()
    p = provider(fake)
    content, artifact = await run_knowledge_search(p, "notice periods")
    assert artifact is not None and set(artifact) == {"knowledge_sources"}
    snapshot = artifact["knowledge_sources"]
    assert snapshot["version"] == 1 and len(snapshot["sources"]) == 5
    first = snapshot["sources"][0]
    assert list(first) == [
        "id",
        "provider",
        "dataset_id",
        "document_id",
        "chunk_id",
        "dataset_name",
        "document_name",
        "text",
        "truncated",
        "pages",
    ]
    assert first["provider"] == "ragflow"
    assert (first["dataset_id"], first["document_id"], first["chunk_id"]) == (
        DS_HR,
        DOC_HANDBOOK,
        "9f2c41d07be3a5e8",
    )
    assert first["pages"] == [14] and first["truncated"] is False
    call_ids = {s["id"].rsplit("-", 1)[0] for s in snapshot["sources"]}
    assert len(call_ids) == 1
    assert [s["id"].rsplit("-", 1)[1] for s in snapshot["sources"]] == ["1", "2", "3", "4", "5"]
    assert all(NATIVE_ID_RE.match(s["id"]) for s in snapshot["sources"])
    assert content.startswith(
        f"[citation:1](#knowledge-{first['id']}) HR Policies / Employee_Handbook_2026.pdf\n"
        "Full-time employees accrue 25 days of annual leave."
    )
    # Markdown chunk with a fake positions row: no page. Dataset ids never reach the content.
    markdown = next(s for s in snapshot["sources"] if s["document_name"] == "Onboarding_Guide.md")
    assert markdown["pages"] == []
    assert DS_HR not in content and DOC_HANDBOOK not in content
    # The artifact verifies with its own reader against its own content.
    read = read_native(content, artifact, tool_name="knowledge_search")
    assert read.error is None and read.rejected == ()
    assert [s.id for s in read.sources] == [s["id"] for s in snapshot["sources"]]
    shared = read_envelope(content, artifact)
    assert shared.sources == () and shared.error is None and shared.native is not None


async def test_repeated_searches_get_fresh_native_ids() -> None:
    fake = two_groups()
    p = provider(fake, datasets=[DS_LEGAL])
    _, first = await run_knowledge_search(p, "termination")
    _, second = await run_knowledge_search(p, "termination")
    assert first is not None and second is not None
    assert (
        first["knowledge_sources"]["sources"][0]["id"]
        != second["knowledge_sources"]["sources"][0]["id"]
    )


async def test_nameless_document_is_unknown_natively_but_unattributed_in_shared_output() -> None:
    nameless = chunk(
        "4d5e6f7081920a1b", "A note without a name.", document_id=DOC_NAMELESS, keyword=""
    )
    fake = FakeRAGFlow(groups={(DS_HR,): retrieval_data([nameless])})
    p = provider(fake, datasets=[DS_HR])
    content, artifact = await run_knowledge_search(p, "note")
    assert artifact is not None
    assert artifact["knowledge_sources"]["sources"][0]["document_name"] == UNKNOWN_DOCUMENT
    # The same chunk next to a knowledge-graph chunk: shared output, unattributed, no record.
    fake.groups[(DS_HR,)] = retrieval_data([nameless, kg_chunk([DS_HR])])
    content, artifact = await run_knowledge_search(p, "note")
    assert artifact is None  # nothing citable: both hits unattributed
    assert "unattributed" in content and UNKNOWN_DOCUMENT not in content
    assert "A note without a name." in content


@pytest.mark.parametrize(
    "incomplete",
    [
        kg_chunk([DS_HR]),
        {"id": "0011223344556677", "content": "Only id and content."},
        chunk("", "Empty chunk id."),
        chunk("0011223344556677", "Empty document id.", document_id=""),
        {**chunk("x", "Long chunk id."), "id": "c" * 257},
    ],
)
async def test_incomplete_locators_fall_back_to_the_shared_envelope(
    incomplete: dict[str, Any],
) -> None:
    fake = FakeRAGFlow(groups={(DS_HR,): retrieval_data([*HR_CHUNKS, incomplete])})
    content, artifact = await run_knowledge_search(provider(fake, datasets=[DS_HR]), "leave")
    assert artifact is not None and artifact["knowledge_sources_version"] == 1
    assert isinstance(artifact["knowledge_sources"], list)
    read = read_envelope(content, artifact)
    assert read.error is None and read.rejected == ()
    assert [s.title for s in read.sources][:2] == ["Employee_Handbook_2026.pdf"] * 2
    assert read.sources[0].page == 14 and read.sources[0].dataset_name == "HR Policies"
    assert all(s.provider == "ragflow" for s in read.sources)
    assert read_native(content, artifact, tool_name="knowledge_search").sources == ()
    assert "#knowledge-source-" in content


@pytest.mark.parametrize(
    "outsider",
    [
        chunk("0011223344556677", "Dataset outside the scope.", dataset_id=DS_LEGAL),
        {**kg_chunk([DS_HR, DS_LEGAL]), "content": "Dataset outside the scope."},
    ],
)
@pytest.mark.parametrize("with_incomplete", [False, True])
async def test_chunks_outside_the_resolved_scope_are_neither_shown_nor_cited(
    outsider: dict[str, Any], with_incomplete: bool
) -> None:
    # Before: the outsider's text reached the model (and, with a title, was cited).
    chunks = [*HR_CHUNKS, outsider]
    if with_incomplete:  # shared-envelope output instead of the native snapshot
        chunks.append({"id": "0011223344556677", "content": "Only id and content."})
    fake = FakeRAGFlow(groups={(DS_HR,): retrieval_data(chunks)})
    content, artifact = await run_knowledge_search(provider(fake, datasets=[DS_HR]), "leave")
    assert "Dataset outside the scope." not in content
    assert artifact is not None and "Dataset outside the scope." not in json.dumps(artifact)
    assert "Full-time employees accrue 25 days" in content
    if with_incomplete:
        assert [s.provider for s in read_envelope(content, artifact).sources] == ["ragflow"] * 2
    else:
        read = read_native(content, artifact, tool_name="knowledge_search")
        assert len(read.sources) == 2 and {s.dataset_id for s in read.sources} == {DS_HR}


async def test_upstream_detail_follows_our_words_when_a_dataset_does_not_resolve() -> None:
    # Before: "The 1st configured RAGFlow dataset was not found…" with RAGFlow's reason dropped.
    def handler(request: httpx.Request) -> httpx.Response:
        return fail(102, f"Authentication error: API key {SECRET} is invalid for '{DS_HR}'!")

    with pytest.raises(DatasetUnavailableError) as info:
        await provider(handler, datasets=[DS_HR]).search("leave")
    message = str(info.value)
    assert message.startswith("The 1st configured RAGFlow dataset was not found or is not")
    assert "(code 102: Authentication error: API key [REDACTED] is invalid for" in message
    assert SECRET not in message and DS_HR not in message


def _chunks(
    n: int, text: str = "Excerpt text that is long enough to be cut somewhere."
) -> list[RAGFlowChunk]:
    return [
        RAGFlowChunk(
            text=f"{text} #{i}",
            chunk_id=f"{i:016x}",
            dataset_id=DS_HR,
            document_id=DOC_HANDBOOK,
            document_name="Handbook.pdf",
            dataset_name="HR",
            pages=(i,) if i else (),
        )
        for i in range(n)
    ]


def test_native_budget_cuts_excerpts_and_stops_when_nothing_fits() -> None:
    out = format_native(_chunks(3), OutputBudget(300, 20), call_id="f" * 32)
    assert out is not None
    content, artifact = out
    sources = artifact["knowledge_sources"]["sources"]
    assert [s["truncated"] for s in sources] == [True] * len(sources)
    assert len(content) <= 300
    for source in sources:
        assert len(source["text"]) <= 19 and not source["text"].endswith((" ", "…"))
        assert f"{source['text']}…" in content
    read = read_native(content, artifact, tool_name="knowledge_search")
    assert len(read.sources) == len(sources) and read.rejected == ()

    # The tool's smallest budget holds one entry; a header longer than the budget holds none.
    tight = format_native(_chunks(3), OutputBudget(MIN_MAX_CHARS, 800), call_id="f" * 32)
    assert tight is not None
    content, artifact = tight
    assert len(content) <= MIN_MAX_CHARS and len(artifact["knowledge_sources"]["sources"]) == 1
    long_name = _chunks(1)[0].model_copy(update={"document_name": "x" * MIN_MAX_CHARS})
    assert format_native([long_name], OutputBudget(MIN_MAX_CHARS, 800)) is None


def test_native_caps_at_100_entries_and_cleans_names() -> None:
    chunks = [
        c.model_copy(update={"dataset_name": "HR\nPolicies", "document_name": "x" * 600})
        for c in _chunks(120, "t")
    ]
    out = format_native(chunks, OutputBudget(1_000_000, 800), call_id="e" * 32)
    assert out is not None
    content, artifact = out
    sources = artifact["knowledge_sources"]["sources"]
    assert len(sources) == 100 and sources[-1]["id"] == "e" * 32 + "-100"
    assert sources[0]["dataset_name"] == "HR Policies" and len(sources[0]["document_name"]) == 512
    assert len(read_native(content, artifact, tool_name="task").sources) == 100


async def test_tool_message_round_trip_through_langchain() -> None:
    tool = make_knowledge_tool(provider(two_groups()))
    message = await tool.ainvoke(
        {"type": "tool_call", "id": "call-1", "name": tool.name, "args": {"query": "leave"}}
    )
    assert isinstance(message, ToolMessage)
    read = read_native(message.content, message.artifact, tool_name=message.name)
    assert len(read.sources) == 5 and read.rejected == ()


async def test_no_results_has_no_artifact() -> None:
    fake = FakeRAGFlow(groups={(DS_HR,): retrieval_data([], doc_aggs={})})
    content, artifact = await run_knowledge_search(provider(fake, datasets=[DS_HR]), "q")
    assert content == "No relevant content found." and artifact is None


# --------------------------------------------------------------------------- secrets


def _leaky() -> FakeRAGFlow:
    """A SYNTHETIC server that echoes the API key everywhere it can."""
    leaky_datasets = {
        DS_HR: dataset(DS_HR, f"HR {SECRET}", MODEL_A),
        DS_LEGAL: dataset(DS_LEGAL, "Legal", MODEL_B),
    }
    fake = FakeRAGFlow(
        datasets=leaky_datasets,
        groups={
            (DS_HR,): retrieval_data(
                [
                    chunk(
                        f"id-{SECRET}",
                        f"The key is {SECRET} and Bearer {SECRET}.",
                        keyword=f"{SECRET}.pdf",
                    )
                ]
            ),
            (DS_LEGAL,): retrieval_data(LEGAL_CHUNKS),
        },
    )
    return fake


async def test_secret_never_leaves_the_provider(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []

    def record(*items: Any) -> None:
        seen.extend(
            json.dumps(item, default=repr) if not isinstance(item, str) else item for item in items
        )

    # Success: one group and two groups (both native: every locator is complete).
    for datasets in ([DS_HR], [DS_HR, DS_LEGAL]):
        p = provider(_leaky(), datasets=datasets)
        record(repr(p))
        result = await p.search("key")
        record(result.model_dump())
        content, artifact = await run_knowledge_search(p, "key")
        record(content, artifact)
        assert REDACTION_MARKER in content
    # Shared path: a KG chunk forces the envelope; the key is in the title and excerpt.
    shared = _leaky()
    shared.groups[(DS_HR,)]["chunks"].append(kg_chunk([DS_HR]))
    content, artifact = await run_knowledge_search(provider(shared, datasets=[DS_HR]), "key")
    assert artifact is not None and "knowledge_sources_version" in artifact
    assert read_envelope(content, artifact).sources[0].title == f"{REDACTION_MARKER}.pdf"
    record(content, artifact)

    # Error paths: the upstream echoes the key in messages; transport errors quote it.
    def echo(status: int, code: int) -> Callable[[httpx.Request], httpx.Response]:
        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(status, json={"code": code, "message": f"bad key {SECRET}"})

        return handler

    def transport_error(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"refused {request.headers['authorization']}", request=request)

    for handler in (
        echo(200, 100),
        echo(200, 102),
        echo(401, 401),
        echo(200, 109),
        transport_error,
    ):
        p = provider(handler, datasets=[DS_HR])
        with pytest.raises(ProviderError) as info:
            await p.search("q")
        record(str(info.value), repr(info.value), info.value.args)
        assert info.value.__cause__ is None and info.value.__context__ is None
        content, artifact = await run_knowledge_search(p, "q")
        assert content.startswith("Error:") and artifact is None
        record(content)

    record(caplog.text)
    assert seen and not any(SECRET in text for text in seen)


# --------------------------------------------------------------------------- the generic tool hook


class HookProvider:
    """An in-memory provider exposing ``format_for_tool`` (no HTTP at all)."""

    name = "fake"

    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome
        self.calls: list[dict[str, Any]] = []

    @property
    def capabilities(self) -> Any:
        from deerflow.knowledge import KnowledgeCapabilities

        return KnowledgeCapabilities()

    async def search(self, query: str, *, limit: int | None = None) -> RAGFlowResult:
        from deerflow.knowledge import RetrievalHit

        return RAGFlowResult(
            provider="fake",
            query=query,
            hits=(RetrievalHit(text="Deer eat acorns.", title="deer.md"),),
            chunks=(RAGFlowChunk(text="Deer eat acorns."),),
        )

    def format_for_tool(self, result: Any, budget: OutputBudget) -> Any:
        self.calls.append(
            {"max_chars": budget.max_chars, "max_chars_per_hit": budget.max_chars_per_hit}
        )
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


async def test_tool_hook_output_is_used_as_is() -> None:
    hook = HookProvider(("own content", {"knowledge_sources": {"version": 1, "sources": []}}))
    out = await run_knowledge_search(hook, "deer", max_chars=500, max_chars_per_hit=50)
    assert out == ("own content", {"knowledge_sources": {"version": 1, "sources": []}})
    assert hook.calls == [{"max_chars": 500, "max_chars_per_hit": 50}]


async def test_tool_hook_returning_none_selects_the_shared_envelope() -> None:
    content, artifact = await run_knowledge_search(HookProvider(None), "deer")
    read = read_envelope(content, artifact)
    assert [s.title for s in read.sources] == ["deer.md"]


async def test_tool_hook_failure_is_error_text_by_type_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    content, artifact = await run_knowledge_search(HookProvider(RuntimeError(SECRET)), "deer")
    assert content == "Error: the knowledge search failed unexpectedly (RuntimeError)."
    assert artifact is None and SECRET not in caplog.text


def test_chunks_and_hits_must_be_parallel() -> None:
    with pytest.raises(ValueError):
        RAGFlowResult(provider="ragflow", query="q", chunks=(RAGFlowChunk(text="x"),))


def test_the_optional_hooks_are_declared_protocols() -> None:
    from deerflow.knowledge.contract import DescribesTool, FormatsOwnOutput
    from deerflow.knowledge.providers.lightrag import LightRAGProvider

    ragflow = RAGFlowProvider(BASE, api_key=SECRET)
    assert isinstance(ragflow, FormatsOwnOutput) and isinstance(ragflow, DescribesTool)
    assert isinstance(HookProvider(None), FormatsOwnOutput)
    lightrag = LightRAGProvider()
    assert not isinstance(lightrag, FormatsOwnOutput) and not isinstance(lightrag, DescribesTool)
