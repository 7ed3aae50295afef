"""The embedded local provider: chunking, ranking, PDF pages, incremental updates, safety."""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import sqlite3
import stat
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import ToolMessage

from deerflow.knowledge import RetrievalProvider, read_envelope
from deerflow.knowledge.providers.errors import ProviderConfigError, ProviderQueryError
from deerflow.knowledge.providers.local import (
    DEFAULT_CHUNK_CHARS,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_LIMIT,
    MAX_PAGE_CHARS,
    MAX_PAGE_CONTENT_BYTES,
    MAX_PDF_CHARS,
    IndexProgress,
    IndexReport,
    LocalProvider,
    chunk_text,
    fts_query,
    sample_corpus_path,
    tokenize,
)
from deerflow.knowledge.tools import make_knowledge_tool

SAMPLE_PDF = "architecture-guide.pdf"


def _write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    _write(root, "deer.md", "# Deer\n\nDeer shed their antlers every winter. Antlers regrow.")
    _write(root, "guides/forest.txt", "The forest is home to many animals, deer among them.")
    _write(root, "meadow.md", "Acorns fall in the meadow in autumn.")
    return root


@pytest.fixture
def provider(tmp_path: Path) -> Iterator[LocalProvider]:
    local = LocalProvider(tmp_path / "index" / "index.sqlite")
    yield local
    local.close()


def _titles(local: LocalProvider, query: str, **kwargs: int) -> list[str | None]:
    return [hit.title for hit in local.search_sync(query, **kwargs).hits]


# --------------------------------------------------------------------------- protocol & evidence


async def test_is_a_retrieval_provider_with_search_only_capabilities(
    provider: LocalProvider,
) -> None:
    assert isinstance(provider, RetrievalProvider)
    assert provider.name == "local"
    assert provider.capabilities.to_metadata() == {"operations": ["search", "sources"]}


async def test_hits_carry_relative_posix_titles_and_no_invented_locators(
    provider: LocalProvider, docs: Path
) -> None:
    provider.index(docs)
    result = await provider.search("animals forest")
    assert result.provider == "local"
    hit = result.hits[0]
    assert hit.title == "guides/forest.txt"
    assert hit.url is None and hit.page is None and hit.dataset_name is None
    assert hit.text == "The forest is home to many animals, deer among them."
    assert hit.score is not None and hit.score > 0


async def test_dataset_name_only_when_configured(tmp_path: Path, docs: Path) -> None:
    local = LocalProvider(tmp_path / "i.sqlite", dataset_name="Field notes")
    local.index(docs)
    assert {hit.dataset_name for hit in (await local.search("deer")).hits} == {"Field notes"}
    with pytest.raises(ProviderConfigError):
        LocalProvider(tmp_path / "i.sqlite", dataset_name="bad\x00name")


async def test_tool_artifact_verifies(provider: LocalProvider, docs: Path) -> None:
    provider.index(docs)
    tool = make_knowledge_tool(provider)
    message = await tool.ainvoke(
        {"type": "tool_call", "id": "c1", "name": tool.name, "args": {"query": "antlers deer"}}
    )
    assert isinstance(message, ToolMessage)
    read = read_envelope(message.content, message.artifact)
    assert read.error is None and not read.rejected
    assert {s.title for s in read.sources} == {"deer.md", "guides/forest.txt"}
    assert all(s.provider == "local" for s in read.sources)


# --------------------------------------------------------------------------- ranking & queries


def test_bm25_ranks_the_most_relevant_chunk_first(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    _write(root, "once.md", "A single mention of lanterns among many other unrelated words here.")
    _write(root, "often.md", "Lanterns, lanterns, lanterns: a guide to lanterns.")
    _write(root, "none.md", "Nothing relevant at all.")
    local = LocalProvider(tmp_path / "i.sqlite")
    local.index(root)
    result = local.search_sync("lanterns")
    assert [h.title for h in result.hits] == ["often.md", "once.md"]
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]


def test_stemming_and_stopwords(provider: LocalProvider, docs: Path) -> None:
    provider.index(docs)
    assert _titles(provider, "antler")[0] == "deer.md"  # "antlers" in the text
    assert _titles(provider, "what is the meadow")[0] == "meadow.md"
    assert tokenize("What is THE Meadow?") == ["meadow"]
    assert tokenize("the of") == ["the", "of"]  # only stopwords: keep them


def test_how_a_question_is_asked_does_not_rank_chunks(tmp_path: Path) -> None:
    # Auxiliaries, pronouns and contraction pieces match nearly every chunk: kept as query terms,
    # they rank a chunk that repeats them above the one about what the question asks.
    assert tokenize("Does it have to be a list, or can't it?") == ["list"]
    assert tokenize("Doesn't the key never go without a header?") == [
        "key",
        "never",
        "go",
        "without",
        "header",
    ]
    root = tmp_path / "docs"
    _write(
        root, "chatter.md", "Does it? Can you? Could we? There is one thing you can do, and we do."
    )
    _write(root, "lists.md", "A value that is not a list of records is rejected.")
    local = LocalProvider(tmp_path / "i.sqlite")
    local.index(root)
    assert [h.title for h in local.search_sync("Does it have to be a list, can you?").hits] == [
        "lists.md"
    ]


def test_limit_is_bounded(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    for i in range(MAX_LIMIT + 20):
        _write(root, f"n{i:03d}.txt", f"common word {i}")
    local = LocalProvider(tmp_path / "i.sqlite", limit=3)
    local.index(root)
    assert len(local.search_sync("common").hits) == 3
    assert len(local.search_sync("common", limit=10).hits) == 10
    assert len(local.search_sync("common", limit=10_000).hits) == MAX_LIMIT
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ProviderQueryError):
            local.search_sync("common", limit=bad)  # type: ignore[arg-type]
    with pytest.raises(ProviderConfigError):
        LocalProvider(tmp_path / "i.sqlite", limit=MAX_LIMIT + 1)


@pytest.mark.parametrize(
    "query",
    [
        '"deer" OR title:*',
        "deer NEAR(",
        "NEAR(deer antlers, 2)",
        "deer*",
        "^deer",
        "-deer",
        "deer AND",
        "deer NOT antlers",
        "title:deer",
        '"deer',
        'deer"""',
        "(deer",
        "deer)",
        "{title text}: deer",
        "deer'); DROP TABLE chunks; --",
        "\x00deer",
    ],
)
def test_fts_syntax_in_queries_is_plain_words(
    provider: LocalProvider, docs: Path, query: str
) -> None:
    provider.index(docs)
    expression = fts_query(query)
    assert expression is not None
    assert all(term.startswith('"') and term.endswith('"') for term in expression.split(" OR "))
    titles = _titles(provider, query)
    assert titles[0] == "deer.md"
    assert provider.search_sync("deer").hits  # the index is intact


def test_operator_words_alone_are_searched_as_words(provider: LocalProvider, docs: Path) -> None:
    provider.index(docs)
    for query in ("NEAR(", "OR", "AND NOT", "title:*"):
        assert provider.search_sync(query).hits == ()  # no document contains these words


@pytest.mark.parametrize("query", ["***", "((", ")", '"', '""""', '" "', ":", "-", "^", "_"])
def test_query_without_words_finds_nothing(provider: LocalProvider, docs: Path, query: str) -> None:
    provider.index(docs)
    assert fts_query(query) is None
    assert provider.search_sync(query).hits == ()


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_blank_or_oversized_query_is_rejected(provider: LocalProvider, query: str) -> None:
    with pytest.raises(ProviderQueryError):
        provider.search_sync(query)
    with pytest.raises(ProviderQueryError):
        provider.search_sync("x" * 5_000)


