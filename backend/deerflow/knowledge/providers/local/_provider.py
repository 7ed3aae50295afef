"""The local provider itself: search over the index file, and the entry to an index run.

Searches run the blocking SQLite query (:mod:`._query`) in a worker thread on pooled read-only
connections (:func:`._schema.connect_reader`); :meth:`LocalProvider.index` hands the run to
:class:`._writer.IndexWriter`. A hit's title is the file's path relative to the indexed folder,
with POSIX separators (``guides/setup.md``); ``page`` comes only from a PDF's real page; no URL is
ever built from a path, and a dataset name appears only when the operator configures one.

Tested in tests/test_providers_local.py.
"""

from __future__ import annotations

import asyncio
import os
import queue
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from deerflow.knowledge._provider_settings import LOCAL as PROVIDER_NAME
from deerflow.knowledge.contract import KnowledgeCapabilities, RetrievalHit, RetrievalResult
from deerflow.knowledge.providers._service import Service
from deerflow.knowledge.providers.documents import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_PAGE_CHARS,
    MAX_PAGE_CONTENT_BYTES,
    MAX_PDF_CHARS,
)
from deerflow.knowledge.providers.errors import ProviderConfigError
from deerflow.knowledge.providers.local import _files, _query, _schema
from deerflow.knowledge.providers.local._files import CHILD_MIN_BYTES
from deerflow.knowledge.providers.local._report import IndexMode, IndexProgress, IndexReport
from deerflow.knowledge.providers.local._writer import IndexWriter
from deerflow.knowledge.providers.parse.chunking import DEFAULT_CHUNK_CHARS, DEFAULT_CHUNK_OVERLAP
from deerflow.knowledge.providers.parse.chunking import check_chunking as _check_chunking
from deerflow.knowledge.rules import MAX_SOURCES, is_valid_dataset_name

_SERVICE: Final = Service(name="the local index", provider=PROVIDER_NAME)
DEFAULT_LIMIT: Final = 8
#: At most this many matching chunks are scored by FTS5's bm25() per query (see
#: :mod:`._query`); a keyword of :class:`LocalProvider`.
DEFAULT_SCORED_ROWS: Final = _query.DEFAULT_SCORED_ROWS
MAX_LIMIT: Final = MAX_SOURCES
MAX_QUERY_CHARS: Final = 4_096
#: bm25() column weights: chunk text, then the document's path.
_BM25_WEIGHTS: Final = (1.0, 0.5)
_POOL_SIZE: Final = 4


def sample_corpus_path() -> Path:
    """The folder of bundled sample documents (about this project) shipped with the package."""
    return Path(__file__).resolve().parents[2] / "sample_corpus"


