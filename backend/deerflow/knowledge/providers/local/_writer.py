"""The index run: it mirrors a folder into the index in one write transaction.

A run opens the folder once (a descriptor: nothing outside it is read), finds its files
(:mod:`~deerflow.knowledge.providers.documents`), and compares them with the documents the index
holds for that folder. A file whose content hash is unchanged is skipped; a changed file is
re-chunked; a file that disappeared (or is now skipped) leaves the index. Each document records
the folder it was indexed from (its real path); by :data:`IndexMode` a run refuses to start
beside another folder's documents (the default: never drop them unasked), keeps them, or removes
them. A title names one document, so a path another folder already has is skipped with a reason.

Files are read and chunked ahead of the writer (up to ``_READ_AHEAD_BYTES``): for a run of at
least ``CHILD_MIN_BYTES`` on a machine with an idle core in a child process, on that core
(:mod:`._files`), else in a thread, while SQLite writes. :class:`ChunkWriter` writes the chunk
rows and their full-text index in batches of megabytes, one statement each: FTS5 ends every
statement with a new segment, so row by row it would spend more time merging segments than
tokenizing (a first build does not merge its batches' segments at all). A first build, or one
that re-chunks every file, empties the full-text index first; an update deletes a row's terms
with its old values, as an external-content table needs. An interrupted run leaves the index as
it was (:mod:`._schema` holds the journal and locking rules).

Tested in tests/test_providers_local.py.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Final

from deerflow.knowledge._provider_settings import LOCAL as PROVIDER_NAME
from deerflow.knowledge.providers.documents import (
    Candidate,
    FolderReader,
    PdfLimits,
    SkipFile,
    SkippedFile,
)
from deerflow.knowledge.providers.documents import discover as _discover
from deerflow.knowledge.providers.documents import open_folder as _open_folder
from deerflow.knowledge.providers.errors import ProviderConfigError
from deerflow.knowledge.providers.local import _files, _schema
from deerflow.knowledge.providers.local._files import Prepared
from deerflow.knowledge.providers.local._report import (
    MODES,
    FileOutcome,
    FolderChoiceNeeded,
    IndexMode,
    IndexProgress,
    IndexReport,
)

logger = logging.getLogger(__package__)

_CHUNKER_VERSION: Final = 1
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


class IndexWriter:
    """Runs :meth:`LocalProvider.index <deerflow.knowledge.providers.local.LocalProvider.index>`
    for one index file and chunk settings (see the module docstring)."""

    def __init__(self, index_path: Path, *, chunk_chars: int, chunk_overlap: int) -> None:
        self._index_path = index_path
        self._chunk_chars = chunk_chars
        self._chunk_overlap = chunk_overlap

    def index(
        self,
        root: str | os.PathLike[str],
        *,
        mode: IndexMode,
        exclude: Sequence[str],
        gitignore: bool,
        progress: Callable[[IndexProgress], None] | None,
        waiting: Callable[[], None] | None,
        max_file_bytes: int,
        max_depth: int,
        max_pdf_chars: int,
        max_page_chars: int,
        max_page_content_bytes: int,
        child_min_bytes: int | None,
    ) -> IndexReport:
        """The run, its arguments checked first (see the provider's method)."""
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
        if mode not in MODES:
            raise ProviderConfigError(
                f"Invalid local mode: expected one of {', '.join(MODES)}.", provider=PROVIDER_NAME
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
            settings = _files.Settings(
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
                and _files.spare_core()
            ):
                child = _start_reader(root_fd)
            try:
                self._index_path.parent.mkdir(parents=True, exist_ok=True)
                notice = _schema.Notice(waiting, self._index_path)
                connection = _schema.connect_writer(self._index_path, notice)
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
                if _schema.is_busy(exc):
                    raise _schema.busy(self._index_path) from None
                raise
            finally:
                if child is not None:
                    child.close()
        finally:
            os.close(root_fd)
        return _with_seconds(report, time.perf_counter() - started)

    def _index_files(
        self,
        connection: sqlite3.Connection,
        folder: Path,
        candidates: list[Candidate],
        skipped: list[SkippedFile],
        progress: Callable[[IndexProgress], None] | None,
        *,
        settings: _files.Settings,
        child: _files.ReaderProcess | None,
        mode: IndexMode,
        notice: _schema.Notice,
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
        first_build = _schema.journal_for_first_build(connection)
        _schema.begin_write(connection, notice)
        try:
            previous_chunker = _schema.meta(connection, "chunker")
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
            chunks = ChunkWriter(connection, bulk=(rechunk_all or not known) and not keeps_others)
            if mode == "replace":
                for path, (doc_id, _) in sorted(others.items()):
                    chunks.delete_document(doc_id)
                    outcomes["removed"].append(path)
                others = {}
            # A title names one document: a path another folder's document already has is
            # left out, not overwritten.
            kept: list[Candidate] = []
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
                    if isinstance(prepared, SkipFile):
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
                _schema.back_to_wal(connection)
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
        candidates: list[Candidate],
        previous_digests: list[str | None],
        settings: _files.Settings,
        child: _files.ReaderProcess | None,
    ) -> Generator[Prepared | SkipFile, None, None]:
        """Every candidate read and chunked (unless unchanged), in order: in a thread, or with a
        ``child`` process, by the child except for a first share that this process reads while
        the child starts up (see :data:`_files.PARENT_SHARE`). Files are read relative to
        ``settings.root_fd``, through a :class:`FolderReader` of each reading thread or process."""
        work = list(zip(candidates, previous_digests, strict=True))
        head = len(work)
        if child is not None:
            head = _files.parent_share([candidate.size for candidate in candidates])
            rest = child.prepare(
                [(candidate.path, previous, candidate.size) for candidate, previous in work[head:]],
                settings,
                budget=_READ_AHEAD_BYTES,
            )
        assert settings.root_fd is not None
        folder = FolderReader(settings.root_fd)  # used by the read-ahead thread only
        ahead = _files.read_ahead(
            work[:head],
            lambda item: _files.prepare(item[0].path, item[1], settings, folder),
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


class ChunkWriter:
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

    def insert_document(self, path: str, folder: str, prepared: Prepared) -> int:
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


def _weight(prepared: Prepared | SkipFile) -> int:
    """What a file read ahead holds in memory, roughly: its size, unless it is not kept."""
    return prepared.size if isinstance(prepared, Prepared) and prepared.parts else 0


def _start_reader(root_fd: int) -> _files.ReaderProcess | None:
    try:
        return _files.ReaderProcess.start(pass_fds=(root_fd,))
    except (OSError, ValueError) as exc:  # no interpreter to run, or no way to run one
        logger.warning("reading files in this process: no reader process (%s)", exc)
        return None


def _with_seconds(report: IndexReport, seconds: float) -> IndexReport:
    return replace(report, seconds=seconds)
