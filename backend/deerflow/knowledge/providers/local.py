"""The embedded default provider: a SQLite FTS5 (BM25) index over a folder of documents.

``LocalProvider(index_path)`` searches an index file; :meth:`LocalProvider.index` builds or updates
it from a folder of Markdown (``.md``, ``.markdown``), text (``.txt``) and PDF (``.pdf``) files.

* **Evidence.** A hit's title is the file's path relative to the indexed folder, with POSIX
  separators (``guides/setup.md``). ``page`` comes only from a PDF's real page (one chunk never
  spans pages); text files have none. No URL is ever built from a path, and a dataset name appears
  only when the operator configures one.
* **Chunks.** Text is cut into chunks of at most ``chunk_chars`` code points on paragraph, then
  sentence, then word boundaries (a hard cut only inside an over-long word), and each chunk repeats
  up to ``chunk_overlap`` code points of whole sentences from the end of the previous one. Chunks
  are slices of the extracted text, so an excerpt is always text the document really contains.
* **Incremental.** A file whose content hash is unchanged is skipped; a changed file is re-chunked;
  a file that disappeared (or is now skipped) leaves the index. One write transaction covers the
  whole run, and the database is in WAL mode: a concurrent reader sees the index as it was before
  the run or after it, never half-way. An unreadable or corrupt file, one larger than
  ``max_file_bytes``, and anything that is not a regular file (a named pipe, socket or device:
  opened non-blocking and never read, so nothing waits while holding the write transaction) are
  skipped with a reason in the :class:`IndexReport`; the rest is indexed.
* **Queries.** Free text becomes a safe FTS5 expression: every token is quoted as a string, so user
  text can never inject FTS5 syntax (``OR``, ``NEAR(``, ``title:*``, ``^``); the tokens are OR-ed
  and ranked with ``bm25()`` over Porter-stemmed tokens (``citations`` finds ``citation``). A
  query with no word characters finds nothing.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import io
import logging
import os
import queue
import re
import sqlite3
import stat
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, Literal

from deerflow.knowledge.contract import (
    MAX_EXCERPT_CHARS,
    MAX_SOURCES,
    KnowledgeCapabilities,
    RetrievalHit,
    RetrievalResult,
    is_blank,
    is_valid_dataset_name,
    is_valid_title,
)
from deerflow.knowledge.providers._http import (
    ProviderConfigError,
    validate_search_arguments,
)

__all__ = [
    "DEFAULT_CHUNK_CHARS",
    "DEFAULT_CHUNK_OVERLAP",
    "DEFAULT_LIMIT",
    "MAX_CHUNK_CHARS",
    "MAX_FILE_BYTES",
    "MAX_LIMIT",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TERMS",
    "MIN_CHUNK_CHARS",
    "PROVIDER_NAME",
    "SCHEMA_VERSION",
    "SUPPORTED_SUFFIXES",
    "FileOutcome",
    "IndexProgress",
    "IndexReport",
    "LocalProvider",
    "SkippedFile",
    "chunk_text",
    "fts_query",
    "sample_corpus_path",
    "tokenize",
]

logger = logging.getLogger(__name__)

PROVIDER_NAME: Final = "local"
#: Chunks are at most this many code points (the tool's default per-hit excerpt budget).
DEFAULT_CHUNK_CHARS: Final = 800
#: Each chunk repeats up to this many code points of whole sentences from its predecessor.
DEFAULT_CHUNK_OVERLAP: Final = 120
MIN_CHUNK_CHARS: Final = 16
MAX_CHUNK_CHARS: Final = MAX_EXCERPT_CHARS
DEFAULT_LIMIT: Final = 8
MAX_LIMIT: Final = MAX_SOURCES
MAX_QUERY_CHARS: Final = 4_096
#: Distinct query terms kept, in order of first appearance; the rest are ignored.
MAX_QUERY_TERMS: Final = 64
#: Files larger than this are skipped (with a reason) instead of being read into memory; the
#: default of :meth:`LocalProvider.index`'s ``max_file_bytes``.
MAX_FILE_BYTES: Final = 64 * 1024 * 1024
SUPPORTED_SUFFIXES: Final = frozenset({".md", ".markdown", ".txt", ".pdf"})
SCHEMA_VERSION: Final = 1

_FORMAT: Final = "deerflow-knowledge-local"
_CHUNKER_VERSION: Final = 1
_BUSY_TIMEOUT_MS: Final = 30_000
#: bm25() column weights: chunk text, then the document's path.
_BM25_WEIGHTS: Final = (1.0, 0.5)
_POOL_SIZE: Final = 4

_TOKEN_RE = re.compile(r"[^\W_]+")
#: Dropped from queries (unless nothing else is left): they match nearly every chunk.
_STOPWORDS: Final = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
    ]
)
_PARAGRAPH_BREAK_RE = re.compile(r"\n[ \t]*(?:\r?\n)\s*")
_SENTENCE_BREAK_RE = re.compile(r"(?<=[.!?;:\u3002\uff01\uff1f])\s+|\n")
_WORD_BREAK_RE = re.compile(r"\s+")
_PDF_JUNK_RE = re.compile(r"[\x00\ud800-\udfff]")  # NULs and lone surrogates from broken fonts
_SEPARATORS: Final = (_PARAGRAPH_BREAK_RE, _SENTENCE_BREAK_RE, _WORD_BREAK_RE)

#: The schema, one statement per item (run inside the creating transaction).
_SCHEMA: Final = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE documents (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        sha256 TEXT NOT NULL,
        size INTEGER NOT NULL,
        chunks INTEGER NOT NULL
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
    """CREATE VIRTUAL TABLE chunks_fts USING fts5(
        text, title, content='chunks', content_rowid='id',
        tokenize='porter unicode61 remove_diacritics 2'
    )""",
    """CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
        INSERT INTO chunks_fts(rowid, text, title) VALUES (new.id, new.text, new.title);
    END""",
    """CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
        INSERT INTO chunks_fts(chunks_fts, rowid, text, title)
        VALUES ('delete', old.id, old.text, old.title);
    END""",
    f"INSERT INTO meta(key, value) VALUES ('format', '{_FORMAT}'), "
    f"('schema_version', '{SCHEMA_VERSION}')",
)

# Rank inside FTS5 first and join only the winners: reading every matching chunk row before the
# LIMIT would cost more than the scoring itself.
_SEARCH_SQL: Final = f"""
WITH top AS (
    SELECT rowid AS id, bm25(chunks_fts, {_BM25_WEIGHTS[0]}, {_BM25_WEIGHTS[1]}) AS score
    FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY score, rowid LIMIT ?
)
SELECT c.text, c.title, c.page, top.score
FROM top JOIN chunks AS c ON c.id = top.id
ORDER BY top.score, top.id
"""


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
    terms = list(dict.fromkeys(tokenize(text)))[:max_terms]
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms)


# --------------------------------------------------------------------------- chunking


def chunk_text(
    text: str,
    *,
    chunk_chars: int = DEFAULT_CHUNK_CHARS,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
) -> list[str]:
    """Cut ``text`` into chunks of at most ``chunk_chars`` code points (see the module docstring).

    Every chunk is a slice of ``text`` with surrounding white space removed; blank text gives none.
    """
    _check_chunking(chunk_chars, chunk_overlap)
    units = list(_units(text, 0, len(text), 0, chunk_chars))
    chunks: list[str] = []
    first = 0
    while first < len(units):
        start = units[first][0]
        last = first  # the last unit that fits
        while last + 1 < len(units) and units[last + 1][1] - start <= chunk_chars:
            last += 1
        last = _prefer_paragraph_end(text, units, first, last, chunk_chars)
        chunks.append(text[start : units[last][1]])
        if last + 1 == len(units):
            break
        first = _next_first(units, first, last, chunk_chars, chunk_overlap)
    return chunks


def _check_chunking(chunk_chars: object, chunk_overlap: object) -> None:
    if type(chunk_chars) is not int or not MIN_CHUNK_CHARS <= chunk_chars <= MAX_CHUNK_CHARS:
        raise ProviderConfigError(
            f"Invalid chunk_chars: expected an integer from {MIN_CHUNK_CHARS} to {MAX_CHUNK_CHARS}.",
            provider=PROVIDER_NAME,
        )
    if type(chunk_overlap) is not int or not 0 <= chunk_overlap < chunk_chars:
        raise ProviderConfigError(
            "Invalid chunk_overlap: expected an integer from 0 to less than chunk_chars.",
            provider=PROVIDER_NAME,
        )


def _units(text: str, start: int, end: int, level: int, size: int) -> Iterator[tuple[int, int]]:
    """Spans of ``text`` of at most ``size``, split at the coarsest boundary that makes them fit."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start == end:
        return
    # Paragraphs are always split into sentences, so that overlap can be whole sentences.
    if end - start <= size and level >= 2:
        yield start, end
        return
    if level == len(_SEPARATORS):  # one word longer than a chunk: cut it
        for cut in range(start, end, size):
            yield cut, min(cut + size, end)
        return
    cursor = start
    for match in _SEPARATORS[level].finditer(text, start, end):
        yield from _units(text, cursor, match.start(), level + 1, size)
        cursor = match.end()
    yield from _units(text, cursor, end, level + 1, size)


