"""The embedded default provider: a SQLite FTS5 (BM25) index over a folder of documents.

``LocalProvider(index_path)`` searches an index file; :meth:`LocalProvider.index` builds or updates
it from a folder of Markdown (``.md``, ``.markdown``), text (``.txt``) and PDF (``.pdf``) files.

* **Evidence.** A hit's title is the file's path relative to the indexed folder, with POSIX
  separators (``guides/setup.md``). ``page`` comes only from a PDF's real page (one chunk never
  spans pages); text files have none. No URL is ever built from a path, and a dataset name appears
  only when the operator configures one.
* **Chunks.** :mod:`~deerflow.knowledge.providers.chunking` (pure) cuts text into chunks of at
  most ``chunk_chars`` code points on paragraph, sentence and word boundaries; chunks are slices of
  the extracted text, so an excerpt is always text the document really contains.
* **Reading.** :mod:`~deerflow.knowledge.providers.documents` finds the files and reads them
  (PDF text page by page, within limits on what it expands to), from a descriptor of the folder
  that this module opens once per run, so that nothing outside the folder is read;
  :mod:`~deerflow.knowledge.providers._ignore` applies exclude patterns and ``.gitignore`` files.
  This module is the index: its schema, the incremental writer and the search. It stays one
  module because the writer and the reader share the schema, its version and the transaction
  rules below.
* **Folders.** Each document records the folder it was indexed from (its real path). A run
  updates its own folder's documents and, by its ``mode``, refuses to start beside another
  folder's documents (the default: never drop them unasked), keeps them, or removes them. A
  title names one document, so a path another folder already has is skipped with a reason.
* **Incremental.** A file whose content hash is unchanged is skipped; a changed file is re-chunked;
  a file that disappeared (or is now skipped) leaves the index. One write transaction covers the
  whole run, and the database is in WAL mode: a concurrent reader sees the index as it was before
  the run or after it, never half-way. (A first build, into an index with no documents yet, uses
  a rollback journal instead and switches back to WAL when it ends: a reader then waits for the
  commit, up to the busy timeout, instead of seeing the empty index; a second run waits for it
  too.) An unreadable or corrupt file, one larger than
  ``max_file_bytes``, and anything that is not a regular file (a named pipe, socket or device:
  opened non-blocking and never read, so nothing waits while holding the write transaction) are
  skipped with a reason in the :class:`IndexReport`; the rest is indexed.
* **Writing.** Files are read and chunked ahead of the writer (up to a byte budget): for a run
  of at least ``CHILD_MIN_BYTES`` on a machine with an idle core in a child process, on that core
  (:mod:`~deerflow.knowledge.providers._local_reader`), else in a thread, while SQLite writes.
  Chunk rows enter the full-text index in batches of megabytes, one statement each: FTS5 ends
  every statement with a new segment, so row by row it would spend more time merging segments
  than tokenizing (a first build does not merge its batches' segments at all). A first build, or one that re-chunks
  every file, empties the full-text index first; an update deletes a row's terms with its old
  values, as an external-content table needs. The writer syncs at commit (``synchronous =
  FULL``): a finished run survives a crash or power loss, an interrupted one leaves the index
  as it was.
* **Queries.** Free text becomes a safe FTS5 expression: every token is quoted as a string, so user
  text can never inject FTS5 syntax (``OR``, ``NEAR(``, ``title:*``, ``^``); the tokens are OR-ed
  and ranked with ``bm25()`` over Porter-stemmed tokens (``citations`` finds ``citation``). A
  query with no word characters finds nothing. ``bm25()`` scores at most ``scored_rows`` chunks
  per query: terms too common for that are added by re-scoring the best candidates of the rarer
  ones (:mod:`deerflow.knowledge.providers._local_query`), so latency stays flat at 100k chunks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import re
import sqlite3
import time
import urllib.parse
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final, Literal

from deerflow.knowledge.contract import KnowledgeCapabilities, RetrievalHit, RetrievalResult
from deerflow.knowledge.providers import _local_query, _local_reader
from deerflow.knowledge.providers._local_reader import CHILD_MIN_BYTES
from deerflow.knowledge.providers._local_reader import Prepared as _Prepared
from deerflow.knowledge.providers._local_reader import read_ahead as _read_ahead
from deerflow.knowledge.providers._service import Service
from deerflow.knowledge.providers.chunking import (
    DEFAULT_CHUNK_CHARS,
    DEFAULT_CHUNK_OVERLAP,
    MAX_CHUNK_CHARS,
    MIN_CHUNK_CHARS,
    chunk_text,
)
from deerflow.knowledge.providers.chunking import check_chunking as _check_chunking
from deerflow.knowledge.providers.documents import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_PAGE_CHARS,
    MAX_PAGE_CONTENT_BYTES,
    MAX_PDF_CHARS,
    SUPPORTED_SUFFIXES,
    PdfLimits,
    SkippedFile,
)
from deerflow.knowledge.providers.documents import Candidate as _Candidate
from deerflow.knowledge.providers.documents import FolderReader as _FolderReader
from deerflow.knowledge.providers.documents import SkipFile as _SkipFile
from deerflow.knowledge.providers.documents import discover as _discover
from deerflow.knowledge.providers.documents import one_line_path as _one_line
from deerflow.knowledge.providers.documents import open_folder as _open_folder
from deerflow.knowledge.providers.errors import ProviderConfigError, UpstreamError
from deerflow.knowledge.rules import MAX_SOURCES, is_valid_dataset_name

__all__ = [
    "CHILD_MIN_BYTES",
    "DEFAULT_CHUNK_CHARS",
    "DEFAULT_CHUNK_OVERLAP",
    "DEFAULT_LIMIT",
    "DEFAULT_SCORED_ROWS",
    "MAX_CHUNK_CHARS",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_LIMIT",
    "MAX_PAGE_CHARS",
    "MAX_PAGE_CONTENT_BYTES",
    "MAX_PDF_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TERMS",
    "MIN_CHUNK_CHARS",
    "PROVIDER_NAME",
    "SCHEMA_VERSION",
    "SUPPORTED_SUFFIXES",
    "FileOutcome",
    "FolderChoiceNeeded",
    "IndexMode",
    "IndexProgress",
    "IndexReport",
    "LocalProvider",
    "SkippedFile",
    "chunk_text",
    "fts_query",
    "query_terms",
    "sample_corpus_path",
    "tokenize",
]

logger = logging.getLogger(__name__)

PROVIDER_NAME: Final = "local"
_SERVICE: Final = Service(name="the local index", provider=PROVIDER_NAME)
DEFAULT_LIMIT: Final = 8
#: At most this many matching chunks are scored by FTS5's bm25() per query (see
#: :mod:`deerflow.knowledge.providers._local_query`); a keyword of :class:`LocalProvider`.
DEFAULT_SCORED_ROWS: Final = _local_query.DEFAULT_SCORED_ROWS
MAX_LIMIT: Final = MAX_SOURCES
MAX_QUERY_CHARS: Final = 4_096
#: Distinct query terms kept, in order of first appearance; the rest are ignored.
MAX_QUERY_TERMS: Final = 64
SCHEMA_VERSION: Final = 3
#: Index schemas this version reads. Version 1 kept the full-text index in step with triggers;
#: version 2 writes it from code (in bulk for a full build), otherwise the same tables; version 3
#: records the folder each document was indexed from (an index can hold several). The first
#: ``index`` run on an older file upgrades it in place.
_READABLE_SCHEMAS: Final = frozenset({"1", "2", str(SCHEMA_VERSION)})

_FORMAT: Final = "deerflow-knowledge-local"
_CHUNKER_VERSION: Final = 1
_BUSY_TIMEOUT_MS: Final = 30_000
#: bm25() column weights: chunk text, then the document's path.
_BM25_WEIGHTS: Final = (1.0, 0.5)
_POOL_SIZE: Final = 4
#: Bytes of files read and chunked ahead of the writer (in a worker thread, while SQLite, which
#: releases the GIL, tokenizes and writes the previous ones): bounds the memory held for them. It
#: is more than a full-text batch, so that the reader keeps going while one batch is indexed.
_READ_AHEAD_BYTES: Final = 32 * 1024 * 1024
#: Chunk text (code points) written to the full-text index in one statement. FTS5 writes what it
#: holds in memory as a new segment at the end of every statement, and merging segments costs
#: more than making them: row by row, it would cost twice as much as in a few large batches.
_FTS_BATCH_CHARS: Final = 8 * 1024 * 1024
#: FTS5's ``hashsize``: the terms held in memory before a segment is written (FTS5's default,
#: 1 MiB, would cut one batch into many segments that then have to be merged).
_FTS_HASH_BYTES: Final = 32 * 1024 * 1024
#: FTS5's ``automerge`` (its default), set again at the end of a build, which runs with none: a
#: build's few segments (one per batch, about eight at 100k chunks) cost searches little, and not
#: merging them while writing saves about a sixth of FTS5's CPU. Later runs merge as FTS5 does.
_FTS_AUTOMERGE: Final = 4

_TOKEN_RE = re.compile(r"[^\W_]+")
#: Dropped from queries (unless nothing else is left): English function words — pronouns,
#: auxiliaries, articles, conjunctions, question words and the pieces a tokenizer cuts from
#: contractions ("doesn't" → "doesn", "t"). They match nearly every chunk, and a question is
#: mostly made of them ("Does it have to…?"): kept, they rank chunks by how a question is asked
#: rather than by what it asks about. Negations ("no", "not", "never", "without") and words of
#: position or order ("before", "after", "only") carry meaning and are kept.
_STOPWORDS: Final = frozenset(
    """
    a about actually all also am an and any anyone anything are aren as at be because been being
    both but by can cannot could couldn d did didn do does doesn doing don each either else even
    ever every for from had hadn has hasn have haven having he her here hers herself him himself
    his how however i if in into is isn it its itself just let ll m many me might much must
    mustn my myself neither nor now of on one onto or ought our ours ourselves own per quite
    rather re really s shall shan she should shouldn so some someone something such t than that
    the their theirs them themselves then there these they this those through thus to too upon
    us ve very via was wasn we were weren what whatever when whenever where whether which while
    who whom whose why will with within would wouldn yet you your yours yourself yourselves
    """.split()
)
_TOKENIZER: Final = "porter unicode61 remove_diacritics 2"
#: The schema, one statement per item (run inside the creating transaction).
_SCHEMA: Final = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE documents (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        sha256 TEXT NOT NULL,
        size INTEGER NOT NULL,
        chunks INTEGER NOT NULL,
        folder TEXT NOT NULL DEFAULT ''
    )""",
    """CREATE TABLE chunks (
        id INTEGER PRIMARY KEY,
        document_id INTEGER NOT NULL REFERENCES documents(id),
        ordinal INTEGER NOT NULL,
        page INTEGER,
        title TEXT NOT NULL,
        text TEXT NOT NULL
    )""",
    "CREATE INDEX chunks_by_document ON chunks(document_id)",
    f"""CREATE VIRTUAL TABLE chunks_fts USING fts5(
        text, title, content='chunks', content_rowid='id',
        tokenize="{_TOKENIZER}"
    )""",
    f"INSERT INTO meta(key, value) VALUES ('format', '{_FORMAT}'), "
    f"('schema_version', '{SCHEMA_VERSION}')",
)