class LocalProvider:
    """A :class:`~deerflow.knowledge.contract.RetrievalProvider` over a local SQLite FTS5 index.

    ``index_path`` need not exist until the first :meth:`index` run; searching a missing or foreign
    file raises :class:`~deerflow.knowledge.providers.errors.ProviderConfigError`. Searches run the
    sync SQLite query in a worker thread on pooled read-only connections; :meth:`close` closes them.
    """

    def __init__(
        self,
        index_path: str | os.PathLike[str],
        *,
        limit: int = DEFAULT_LIMIT,
        dataset_name: str | None = None,
        chunk_chars: int = DEFAULT_CHUNK_CHARS,
        chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
        scored_rows: int = DEFAULT_SCORED_ROWS,
    ) -> None:
        self._index_path = Path(index_path).expanduser().absolute()
        if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
            raise ProviderConfigError(
                f"Invalid local limit: expected an integer from 1 to {MAX_LIMIT}.",
                provider=PROVIDER_NAME,
            )
        if dataset_name is not None and not is_valid_dataset_name(dataset_name):
            raise ProviderConfigError(
                "Invalid local dataset_name: expected 1-512 characters, not blank, without "
                "control characters.",
                provider=PROVIDER_NAME,
            )
        _check_chunking(chunk_chars, chunk_overlap)
        if type(scored_rows) is not int or scored_rows < MAX_LIMIT:
            raise ProviderConfigError(
                f"Invalid local scored_rows: expected an integer of at least {MAX_LIMIT}.",
                provider=PROVIDER_NAME,
            )
        self._scored_rows = scored_rows
        self._limit = limit
        self._dataset_name = dataset_name
        self._chunk_chars = chunk_chars
        self._chunk_overlap = chunk_overlap
        self._pool: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()

    # ------------------------------------------------------------------ protocol surface

    @property
    def name(self) -> str:
        return PROVIDER_NAME

    @property
    def capabilities(self) -> KnowledgeCapabilities:
        return KnowledgeCapabilities()

    @property
    def index_path(self) -> Path:
        return self._index_path

    def __repr__(self) -> str:
        return (
            f"LocalProvider(index_path={str(self._index_path)!r}, limit={self._limit}, "
            f"dataset_name={self._dataset_name!r}, chunk_chars={self._chunk_chars}, "
            f"chunk_overlap={self._chunk_overlap})"
        )

    async def search(self, query: str, *, limit: int | None = None) -> RetrievalResult:
        """The best chunks for ``query`` by BM25, at most ``limit`` (default: the provider's).

        Raises :class:`ProviderQueryError` for a blank or over-long query or a bad ``limit``, and
        :class:`ProviderConfigError` when the index is missing or not a deerflow-knowledge index.
        """
        return await asyncio.to_thread(self.search_sync, query, limit=limit)

    def search_sync(self, query: str, *, limit: int | None = None) -> RetrievalResult:
        """The blocking search behind :meth:`search` (for scripts and benchmarks)."""
        _SERVICE.search_arguments(query, limit, max_query_chars=MAX_QUERY_CHARS)
        count = min(limit or self._limit, MAX_LIMIT)
        terms = _query.query_terms(query)
        if not terms:
            return RetrievalResult(provider=PROVIDER_NAME, query=query)
        rows = self._rows(terms, count)
        hits = tuple(
            RetrievalHit(
                text=row.text,
                title=row.title,
                page=row.page,
                dataset_name=self._dataset_name,
                score=row.score,
            )
            for row in rows
        )
        return RetrievalResult(provider=PROVIDER_NAME, query=query, hits=hits)

    # ------------------------------------------------------------------ reading the index

    def _rows(self, terms: list[str], count: int) -> list[_query.Row]:
        try:
            connection = self._pool.get_nowait()
        except queue.Empty:
            connection = _schema.connect_reader(self._index_path)
        try:
            rows = _query.search(
                connection,
                terms,
                count,
                weights=_BM25_WEIGHTS,
                tokenizer=_schema.TOKENIZER,
                scored_rows=self._scored_rows,
            )
        except sqlite3.Error as exc:
            connection.close()
            if not self._index_path.is_file():
                raise _schema.missing(self._index_path) from None
            raise _schema.unreadable(self._index_path, exc) from None
        if self._pool.qsize() < _POOL_SIZE:
            self._pool.put(connection)
        else:
            connection.close()
        return rows

    def close(self) -> None:
        """Close the pooled read connections (searching afterwards opens new ones)."""
        while True:
            try:
                self._pool.get_nowait().close()
            except queue.Empty:
                return

    # ------------------------------------------------------------------ writing the index

    def index(
        self,
        root: str | os.PathLike[str],
        *,
        mode: IndexMode = "update",
        exclude: Sequence[str] = (),
        gitignore: bool = True,
        progress: Callable[[IndexProgress], None] | None = None,
        waiting: Callable[[], None] | None = None,
        max_file_bytes: int = MAX_FILE_BYTES,
        max_depth: int = MAX_DEPTH,
        max_pdf_chars: int = MAX_PDF_CHARS,
        max_page_chars: int = MAX_PAGE_CHARS,
        max_page_content_bytes: int = MAX_PAGE_CONTENT_BYTES,
        child_min_bytes: int | None = CHILD_MIN_BYTES,
    ) -> IndexReport:
        """Build or update the index so that it mirrors the supported files under ``root``.

        Runs in one write transaction (readers keep seeing the previous state until it commits).
        An index can hold several folders: ``mode`` says what happens to the documents of other
        folders (see :data:`IndexMode`; by default the run refuses with
        :class:`FolderChoiceNeeded` rather than drop them). ``exclude`` patterns and, unless
        ``gitignore`` is False, the folder's ``.gitignore`` files leave paths out (both in
        ``.gitignore`` syntax). Raises :class:`ProviderConfigError` when ``root`` is not a
        folder, a pattern or limit is invalid, or the index file is not a deerflow-knowledge
        index; everything left out is reported with a reason instead: a file larger than
        ``max_file_bytes``, a PDF whose text is longer than ``max_pdf_chars`` (``max_page_chars``
        on one page, or whose page content is over ``max_page_content_bytes``), a folder deeper
        than ``max_depth``, hidden entries, unsupported types, symbolic links, and anything that
        is not a regular file (a named pipe, socket or device is never opened in a way that could
        block the write transaction).

        If another run is writing the index, this one waits for it (calling ``waiting`` once)
        up to the busy timeout, then raises :class:`UpstreamError` having changed nothing.

        When the files weigh ``child_min_bytes`` or more together and the machine has an idle
        core, they are read and chunked in a child process (on that core, while this one writes);
        ``None`` keeps every run in this process. The index is the same either way. Raises
        :class:`UpstreamError` (and leaves the index as it was) if that process fails or dies.
        """
        return IndexWriter(
            self._index_path, chunk_chars=self._chunk_chars, chunk_overlap=self._chunk_overlap
        ).index(
            root,
            mode=mode,
            exclude=exclude,
            gitignore=gitignore,
            progress=progress,
            waiting=waiting,
            max_file_bytes=max_file_bytes,
            max_depth=max_depth,
            max_pdf_chars=max_pdf_chars,
            max_page_chars=max_page_chars,
            max_page_content_bytes=max_page_content_bytes,
            child_min_bytes=child_min_bytes,
        )

    def _chunks(self, file: Path, data: bytes) -> list[tuple[int | None, str]]:
        """A file's chunks as an index run makes them (for the benchmarks' floor)."""
        settings = _files.Settings(MAX_FILE_BYTES, self._chunk_chars, self._chunk_overlap)
        return _files.chunks(file, data, settings)