def _prefer_paragraph_end(
    text: str, units: Sequence[tuple[int, int]], first: int, last: int, size: int
) -> int:
    """End a full chunk at its last paragraph break if that keeps it at least half full."""
    if last + 1 == len(units):
        return last
    start = units[first][0]
    for candidate in range(last, first, -1):
        if units[candidate][1] - start < size // 2:
            break
        gap = text[units[candidate][1] : units[candidate + 1][0]]
        if gap.count("\n") >= 2:
            return candidate
    return last


def _next_first(
    units: Sequence[tuple[int, int]], first: int, last: int, size: int, overlap: int
) -> int:
    """The first unit of the next chunk: the earliest after ``first`` whose run to the end of the
    previous chunk fits ``overlap`` and still leaves room for the next new unit."""
    end = units[last][1]
    following = units[last + 1][1]
    for candidate in range(first + 1, last + 1):
        begin = units[candidate][0]
        if end - begin <= overlap and following - begin <= size:
            return candidate
    return last + 1


# --------------------------------------------------------------------------- index report


FileOutcome = Literal["added", "updated", "unchanged", "removed", "skipped"]


@dataclass(frozen=True, slots=True)
class SkippedFile:
    path: str
    """The path relative to the indexed folder (POSIX separators)."""
    reason: str


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
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)