@pytest.fixture(scope="module")
def shared_index(tmp_path_factory: pytest.TempPathFactory) -> LocalProvider:
    root = tmp_path_factory.mktemp("shared")
    _write(root, "a.md", "Deer and acorns. NEAR OR AND NOT title text.")
    local = LocalProvider(root / "index.sqlite")
    local.index(root)
    return local


@settings(max_examples=150, deadline=None)
@given(query=st.text(min_size=1, max_size=80))
def test_any_text_is_a_safe_query(shared_index: LocalProvider, query: str) -> None:
    expression = fts_query(query)
    if expression is not None:
        assert all(t[0] == t[-1] == '"' and '"' not in t[1:-1] for t in expression.split(" OR "))
    try:
        result = shared_index.search_sync(query)
    except ProviderQueryError:
        assert query.isspace() or not query.strip()
    else:
        assert expression is not None or result.hits == ()


# --------------------------------------------------------------------------- chunking


def test_chunk_of_exactly_the_size_is_one_chunk_and_one_past_is_two() -> None:
    size = 50
    exact = "x" * size
    assert chunk_text(exact, chunk_chars=size, chunk_overlap=10) == [exact]
    one_past = "x" * (size + 1)
    assert chunk_text(one_past, chunk_chars=size, chunk_overlap=10) == ["x" * size, "x"]
    words = ("word " * 10).strip()  # 49 characters
    assert len(words + "s") == size
    assert chunk_text(words + "s", chunk_chars=size, chunk_overlap=0) == [words + "s"]
    split = chunk_text(words + "ss", chunk_chars=size, chunk_overlap=0)
    assert len(split) == 2 and all(len(c) <= size for c in split)


def test_chunks_are_slices_split_at_sentences_with_sentence_overlap() -> None:
    sentences = [f"Sentence number {i} says something short." for i in range(40)]
    text = " ".join(sentences)
    chunks = chunk_text(text, chunk_chars=200, chunk_overlap=60)
    assert len(chunks) > 1
    for chunk in chunks:
        assert len(chunk) <= 200
        assert chunk in text
        assert chunk.startswith("Sentence number") and chunk.endswith(".")
    for previous, current in itertools.pairwise(chunks):
        first_sentence = current.split(". ")[0] + "."
        assert first_sentence in previous  # overlap: whole sentences repeated
    covered = " ".join(chunks)
    assert all(s in covered for s in sentences)


def test_chunks_prefer_paragraph_boundaries() -> None:
    paragraph_a = "Alpha sentence one. Alpha sentence two. Alpha sentence three."
    paragraph_b = "Beta sentence one. Beta sentence two. Beta sentence three."
    chunks = chunk_text(f"{paragraph_a}\n\n{paragraph_b}", chunk_chars=100, chunk_overlap=0)
    assert chunks == [paragraph_a, paragraph_b]


def test_no_overlap_when_zero_and_blank_text_gives_no_chunks() -> None:
    text = "One two. Three four. Five six. Seven eight."
    chunks = chunk_text(text, chunk_chars=20, chunk_overlap=0)
    assert " ".join(chunks) == text
    assert chunk_text(" \n\n\t ", chunk_chars=20, chunk_overlap=0) == []


def test_chunking_settings_are_checked() -> None:
    with pytest.raises(ProviderConfigError):
        chunk_text("x", chunk_chars=5, chunk_overlap=0)
    with pytest.raises(ProviderConfigError):
        chunk_text("x", chunk_chars=100, chunk_overlap=100)
    assert DEFAULT_CHUNK_CHARS == 800


# --------------------------------------------------------------------------- PDF pages


def test_pdf_pages_are_real_pages_and_chunks_never_span_them(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / SAMPLE_PDF).write_bytes((sample_corpus_path() / SAMPLE_PDF).read_bytes())
    local = LocalProvider(tmp_path / "i.sqlite", chunk_chars=200, chunk_overlap=40)
    report = local.index(root)
    assert report.added == (SAMPLE_PDF,) and report.chunks > 3
    expected = {"React renderer rehype-sanitize": 3, "accumulator compaction": 2, "pure core": 1}
    for query, page in expected.items():
        assert local.search_sync(query).hits[0].page == page, query
    with sqlite3.connect(tmp_path / "i.sqlite") as connection:
        rows = connection.execute("SELECT page, text FROM chunks").fetchall()
    assert {page for page, _ in rows} == {1, 2, 3}
    for page, text in rows:  # each page's heading names its part; no chunk mixes two parts
        parts = {p for p in (1, 2, 3) if f"part {p}:" in text}
        assert parts <= {page}


# --------------------------------------------------------------------------- incremental


def test_incremental_updates(provider: LocalProvider, docs: Path) -> None:
    first = provider.index(docs)
    assert first.added == ("deer.md", "guides/forest.txt", "meadow.md")
    assert first.documents == 3 and first.chunks == first.chunks_written

    # Same bytes, new mtime: unchanged (content hash).
    (docs / "deer.md").write_text((docs / "deer.md").read_text())
    second = provider.index(docs)
    assert second.unchanged == ("deer.md", "guides/forest.txt", "meadow.md")
    assert second.chunks_written == 0 and not second.changed

    _write(docs, "meadow.md", "Chestnuts fall in the orchard.")
    (docs / "guides" / "forest.txt").unlink()
    _write(docs, "new.md", "A brand new note about owls.")
    events: list[IndexProgress] = []
    third = provider.index(docs, progress=events.append)
    assert third.updated == ("meadow.md",)
    assert third.removed == ("guides/forest.txt",)
    assert third.added == ("new.md",)
    assert third.unchanged == ("deer.md",)
    assert third.documents == 3
    assert [(e.done, e.total) for e in events] == [(1, 3), (2, 3), (3, 3)]
    assert {e.outcome for e in events} == {"unchanged", "updated", "added"}

    assert _titles(provider, "chestnuts orchard") == ["meadow.md"]
    assert provider.search_sync("acorns autumn").hits == ()
    assert provider.search_sync("animals").hits == ()
    assert _titles(provider, "owls") == ["new.md"]


def test_changing_chunk_settings_rechunks_everything(tmp_path: Path, docs: Path) -> None:
    index = tmp_path / "i.sqlite"
    LocalProvider(index).index(docs)
    report = LocalProvider(index, chunk_chars=400, chunk_overlap=0).index(docs)
    assert len(report.updated) == 3 and not report.unchanged


def test_hidden_files_symlinks_and_other_types_are_left_out(tmp_path: Path, docs: Path) -> None:
    _write(docs, ".hidden.md", "secret hidden words")
    _write(docs, ".git/config.txt", "hidden folder words")
    _write(docs, "image.png", "not indexed")
    (docs / "link.md").symlink_to(docs / "deer.md")
    report = LocalProvider(tmp_path / "i.sqlite").index(docs)
    assert report.added == ("deer.md", "guides/forest.txt", "meadow.md")
    # Every entry left out is listed, once for a folder (nothing below it is looked at).
    assert [(s.path, s.reason) for s in report.skipped] == [
        (".git/", "hidden folder (its name starts with a dot)"),
        (".hidden.md", "hidden file (its name starts with a dot)"),
        ("image.png", "unsupported type (.png; indexed types are .markdown, .md, .pdf, .txt)"),
        ("link.md", "symbolic link (not followed)"),
    ]


# --------------------------------------------------------------------------- damaged files


