"""The bundled sample corpus tells the truth: each factual sentence that a test or the evaluation
sets rely on (as an answer) is checked against the behaviour it states.

Each fact names its document, a fragment of the sentence (white space normalized) and a check
that runs the real code. A corpus edit that drops the fragment, or a code change that makes the
sentence false, fails here rather than in the demo's answers.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import rfc8785

from deerflow.knowledge import KnowledgeSource, build_envelope, find_citations, read_envelope
from deerflow.knowledge.audit import CitationStatus
from deerflow.knowledge.providers import lightrag as lightrag_module
from deerflow.knowledge.providers.documents import MAX_FILE_BYTES, discover
from deerflow.knowledge.providers.errors import ProviderError
from deerflow.knowledge.providers.lightrag import LightRAGProvider
from deerflow.knowledge.providers.local import sample_corpus_path
from deerflow.knowledge.providers.parse.chunking import DEFAULT_CHUNK_CHARS, chunk_text
from deerflow.knowledge.providers.parse.lightrag import UNATTRIBUTED_FILE_PATHS, UPGRADE_HINT
from deerflow.knowledge.providers.parse.ragflow import RAGFlowDataset, embedding_groups
from deerflow.knowledge.trust import strip_reserved_keys

CORPUS = sample_corpus_path()
HEX32 = "0123456789abcdef0123456789abcdef"


def _normal(text: str) -> str:
    return " ".join(text.split())


def _lightrag_error(status: int, detail: str) -> str:
    def reply(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"detail": detail})

    provider = LightRAGProvider("http://lightrag.test", transport=httpx.MockTransport(reply))
    with pytest.raises(ProviderError) as caught:
        asyncio.run(provider.search("anything"))
    return str(caught.value)


def _record_id(record: dict[str, Any]) -> str:
    body = {k: v for k, v in record.items() if k != "id"}
    digest = hashlib.sha256(b"deerflow.knowledge_source.v1\n" + rfc8785.dumps(body)).hexdigest()
    return digest[:32]


def _sources_cap() -> None:
    source = KnowledgeSource.create(provider="local", title="t.md", excerpt="x")
    assert len(build_envelope([source] * 100)["knowledge_sources"]) >= 1
    records = [source.to_record()] * 101
    assert read_envelope(
        "", {"knowledge_sources_version": 1, "knowledge_sources": records}
    ).error == ("too_many_records")


def _id_is_sha256_prefix() -> None:
    source = KnowledgeSource.create(provider="local", title="t.md", excerpt="some text")
    assert source.id == _record_id(source.to_record())


def _malformed_links() -> None:
    for target in ("a" * 31, "A" * 32):
        (citation,) = find_citations(f"[citation:T](#knowledge-source-{target})")
        assert citation.kind == "malformed"
    assert find_citations(f"`[citation:T](#knowledge-source-{HEX32})`") == []
    (web,) = find_citations("[citation:Title](https://example.org/)")
    assert web.kind == "web"


def _native_snapshot_is_not_rejected() -> None:
    native = {"knowledge_sources": {"version": 1, "sources": []}}
    result = read_envelope("", native)
    assert result.error is None and result.native is not None
    assert read_envelope("", {"knowledge_sources": "x"}).error == "not_an_array"
    assert read_envelope("", {"knowledge_sources_version": 2, "knowledge_sources": []}).error == (
        "bad_version"
    )


def _verify_statuses() -> None:
    assert set(CitationStatus.__args__) == {  # type: ignore[attr-defined]
        "verified",
        "evidence-not-loaded",
        "malformed",
        "forged",
        "web",
    }


def _ragflow_groups_by_embedding_model() -> None:
    datasets = [
        RAGFlowDataset("a", "A", "bge", 3),
        RAGFlowDataset("b", "B", "openai", 3),
        RAGFlowDataset("c", "C", "bge", 3),
    ]
    groups = embedding_groups(datasets)
    assert sorted(sorted(d.id for d in g) for g in groups) == [["a", "c"], ["b"]]


def _ragflow_datasets_optional() -> None:
    from deerflow.knowledge.providers.ragflow import RAGFlowProvider

    provider = RAGFlowProvider("http://ragflow.test", api_key="k")  # no dataset list
    assert "all accessible" in repr(provider)


def _lightrag_unattributed_paths() -> None:
    assert {"", "unknown_source", "no-file-path"} <= UNATTRIBUTED_FILE_PATHS


def _local_limits() -> None:
    assert DEFAULT_CHUNK_CHARS == 800 and max(map(len, chunk_text("word " * 1000))) <= 800
    assert MAX_FILE_BYTES == 64 * 1024 * 1024


def _pipes_and_hidden_files_are_left_out(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("A note.")
    (tmp_path / ".hidden.md").write_text("A hidden note.")
    (tmp_path / "link.md").symlink_to(tmp_path / "a.md")
    os.mkfifo(tmp_path / "pipe.md")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "sock.md"))
        found, skipped = discover(tmp_path)
    assert [c.path for c in found] == ["a.md"]
    assert {s.path for s in skipped} == {".hidden.md", "link.md", "pipe.md", "sock.md"}


def _index_has_the_choice_options() -> None:
    from typer.testing import CliRunner

    from deerflow.knowledge.cli import app

    shown = CliRunner().invoke(app, ["index", "--help"], terminal_width=200).output
    for option in ("--exclude", "--no-gitignore", "--add", "--replace"):
        assert option in shown


def _strip_removes_the_three_keys() -> None:
    forged = {
        "knowledge_sources": [],
        "knowledge_sources_version": 1,
        "retrieval_sources": [],
        "other": 1,
    }
    stripped = strip_reserved_keys([{"type": "tool", "artifact": forged}])
    assert stripped.value[0]["artifact"] == {"other": 1}


#: (document, fragment of the sentence, the check of what it states).
FACTS: list[tuple[str, str, Callable[..., None]]] = [
    ("citation-contract.md", "at most 100 source records", _sources_cap),
    ("evidence-verification.md", "more than 100 records with `too_many_records`", _sources_cap),
    ("citation-contract.md", "first 32 hex digits of a SHA-256 hash", _id_is_sha256_prefix),
    ("citation-contract.md", "is malformed and renders as an inert label", _malformed_links),
    ("citation-contract.md", "Links inside code spans", _malformed_links),
    ("faq.md", "an id with 31 hex digits or upper-case letters", _malformed_links),
    (
        "citation-contract.md",
        "may instead hold DeerFlow's native RAGFlow snapshot",
        _native_snapshot_is_not_rejected,
    ),
    (
        "evidence-verification.md",
        "neither an array nor, under `knowledge_sources`, a native RAGFlow snapshot",
        _native_snapshot_is_not_rejected,
    ),
    (
        "evidence-verification.md",
        "a version other than 1 with `bad_version`",
        _native_snapshot_is_not_rejected,
    ),
    (
        "evidence-verification.md",
        "verified, evidence-not-loaded, malformed, forged or web",
        _verify_statuses,
    ),
    (
        "providers/ragflow-setup.md",
        "groups the datasets by embedding model and sends one request per group",
        _ragflow_groups_by_embedding_model,
    ),
    ("providers/ragflow-setup.md", "`RAGFLOW_DATASETS` is optional", _ragflow_datasets_optional),
    ("overview.md", "or over an optional allowlist of dataset ids", _ragflow_datasets_optional),
    (
        "providers/lightrag-setup.md",
        "`unknown_source` or `no-file-path` keeps its text but has no title",
        _lightrag_unattributed_paths,
    ),
    ("local-index.txt", "at most 800 characters", _local_limits),
    ("local-index.txt", "A file larger than 64 MiB is skipped with a reason", _local_limits),
    (
        "local-index.txt",
        "and so are named pipes, sockets and devices",
        _pipes_and_hidden_files_are_left_out,
    ),
    (
        "local-index.txt",
        "Hidden files and symbolic links are left out",
        _pipes_and_hidden_files_are_left_out,
    ),
    (
        "local-index.txt",
        "--replace keeps only the new one",
        _index_has_the_choice_options,
    ),
    (
        "trust-boundary.md",
        "removes the three reserved keys from every message artifact",
        _strip_removes_the_three_keys,
    ),
]


def _lightrag_messages() -> None:
    assert "1.4.9" in UPGRADE_HINT
    assert lightrag_module.DEFAULT_MODE == "mix"
    assert set(lightrag_module.MODES) == {"naive", "local", "global", "hybrid", "mix"}
    assert "requires an API key" in _lightrag_error(403, "API Key required")
    assert "rejected the API key" in _lightrag_error(403, "Invalid API Key")
    assert "login or a bearer token" in _lightrag_error(401, "Unauthorized")


FACTS += [
    ("providers/lightrag-setup.md", "LightRAG 1.4.9 or newer is required", _lightrag_messages),
    ("providers/lightrag-setup.md", "The retrieval mode defaults to `mix`", _lightrag_messages),
    (
        "providers/lightrag-setup.md",
        'HTTP 403 with "Invalid API Key" means the server rejected the configured key',
        _lightrag_messages,
    ),
    (
        "providers/lightrag-setup.md",
        "HTTP 401 means the server asks for a login or a bearer token",
        _lightrag_messages,
    ),
]


def _document(title: str) -> str:
    return _normal((CORPUS / title).read_text(encoding="utf-8"))


@pytest.mark.parametrize(("title", "fragment", "check"), FACTS, ids=[f[1][:40] for f in FACTS])
def test_each_relied_on_sentence_is_in_the_corpus_and_true(
    title: str, fragment: str, check: Callable[..., None], tmp_path: Path
) -> None:
    assert _normal(fragment) in _document(title)
    if check is _pipes_and_hidden_files_are_left_out:
        check(tmp_path)
    else:
        check()


def test_the_contradicted_rules_are_gone() -> None:
    assert "must use the same embedding model" not in _document("providers/ragflow-setup.md")
    assert "RAGFlow refuses a mixed list" not in _document("providers/ragflow-setup.md")
    assert "for a configured list of datasets" not in _document("overview.md")
    assert "malformed or forged." not in _document("evidence-verification.md")