# --------------------------------------------------------------------------- reading files


class _SkipFile(Exception):
    """A file that cannot be indexed; the message is the reason shown in the report."""


@dataclass(frozen=True, slots=True)
class _Candidate:
    path: str
    file: Path


def _discover(root: Path) -> tuple[list[_Candidate], list[SkippedFile]]:
    """Regular supported files under ``root`` in a stable order; hidden entries, symlinks, pipes,
    sockets and devices are left out (all but hidden ones with a reason)."""
    found: list[_Candidate] = []
    skipped: list[SkippedFile] = []
    for directory, subdirs, files in os.walk(root, followlinks=False):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        base = Path(directory)
        for name in sorted(files):
            if name.startswith(".") or Path(name).suffix.lower() not in SUPPORTED_SUFFIXES:
                continue
            file = base / name
            relative = file.relative_to(root).as_posix()
            try:
                mode = file.lstat().st_mode
            except OSError as exc:
                skipped.append(SkippedFile(_printable(relative), _unreadable(exc)))
                continue
            if stat.S_ISLNK(mode):
                skipped.append(SkippedFile(relative, "symbolic link (not followed)"))
            elif (special := _not_regular(mode)) is not None:
                skipped.append(SkippedFile(_printable(relative), special))
            elif not is_valid_title(relative):
                skipped.append(
                    SkippedFile(
                        _printable(relative),
                        "the path cannot be a source title (control characters, undecodable "
                        "bytes or longer than 512 characters)",
                    )
                )
            else:
                found.append(_Candidate(relative, file))
    found.sort(key=lambda c: c.path)
    return found, skipped


