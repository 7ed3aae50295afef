"""Unit tests of the LightRAG provider (its HTTP client and, through it, the parser).

Every response body below is SYNTHETIC: hand-written JSON shaped like what lightrag-server 1.5.7
returns from ``POST /query/data`` (see tests/live for the real server). All traffic goes through
``httpx.MockTransport``; nothing here touches the network.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from deerflow.knowledge.contract import RetrievalHit, RetrievalProvider, RetrievalResult
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
    UpstreamUnreachableError,
)
from deerflow.knowledge.providers.lightrag import (
    MAX_CHUNK_TOP_K,
    MAX_TOP_K,
    LightRAGProvider,
)

SECRET = "SECRET-MARKER-7f3a9c0e"
BASE = "http://lightrag.test:9621"

Handler = Callable[[httpx.Request], httpx.Response]


def chunk(content: str, file_path: str | None, reference_id: str, n: int = 0) -> dict[str, Any]:
    """A SYNTHETIC chunk in 1.5.7's key order (file_path omitted when None)."""
    item: dict[str, Any] = {"reference_id": reference_id, "content": content}
    if file_path is not None:
        item["file_path"] = file_path
    item["chunk_id"] = f"doc-{n:032x}-chunk-000"
    return item


def success(
    chunks: list[dict[str, Any]],
    references: list[dict[str, str]] | None = None,
    *,
    entities: list[dict[str, Any]] | None = None,
    relationships: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A SYNTHETIC /query/data success envelope."""
    return {
        "status": "success",
        "message": "Query processed successfully",
        "data": {
            "entities": entities or [],
            "relationships": relationships or [],
            "chunks": chunks,
            "references": references or [],
        },
        "metadata": {"query_mode": "naive", "keywords": {"high_level": [], "low_level": []}},
    }


# SYNTHETIC: naive-mode answer, chunk order differs from reference numbering (ids by frequency).
NAIVE = success(
    [
        chunk("Ada Vossberg discovered Comet Vossberg-7.", "ada_vossberg.txt", "2", 1),
        chunk("The Lantern Eye saw first light in 1998.", "lantern_eye.md", "1", 2),
        chunk("The mirror of the Lantern Eye is 2.4 metres wide.", "lantern_eye.md", "1", 3),
    ],
    [
        {"reference_id": "1", "file_path": "lantern_eye.md"},
        {"reference_id": "2", "file_path": "ada_vossberg.txt"},
    ],
)


def reply(status: int = 200, body: Any = None, *, text: str | None = None) -> Handler:
    def handle(request: httpx.Request) -> httpx.Response:
        if text is not None:
            return httpx.Response(status, text=text)
        return httpx.Response(status, json=body)

    return handle


def raising(exc: Exception) -> Handler:
    def handle(request: httpx.Request) -> httpx.Response:
        raise exc

    return handle


def provider(handler: Handler, **kwargs: Any) -> LightRAGProvider:
    return LightRAGProvider(BASE, transport=httpx.MockTransport(handler), **kwargs)


class Recorder:
    def __init__(self, body: Any = NAIVE) -> None:
        self.body = body
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(200, json=self.body)

    @property
    def payload(self) -> Any:
        return json.loads(self.requests[-1].content)


# --------------------------------------------------------------------------- settings


def test_defaults_and_protocol() -> None:
    p = LightRAGProvider()
    assert p.name == "lightrag"
    assert p.base_url == "http://localhost:9621"
    assert p.mode == "mix"
    assert p.capabilities.operations == ("search", "sources")
    assert isinstance(p, RetrievalProvider)


@pytest.mark.parametrize("mode", ["naive", "local", "global", "hybrid", "mix"])
def test_every_retrieval_mode_is_accepted(mode: str) -> None:
    assert LightRAGProvider(mode=mode).mode == mode  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["bypass", "semantic", "", "NAIVE", None, 1])
def test_other_modes_are_rejected(mode: Any) -> None:
    with pytest.raises(ProviderConfigError, match="mode"):
        LightRAGProvider(mode=mode)


@pytest.mark.parametrize(
    "url",
    [
        "",
        "   ",
        "localhost:9621",
        "ftp://host/",
        "file:///etc/passwd",
        "http://",
        "http:///path",
        "http://host:notaport",
        "http://host:70000",
        "http://host/?key=1",
        "http://host/#frag",
        " http://host",
        "http://ho st",
        "http://host/\n",
        "http://host\\@evil.test/",
        "http://[::1/",
        None,
        42,
    ],
)
def test_invalid_base_urls_are_rejected(url: Any) -> None:
    with pytest.raises(ProviderConfigError, match="base_url"):
        LightRAGProvider(url)


@pytest.mark.parametrize(
    "url",
    [
        f"http://user:{SECRET}@host:9621",
        f"http://{SECRET}@host",
        f"https://admin:{SECRET}@host/prefix",
        f"http://:{SECRET}@host",
        f"http://user:{SECRET}@host:notaport",
    ],
)
def test_base_url_credentials_are_rejected_without_echo(url: str) -> None:
    with pytest.raises(ProviderConfigError, match="credentials") as info:
        LightRAGProvider(url)
    assert SECRET not in str(info.value)
    assert SECRET not in repr(info.value)
    assert all(SECRET not in str(arg) for arg in info.value.args)


def test_base_url_keeps_path_prefix_and_drops_trailing_slash() -> None:
    assert LightRAGProvider("https://example.org/rag/").base_url == "https://example.org/rag"
    assert LightRAGProvider("http://[::1]:9621").base_url == "http://[::1]:9621"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("top_k", 0),
        ("top_k", MAX_TOP_K + 1),
        ("top_k", True),
        ("top_k", 5.0),
        ("top_k", "5"),
        ("chunk_top_k", 0),
        ("chunk_top_k", MAX_CHUNK_TOP_K + 1),
        ("chunk_top_k", False),
        ("timeout", 0),
        ("timeout", -1.0),
        ("timeout", 601),
        ("timeout", float("inf")),
        ("timeout", float("nan")),
        ("timeout", "30"),
        ("timeout", True),
    ],
)
def test_out_of_range_numbers_are_rejected(field: str, value: Any) -> None:
    with pytest.raises(ProviderConfigError, match=field):
        LightRAGProvider(**{field: value})


def test_bounds_are_inclusive() -> None:
    LightRAGProvider(top_k=1, chunk_top_k=1, timeout=0.001)
    LightRAGProvider(top_k=MAX_TOP_K, chunk_top_k=MAX_CHUNK_TOP_K, timeout=600)


@pytest.mark.parametrize("key", ["", "has space", "new\nline", "tab\t", "é", 123, b"bytes"])
def test_invalid_api_keys_are_rejected_without_echo(key: Any) -> None:
    with pytest.raises(ProviderConfigError, match="api_key") as info:
        LightRAGProvider(api_key=key)
    if isinstance(key, str) and key:
        assert key not in str(info.value)


def test_settings_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        LightRAGProvider(BASE, SECRET)  # type: ignore[call-arg]


def test_repr_hides_the_api_key() -> None:
    p = LightRAGProvider(BASE, api_key=SECRET)
    assert SECRET not in repr(p)
    assert "api_key=<set>" in repr(p)


# --------------------------------------------------------------------------- request


async def test_request_body_and_headers_without_key() -> None:
    rec = Recorder()
    await provider(rec, mode="naive", top_k=7).search("Who found Comet Vossberg-7?")
    request = rec.requests[0]
    assert request.method == "POST"
    assert str(request.url) == f"{BASE}/query/data"
    assert rec.payload == {"query": "Who found Comet Vossberg-7?", "mode": "naive", "top_k": 7}
    assert "x-api-key" not in request.headers
    assert request.headers["content-type"] == "application/json"


async def test_request_with_key_and_chunk_top_k_and_prefix() -> None:
    rec = Recorder()
    p = LightRAGProvider(
        "http://lightrag.test/prefix/",
        api_key=SECRET,
        chunk_top_k=5,
        transport=httpx.MockTransport(rec),
    )
    await p.search("Lantern Eye")
    request = rec.requests[0]
    assert str(request.url) == "http://lightrag.test/prefix/query/data"
    assert request.headers["x-api-key"] == SECRET
    assert rec.payload == {"query": "Lantern Eye", "mode": "mix", "top_k": 60, "chunk_top_k": 5}


@pytest.mark.parametrize("query", ["", "   ", "\n\t", None, 5])
async def test_blank_queries_are_refused_before_sending(query: Any) -> None:
    rec = Recorder()
    with pytest.raises(ProviderQueryError):
        await provider(rec).search(query)
    assert rec.requests == []


@pytest.mark.parametrize("limit", [0, -1, True, 1.0, "2"])
async def test_bad_limits_are_refused(limit: Any) -> None:
    rec = Recorder()
    with pytest.raises(ProviderQueryError, match="limit"):
        await provider(rec).search("Lantern Eye", limit=limit)
    assert rec.requests == []


async def test_overlong_query_is_refused() -> None:
    rec = Recorder()
    with pytest.raises(ProviderQueryError, match="too long"):
        await provider(rec).search("x" * 70_000)
    assert rec.requests == []


# --------------------------------------------------------------------------- mapping


async def test_chunks_become_hits_in_order_with_file_path_titles() -> None:
    result = await provider(Recorder()).search("Lantern Eye")
    assert isinstance(result, RetrievalResult)
    assert result.provider == "lightrag"
    assert result.query == "Lantern Eye"
    assert result.hits == (
        RetrievalHit(text="Ada Vossberg discovered Comet Vossberg-7.", title="ada_vossberg.txt"),
        RetrievalHit(text="The Lantern Eye saw first light in 1998.", title="lantern_eye.md"),
        RetrievalHit(
            text="The mirror of the Lantern Eye is 2.4 metres wide.", title="lantern_eye.md"
        ),
    )
    for hit in result.hits:  # LightRAG supplies none of these; none is invented
        assert (hit.page, hit.url, hit.dataset_name, hit.score) == (None, None, None, None)


async def test_limit_caps_hits() -> None:
    result = await provider(Recorder()).search("Lantern Eye", limit=2)
    assert [h.title for h in result.hits] == ["ada_vossberg.txt", "lantern_eye.md"]
    result = await provider(Recorder()).search("Lantern Eye", limit=50)
    assert len(result.hits) == 3


async def test_missing_file_path_is_joined_through_reference_id() -> None:
    body = success(
        [chunk("Text one.", None, "2", 1), chunk("Text two.", "", "1", 2)],
        [
            {"reference_id": "1", "file_path": "first.md"},
            {"reference_id": "2", "file_path": "second.md"},
        ],
    )
    result = await provider(Recorder(body)).search("text")
    assert [h.title for h in result.hits] == ["second.md", "first.md"]


@pytest.mark.parametrize("path", ["unknown_source", "", "no-file-path", None])
async def test_unattributed_chunks_keep_text_without_title(path: str | None) -> None:
    # SYNTHETIC: 1.5.7 sends file_path "unknown_source" with reference_id "" for such chunks.
    body = success(
        [chunk("Kept text.", path, "", 1), chunk("Cited text.", "cited.md", "1", 2)],
        [{"reference_id": "1", "file_path": "cited.md"}],
    )
    result = await provider(Recorder(body)).search("text")
    assert result.hits == (
        RetrievalHit(text="Kept text.", title=None),
        RetrievalHit(text="Cited text.", title="cited.md"),
    )


async def test_reference_pointing_at_unknown_source_stays_unattributed() -> None:
    body = success(
        [chunk("Legacy text.", None, "1", 1)],
        [{"reference_id": "1", "file_path": "no-file-path"}],
    )
    result = await provider(Recorder(body)).search("text")
    assert result.hits == (RetrievalHit(text="Legacy text.", title=None),)


async def test_unknown_reference_id_leaves_hit_unattributed() -> None:
    body = success([chunk("Orphan.", None, "9", 1)], [{"reference_id": "1", "file_path": "a.md"}])
    result = await provider(Recorder(body)).search("text")
    assert result.hits == (RetrievalHit(text="Orphan.", title=None),)


@pytest.mark.parametrize("path", ["bad\x07name.md", "x" * 513, "   "])
async def test_paths_that_cannot_be_titles_are_not_cleaned_up(path: str) -> None:
    body = success([chunk("Text.", path, "1", 1)], [{"reference_id": "1", "file_path": path}])
    result = await provider(Recorder(body)).search("text")
    assert result.hits == (RetrievalHit(text="Text.", title=None),)


async def test_blank_chunks_are_skipped() -> None:
    body = success(
        [chunk("", "a.md", "1", 1), chunk(" \n\t", "a.md", "1", 2), chunk("Real.", "a.md", "1", 3)],
        [{"reference_id": "1", "file_path": "a.md"}],
    )
    result = await provider(Recorder(body)).search("text")
    assert result.hits == (RetrievalHit(text="Real.", title="a.md"),)


async def test_text_is_kept_exactly() -> None:
    text = "  # Heading\n\nLine with trailing spaces   \n第二行 🚀  "
    body = success([chunk(text, "a.md", "1", 1)], [{"reference_id": "1", "file_path": "a.md"}])
    result = await provider(Recorder(body)).search("text")
    assert result.hits[0].text == text


async def test_entities_and_relationships_never_become_hits() -> None:
    # SYNTHETIC: a local-mode answer whose token budget left only graph items (references: []).
    body = success(
        [],
        [],
        entities=[
            {
                "entity_name": "Lantern Eye",
                "entity_type": "other",
                "description": "A telescope.",
                "source_id": "doc-1-chunk-000",
                "file_path": "lantern_eye.md<SEP>ada_vossberg.txt",
                "created_at": 1795997445,
            }
        ],
        relationships=[
            {
                "src_id": "Ada Vossberg",
                "tgt_id": "Lantern Eye",
                "description": "co-occurrence",
                "keywords": "co-occurrence",
                "weight": 1.0,
                "source_id": "doc-1-chunk-000",
                "file_path": "ada_vossberg.txt",
                "created_at": 1795997445,
            }
        ],
    )
    result = await provider(Recorder(body)).search("Lantern Eye")
    assert result.hits == ()


@pytest.mark.parametrize(
    "body",
    [
        # SYNTHETIC copies of 1.5.7's "no result" answers (HTTP 200).
        {
            "status": "failure",
            "message": "No relevant document chunks found.",
            "data": {},
            "metadata": {"failure_reason": "no_results", "mode": "naive"},
        },
        {"status": "failure", "message": "Query returned no results", "data": {}, "metadata": {}},
        {
            "status": "failure",
            "message": "Query returned empty dataset.",
            "data": {"entities": [], "relationships": [], "chunks": [], "references": []},
            "metadata": {},
        },
    ],
)
async def test_failure_without_data_means_no_results(body: dict[str, Any]) -> None:
    result = await provider(Recorder(body)).search("quantum chromodynamics")
    assert result.hits == ()


# --------------------------------------------------------------------------- errors

# (handler, expected exception type, a phrase its message must contain)
ERROR_CASES: dict[str, tuple[Handler, type[UpstreamError], str]] = {
    "400 validation envelope": (
        reply(
            400,
            {
                "status": "failure",
                "message": "Validation error: body -> query: Value error, RAG query is too short",
                "data": {},
                "metadata": {},
            },
        ),
        UpstreamRejectedError,
        "RAG query is too short",
    ),
    "401 login required": (
        reply(401, {"detail": "No credentials provided. Please login."}),
        UpstreamAuthError,
        "HTTP 401",
    ),
    "403 key required": (
        reply(403, {"detail": "API Key required"}),
        UpstreamAuthError,
        "requires an API key",
    ),
    "403 key invalid": (
        reply(403, {"detail": "Invalid API Key"}),
        UpstreamAuthError,
        "rejected the API key",
    ),
    "403 other": (reply(403, {"detail": "Forbidden"}), UpstreamAuthError, "denied access"),
    "404 endpoint missing": (reply(404, {"detail": "Not Found"}), UpstreamNotFoundError, "1.4.9"),
    "404 html": (reply(404, text="<html>nope</html>"), UpstreamNotFoundError, "base_url"),
    "409 other 4xx": (reply(409, {"detail": "Conflict"}), UpstreamRejectedError, "HTTP 409"),
    "422 fastapi": (
        reply(
            422,
            {
                "detail": [
                    {
                        "type": "value_error",
                        "loc": ["body", "query"],
                        "msg": "Value error, query must not be empty",
                        "input": "",
                    }
                ]
            },
        ),
        UpstreamRejectedError,
        "query must not be empty",
    ),
    "500 internal": (
        reply(500, {"detail": "Internal server error (error_id: b8ed9cf77d29)"}),
        UpstreamServerError,
        "error_id: b8ed9cf77d29",
    ),
    "502 proxy": (reply(502, text="Bad Gateway"), UpstreamServerError, "HTTP 502"),
    "503 unavailable": (reply(503, {"detail": "busy"}), UpstreamServerError, "HTTP 503"),
    "302 redirect": (reply(302, text=""), UpstreamResponseError, "HTTP status 302"),
    "read timeout": (raising(httpx.ReadTimeout("timed out")), UpstreamTimeoutError, "in time"),
    "connect timeout": (raising(httpx.ConnectTimeout("slow")), UpstreamTimeoutError, "in time"),
    "connection refused": (
        raising(httpx.ConnectError("[Errno 111] Connection refused")),
        UpstreamUnreachableError,
        "Cannot connect to LightRAG at http://lightrag.test:9621",
    ),
    "read error": (
        raising(httpx.ReadError("connection reset")),
        UpstreamUnreachableError,
        "connection",
    ),
    "protocol error": (
        raising(httpx.RemoteProtocolError("illegal header")),
        UpstreamResponseError,
        "malformed HTTP response",
    ),
    "invalid json": (reply(200, text="{not json"), UpstreamResponseError, "invalid JSON"),
    "empty body": (reply(200, text=""), UpstreamResponseError, "invalid JSON"),
    "html page": (reply(200, text="<html></html>"), UpstreamResponseError, "invalid JSON"),
    "json list": (reply(200, [1, 2]), UpstreamResponseError, "non-object"),
    "flat pre-1.4.9": (
        reply(200, {"entities": [], "relationships": [], "chunks": [{"content": "x"}]}),
        UpstreamResponseError,
        "1.4.9",
    ),
    "unknown status": (
        reply(200, {"status": "partial", "data": {}}),
        UpstreamResponseError,
        "status",
    ),
    "success without data": (reply(200, {"status": "success"}), UpstreamResponseError, "no data"),
    "chunks not a list": (
        reply(200, {"status": "success", "data": {"chunks": {"a": 1}, "references": []}}),
        UpstreamResponseError,
        "chunks",
    ),
    "chunks missing": (
        reply(200, {"status": "success", "data": {"references": []}}),
        UpstreamResponseError,
        "chunks",
    ),
    "chunk not an object": (
        reply(200, {"status": "success", "data": {"chunks": ["text"], "references": []}}),
        UpstreamResponseError,
        "chunk",
    ),
    "chunk content not text": (
        reply(200, {"status": "success", "data": {"chunks": [{"content": 3}], "references": []}}),
        UpstreamResponseError,
        "text content",
    ),
    "chunk file_path not text": (
        reply(
            200,
            {
                "status": "success",
                "data": {"chunks": [{"content": "t", "file_path": 3}], "references": []},
            },
        ),
        UpstreamResponseError,
        "file_path",
    ),
    "references not a list": (
        reply(200, {"status": "success", "data": {"chunks": [], "references": {}}}),
        UpstreamResponseError,
        "references",
    ),
    "reference malformed": (
        reply(200, {"status": "success", "data": {"chunks": [], "references": [{"x": 1}]}}),
        UpstreamResponseError,
        "reference",
    ),
    "failure with data": (
        reply(
            200,
            {
                "status": "failure",
                "message": "?",
                "data": {"chunks": [{"content": "t", "file_path": "a.md"}]},
            },
        ),
        UpstreamResponseError,
        "failure",
    ),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
async def test_each_failure_maps_to_one_typed_error(case: str) -> None:
    handler, expected, phrase = ERROR_CASES[case]
    with pytest.raises(ProviderError) as info:
        await provider(handler, api_key=SECRET).search("Lantern Eye")
    assert type(info.value) is expected
    assert phrase in str(info.value)
    assert info.value.provider == "lightrag"


def _leaky(handler_factory: Callable[[str], Handler]) -> Handler:
    return handler_factory(SECRET)


# Upstreams that echo the key back: every error path must still hide it.
LEAKY_CASES: dict[str, Handler] = {
    "400 echo": reply(400, {"status": "failure", "message": f"bad key {SECRET}", "data": {}}),
    "401 echo": reply(401, {"detail": f"token {SECRET} expired"}),
    "403 echo": reply(403, {"detail": f"Invalid API Key: {SECRET}"}),
    "404 echo": reply(404, {"detail": f"no route for {SECRET}"}),
    "422 echo": reply(422, {"detail": [{"msg": f"key={SECRET}", "input": SECRET}]}),
    "500 echo": reply(500, {"detail": f"boom {SECRET}"}),
    "500 url-encoded echo": reply(500, {"detail": "boom " + SECRET.replace("-", "%2D")}),
    "connect error echo": raising(httpx.ConnectError(f"refused {SECRET}")),
    "timeout echo": raising(httpx.ReadTimeout(f"slow {SECRET}")),
    "protocol echo": raising(httpx.RemoteProtocolError(f"bad header X-API-Key: {SECRET}")),
    "generic httpx echo": raising(httpx.UnsupportedProtocol(f"odd {SECRET}")),
    "invalid json echo": reply(200, text=f"{SECRET} not json"),
}


@pytest.mark.parametrize("case", list(LEAKY_CASES))
async def test_api_key_never_leaks_on_error_paths(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    p = provider(LEAKY_CASES[case], api_key=SECRET)
    with pytest.raises(UpstreamError) as info:
        await p.search("Lantern Eye")
    error = info.value
    for text in (str(error), repr(error), *map(str, error.args), caplog.text, repr(p)):
        assert SECRET not in text
        assert SECRET.replace("-", "%2D") not in text
    assert error.__cause__ is None  # httpx exceptions hold the request (and its headers)
    assert error.__suppress_context__ or error.__context__ is None


async def test_api_key_is_redacted_from_hits() -> None:
    body = success(
        [chunk(f"The key is {SECRET}.", f"{SECRET}.md", "1", 1)],
        [{"reference_id": "1", "file_path": f"{SECRET}.md"}],
    )
    result = await provider(Recorder(body), api_key=SECRET).search("key")
    assert result.hits == (
        RetrievalHit(text=f"The key is {REDACTION_MARKER}.", title=f"{REDACTION_MARKER}.md"),
    )


async def test_failures_are_logged_once_without_secrets(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="deerflow.knowledge.providers.lightrag")
    with pytest.raises(UpstreamServerError):
        await provider(reply(500, {"detail": SECRET}), api_key=SECRET).search("Lantern Eye")
    assert len(caplog.records) == 1
    assert "HTTP 500" in caplog.text
    assert SECRET not in caplog.text


# --------------------------------------------------------------------------- client lifecycle


async def test_context_manager_reuses_one_client_and_closes_it() -> None:
    rec = Recorder()
    p = provider(rec)
    async with p as entered:
        assert entered is p
        client = p._client
        assert client is not None
        await p.search("Lantern Eye")
        await p.search("Lantern Eye")
        assert p._client is client
    assert p._client is None
    assert client.is_closed
    assert len(rec.requests) == 2
    await p.aclose()  # idempotent
    await p.search("Lantern Eye")  # falls back to a client per call
    assert p._client is None


async def test_client_per_call_without_context_manager() -> None:
    rec = Recorder()
    p = provider(rec)
    await p.search("Lantern Eye")
    assert p._client is None
