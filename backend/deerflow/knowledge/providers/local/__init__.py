"""The embedded default provider: a SQLite FTS5 (BM25) index over a folder of documents.

``LocalProvider(index_path)`` searches an index file; :meth:`LocalProvider.index` builds or updates
it from a folder of Markdown (``.md``, ``.markdown``), text (``.txt``) and PDF (``.pdf``) files.
This module is the package's face: it names what the package offers, and each part lives in a
module of its own.

* **The provider** (:mod:`._provider`): search, and the entry to an index run. A hit's title is
  the file's path relative to the indexed folder, with POSIX separators (``guides/setup.md``);
  ``page`` comes only from a PDF's real page (one chunk never spans pages).
* **The file** (:mod:`._schema`): the schema, its version and the upgrade of older files, and
  the rules every connection follows (WAL, the busy timeout, a first build's rollback journal),
  shared by the reader and the writer.
* **The index run** (:mod:`._writer`): one write transaction that mirrors a folder (unchanged
  files skipped by content hash, changed ones re-chunked, vanished ones removed; several folders
  per index, by :data:`IndexMode`), and the chunk writer that fills the full-text index in large
  batches. What it reports is :mod:`._report`.
* **Reading files** (:mod:`._files`): files read, hashed and chunked ahead of the writer, in a
  thread or, for a large run on a machine with an idle core, in a child process. The child starts
  from the top-level module ``_deerflow_knowledge_reader``, outside this package, so it never runs
  the package's ``__init__`` modules (which load pydantic and the public API).
* **Queries** (:mod:`._query`): free text becomes a safe FTS5 expression (every token quoted, so
  user text can never inject FTS5 syntax), ranked with ``bm25()`` over Porter-stemmed tokens,
  scoring at most ``scored_rows`` chunks per query so that latency stays flat at 100k chunks.

Chunking (:mod:`~deerflow.knowledge.providers.parse.chunking`, pure), reading documents
(:mod:`~deerflow.knowledge.providers.documents`: the descriptor-based folder walk, PDF limits)
and the exclusion rules (:mod:`~deerflow.knowledge.providers.parse._ignore`) are the provider's
neighbours in :mod:`deerflow.knowledge.providers`.
"""

from __future__ import annotations

from deerflow.knowledge._provider_settings import LOCAL as PROVIDER_NAME
from deerflow.knowledge.providers.documents import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_PAGE_CHARS,
    MAX_PAGE_CONTENT_BYTES,
    MAX_PDF_CHARS,
    SUPPORTED_SUFFIXES,
    SkippedFile,
)
from deerflow.knowledge.providers.local._files import CHILD_MIN_BYTES
from deerflow.knowledge.providers.local._provider import (
    DEFAULT_LIMIT,
    DEFAULT_SCORED_ROWS,
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    LocalProvider,
    sample_corpus_path,
)
from deerflow.knowledge.providers.local._query import (
    MAX_QUERY_TERMS,
    fts_query,
    query_terms,
    tokenize,
)
from deerflow.knowledge.providers.local._report import (
    FileOutcome,
    FolderChoiceNeeded,
    IndexMode,
    IndexProgress,
    IndexReport,
)
from deerflow.knowledge.providers.local._schema import SCHEMA_VERSION
from deerflow.knowledge.providers.parse.chunking import (
    DEFAULT_CHUNK_CHARS,
    DEFAULT_CHUNK_OVERLAP,
    MAX_CHUNK_CHARS,
    MIN_CHUNK_CHARS,
    chunk_text,
)

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