def sample_corpus_path() -> Path:
    """The folder of bundled sample documents (about this project) shipped with the package."""
    return Path(__file__).resolve().parent.parent / "sample_corpus"


# --------------------------------------------------------------------------- queries


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens (letters and digits) with common English stopwords dropped.

    If every token is a stopword, the stopwords are kept, so ``"the who"`` still searches.
    """
    tokens = [token.lower() for token in _TOKEN_RE.findall(text)]
    kept = [token for token in tokens if token not in _STOPWORDS]
    return kept or tokens


def fts_query(text: str, *, max_terms: int = MAX_QUERY_TERMS) -> str | None:
    """A safe FTS5 MATCH expression for free ``text``, or None when it has no word tokens.

    Every token is a double-quoted FTS5 string (tokens hold only letters and digits, so there is
    nothing to escape), joined with ``OR``: operators, column filters, prefixes and ``NEAR`` in the
    user's text are just words.
    """
    terms = query_terms(text, max_terms=max_terms)
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms)


def query_terms(text: str, *, max_terms: int = MAX_QUERY_TERMS) -> list[str]:
    """The distinct tokens of ``text`` that a search looks for, in order, at most ``max_terms``."""
    return list(dict.fromkeys(tokenize(text)))[:max_terms]


# --------------------------------------------------------------------------- index report


FileOutcome = Literal["added", "updated", "unchanged", "removed", "skipped"]
#: What a run does with documents indexed from other folders: ``"update"`` (the default) refuses
#: to run while there are any (:class:`FolderChoiceNeeded`), ``"add"`` keeps them beside this
#: folder's, ``"replace"`` removes them. The folder's own documents are updated in every mode.
IndexMode = Literal["update", "add", "replace"]
_MODES: Final = ("update", "add", "replace")


class FolderChoiceNeeded(ProviderConfigError):
    """The index holds documents indexed from other folders, and the run did not say whether to
    keep them (``mode="add"``) or remove them (``mode="replace"``); nothing was changed."""

    def __init__(self, message: str, *, folders: tuple[str, ...], documents: int) -> None:
        super().__init__(message, provider=PROVIDER_NAME)
        self.folders = folders
        """The other folders, as indexed (real paths)."""
        self.documents = documents
        """How many documents they hold."""


@dataclass(frozen=True, slots=True)
class IndexProgress:
    """Reported to the ``progress`` callback after each file (``done`` of ``total``)."""

    done: int
    total: int
    path: str
    outcome: FileOutcome


@dataclass(frozen=True, slots=True)
class IndexReport:
    root: str
    """The folder indexed (its real path, POSIX separators)."""
    index_path: str
    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    skipped: tuple[SkippedFile, ...] = ()
    chunks: int = 0
    """Chunks in the index after the run."""
    chunks_written: int = 0
    """Chunks written by this run (added and updated files)."""
    documents: int = 0
    """Documents in the index after the run."""
    other_folders: tuple[tuple[str, int], ...] = ()
    """The other folders whose documents the index holds after the run, with their counts."""
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)


# --------------------------------------------------------------------------- provider


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
        terms = query_terms(query)
        if not terms:
            return RetrievalResult(provider=PROVIDER_NAME, query=query)
        rows = self._query(terms, count)
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

    def _missing(self) -> ProviderConfigError:
        return ProviderConfigError(
            f"No index at {self._index_path}; run `deerflow-knowledge index PATH` first.",
            provider=PROVIDER_NAME,
        )

    def _foreign(self, what: str) -> ProviderConfigError:
        return ProviderConfigError(
            f"The file at {self._index_path} is not a usable deerflow-knowledge index ({what}); "
            "delete it and run `deerflow-knowledge index PATH` again.",
            provider=PROVIDER_NAME,
        )

    def _connect_reader(self) -> sqlite3.Connection:
        if not self._index_path.is_file():
            raise self._missing()
        uri = "file:" + urllib.parse.quote(self._index_path.as_posix()) + "?mode=ro"
        try:
            connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._foreign(type(exc).__name__) from None
        try:
            connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            _check_format(connection)
        except _ForeignIndex as exc:
            connection.close()
            raise self._foreign(str(exc)) from None
        except sqlite3.Error as exc:
            connection.close()
            raise self._unreadable(exc) from None
        return connection

    def _unreadable(self, exc: sqlite3.Error) -> ProviderConfigError:
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY:
            return ProviderConfigError(
                f"The index at {self._index_path} is still locked by its first build after "
                f"{_BUSY_TIMEOUT_MS // 1000} s; search again when `deerflow-knowledge index` "
                "finishes.",
                provider=PROVIDER_NAME,
            )
        return self._foreign(_one_line(str(exc)) or type(exc).__name__)

    def _query(self, terms: list[str], count: int) -> list[_local_query.Row]:
        try:
            connection = self._pool.get_nowait()
        except queue.Empty:
            connection = self._connect_reader()
        try:
            rows = _local_query.search(
                connection,
                terms,
                count,
                weights=_BM25_WEIGHTS,
                tokenizer=_TOKENIZER,
                scored_rows=self._scored_rows,
            )
        except sqlite3.Error as exc:
            connection.close()
            if not self._index_path.is_file():
                raise self._missing() from None
            raise self._unreadable(exc) from None
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
        for name, value in (
            ("max_file_bytes", max_file_bytes),
            ("max_pdf_chars", max_pdf_chars),
            ("max_page_chars", max_page_chars),
            ("max_page_content_bytes", max_page_content_bytes),
        ):
            if type(value) is not int or value < 1:
                raise ProviderConfigError(
                    f"Invalid local {name}: expected a positive integer.", provider=PROVIDER_NAME
                )
        if type(max_depth) is not int or max_depth < 0:
            raise ProviderConfigError(
                "Invalid local max_depth: expected an integer of at least 0.",
                provider=PROVIDER_NAME,
            )
        if child_min_bytes is not None and (
            type(child_min_bytes) is not int or child_min_bytes < 0
        ):
            raise ProviderConfigError(
                "Invalid local child_min_bytes: expected None or an integer of at least 0.",
                provider=PROVIDER_NAME,
            )
        if mode not in _MODES:
            raise ProviderConfigError(
                f"Invalid local mode: expected one of {', '.join(_MODES)}.", provider=PROVIDER_NAME
            )
        if isinstance(exclude, str):
            raise ProviderConfigError(
                "Invalid local exclude: expected a list of patterns, not one string.",
                provider=PROVIDER_NAME,
            )
        started = time.perf_counter()
        root_path = Path(root).expanduser().absolute()
        if not root_path.is_dir():
            raise ProviderConfigError(f"Not a folder: {root_path}.", provider=PROVIDER_NAME)
        try:
            root_fd = _open_folder(root_path)
        except OSError as exc:
            raise ProviderConfigError(
                f"Cannot open the folder {root_path} ({exc.strerror or type(exc).__name__}).",
                provider=PROVIDER_NAME,
            ) from None
        try:
            # The folder's identity: the same folder named another way is the same folder.
            folder = Path(os.path.realpath(root_path))
            try:
                candidates, skipped = _discover(
                    root_path,
                    root_fd=root_fd,
                    max_depth=max_depth,
                    exclude=list(exclude),
                    gitignore=gitignore,
                )
            except ValueError as exc:
                raise ProviderConfigError(
                    f"Invalid local exclude: {exc}.", provider=PROVIDER_NAME
                ) from None
            settings = _local_reader.Settings(
                max_file_bytes,
                self._chunk_chars,
                self._chunk_overlap,
                root_fd=root_fd,
                pdf=PdfLimits(max_pdf_chars, max_page_chars, max_page_content_bytes),
            )
            child = None
            if (
                child_min_bytes is not None
                and sum(c.size for c in candidates) >= child_min_bytes
                and _local_reader.spare_core()
            ):
                child = _start_reader(root_fd)
            try:
                self._index_path.parent.mkdir(parents=True, exist_ok=True)
                notice = _Notice(waiting, self._index_path)
                connection = self._connect_writer(notice)
                try:
                    report = self._index_files(
                        connection,
                        folder,
                        candidates,
                        skipped,
                        progress,
                        settings=settings,
                        child=child,
                        mode=mode,
                        notice=notice,
                    )
                finally:
                    connection.close()
            except sqlite3.OperationalError as exc:
                if _is_busy(exc):
                    raise self._busy() from None
                raise
            finally:
                if child is not None:
                    child.close()
        finally:
            os.close(root_fd)
        return _with_seconds(report, time.perf_counter() - started)

    def _busy(self) -> UpstreamError:
        return UpstreamError(
            f"Another `deerflow-knowledge index` run is writing {self._index_path} and did not "
            f"finish within {_BUSY_TIMEOUT_MS // 1000} s; run this again when it has finished "
            "(this run changed nothing).",
            provider=PROVIDER_NAME,
        )

    def _wait_for_wal(self, connection: sqlite3.Connection, notice: _Notice) -> None:
        """Switch to WAL, waiting for another run's first build if there is one.

        SQLite answers "locked" at once, without waiting the busy timeout, when the journal mode
        cannot change because another connection writes in rollback-journal mode (a first
        build, see :func:`_journal_for_first_build`). Taking the write lock does wait: once it
        is granted, that build has committed (and gone back to WAL itself).
        """
        deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                connection.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    raise
            notice()
            connection.execute("BEGIN IMMEDIATE")  # waits (up to the busy timeout) for it
            connection.execute("ROLLBACK")

    def _connect_writer(self, notice: _Notice) -> sqlite3.Connection:
        try:
            connection = sqlite3.connect(self._index_path, isolation_level=None)
        except sqlite3.Error as exc:
            raise self._foreign(type(exc).__name__) from None
        try:
            connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            self._wait_for_wal(connection, notice)
            # Synced at every commit: once ``index`` returns, its run survives a power loss (at
            # the cost of one fsync per run).
            connection.execute("PRAGMA synchronous = FULL")
            _begin_write(connection, notice)  # a concurrent creator waits here
            try:
                (objects,) = connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
                if objects == 0:
                    for statement in _SCHEMA:
                        connection.execute(statement)
                elif _check_format(connection) != str(SCHEMA_VERSION):
                    _upgrade(connection)
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        except _ForeignIndex as exc:
            connection.close()
            raise self._foreign(str(exc)) from None
        except sqlite3.Error as exc:
            connection.close()
            if _is_busy(exc):
                raise self._busy() from None
            raise self._foreign(_one_line(str(exc)) or type(exc).__name__) from None
        return connection

    def _index_files(
        self,
        connection: sqlite3.Connection,
        folder: Path,
        candidates: list[_Candidate],
        skipped: list[SkippedFile],
        progress: Callable[[IndexProgress], None] | None,
        *,
        settings: _local_reader.Settings,
        child: _local_reader.ReaderProcess | None,
        mode: IndexMode,
        notice: _Notice,
    ) -> IndexReport:
        chunker = f"{_CHUNKER_VERSION}:{self._chunk_chars}:{self._chunk_overlap}"
        key = folder.as_posix()
        outcomes: dict[FileOutcome, list[str]] = {
            "added": [],
            "updated": [],
            "unchanged": [],
            "removed": [],
        }
        written = 0
        first_build = _journal_for_first_build(connection)
        _begin_write(connection, notice)
        try:
            previous_chunker = _meta(connection, "chunker")
            rechunk_all = previous_chunker != chunker
            known: dict[str, tuple[int, str]] = {}
            others: dict[str, tuple[int, str]] = {}
            for doc_id, path, digest, owner in connection.execute(
                "SELECT id, path, sha256, folder FROM documents"
            ):
                if owner == key:
                    known[path] = (doc_id, digest)
                else:
                    others[path] = (doc_id, owner)
            # A folder new to an index that holds others needs a choice; one already in it
            # is updated without one.
            if others and not known and mode == "update":
                raise self._choice_needed(key, others)
            # With nothing to keep, the full-text index is built once at the end, in bulk.
            keeps_others = bool(others) and mode != "replace"
            chunks = _ChunkWriter(connection, bulk=(rechunk_all or not known) and not keeps_others)
            if mode == "replace":
                for path, (doc_id, _) in sorted(others.items()):
                    chunks.delete_document(doc_id)
                    outcomes["removed"].append(path)
                others = {}
            # A title names one document: a path another folder's document already has is
            # left out, not overwritten.
            kept: list[_Candidate] = []
            for candidate in candidates:
                owner = others.get(candidate.path)
                if owner is None:
                    kept.append(candidate)
                else:
                    skipped.append(
                        SkippedFile(
                            candidate.path,
                            f"the index already holds a document of this path from {owner[1]}",
                        )
                    )
            candidates = kept
            total = len(candidates)
            previous_digests = [
                None if rechunk_all or candidate.path not in known else known[candidate.path][1]
                for candidate in candidates
            ]
            seen: set[str] = set()
            # Closed on any way out, so that the reader stops before the rollback.
            prepared_files = contextlib.closing(
                self._prepare(candidates, previous_digests, settings, child)
            )
            with prepared_files as ahead:
                for done, prepared in enumerate(ahead, start=1):
                    candidate = candidates[done - 1]
                    outcome: FileOutcome
                    previous = known.get(candidate.path)
                    if isinstance(prepared, _SkipFile):
                        reason = str(prepared)
                        if previous is not None:
                            reason += "; its previous version was dropped from the index"
                        skipped.append(SkippedFile(candidate.path, reason))
                        logger.warning("skipped %s: %s", candidate.path, reason)
                        outcome = "skipped"
                    else:
                        if prepared.parts is None:
                            outcome = "unchanged"
                        else:
                            if previous is not None:
                                chunks.delete_document(previous[0])
                            written += chunks.insert_document(candidate.path, key, prepared)
                            outcome = "added" if previous is None else "updated"
                        seen.add(candidate.path)
                        outcomes[outcome].append(candidate.path)
                    if progress is not None:
                        progress(IndexProgress(done, total, candidate.path, outcome))
            skipped_paths = {item.path for item in skipped}
            for path, (doc_id, _) in sorted(known.items()):
                if path not in seen:
                    chunks.delete_document(doc_id)
                    if path not in skipped_paths:
                        outcomes["removed"].append(path)
            connection.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('chunker', ?)", (chunker,)
            )
            chunks.finish()
            documents, chunk_count = connection.execute(
                "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks)"
            ).fetchone()
            other_folders = tuple(
                (str(owner), int(count))
                for owner, count in connection.execute(
                    "SELECT folder, count(*) FROM documents WHERE folder != ? "
                    "GROUP BY folder ORDER BY folder",
                    (key,),
                )
            )
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        finally:
            if first_build:
                _back_to_wal(connection)
        return IndexReport(
            root=key,
            index_path=self._index_path.as_posix(),
            added=tuple(outcomes["added"]),
            updated=tuple(outcomes["updated"]),
            unchanged=tuple(outcomes["unchanged"]),
            removed=tuple(sorted(outcomes["removed"])),
            skipped=tuple(sorted(skipped, key=lambda s: s.path)),
            chunks=chunk_count,
            chunks_written=written,
            documents=documents,
            other_folders=other_folders,
        )

    def _choice_needed(self, folder: str, others: dict[str, tuple[int, str]]) -> FolderChoiceNeeded:
        folders = tuple(sorted({owner or "an unknown folder" for _, owner in others.values()}))
        named = ", ".join(folders)
        return FolderChoiceNeeded(
            f"The index at {self._index_path} holds {len(others)} documents indexed from "
            f"{named}, not from {folder}. Say whether to add {folder} beside them "
            "(mode='add') or to replace them with it (mode='replace'); nothing was changed.",
            folders=folders,
            documents=len(others),
        )

    def _prepare(
        self,
        candidates: list[_Candidate],
        previous_digests: list[str | None],
        settings: _local_reader.Settings,
        child: _local_reader.ReaderProcess | None,
    ) -> Generator[_Prepared | _SkipFile, None, None]:
        """Every candidate read and chunked (unless unchanged), in order: in a thread, or with a
        ``child`` process, by the child except for a first share that this process reads while
        the child starts up (see :data:`_local_reader.PARENT_SHARE`). Files are read relative to
        ``settings.root_fd``, through a :class:`FolderReader` of each reading thread or process."""
        work = list(zip(candidates, previous_digests, strict=True))
        head = len(work)
        if child is not None:
            head = _local_reader.parent_share([candidate.size for candidate in candidates])
            rest = child.prepare(
                [(candidate.path, previous, candidate.size) for candidate, previous in work[head:]],
                settings,
                budget=_READ_AHEAD_BYTES,
            )
        assert settings.root_fd is not None
        folder = _FolderReader(settings.root_fd)  # used by the read-ahead thread only
        ahead = _read_ahead(
            work[:head],
            lambda item: _local_reader.prepare(item[0].path, item[1], settings, folder),
            weight=_weight,
            budget=_READ_AHEAD_BYTES,
        )
        try:
            with contextlib.closing(ahead):
                for _, prepared in ahead:
                    yield prepared
        finally:
            folder.close()  # after close() has stopped the thread
        if child is not None:
            with contextlib.closing(rest):
                yield from rest

    def _settings(self, max_file_bytes: int = MAX_FILE_BYTES) -> _local_reader.Settings:
        return _local_reader.Settings(max_file_bytes, self._chunk_chars, self._chunk_overlap)

    def _chunks(self, file: Path, data: bytes) -> list[tuple[int | None, str]]:
        return _local_reader.chunks(file, data, self._settings())


# --------------------------------------------------------------------------- sqlite helpers


class _ForeignIndex(Exception):
    pass


def _check_format(connection: sqlite3.Connection) -> str:
    """The schema version of a readable deerflow-knowledge index, else :class:`_ForeignIndex`."""
    try:
        rows = dict(connection.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY:
            raise  # locked, not foreign
        raise _ForeignIndex(_one_line(str(exc)) or "no meta table") from None
    if rows.get("format") != _FORMAT:
        raise _ForeignIndex("unknown format")
    version = rows.get("schema_version")
    if version not in _READABLE_SCHEMAS:
        raise _ForeignIndex(
            f"schema version {version}, this version reads {', '.join(sorted(_READABLE_SCHEMAS))}"
        )
    return str(version)


def _upgrade(connection: sqlite3.Connection) -> None:
    """Versions 1 and 2 to 3. From 1: the full-text index is the same; only its triggers go (the
    writer keeps it in step now, and would otherwise index every row twice). From 2: each
    document records its folder, the one the index was last built from (an older index held
    one folder, kept in its ``root`` entry)."""
    connection.execute("DROP TRIGGER IF EXISTS chunks_ai")
    connection.execute("DROP TRIGGER IF EXISTS chunks_ad")
    columns = {row[1] for row in connection.execute("PRAGMA table_info(documents)")}
    if "folder" not in columns:
        connection.execute("ALTER TABLE documents ADD COLUMN folder TEXT NOT NULL DEFAULT ''")
    root = _meta(connection, "root")
    if root:
        connection.execute(
            "UPDATE documents SET folder = ? WHERE folder = ''",
            (Path(os.path.realpath(root)).as_posix(),),
        )
    connection.execute("DELETE FROM meta WHERE key = 'root'")
    connection.execute(
        "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
    )


def _journal_for_first_build(connection: sqlite3.Connection) -> bool:
    """Switch an index with no documents yet to a rollback journal for its first build, and say
    whether it did.

    In WAL mode every page of a first build is written twice, to the WAL and then to the file at
    the checkpoint that follows the commit (about 0.4 s of 110 MB at 100k chunks). With a rollback
    journal the pages go to the file once, and the journal holds only the few pages that existed
    (an interrupted build still rolls back to the empty index). A reader waits for the commit
    (up to the busy timeout) instead of seeing an empty index. SQLite refuses the switch while
    another connection has the file open; the build then stays in WAL mode.
    """
    (documents,) = connection.execute("SELECT count(*) FROM documents").fetchone()
    if documents:
        return False
    try:
        (mode,) = connection.execute("PRAGMA journal_mode = DELETE").fetchone()
    except sqlite3.OperationalError:
        return False
    return str(mode).lower() == "delete"


def _back_to_wal(connection: sqlite3.Connection) -> None:
    """Back to WAL after a first build (if a reader holds the file open, the next run does it)."""
    with contextlib.suppress(sqlite3.OperationalError):
        connection.execute("PRAGMA journal_mode = WAL")


def _meta(connection: sqlite3.Connection, key: str) -> str | None:
    row = connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


class _ChunkWriter:
    """Writes chunk rows and keeps the FTS5 index (external content) in step with them.

    New rows enter the full-text index in batches of about ``batch_chars`` code points, each read
    back from the chunk rows in one statement (FTS5 ends every statement with a new segment, so
    fewer statements mean less merging). A deleted row leaves the full-text index with its old
    values, as an external-content table needs, except in ``bulk`` mode (a first build, or every
    file re-chunked), where the full-text index is emptied at the start instead.
    """

    def __init__(
        self, connection: sqlite3.Connection, *, bulk: bool, batch_chars: int = _FTS_BATCH_CHARS
    ) -> None:
        self._connection = connection
        self._bulk = bulk
        self._batch_chars = batch_chars
        self._changed = False
        # Explicit ids, so that the full-text rows can be written with the same ids in one call.
        (last,) = connection.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()
        self._next_id = int(last) + 1
        # Rows from this id on are not in the full-text index yet. Every row of a document that
        # can be deleted in this run is older (a run writes each path once), so it is.
        self._unindexed = self._next_id
        self._unindexed_chars = 0
        (hash_bytes,) = connection.execute(
            "SELECT coalesce(max(v), 0) FROM chunks_fts_config WHERE k = 'hashsize'"
        ).fetchone()
        if hash_bytes != _FTS_HASH_BYTES:
            connection.execute(
                "INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('hashsize', ?)",
                (_FTS_HASH_BYTES,),
            )
        if bulk:
            connection.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('delete-all')")
            # A build leaves its batches' segments unmerged (see _FTS_AUTOMERGE).
            connection.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('automerge', 0)")

    def delete_document(self, doc_id: int) -> None:
        if not self._bulk:
            self._connection.execute(
                "INSERT INTO chunks_fts(chunks_fts, rowid, text, title) "
                "SELECT 'delete', id, text, title FROM chunks WHERE document_id = ?",
                (doc_id,),
            )
        self._connection.execute("DELETE FROM chunks WHERE document_id = ?", (doc_id,))
        self._connection.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
        self._changed = True

    def insert_document(self, path: str, folder: str, prepared: _Prepared) -> int:
        parts = prepared.parts or []
        cursor = self._connection.execute(
            "INSERT INTO documents(path, sha256, size, chunks, folder) VALUES (?, ?, ?, ?, ?)",
            (path, prepared.digest, prepared.size, len(parts), folder),
        )
        doc_id = cursor.lastrowid
        first = self._next_id
        self._next_id += len(parts)
        self._connection.executemany(
            "INSERT INTO chunks(id, document_id, ordinal, page, title, text) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                (first + ordinal, doc_id, ordinal, page, path, text)
                for ordinal, (page, text) in enumerate(parts)
            ),
        )
        self._unindexed_chars += sum(len(text) for _, text in parts)
        if self._unindexed_chars >= self._batch_chars:
            self._index_rows()
        self._changed = True
        return len(parts)

    def _index_rows(self) -> None:
        if self._unindexed < self._next_id:
            self._connection.execute(
                "INSERT INTO chunks_fts(rowid, text, title) "
                "SELECT id, text, title FROM chunks WHERE id >= ? AND id < ?",
                (self._unindexed, self._next_id),
            )
        self._unindexed = self._next_id
        self._unindexed_chars = 0

    def finish(self) -> None:
        self._index_rows()
        if self._bulk:
            self._connection.execute(
                "INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('automerge', ?)",
                (_FTS_AUTOMERGE,),
            )
        if not self._bulk and self._changed:
            # FTS5's automerge has kept the segments few; a bounded extra merge keeps queries
            # fast without rewriting a large index for a one-file update.
            self._connection.execute(
                "INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('merge', 64)"
            )


def _weight(prepared: _Prepared | _SkipFile) -> int:
    """What a file read ahead holds in memory, roughly: its size, unless it is not kept."""
    return prepared.size if isinstance(prepared, _Prepared) and prepared.parts else 0


class _Notice:
    """Tells once (the log and the caller's ``waiting``) that the run waits for another."""

    def __init__(self, waiting: Callable[[], None] | None, index_path: Path) -> None:
        self._waiting = waiting
        self._index_path = index_path
        self._told = False

    def __call__(self) -> None:
        if self._told:
            return
        self._told = True
        logger.info("waiting for another index run on %s to finish", self._index_path)
        if self._waiting is not None:
            self._waiting()


def _begin_write(connection: sqlite3.Connection, notice: _Notice) -> None:
    """``BEGIN IMMEDIATE``: at once if no other run writes, else after telling ``notice`` and
    waiting for the write lock up to the busy timeout."""
    connection.execute("PRAGMA busy_timeout = 0")
    try:
        connection.execute("BEGIN IMMEDIATE")
        return
    except sqlite3.OperationalError as exc:
        if not _is_busy(exc):
            raise
    finally:
        connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
    notice()
    connection.execute("BEGIN IMMEDIATE")


def _is_busy(exc: sqlite3.Error) -> bool:
    return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY


def _start_reader(root_fd: int) -> _local_reader.ReaderProcess | None:
    try:
        return _local_reader.ReaderProcess.start(pass_fds=(root_fd,))
    except (OSError, ValueError) as exc:  # no interpreter to run, or no way to run one
        logger.warning("reading files in this process: no reader process (%s)", exc)
        return None


def _with_seconds(report: IndexReport, seconds: float) -> IndexReport:
    return replace(report, seconds=seconds)