_SPECIAL_KINDS: Final = (
    (stat.S_ISFIFO, "named pipe"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
)
# Opening a named pipe for reading waits for a writer: non-blocking, the open returns at once and
# the fstat below refuses it. A symlink swapped in after discovery is refused by O_NOFOLLOW.
_OPEN_FLAGS: Final = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


def _not_regular(mode: int) -> str | None:
    """Why a file of this ``st_mode`` is not read, or ``None`` for a regular file."""
    if stat.S_ISREG(mode):
        return None
    kind = next((name for is_kind, name in _SPECIAL_KINDS if is_kind(mode)), "special file")
    return f"not a regular file ({kind})"


def _unreadable(exc: OSError) -> str:
    return f"cannot be read ({exc.strerror or type(exc).__name__})"


def _too_large(max_bytes: int) -> str:
    mib, rest = divmod(max_bytes, 1024 * 1024)
    return f"larger than {mib} MiB" if mib and not rest else f"larger than {max_bytes} bytes"


def _printable(path: str) -> str:
    return "".join(
        ch if ch.isprintable() and not 0xD800 <= ord(ch) <= 0xDFFF else "?" for ch in path
    )


def _read_bytes(file: Path, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes, or :class:`_SkipFile` without ever blocking on a pipe or device, and
    without reading more than ``max_bytes`` (a file may grow after its size was checked)."""
    try:
        descriptor = os.open(file, _OPEN_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _SkipFile("symbolic link (not followed)") from None
        raise _SkipFile(_unreadable(exc)) from None
    try:
        with open(descriptor, "rb", closefd=True) as stream:
            info = os.fstat(stream.fileno())
            special = _not_regular(info.st_mode)
            if special is not None:
                raise _SkipFile(special)
            if info.st_size > max_bytes:
                raise _SkipFile(_too_large(max_bytes))
            data = stream.read(max_bytes + 1)
    except OSError as exc:
        raise _SkipFile(_unreadable(exc)) from None
    if len(data) > max_bytes:
        raise _SkipFile(_too_large(max_bytes))
    return data


def _pages(file: Path, data: bytes) -> list[tuple[int | None, str]]:
    """The document's text as ``(page, text)`` parts: real PDF pages, or one part without a page."""
    if file.suffix.lower() == ".pdf":
        return _pdf_pages(data)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _SkipFile(f"not UTF-8 text (invalid byte at offset {exc.start})") from None
    if "\x00" in text:
        raise _SkipFile("binary content (NUL bytes) in a text file")
    return [(None, text.replace("\r\n", "\n").replace("\r", "\n"))]


def _pdf_pages(data: bytes) -> list[tuple[int | None, str]]:
    from pypdf import PdfReader  # imported on first PDF: searching never needs it

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise _SkipFile("encrypted PDF (a password is needed)")
        pages: list[tuple[int | None, str]] = []
        for number, page in enumerate(reader.pages, start=1):
            text = page.extract_text() or ""
            pages.append((number, _clean_pdf_text(text)))
    except _SkipFile:
        raise
    except Exception as exc:  # pypdf raises many types for damaged files
        detail = _one_line(str(exc))
        raise _SkipFile(
            f"corrupt or unsupported PDF ({type(exc).__name__}{': ' + detail if detail else ''})"
        ) from None
    if all(is_blank(text) for _, text in pages):
        raise _SkipFile("no extractable text (a scanned PDF needs OCR first)")
    return pages


def _clean_pdf_text(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _PDF_JUNK_RE.sub("", text)


def _one_line(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------- provider


class LocalProvider:
    """A :class:`~deerflow.knowledge.contract.RetrievalProvider` over a local SQLite FTS5 index.

    ``index_path`` need not exist until the first :meth:`index` run; searching a missing or foreign
    file raises :class:`~deerflow.knowledge.providers._http.ProviderConfigError`. Searches run the
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
        validate_search_arguments(
            query,
            limit,
            service="the local index",
            provider=PROVIDER_NAME,
            max_query_chars=MAX_QUERY_CHARS,
        )
        count = min(limit or self._limit, MAX_LIMIT)
        expression = fts_query(query)
        if expression is None:
            return RetrievalResult(provider=PROVIDER_NAME, query=query)
        rows = self._query(expression, count)
        hits = tuple(
            RetrievalHit(
                text=text,
                title=title,
                page=page,
                dataset_name=self._dataset_name,
                score=-score,
            )
            for text, title, page, score in rows
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
            raise self._foreign(_one_line(str(exc)) or type(exc).__name__) from None
        return connection

    def _query(self, expression: str, count: int) -> list[Any]:
        try:
            connection = self._pool.get_nowait()
        except queue.Empty:
            connection = self._connect_reader()
        try:
            rows = connection.execute(_SEARCH_SQL, (expression, count)).fetchall()
        except sqlite3.Error as exc:
            connection.close()
            if not self._index_path.is_file():
                raise self._missing() from None
            raise self._foreign(_one_line(str(exc)) or type(exc).__name__) from None
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
        progress: Callable[[IndexProgress], None] | None = None,
        max_file_bytes: int = MAX_FILE_BYTES,
    ) -> IndexReport:
        """Build or update the index so that it mirrors the supported files under ``root``.

        Runs in one write transaction (readers keep seeing the previous state until it commits).
        Raises :class:`ProviderConfigError` when ``root`` is not a folder or the index file is not
        a deerflow-knowledge index; a file that cannot be indexed is skipped and reported instead:
        one larger than ``max_file_bytes``, and anything that is not a regular file (a named pipe,
        socket or device is never opened in a way that could block the write transaction).
        """
        if type(max_file_bytes) is not int or max_file_bytes < 1:
            raise ProviderConfigError(
                "Invalid local max_file_bytes: expected a positive integer.",
                provider=PROVIDER_NAME,
            )
        started = time.perf_counter()
        root_path = Path(root).expanduser().absolute()
        if not root_path.is_dir():
            raise ProviderConfigError(f"Not a folder: {root_path}.", provider=PROVIDER_NAME)
        candidates, skipped = _discover(root_path)
        self._index_path.parent.mkdir(parents=True, exist_ok=True)
        connection = self._connect_writer()
        try:
            report = self._index_files(
                connection, root_path, candidates, skipped, progress, max_file_bytes
            )
        finally:
            connection.close()
        return _with_seconds(report, time.perf_counter() - started)

    def _connect_writer(self) -> sqlite3.Connection:
        try:
            connection = sqlite3.connect(self._index_path, isolation_level=None)
        except sqlite3.Error as exc:
            raise self._foreign(type(exc).__name__) from None
        try:
            connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute("BEGIN IMMEDIATE")  # a concurrent creator waits here
            try:
                (objects,) = connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
                if objects == 0:
                    for statement in _SCHEMA:
                        connection.execute(statement)
                else:
                    _check_format(connection)
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        except _ForeignIndex as exc:
            connection.close()
            raise self._foreign(str(exc)) from None
        except sqlite3.Error as exc:
            connection.close()
            raise self._foreign(_one_line(str(exc)) or type(exc).__name__) from None
        return connection

    def _index_files(
        self,
        connection: sqlite3.Connection,
        root: Path,
        candidates: list[_Candidate],
        skipped: list[SkippedFile],
        progress: Callable[[IndexProgress], None] | None,
        max_file_bytes: int,
    ) -> IndexReport:
        chunker = f"{_CHUNKER_VERSION}:{self._chunk_chars}:{self._chunk_overlap}"
        outcomes: dict[FileOutcome, list[str]] = {
            "added": [],
            "updated": [],
            "unchanged": [],
            "removed": [],
        }
        written = 0
        total = len(candidates)
        connection.execute("BEGIN IMMEDIATE")
        try:
            previous_chunker = _meta(connection, "chunker")
            rechunk_all = previous_chunker != chunker
            known = {
                path: (doc_id, digest)
                for doc_id, path, digest in connection.execute(
                    "SELECT id, path, sha256 FROM documents"
                )
            }
            seen: set[str] = set()
            for done, candidate in enumerate(candidates, start=1):
                outcome: FileOutcome
                previous = known.get(candidate.path)
                try:
                    data = _read_bytes(candidate.file, max_bytes=max_file_bytes)
                    digest = hashlib.sha256(data).hexdigest()
                    if previous is not None and previous[1] == digest and not rechunk_all:
                        outcome = "unchanged"
                    else:
                        parts = self._chunks(candidate.file, data)
                        if previous is not None:
                            _delete_document(connection, previous[0])
                        written += _insert_document(
                            connection, candidate.path, digest, len(data), parts
                        )
                        outcome = "added" if previous is None else "updated"
                    seen.add(candidate.path)
                except _SkipFile as exc:
                    reason = str(exc)
                    if previous is not None:
                        reason += "; its previous version was dropped from the index"
                    skipped.append(SkippedFile(candidate.path, reason))
                    logger.warning("skipped %s: %s", candidate.path, reason)
                    outcome = "skipped"
                if outcome != "skipped":
                    outcomes[outcome].append(candidate.path)
                if progress is not None:
                    progress(IndexProgress(done, total, candidate.path, outcome))
            skipped_paths = {item.path for item in skipped}
            for path, (doc_id, _) in sorted(known.items()):
                if path not in seen:
                    _delete_document(connection, doc_id)
                    if path not in skipped_paths:
                        outcomes["removed"].append(path)
            connection.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('chunker', ?), ('root', ?)",
                (chunker, root.as_posix()),
            )
            if written or outcomes["removed"] or len(seen) < len(known):
                connection.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize')")
            documents, chunks = connection.execute(
                "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks)"
            ).fetchone()
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        return IndexReport(
            root=root.as_posix(),
            index_path=self._index_path.as_posix(),
            added=tuple(outcomes["added"]),
            updated=tuple(outcomes["updated"]),
            unchanged=tuple(outcomes["unchanged"]),
            removed=tuple(outcomes["removed"]),
            skipped=tuple(sorted(skipped, key=lambda s: s.path)),
            chunks=chunks,
            chunks_written=written,
            documents=documents,
        )

    def _chunks(self, file: Path, data: bytes) -> list[tuple[int | None, str]]:
        return [
            (page, chunk)
            for page, text in _pages(file, data)
            for chunk in chunk_text(
                text, chunk_chars=self._chunk_chars, chunk_overlap=self._chunk_overlap
            )
        ]


# --------------------------------------------------------------------------- sqlite helpers


class _ForeignIndex(Exception):
    pass


def _check_format(connection: sqlite3.Connection) -> None:
    try:
        rows = dict(connection.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.DatabaseError as exc:
        raise _ForeignIndex(_one_line(str(exc)) or "no meta table") from None
    if rows.get("format") != _FORMAT:
        raise _ForeignIndex("unknown format")
    if rows.get("schema_version") != str(SCHEMA_VERSION):
        raise _ForeignIndex(
            f"schema version {rows.get('schema_version')}, this version reads {SCHEMA_VERSION}"
        )


def _meta(connection: sqlite3.Connection, key: str) -> str | None:
    row = connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def _delete_document(connection: sqlite3.Connection, doc_id: int) -> None:
    connection.execute("DELETE FROM chunks WHERE document_id = ?", (doc_id,))
    connection.execute("DELETE FROM documents WHERE id = ?", (doc_id,))


def _insert_document(
    connection: sqlite3.Connection,
    path: str,
    digest: str,
    size: int,
    parts: list[tuple[int | None, str]],
) -> int:
    cursor = connection.execute(
        "INSERT INTO documents(path, sha256, size, chunks) VALUES (?, ?, ?, ?)",
        (path, digest, size, len(parts)),
    )
    doc_id = cursor.lastrowid
    connection.executemany(
        "INSERT INTO chunks(document_id, ordinal, page, title, text) VALUES (?, ?, ?, ?, ?)",
        ((doc_id, ordinal, page, path, text) for ordinal, (page, text) in enumerate(parts)),
    )
    return len(parts)


def _with_seconds(report: IndexReport, seconds: float) -> IndexReport:
    return replace(report, seconds=seconds)