def test_corrupt_and_unreadable_files_are_skipped_with_reasons(
    provider: LocalProvider, docs: Path
) -> None:
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog")
    (docs / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (docs / "binary.md").write_bytes(b"abc\x00def")
    report = provider.index(docs)
    assert report.added == ("deer.md", "guides/forest.txt", "meadow.md")
    reasons = {s.path: s.reason for s in report.skipped}
    assert set(reasons) == {"binary.md", "broken.pdf", "latin1.txt"}
    assert reasons["broken.pdf"].startswith("corrupt or unsupported PDF")
    assert reasons["latin1.txt"] == "not UTF-8 text (invalid byte at offset 3)"
    assert reasons["binary.md"] == "binary content (NUL bytes) in a text file"
    assert _titles(provider, "antlers") == ["deer.md"]


def test_a_file_that_becomes_corrupt_is_dropped_with_a_reason(
    provider: LocalProvider, docs: Path
) -> None:
    provider.index(docs)
    (docs / "meadow.md").write_bytes(b"\xff\xfe broken")
    report = provider.index(docs)
    assert [s.path for s in report.skipped] == ["meadow.md"]
    assert "previous version was dropped" in report.skipped[0].reason
    assert report.removed == ()
    assert provider.search_sync("acorns").hits == ()
    assert _titles(provider, "antlers") == ["deer.md"]


def test_a_file_that_cannot_be_opened_is_skipped(
    provider: LocalProvider, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = os.open

    def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(path).name == "meadow.md":
            raise PermissionError(13, "Permission denied")
        return original(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)
    report = provider.index(docs)
    assert [(s.path, s.reason) for s in report.skipped] == [
        ("meadow.md", "cannot be read (Permission denied)")
    ]
    assert len(report.added) == 2


# --------------------------------------------------------------------------- special files


def _index_within(provider: LocalProvider, docs: Path, **kwargs: Any) -> IndexReport:
    """Index in a daemon thread: a run that blocks fails the test instead of hanging it."""
    reports: list[IndexReport] = []
    worker = threading.Thread(
        target=lambda: reports.append(provider.index(docs, **kwargs)), daemon=True
    )
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive(), "index() blocked"
    return reports[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_is_skipped_not_read(provider: LocalProvider, docs: Path) -> None:
    # Before: open() waited for a writer forever, holding the write transaction.
    os.mkfifo(docs / "pipe.md")
    report = _index_within(provider, docs)
    assert report.added == ("deer.md", "guides/forest.txt", "meadow.md")
    assert [(s.path, s.reason) for s in report.skipped] == [
        ("pipe.md", "not a regular file (named pipe)")
    ]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_file_swapped_for_a_pipe_mid_run_is_skipped(
    provider: LocalProvider, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Discovery saw a regular file; by the time it is read (inside the transaction, where files
    # are read ahead of the writer) it is a pipe.
    from deerflow.knowledge.providers.local import _writer

    discover = _writer._discover

    def discover_then_swap(root: Path, **kwargs: Any) -> Any:
        found = discover(root, **kwargs)
        (docs / "meadow.md").unlink()
        os.mkfifo(docs / "meadow.md")
        return found

    monkeypatch.setattr(_writer, "_discover", discover_then_swap)
    report = _index_within(provider, docs)
    assert [(s.path, s.reason) for s in report.skipped] == [
        ("meadow.md", "not a regular file (named pipe)")
    ]
    assert report.added == ("deer.md", "guides/forest.txt")


def test_sockets_and_devices_are_skipped(provider: LocalProvider, docs: Path) -> None:
    socket_module = pytest.importorskip("socket")
    if not hasattr(socket_module, "AF_UNIX"):
        pytest.skip("no Unix sockets")
    server = socket_module.socket(socket_module.AF_UNIX)
    try:
        server.bind(str(docs / "sock.md"))
        expected = [("sock.md", "not a regular file (socket)")]
        try:
            os.mknod(docs / "null.txt", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
            expected.insert(0, ("null.txt", "not a regular file (character device)"))
        except (AttributeError, PermissionError):
            pass  # creating a device needs CAP_MKNOD
        report = _index_within(provider, docs)
    finally:
        server.close()
    assert [(s.path, s.reason) for s in report.skipped] == expected
    assert len(report.added) == 3


def test_reads_are_capped_at_max_file_bytes(tmp_path: Path, docs: Path) -> None:
    size = (docs / "deer.md").stat().st_size
    at_limit = LocalProvider(tmp_path / "a.sqlite").index(docs, max_file_bytes=size)
    assert "deer.md" in at_limit.added and at_limit.skipped == ()
    over = LocalProvider(tmp_path / "b.sqlite").index(docs, max_file_bytes=size - 1)
    assert ("deer.md", f"larger than {size - 1} bytes") in [
        (s.path, s.reason) for s in over.skipped
    ]
    assert "deer.md" not in over.added
    assert MAX_FILE_BYTES == 64 * 1024 * 1024


def test_a_file_that_grows_after_its_size_was_checked_is_still_capped(
    tmp_path: Path, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    size = (docs / "deer.md").stat().st_size
    real_fstat = os.fstat

    def shrinking_fstat(fd: int) -> os.stat_result:  # the size seen before the file grew
        result = real_fstat(fd)
        values = list(result)
        values[stat.ST_SIZE] = 1
        return os.stat_result(values)

    monkeypatch.setattr(os, "fstat", shrinking_fstat)
    report = LocalProvider(tmp_path / "c.sqlite").index(docs, max_file_bytes=size - 1)
    assert ("deer.md", f"larger than {size - 1} bytes") in [
        (s.path, s.reason) for s in report.skipped
    ]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "64"])
def test_max_file_bytes_must_be_a_positive_integer(
    provider: LocalProvider, docs: Path, bad: Any
) -> None:
    with pytest.raises(ProviderConfigError, match="max_file_bytes"):
        provider.index(docs, max_file_bytes=bad)


# --------------------------------------------------------------------------- index file errors


async def test_missing_index_is_a_clear_config_error(tmp_path: Path) -> None:
    local = LocalProvider(tmp_path / "nope" / "index.sqlite")
    with pytest.raises(ProviderConfigError, match=r"No index at .*deerflow-knowledge index PATH"):
        await local.search("deer")
    tool = make_knowledge_tool(local)
    message = await tool.ainvoke(
        {"type": "tool_call", "id": "c1", "name": tool.name, "args": {"query": "deer"}}
    )
    assert message.content.startswith("Error: No index at") and message.artifact is None


def test_foreign_or_corrupt_index_file(tmp_path: Path, docs: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ProviderConfigError, match="not a usable deerflow-knowledge index"):
        LocalProvider(junk).search_sync("deer")
    with pytest.raises(ProviderConfigError, match="not a usable deerflow-knowledge index"):
        LocalProvider(junk).index(docs)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE t (x)")
    with pytest.raises(ProviderConfigError, match="not a usable"):
        LocalProvider(other).index(docs)
    with pytest.raises(ProviderConfigError, match="Not a folder"):
        LocalProvider(tmp_path / "i.sqlite").index(tmp_path / "missing")


# --------------------------------------------------------------------------- concurrency


def test_a_reader_during_reindex_sees_a_consistent_snapshot(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    for i in range(20):
        _write(root, f"doc{i:02d}.md", f"Version one of document {i}. Common text.")
    index = tmp_path / "i.sqlite"
    writer = LocalProvider(index)
    writer.index(root)
    for i in range(20):
        _write(root, f"doc{i:02d}.md", f"Revision two of document {i}. Common text.")

    reader = LocalProvider(index)
    seen: list[tuple[int, int]] = []
    errors: list[BaseException] = []

    def read_in_thread() -> None:
        try:
            old = len(reader.search_sync("version", limit=100).hits)
            new = len(reader.search_sync("revision", limit=100).hits)
            seen.append((old, new))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def during(event: IndexProgress) -> None:
        if event.done in (1, 10, 20):  # mid-transaction: the writer holds uncommitted changes
            thread = threading.Thread(target=read_in_thread)
            thread.start()
            thread.join(timeout=10)

    writer.index(root, progress=during)
    assert not errors
    assert seen == [(20, 0), (20, 0), (20, 0)]  # only the committed snapshot is visible
    assert len(reader.search_sync("revision", limit=100).hits) == 20
    assert reader.search_sync("version").hits == ()
    reader.close()


def test_an_interrupted_reindex_leaves_the_previous_index(tmp_path: Path, docs: Path) -> None:
    local = LocalProvider(tmp_path / "i.sqlite")
    local.index(docs)
    _write(docs, "meadow.md", "Replaced text about chestnuts.")

    def interrupt(event: IndexProgress) -> None:
        if event.outcome == "updated":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        local.index(docs, progress=interrupt)
    assert _titles(local, "acorns") == ["meadow.md"]
    assert local.search_sync("chestnuts").hits == ()


async def test_concurrent_async_searches(provider: LocalProvider, docs: Path) -> None:
    import asyncio

    provider.index(docs)
    results = await asyncio.gather(*(provider.search("deer") for _ in range(20)))
    assert all(r.hits[0].title == "deer.md" for r in results)


def _integrity_check(index: Path) -> None:
    """FTS5's own check, comparing the full-text index with the chunk rows (raises if not)."""
    with sqlite3.connect(index) as connection:
        connection.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")


def test_the_full_text_index_follows_builds_updates_and_rechunks(
    tmp_path: Path, docs: Path
) -> None:
    index = tmp_path / "i.sqlite"
    local = LocalProvider(index)
    local.index(docs)  # a first build: written in bulk
    _integrity_check(index)
    _write(docs, "meadow.md", "Chestnuts fall in the orchard.")
    (docs / "deer.md").unlink()
    _write(docs, "new.md", "A brand new note about owls.")
    local.index(docs)  # an update: row by row
    _integrity_check(index)
    assert _titles(local, "chestnuts owls acorns antlers") == ["meadow.md", "new.md"]
    rechunked = LocalProvider(index, chunk_chars=64, chunk_overlap=0)
    rechunked.index(docs)  # every file re-chunked: in bulk again
    _integrity_check(index)
    assert _titles(rechunked, "owls") == ["new.md"]
    local.close()
    rechunked.close()


def _journal_mode(index: Path) -> str:
    with contextlib.closing(sqlite3.connect(index)) as connection:
        return str(connection.execute("PRAGMA journal_mode").fetchone()[0])


def test_a_first_build_uses_a_rollback_journal_and_leaves_the_index_in_wal_mode(
    tmp_path: Path, docs: Path
) -> None:
    index = tmp_path / "i.sqlite"
    modes: list[str] = []
    local = LocalProvider(index)

    def during(event: IndexProgress) -> None:
        modes.append(_journal_mode(index))

    local.index(docs, progress=during)
    assert set(modes) == {"delete"}  # pages written once, not to the WAL and then the file
    assert _journal_mode(index) == "wal"
    assert not (tmp_path / "i.sqlite-journal").exists()
    _integrity_check(index)
    _write(docs, "meadow.md", "Chestnuts fall in the orchard.")
    modes.clear()
    local.index(docs, progress=during)  # an update: WAL, so that readers never wait
    assert modes == ["wal"] * 3
    local.close()


def test_an_interrupted_first_build_leaves_an_empty_index_in_wal_mode(
    tmp_path: Path, docs: Path
) -> None:
    index = tmp_path / "i.sqlite"
    local = LocalProvider(index)

    def interrupt(event: IndexProgress) -> None:
        if event.done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        local.index(docs, progress=interrupt)
    assert _journal_mode(index) == "wal" and not (tmp_path / "i.sqlite-journal").exists()
    assert local.search_sync("antlers").hits == ()  # rolled back to the empty index
    assert _titles(local, "antlers") == []
    local.close()
    assert local.index(docs).added == ("deer.md", "guides/forest.txt", "meadow.md")


def test_a_first_build_with_a_reader_open_stays_in_wal_mode(tmp_path: Path, docs: Path) -> None:
    index = tmp_path / "i.sqlite"
    local = LocalProvider(index)
    with pytest.raises(KeyboardInterrupt):  # the schema, but no documents
        local.index(docs, progress=lambda event: (_ for _ in ()).throw(KeyboardInterrupt()))
    reader = LocalProvider(index)
    assert reader.search_sync("antlers").hits == ()  # its connection stays open in the pool
    modes: list[str] = []
    local.index(docs, progress=lambda event: modes.append(_journal_mode(index)))
    assert set(modes) == {"wal"}  # SQLite refused the switch: the build ran in WAL mode
    assert _titles(reader, "antlers") == ["deer.md"]
    reader.close()
    local.close()


def test_a_search_that_waits_too_long_for_a_first_build_says_so(
    tmp_path: Path, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deerflow.knowledge.providers.local import _schema

    index = tmp_path / "i.sqlite"
    LocalProvider(index).index(docs)
    monkeypatch.setattr(_schema, "BUSY_TIMEOUT_MS", 50)
    with contextlib.closing(sqlite3.connect(index, isolation_level=None)) as writer:
        writer.execute("PRAGMA journal_mode = DELETE")  # as during a first build
        writer.execute("BEGIN EXCLUSIVE")
        reader = LocalProvider(index)
        with pytest.raises(ProviderConfigError, match="still locked by its first build"):
            reader.search_sync("antlers")
        writer.execute("ROLLBACK")
    assert _titles(reader, "antlers") == ["deer.md"]
    reader.close()


def test_a_version_1_index_is_read_and_upgraded_in_place(tmp_path: Path, docs: Path) -> None:
    index = tmp_path / "i.sqlite"
    LocalProvider(index).index(docs)
    with sqlite3.connect(index) as connection:  # what version 1 wrote: the same, plus triggers
        connection.executescript(
            """
            UPDATE meta SET value = '1' WHERE key = 'schema_version';
            CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
                INSERT INTO chunks_fts(rowid, text, title) VALUES (new.id, new.text, new.title);
            END;
            CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
                INSERT INTO chunks_fts(chunks_fts, rowid, text, title)
                VALUES ('delete', old.id, old.text, old.title);
            END;
            """
        )
    local = LocalProvider(index)
    assert _titles(local, "antlers") == ["deer.md"]
    _write(docs, "meadow.md", "Chestnuts fall in the orchard.")
    assert local.index(docs).updated == ("meadow.md",)
    _integrity_check(index)  # with the triggers left in, every row would be indexed twice
    with sqlite3.connect(index) as connection:
        assert connection.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'"
        ).fetchone() == ("3",)
        assert connection.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'"
        ).fetchone() == (0,)
    assert _titles(local, "chestnuts") == ["meadow.md"]
    local.close()


def test_a_failed_run_stops_reading_ahead(tmp_path: Path) -> None:
    root = tmp_path / "many"
    for number in range(40):
        _write(root, f"f{number:02d}.md", f"File number {number} about herons.")
    local = LocalProvider(tmp_path / "i.sqlite")

    def fail(event: IndexProgress) -> None:
        if event.done == 3:
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        local.index(root, progress=fail)
    assert not [t for t in threading.enumerate() if t.name.startswith("deerflow-index-read")]
    assert local.search_sync("herons").hits == ()  # rolled back: nothing was indexed
    assert local.index(root).chunks == 40


def _fts_inserts(connection: _Recording) -> list[tuple[object, ...]]:
    return [
        parameters
        for sql, parameters in connection.statements
        if sql.startswith("INSERT INTO chunks_fts(rowid, text, title)")
    ]


def test_chunk_rows_enter_the_full_text_index_in_batches(tmp_path: Path, docs: Path) -> None:
    """Counted: one full-text statement per ``batch_chars`` of chunk text (plus the rest at the
    end), each covering the rows written since the previous one, and FTS5's own check agrees."""
    from deerflow.knowledge.providers.local._files import Prepared as _Prepared
    from deerflow.knowledge.providers.local._writer import ChunkWriter as _ChunkWriter

    index = tmp_path / "i.sqlite"
    LocalProvider(index).index(docs)  # the schema
    connection = sqlite3.connect(index, isolation_level=None, factory=_Recording)
    assert isinstance(connection, _Recording)
    connection.execute("BEGIN IMMEDIATE")
    connection.execute("DELETE FROM chunks")
    connection.execute("DELETE FROM documents")
    writer = _ChunkWriter(connection, bulk=True, batch_chars=1_000)
    text = "Herons wade in the shallows at dawn. " * 3  # 111 code points
    for number in range(60):  # 60 files of 3 chunks: 19,980 code points
        parts: list[tuple[int | None, str]] = [(None, text)] * 3
        writer.insert_document(
            f"f{number:02d}.md", "/docs", _Prepared("0" * 64, len(text) * 3, parts)
        )
    writer.finish()
    connection.execute("COMMIT")
    ranges = [(int(low), int(high)) for low, high in _fts_inserts(connection)]  # type: ignore[call-overload]
    # A batch closes once it holds 1,000 code points: after 9 chunks (999) it needs a tenth file.
    assert len(ranges) == 15  # 180 chunks / 12 per batch
    assert ranges[0][0] == 1 and ranges[-1][1] == 181
    assert all(high == next_low for (_, high), (next_low, _) in itertools.pairwise(ranges))
    connection.close()
    _integrity_check(index)
    local = LocalProvider(index)
    assert len(local.search_sync("herons", limit=MAX_LIMIT).hits) > 0
    local.close()


def test_a_build_writes_unmerged_segments_and_leaves_automerge_on_for_updates(
    tmp_path: Path, docs: Path
) -> None:
    from deerflow.knowledge.providers.local._files import Prepared as _Prepared
    from deerflow.knowledge.providers.local._writer import ChunkWriter as _ChunkWriter

    index = tmp_path / "i.sqlite"
    LocalProvider(index).index(docs)
    connection = sqlite3.connect(index, isolation_level=None, factory=_Recording)
    assert isinstance(connection, _Recording)
    automerge = "SELECT v FROM chunks_fts_config WHERE k = 'automerge'"
    assert connection.execute(automerge).fetchone() == (4,)
    connection.execute("BEGIN IMMEDIATE")
    connection.execute("DELETE FROM chunks")
    connection.execute("DELETE FROM documents")
    writer = _ChunkWriter(connection, bulk=True, batch_chars=100)
    assert connection.execute(automerge).fetchone() == (0,)
    text = "Herons wade in the shallows at dawn. " * 3
    for number in range(4):
        writer.insert_document(f"f{number}.md", "/docs", _Prepared("0" * 64, 1, [(None, text)]))
    writer.finish()
    connection.execute("COMMIT")
    assert connection.execute(automerge).fetchone() == (4,)
    settings = [
        p for sql, p in connection.statements if sql.startswith("INSERT") and "'automerge'" in sql
    ]
    assert settings == [(), (4,)]
    (segments,) = connection.execute(
        "SELECT count(*) FROM chunks_fts_data WHERE id > 10"  # one leaf or more per segment
    ).fetchone()
    assert segments >= 4  # one per batch, not merged
    connection.close()
    _integrity_check(index)


def test_an_update_writes_its_rows_to_the_full_text_index_in_one_statement(
    tmp_path: Path, docs: Path
) -> None:
    index = tmp_path / "i.sqlite"
    local = LocalProvider(index)
    local.index(docs)
    for number in range(30):
        _write(docs, f"notes/n{number:02d}.md", f"Note {number} about kingfishers.")
    statements: list[str] = []
    original = sqlite3.connect

    def recording(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection = original(*args, **kwargs)
        connection.set_trace_callback(statements.append)
        return connection

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sqlite3, "connect", recording)
        assert len(local.index(docs).added) == 30
    inserts = [s for s in statements if s.startswith("INSERT INTO chunks_fts(rowid, text, title)")]
    assert len(inserts) == 1  # not one per row or per file
    _integrity_check(index)
    assert len(_titles(local, "kingfishers", limit=MAX_LIMIT)) == 30
    local.close()


# --------------------------------------------------------------------------- bounded query plan


class _Recording(sqlite3.Connection):
    """Records every statement and its parameters (to count the rows bm25() scores)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.statements: list[tuple[str, tuple[object, ...]]] = []

    def execute(self, sql: str, parameters: object = (), /) -> sqlite3.Cursor:  # type: ignore[override]
        self.statements.append((sql, tuple(parameters)))  # type: ignore[arg-type]
        return super().execute(sql, parameters)  # type: ignore[arg-type]


def _plan_corpus(root: Path, common: int) -> None:
    """``common`` chunks with "heron" among twice as many without; two with "egret", of the same
    length, one with heron too and sorting (and so indexed) last; one with heron twice."""
    _write(root, "a-rare.md", "The egret and the swans wade at dawn.")
    _write(root, "z-both.md", "The egret and the heron wade at dawn.")
    _write(root, "m-twice.md", "A heron, a heron.")
    for number in range(common - 2):
        _write(root, f"filler/f{number:03d}.md", f"A heron stood in pond {number} for hours.")
    for number in range(2 * common):
        _write(root, f"other/o{number:03d}.md", f"Ducks swim in pond {number}.")


def _scored_rows(index: Path, statements: list[tuple[str, tuple[object, ...]]]) -> list[int]:
    with sqlite3.connect(index) as connection:
        return [
            connection.execute(
                "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (params[0],)
            ).fetchone()[0]
            for sql, params in statements
            if "bm25(" in sql
        ]


@pytest.mark.parametrize("scored_rows", [32, 33, 34])
def test_bm25_scores_at_most_scored_rows_and_common_terms_still_count(
    tmp_path: Path, scored_rows: int
) -> None:
    from deerflow.knowledge.providers.local import _query as _local_query

    root, index = tmp_path / "docs", tmp_path / "i.sqlite"
    _plan_corpus(root, common=32)  # heron: 32 chunks, egret: 2; together 34
    LocalProvider(index).index(root)
    connection = sqlite3.connect(f"file:{index}?mode=ro", uri=True, factory=_Recording)
    rows = _local_query.search(
        connection,
        ["egret", "herons"],
        8,
        weights=(1.0, 0.5),
        tokenizer="porter unicode61 remove_diacritics 2",
        scored_rows=scored_rows,
    )
    scored = _scored_rows(index, connection.statements)
    connection.close()
    assert scored and all(count <= scored_rows for count in scored)
    # Exactly at the limit (32 + 2 matches) the plain OR query runs (scoring the 33 chunks with
    # either word); under it, heron is common and is
    # added by re-scoring: the chunk with both words still beats the egret-only one (which an
    # egret-only ranking would put first: same length, indexed first).
    assert (max(scored) == 33) is (scored_rows == 34)
    assert [row.title for row in rows[:2]] == ["z-both.md", "a-rare.md"]


def test_a_query_of_common_words_only_scores_a_bounded_pool(tmp_path: Path) -> None:
    from deerflow.knowledge.providers.local import _query as _local_query

    root, index = tmp_path / "docs", tmp_path / "i.sqlite"
    _plan_corpus(root, common=40)
    LocalProvider(index).index(root)
    connection = sqlite3.connect(f"file:{index}?mode=ro", uri=True, factory=_Recording)
    rows = _local_query.search(
        connection,
        ["heron"],
        8,
        weights=(1.0, 0.5),
        tokenizer="porter unicode61 remove_diacritics 2",
        scored_rows=16,
    )
    assert _scored_rows(index, connection.statements) == []
    connection.close()
    assert len(rows) == 8 and all("heron" in row.text for row in rows)
    assert rows[0].title == "m-twice.md"  # "heron" twice: the largest share


def test_the_bounded_plan_runs_on_read_only_pooled_connections(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    _plan_corpus(root, common=20)
    local = LocalProvider(tmp_path / "i.sqlite", scored_rows=MAX_LIMIT)
    local.index(root)
    for _ in range(3):  # the temporary tables are made once per connection and left empty
        assert [h.title for h in local.search_sync("egret heron").hits][:2] == [
            "z-both.md",
            "a-rare.md",
        ]
    # Two chunks hold "egret"; as an OR query would, heron-only chunks fill the other places.
    assert len(local.search_sync("egret heron").hits) == 8
    assert len(local.search_sync("heron", limit=50).hits) == 20
    local.close()


@pytest.mark.parametrize("bad", [MAX_LIMIT - 1, 0, "4000", 10.0, True])
def test_scored_rows_is_checked(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ProviderConfigError, match="scored_rows"):
        LocalProvider(tmp_path / "i.sqlite", scored_rows=bad)  # type: ignore[arg-type]
    assert LocalProvider(tmp_path / "i.sqlite", scored_rows=MAX_LIMIT)


# --------------------------------------------------------------------------- scale


def test_ten_thousand_chunks(tmp_path: Path) -> None:
    rng = random.Random(42)
    vocabulary = [f"w{n}" for n in range(2_000)]
    root = tmp_path / "big"
    per_file, files = 500, 20
    markers: dict[str, tuple[str, int]] = {}
    for f in range(files):
        paragraphs = []
        for p in range(per_file):
            number = f * per_file + p
            marker = f"marker{number}x"
            markers[marker] = (f"part{f:02d}.md", number)
            words = " ".join(rng.choice(vocabulary) for _ in range(6))
            paragraphs.append(f"{marker} {words}.")
        _write(root, f"part{f:02d}.md", "\n\n".join(paragraphs))
    local = LocalProvider(tmp_path / "big.sqlite", chunk_chars=64, chunk_overlap=0)
    started = time.perf_counter()
    report = local.index(root)
    elapsed = time.perf_counter() - started
    assert report.chunks == files * per_file == 10_000
    assert elapsed < 20

    for marker in rng.sample(sorted(markers), 25):
        title, _ = markers[marker]
        hits = local.search_sync(f"{marker} unrelated words").hits
        assert hits[0].title == title
        assert hits[0].text.startswith(marker + " ")
    assert len(local.search_sync("w1 w2 w3", limit=50).hits) == 50
    again = local.index(root)
    assert len(again.unchanged) == files and again.chunks_written == 0
    local.close()


def test_bundled_sample_corpus_matches_its_generator_and_indexes_cleanly(tmp_path: Path) -> None:
    import importlib.util

    script = Path(__file__).resolve().parent.parent / "scripts" / "make_sample_pdf.py"
    spec = importlib.util.spec_from_file_location("make_sample_pdf", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.build_pdf() == (sample_corpus_path() / SAMPLE_PDF).read_bytes()

    report = LocalProvider(tmp_path / "i.sqlite").index(sample_corpus_path())
    assert not report.skipped and len(report.added) >= 9
    assert all("\\" not in path for path in report.added)
    assert "providers/lightrag-setup.md" in report.added


# --------------------------------------------------------------------------- folders swapped for links


def test_a_folder_swapped_for_a_link_after_discovery_is_not_followed(
    tmp_path: Path, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: only the last component was opened with O_NOFOLLOW, so guides/forest.txt was read
    # through the link, from outside the indexed folder.
    from deerflow.knowledge.providers.local import _writer

    outside = tmp_path / "outside"
    _write(outside, "forest.txt", "Outside secret about wolves.")
    discover = _writer._discover

    def discover_then_swap(root: Path, **kwargs: Any) -> Any:
        found = discover(root, **kwargs)
        (docs / "guides").rename(tmp_path / "moved-away")
        (docs / "guides").symlink_to(outside, target_is_directory=True)
        return found

    monkeypatch.setattr(_writer, "_discover", discover_then_swap)
    provider = LocalProvider(tmp_path / "i.sqlite")
    report = provider.index(docs, child_min_bytes=None)
    assert report.added == ("deer.md", "meadow.md")
    assert [(s.path, s.reason) for s in report.skipped] == [
        ("guides/forest.txt", "the folder 'guides' on its path: symbolic link (not followed)")
    ]
    assert provider.search_sync("wolves").hits == ()
    provider.close()


def test_a_folder_swapped_during_discovery_is_not_entered(
    tmp_path: Path, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The swap lands between listing docs/ and opening docs/guides: the open refuses the link.
    from deerflow.knowledge.providers import documents

    outside = tmp_path / "outside"
    _write(outside, "secret.md", "Outside secret about wolves.")
    real_open = os.open

    def swapping_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if path == "guides" and (docs / "guides").is_dir() and not (docs / "guides").is_symlink():
            (docs / "guides").rename(tmp_path / "moved-away")
            (docs / "guides").symlink_to(outside, target_is_directory=True)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(documents.os, "open", swapping_open)
    found, skipped = documents.discover(docs)
    assert [c.path for c in found] == ["deer.md", "meadow.md"]
    assert [(s.path, s.reason) for s in skipped] == [("guides/", "symbolic link (not followed)")]


# --------------------------------------------------------------------------- deep folders


def _deep(root: Path, depth: int) -> Path:
    """A chain of ``depth`` nested folders under ``root`` (made one level at a time, relative
    to the previous one, so no path longer than a name is ever built)."""
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=folder)
            inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=folder)
            os.close(folder)
            folder = inner
        descriptor = os.open("deep.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=folder)
        os.write(descriptor, b"Herons nest deep in the reeds.")
        os.close(descriptor)
    finally:
        os.close(folder)
    return root


def _remove_deep(root: Path, depth: int) -> None:
    """Remove what :func:`_deep` made, from the bottom up (shutil.rmtree recurses per level)."""
    folders = [os.open(root, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        for _ in range(depth):
            folders.append(os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=folders[-1]))
        os.unlink("deep.md", dir_fd=folders[-1])
        for parent in reversed(folders[:-1]):
            os.rmdir("d", dir_fd=parent)
    finally:
        for folder in folders:
            os.close(folder)


def test_folders_deeper_than_max_depth_are_skipped_with_a_reason(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    _deep(root, 3)  # d/d/d/deep.md: its folder is at depth 3
    at_limit = LocalProvider(tmp_path / "a.sqlite").index(root, max_depth=3)
    assert at_limit.added == ("d/d/d/deep.md",) and at_limit.skipped == ()
    over = LocalProvider(tmp_path / "b.sqlite").index(root, max_depth=2)
    assert over.added == ()
    assert [(s.path, s.reason) for s in over.skipped] == [
        ("d/d/d/", "folder nested deeper than 2 levels (not entered)")
    ]
    assert MAX_DEPTH == 64


def test_a_folder_1100_levels_deep_is_skipped_not_a_crash(tmp_path: Path) -> None:
    # Before: os.walk recursed once per level and ended in a RecursionError. The tree lives
    # outside pytest's tmp_path, whose clean-up (shutil.rmtree) would recurse as deep.
    root = Path(tempfile.mkdtemp(prefix="deerflow-deep-"))
    try:
        _write(root, "top.md", "Herons at the top.")
        _deep(root, 1_100)
        report = LocalProvider(tmp_path / "i.sqlite").index(root)
    finally:
        with contextlib.suppress(OSError):
            _remove_deep(root, 1_100)
        (root / "top.md").unlink(missing_ok=True)
        root.rmdir()
    assert report.added == ("top.md",)
    assert [(s.path, s.reason) for s in report.skipped] == [
        ("d/" * 65, "folder nested deeper than 64 levels (not entered)")
    ]


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_max_depth_is_checked(tmp_path: Path, docs: Path, bad: Any) -> None:
    with pytest.raises(ProviderConfigError, match="max_depth"):
        LocalProvider(tmp_path / "i.sqlite").index(docs, max_depth=bad)


# --------------------------------------------------------------------------- PDF expansion


def _pdf(pages: list[bytes]) -> bytes:
    """A PDF whose pages have these Flate-compressed content streams (Helvetica as /F1)."""
    first = 4
    ids = [first + 2 * i for i in range(len(pages))]
    kids = " ".join(f"{pid} 0 R" for pid in ids)
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode(),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    }
    for content, pid in zip(pages, ids, strict=True):
        objects[pid] = (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {pid + 1} 0 R >>"
        ).encode()
        packed = zlib.compress(content, 9)
        objects[pid + 1] = (
            f"<< /Length {len(packed)} /Filter /FlateDecode >>\nstream\n".encode()
            + packed
            + b"\nendstream"
        )
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += f"{number} 0 obj\n".encode() + objects[number] + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offsets[n]:010d} 00000 n \n".encode() for n in sorted(objects))
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out)


def _text_page(chars: int) -> bytes:
    """A page whose extracted text is ``chars`` code points (pypdf returns the string as is)."""
    return b"BT /F1 12 Tf 72 700 Td (" + b"w" * chars + b") Tj ET"


def _pdf_outcome(tmp_path: Path, name: str, pdf: bytes, **limits: int) -> tuple[str, ...] | str:
    root = tmp_path / name
    root.mkdir()
    (root / "book.pdf").write_bytes(pdf)
    report = LocalProvider(tmp_path / f"{name}.sqlite").index(root, **limits)
    return report.added if report.added else report.skipped[0].reason


def test_a_pdf_page_with_more_text_than_max_page_chars_skips_the_file(tmp_path: Path) -> None:
    pdf = _pdf([_text_page(100), _text_page(300)])
    assert _pdf_outcome(tmp_path, "at", pdf, max_page_chars=300) == ("book.pdf",)
    assert _pdf_outcome(tmp_path, "over", pdf, max_page_chars=299) == (
        "page 2's text is longer than 299 characters (the limit on a PDF page)"
    )
    assert MAX_PAGE_CHARS == 1024 * 1024


def test_a_pdf_with_more_text_than_max_pdf_chars_is_skipped(tmp_path: Path) -> None:
    pdf = _pdf([_text_page(200), _text_page(200), _text_page(200)])
    assert _pdf_outcome(tmp_path, "at", pdf, max_pdf_chars=600) == ("book.pdf",)
    assert _pdf_outcome(tmp_path, "over", pdf, max_pdf_chars=599) == (
        "its text is longer than 599 characters (the limit on a PDF; reached at page 3)"
    )
    assert MAX_PDF_CHARS == 16 * 1024 * 1024


def test_a_pdf_page_whose_content_is_over_the_limit_is_not_parsed(tmp_path: Path) -> None:
    page = _text_page(50)
    pdf = _pdf([page])
    assert _pdf_outcome(tmp_path, "at", pdf, max_page_content_bytes=len(page)) == ("book.pdf",)
    assert _pdf_outcome(tmp_path, "over", pdf, max_page_content_bytes=len(page) - 1) == (
        f"page 1's content is larger than {len(page) - 1} bytes (the limit on a PDF page)"
    )
    assert MAX_PAGE_CONTENT_BYTES == 8 * 1024 * 1024


def test_a_small_pdf_that_expands_enormously_stops_early(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: a 147 kB PDF became 60 MB of text under a 1 MB max_file_bytes. Here 40 pages of
    # 100,000 code points each (4 M in all) come from a file of about 25 kB; the limit of 150,000
    # stops the extraction at the second page, having produced at most about that much text.
    from pypdf import PageObject

    produced: list[int] = []
    extract = PageObject.extract_text

    def counting(page: PageObject, *args: Any, **kwargs: Any) -> str:
        visitor = kwargs["visitor_text"]

        def count(text: str, *rest: Any) -> None:
            produced.append(len(text))
            visitor(text, *rest)

        kwargs["visitor_text"] = count
        return extract(page, *args, **kwargs)

    monkeypatch.setattr(PageObject, "extract_text", counting)
    line = b"BT /F1 12 Tf 72 700 Td (" + b"w" * 1_000 + b") Tj ET\n"
    pdf = _pdf([line * 100] * 40)
    assert len(pdf) < 30_000
    outcome = _pdf_outcome(tmp_path, "bomb", pdf, max_file_bytes=1_000_000, max_pdf_chars=150_000)
    assert outcome == (
        "its text is longer than 150000 characters (the limit on a PDF; reached at page 2)"
    )
    assert sum(produced) <= 2 * 150_000 + 1_000


@pytest.mark.parametrize("name", ["max_pdf_chars", "max_page_chars", "max_page_content_bytes"])
@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_pdf_limits_are_checked(tmp_path: Path, docs: Path, name: str, bad: Any) -> None:
    with pytest.raises(ProviderConfigError, match=name):
        LocalProvider(tmp_path / "i.sqlite").index(docs, **{name: bad})


# --------------------------------------------------------------------------- concurrent runs


def test_a_concurrent_first_build_waits_for_the_other_run(tmp_path: Path, docs: Path) -> None:
    # Before: the second run was told at once that a healthy index "is not a usable index ...
    # delete it". Now it waits for the first to commit, then finds everything unchanged.
    index = tmp_path / "i.sqlite"
    first_paused = threading.Event()
    release = threading.Event()
    second_waiting = threading.Event()
    outcome: dict[str, Any] = {}

    def pause(event: IndexProgress) -> None:
        if event.done == 1:
            first_paused.set()
            assert release.wait(20)

    def run(name: str, **kwargs: Any) -> None:
        try:
            outcome[name] = LocalProvider(index).index(docs, **kwargs)
        except Exception as exc:  # reported by the assertions below
            outcome[name] = exc
            second_waiting.set()

    first = threading.Thread(target=run, args=("first",), kwargs={"progress": pause})
    first.start()
    assert first_paused.wait(20)
    second = threading.Thread(target=run, args=("second",), kwargs={"waiting": second_waiting.set})
    second.start()
    assert second_waiting.wait(20)
    release.set()
    first.join(20)
    second.join(20)
    assert isinstance(outcome["first"], IndexReport), outcome["first"]
    assert isinstance(outcome["second"], IndexReport), outcome["second"]
    assert len(outcome["first"].added) == 3 and len(outcome["second"].unchanged) == 3
    with sqlite3.connect(index) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_run_waits_for_another_runs_update_and_says_so(tmp_path: Path, docs: Path) -> None:
    index = tmp_path / "i.sqlite"
    LocalProvider(index).index(docs)
    _write(docs, "meadow.md", "Chestnuts fall in the orchard.")
    waiting = threading.Event()
    outcome: list[object] = []
    with contextlib.closing(sqlite3.connect(index, isolation_level=None)) as writer:
        writer.execute("BEGIN IMMEDIATE")  # another run's update, in WAL mode
        worker = threading.Thread(
            target=lambda: outcome.append(LocalProvider(index).index(docs, waiting=waiting.set))
        )
        worker.start()
        assert waiting.wait(20)  # told before waiting, while the lock is still held
        writer.execute("ROLLBACK")
    worker.join(20)
    assert isinstance(outcome[0], IndexReport) and outcome[0].updated == ("meadow.md",)


def test_a_run_that_waits_too_long_says_another_run_is_in_progress(
    tmp_path: Path, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deerflow.knowledge.providers.errors import UpstreamError
    from deerflow.knowledge.providers.local import _schema

    index = tmp_path / "i.sqlite"
    LocalProvider(index).index(docs)
    monkeypatch.setattr(_schema, "BUSY_TIMEOUT_MS", 50)
    _write(docs, "meadow.md", "Chestnuts fall in the orchard.")
    for journal in ("DELETE", "WAL"):  # another first build, another update
        with contextlib.closing(sqlite3.connect(index, isolation_level=None)) as writer:
            writer.execute(f"PRAGMA journal_mode = {journal}")
            writer.execute("BEGIN IMMEDIATE")  # held until the run below has given up
            with pytest.raises(UpstreamError, match="Another `deerflow-knowledge index` run"):
                LocalProvider(index).index(docs)
            writer.execute("ROLLBACK")
            writer.execute("PRAGMA journal_mode = WAL")
    assert LocalProvider(index).index(docs).updated == ("meadow.md",)  # nothing was lost


# --------------------------------------------------------------------------- several folders


def test_indexing_another_folder_asks_before_dropping_anything(tmp_path: Path, docs: Path) -> None:
    # Before: the second folder silently replaced the first ("Removed 3").
    from deerflow.knowledge.providers.local import FolderChoiceNeeded

    index = tmp_path / "i.sqlite"
    notes = tmp_path / "notes"
    _write(notes, "owls.md", "Owls hunt at night.")
    local = LocalProvider(index)
    local.index(docs)
    with pytest.raises(FolderChoiceNeeded) as refused:
        local.index(notes)
    assert refused.value.documents == 3
    assert refused.value.folders == (os.path.realpath(docs),)
    assert _titles(local, "antlers") == ["deer.md"]  # nothing changed

    added = local.index(notes, mode="add")
    assert added.added == ("owls.md",) and added.removed == ()
    assert added.documents == 4 and added.other_folders == ((os.path.realpath(docs), 3),)
    assert _titles(local, "antlers") == ["deer.md"] and _titles(local, "owls") == ["owls.md"]

    # Each folder is then updated on its own, without a prompt; the other's documents stay.
    (docs / "meadow.md").unlink()
    again = local.index(docs)
    assert again.removed == ("meadow.md",) and len(again.unchanged) == 2
    assert _titles(local, "owls") == ["owls.md"]

    replaced = local.index(notes, mode="replace")
    assert replaced.removed == ("deer.md", "guides/forest.txt")
    assert replaced.unchanged == ("owls.md",) and replaced.other_folders == ()
    assert local.search_sync("antlers").hits == ()
    local.close()


def test_the_same_folder_named_another_way_is_the_same_folder(
    tmp_path: Path, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = LocalProvider(tmp_path / "i.sqlite")
    local.index(docs)
    (tmp_path / "alias").symlink_to(docs, target_is_directory=True)
    assert len(local.index(tmp_path / "alias").unchanged) == 3
    monkeypatch.chdir(tmp_path)
    assert len(local.index(Path("docs")).unchanged) == 3


def test_an_added_folder_never_overwrites_a_title_of_another(tmp_path: Path, docs: Path) -> None:
    other = tmp_path / "other"
    _write(other, "deer.md", "Other deer text about elk.")
    _write(other, "elk.md", "Elk bugle in the autumn.")
    local = LocalProvider(tmp_path / "i.sqlite")
    local.index(docs)
    report = local.index(other, mode="add")
    assert report.added == ("elk.md",)
    assert [(s.path, s.reason) for s in report.skipped] == [
        (
            "deer.md",
            f"the index already holds a document of this path from {os.path.realpath(docs)}",
        )
    ]
    assert local.search_sync("elk bugle").hits[0].title == "elk.md"
    deer = local.search_sync("antlers").hits
    assert deer[0].title == "deer.md" and "Elk" not in deer[0].text


def test_a_version_2_index_records_its_folder_and_updates_without_a_prompt(
    tmp_path: Path, docs: Path
) -> None:
    index = tmp_path / "i.sqlite"
    LocalProvider(index).index(docs)
    with sqlite3.connect(index) as connection:  # what version 2 wrote
        connection.execute("ALTER TABLE documents DROP COLUMN folder")
        connection.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
        connection.execute("INSERT INTO meta(key, value) VALUES ('root', ?)", (docs.as_posix(),))
    _write(docs, "meadow.md", "Chestnuts fall in the orchard.")
    report = LocalProvider(index).index(docs)
    assert report.updated == ("meadow.md",) and len(report.unchanged) == 2
    with sqlite3.connect(index) as connection:
        assert connection.execute("SELECT DISTINCT folder FROM documents").fetchall() == [
            (os.path.realpath(docs),)
        ]


@pytest.mark.parametrize("bad", ["update-all", None])
def test_mode_is_checked(tmp_path: Path, docs: Path, bad: Any) -> None:
    with pytest.raises(ProviderConfigError, match="mode"):
        LocalProvider(tmp_path / "i.sqlite").index(docs, mode=bad)


# --------------------------------------------------------------------------- exclusions


def test_exclude_patterns_leave_out_files_and_whole_folders(tmp_path: Path, docs: Path) -> None:
    for number in range(5):
        _write(docs, f"node_modules/pkg{number}/README.md", "Package readme about deer antlers.")
    _write(docs, "drafts/todo.md", "A draft.")
    _write(docs, "drafts/keep.md", "Kept draft.")
    report = LocalProvider(tmp_path / "i.sqlite").index(
        docs, exclude=["node_modules", "drafts/*", "!drafts/keep.md"]
    )
    assert report.added == ("deer.md", "drafts/keep.md", "guides/forest.txt", "meadow.md")
    assert [(s.path, s.reason) for s in report.skipped] == [
        ("drafts/todo.md", "excluded by the pattern 'drafts/*'"),
        ("node_modules/", "excluded by the pattern 'node_modules'"),  # once, not per file
    ]


def test_gitignore_files_are_honoured_unless_turned_off(tmp_path: Path, docs: Path) -> None:
    _write(docs, ".gitignore", "# build output\nbuild/\n*.txt\n")
    _write(docs, "build/out.md", "Generated.")
    _write(docs, "guides/.gitignore", "!forest.txt\nold.md\n")  # deeper: decides first
    _write(docs, "guides/old.md", "Old guide.")
    _write(docs, "notes.txt", "Ignored notes.")
    report = LocalProvider(tmp_path / "a.sqlite").index(docs)
    assert report.added == ("deer.md", "guides/forest.txt", "meadow.md")
    assert [(s.path, s.reason) for s in report.skipped] == [
        (".gitignore", "hidden file (its name starts with a dot)"),
        ("build/", "ignored by .gitignore ('build/')"),
        ("guides/.gitignore", "hidden file (its name starts with a dot)"),
        ("guides/old.md", "ignored by guides/.gitignore ('old.md')"),
        ("notes.txt", "ignored by .gitignore ('*.txt')"),
    ]
    everything = LocalProvider(tmp_path / "b.sqlite").index(docs, gitignore=False)
    assert len(everything.added) == 6


@pytest.mark.parametrize("bad", ["", "   ", "a\x00b", 3])
def test_an_invalid_exclude_pattern_is_a_config_error(tmp_path: Path, docs: Path, bad: Any) -> None:
    with pytest.raises(ProviderConfigError, match="exclude"):
        LocalProvider(tmp_path / "i.sqlite").index(docs, exclude=[bad])
    with pytest.raises(ProviderConfigError, match="exclude"):
        LocalProvider(tmp_path / "i.sqlite").index(docs, exclude="node_modules")
