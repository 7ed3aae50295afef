"""Read, hash and chunk the files of an index run ahead of the writer: in a thread, or, for a
large run on a machine with an idle core (:func:`spare_core`), in a child process.

Reading, decoding, PDF extraction and chunking hold the GIL, so a thread overlaps them only with
the part of SQLite's work that releases it; a child process runs them on another core while the
index run (:mod:`._writer`) only writes SQLite. The child is a fresh
interpreter started with :mod:`subprocess`, not :mod:`multiprocessing`: its ``spawn`` and
``forkserver`` start methods run the caller's main script again (an unguarded script would index
twice), and ``fork`` is unsafe in a process with threads. The child receives batches of paths on
its stdin and sends each batch's results back, pickled, on its stdout, in order; pickle is safe
here because both ends are this module, over pipes that no one else holds. The child inherits
the descriptor of the indexed folder that the parent opened, and reads every file relative to it
(:class:`~deerflow.knowledge.providers.documents.FolderReader`), as the parent's thread does. A
file that cannot be read or parsed is a result like any other (a :class:`SkipFile`); anything else
the child raises, or its death, is an :class:`UpstreamError` in the parent, which then rolls the
run back.

The child starts from ``_deerflow_knowledge_reader``, a top-level module outside the package (it
ships beside ``deerflow/`` in the wheel): that module registers the packages on the way to this
one without running their ``__init__`` modules, which import the public API (pydantic and the
models: nine tenths of the child's start-up). So what the child runs is this module and what it
imports (chunking, documents, the record rules), by construction.

Tested in tests/test_providers_local_reader.py (the child process) and
tests/test_providers_local.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final, Generic, TypeVar

from deerflow.knowledge._provider_settings import LOCAL as PROVIDER_NAME
from deerflow.knowledge.providers.documents import (
    FolderReader,
    PdfLimits,
    SkipFile,
    document_pages,
    one_line_path,
    read_bytes,
)
from deerflow.knowledge.providers.errors import UpstreamError
from deerflow.knowledge.providers.parse.chunking import chunk_text

__all__ = [
    "CHILD_MIN_BYTES",
    "ENTRY_MODULE",
    "PARENT_SHARE",
    "TASK_BYTES",
    "TASK_FILES",
    "Prepared",
    "ReadAhead",
    "ReaderProcess",
    "Settings",
    "chunks",
    "parent_share",
    "prepare",
    "read_ahead",
    "serve",
    "spare_core",
    "tasks",
]

#: Runs that read fewer bytes than this stay in this process: starting a child interpreter and
#: importing this module there (about 0.1 s of CPU), and passing every chunk back, cost more than
#: the second core saves on a small run.
CHILD_MIN_BYTES: Final = 16 * 1024 * 1024
#: A batch sent to the child holds files of at most this many bytes together (at least one file),
#: and at most ``TASK_FILES`` files: few enough messages to cost nothing, small enough that the
#: writer starts early and the read-ahead budget is counted finely.
TASK_BYTES: Final = 1024 * 1024
TASK_FILES: Final = 256
#: With a child, this share of the bytes (the first files) is read in the parent, while the child
#: starts up and reads ahead: the parent, which writes SQLite, would otherwise wait for it, and the
#: child's part of the work is the larger by its start-up, by passing results back and by importing
#: the PDF parser (compiled afresh where no bytecode is cached). Measured at 100k chunks
#: (interleaved, 3 runs each), an eighth was faster than a sixteenth and than three sixteenths.
PARENT_SHARE: Final = 0.125
#: The top-level module the child starts from (see the module docstring).
ENTRY_MODULE: Final = "_deerflow_knowledge_reader"
#: The child's first lines: Ctrl-C in a terminal reaches the whole process group, but only the
#: parent handles it (by stopping the child); the import path is the parent's, on which the entry
#: module sits beside ``deerflow/``.
_BOOT_IMPORT: Final = (
    "import signal, sys, pickle; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "sys.path[:] = pickle.load(sys.stdin.buffer); "
    f"import {ENTRY_MODULE} as entry"
)
_BOOT: Final = f"{_BOOT_IMPORT}; entry.main()"


@dataclass(frozen=True, slots=True)
class Settings:
    """What reading and chunking a file depends on (sent to the child once)."""

    max_bytes: int
    chunk_chars: int
    chunk_overlap: int
    root_fd: int | None = None
    """A descriptor of the indexed folder (the same number in the child, which inherits it):
    paths are then relative to it and read through a :class:`FolderReader`."""
    pdf: PdfLimits = field(default_factory=PdfLimits)


@dataclass(frozen=True, slots=True)
class Prepared:
    """A file read (and, unless unchanged, chunked) ahead of the writer."""

    digest: str
    size: int
    parts: list[tuple[int | None, str]] | None
    """``(page, text)`` chunks, or None for a file whose content is unchanged."""


def spare_core() -> bool:
    """Whether this process may use a second core: it has two or more, and the load average (over
    the last minute) leaves one idle. On a busy machine the child only adds its start-up and the
    pickling to the CPU that the runs compete for, so the thread is faster there."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    if cores < 2:
        return False
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows has no load average
        return True
    return load < cores


def chunks(file: Path | str, data: bytes, settings: Settings) -> list[tuple[int | None, str]]:
    """The ``(page, text)`` chunks of a file's bytes; :class:`SkipFile` if it cannot be parsed."""
    return [
        (page, chunk)
        for page, text in document_pages(file, data, limits=settings.pdf)
        for chunk in chunk_text(
            text, chunk_chars=settings.chunk_chars, chunk_overlap=settings.chunk_overlap
        )
    ]


def prepare(
    file: Path | str,
    previous: str | None,
    settings: Settings,
    folder: FolderReader | None = None,
) -> Prepared | SkipFile:
    """Read and hash ``file``; chunk it unless its digest is ``previous`` (then ``parts`` is None).

    With a ``folder``, ``file`` is a path relative to it, read through it; otherwise a path.
    A file that cannot be indexed is returned as its :class:`SkipFile`, not raised.
    """
    try:
        if folder is not None:
            data = folder.read(os.fspath(file), max_bytes=settings.max_bytes)
        else:
            data = read_bytes(Path(file), max_bytes=settings.max_bytes)
        digest = hashlib.sha256(data).hexdigest()
        if digest == previous:
            return Prepared(digest, len(data), None)
        return Prepared(digest, len(data), chunks(file, data, settings))
    except SkipFile as exc:
        return exc


def parent_share(sizes: Sequence[int], *, share: float = PARENT_SHARE) -> int:
    """How many of the first files make up ``share`` of these ``sizes`` (rounded down)."""
    limit = sum(sizes) * share
    held = 0
    for index, size in enumerate(sizes):
        held += size
        if held > limit:
            return index
    return len(sizes)


def tasks(
    sizes: Sequence[int], *, task_bytes: int = TASK_BYTES, task_files: int = TASK_FILES
) -> list[range]:
    """Consecutive batches of the files with these ``sizes``: each holds at most ``task_files``
    files, and at most ``task_bytes`` bytes unless it is a single file."""
    batches: list[range] = []
    start = 0
    held = 0
    for index, size in enumerate(sizes):
        if index > start and (held + size > task_bytes or index - start == task_files):
            batches.append(range(start, index))
            start, held = index, 0
        held += size
    if start < len(sizes):
        batches.append(range(start, len(sizes)))
    return batches


_T = TypeVar("_T")
_R = TypeVar("_R")


class ReadAhead(Generic[_T, _R]):
    """``(item, work(item))`` in order, with ``work`` running ahead in one worker thread (from
    construction on) for as long as the results not yet taken weigh at most ``budget`` together
    (one result is always allowed, whatever it weighs). An exception from ``work`` is raised by
    ``next``; :meth:`close` (also at the end, or after that exception) stops the worker after the
    item it is working on."""

    def __init__(
        self,
        items: Sequence[_T],
        work: Callable[[_T], _R],
        *,
        weight: Callable[[_R], int],
        budget: int,
        name: str = "deerflow-index-read",
    ) -> None:
        self._work = work
        self._weight = weight
        self._budget = budget
        self._ready: deque[tuple[_T, _R | None, BaseException | None, int]] = deque()
        self._changed = threading.Condition()
        self._held = 0
        self._stopped = False
        self._left = len(items)
        self._worker = threading.Thread(target=self._produce, args=(items,), name=name, daemon=True)
        self._worker.start()

    def __iter__(self) -> ReadAhead[_T, _R]:
        return self

    def __next__(self) -> tuple[_T, _R]:
        if self._left == 0 or self._stopped:
            self.close()
            raise StopIteration
        with self._changed:
            while not self._ready:
                self._changed.wait()
            item, result, failure, size = self._ready.popleft()
            self._held -= size
            self._left -= 1
            self._changed.notify_all()
        if failure is not None:
            self.close()
            raise failure
        return item, result  # type: ignore[return-value]

    def close(self) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
        self._worker.join()

    def _produce(self, items: Sequence[_T]) -> None:
        for item in items:
            try:
                result: _R | None = self._work(item)
                failure: BaseException | None = None
                size = self._weight(result)  # type: ignore[arg-type]
            except BaseException as exc:  # handed to the consumer, which raises it
                result, failure, size = None, exc, 0
            with self._changed:
                while self._ready and self._held + size > self._budget and not self._stopped:
                    self._changed.wait()
                if self._stopped:
                    return
                self._ready.append((item, result, failure, size))
                self._held += size
                self._changed.notify_all()
            if failure is not None:
                return


read_ahead = ReadAhead


# --------------------------------------------------------------------------- the child process


class ReaderProcess:
    """A child interpreter that runs :func:`prepare` for the parent (see the module docstring).

    :meth:`start` it, :meth:`prepare` once, and :meth:`close` it in every case: that kills the
    child if it still runs, so nothing outlives the run. Starting up (importing this module, not
    the package's public API: see the module docstring) takes about a tenth of a second;
    meanwhile the parent reads its own share of the files (:data:`PARENT_SHARE`).
    """

    def __init__(self, process: subprocess.Popen[bytes], stderr: IO[bytes]) -> None:
        self._process = process
        self._stdin: IO[bytes] = process.stdin  # type: ignore[assignment]
        self._stdout: IO[bytes] = process.stdout  # type: ignore[assignment]
        self._stderr = stderr
        self._sender: threading.Thread | None = None
        self._received: ReadAhead[range, list[Prepared | SkipFile]] | None = None

    @classmethod
    def start(cls, *, pass_fds: Sequence[int] = ()) -> ReaderProcess:
        """Start the child, which inherits the descriptors ``pass_fds`` (the indexed folder's);
        :class:`OSError` if it cannot be (no interpreter to run, no fork)."""
        if not sys.executable or getattr(sys, "frozen", False):  # a frozen app is not Python
            raise OSError("no Python interpreter to run")
        if importlib.util.find_spec(ENTRY_MODULE) is None:  # a source tree without it on sys.path
            raise OSError(f"no {ENTRY_MODULE} module on sys.path")
        # A file, not a pipe: a child that writes much to stderr can never block on it.
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", _BOOT],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                close_fds=True,
                pass_fds=tuple(pass_fds),
            )
        except BaseException:
            stderr.close()
            raise
        child = cls(process, stderr)
        try:  # a few hundred bytes: the pipe takes them without waiting for the child
            pickle.dump(list(sys.path), child._stdin, protocol=pickle.HIGHEST_PROTOCOL)
            child._stdin.flush()
        except BaseException:
            child.close()
            raise
        return child

    @property
    def pid(self) -> int:
        return self._process.pid

    def prepare(
        self,
        files: Sequence[tuple[Path | str, str | None, int]],
        settings: Settings,
        *,
        budget: int,
        task_bytes: int = TASK_BYTES,
        task_files: int = TASK_FILES,
    ) -> Generator[Prepared | SkipFile, None, None]:
        """:func:`prepare` for every ``(file, previous digest, size)`` (``file`` relative to
        ``settings.root_fd`` when it is set), in order, run by the
        child in batches (:func:`tasks`) from now on, ahead of the caller for as long as the
        results not yet taken come from at most ``budget`` bytes of files (at least one batch).
        Call it once.

        The results raise :class:`UpstreamError` if the child fails or dies; closing them, or
        :meth:`close`, stops the child.
        """
        batches = tasks(
            [size for _, _, size in files], task_bytes=task_bytes, task_files=task_files
        )
        messages = [[(os.fspath(files[i][0]), files[i][1]) for i in batch] for batch in batches]
        self._sender = threading.Thread(
            target=self._send, args=(settings, messages), name="deerflow-index-send", daemon=True
        )
        self._sender.start()
        self._received = ReadAhead(
            batches, lambda _: self._receive(), weight=_weight, budget=budget
        )
        return self._results(self._received)

    def _results(
        self, received: ReadAhead[range, list[Prepared | SkipFile]]
    ) -> Generator[Prepared | SkipFile, None, None]:
        try:
            for batch, results in received:
                if len(results) != len(batch):
                    raise self._failed(f"{len(results)} results for {len(batch)} files")
                yield from results
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=5)  # it exits after the last batch
        finally:
            self.close()

    def close(self) -> None:
        """Stop the child (if it still runs) and the threads that talk to it."""
        # The child first: the receiving thread may be waiting for a batch that takes long.
        self._kill()
        if self._sender is not None:
            self._sender.join()
        if self._received is not None:
            self._received.close()
        for stream in (self._stdin, self._stdout, self._stderr):
            with contextlib.suppress(OSError):
                stream.close()

    def _send(self, settings: Settings, batches: list[list[tuple[str, str | None]]]) -> None:
        """Runs in its own thread, so that the child reads batches while results come back."""
        with contextlib.suppress(OSError, ValueError):  # the child was stopped or died
            pickle.dump(settings, self._stdin, protocol=pickle.HIGHEST_PROTOCOL)
            for batch in batches:
                pickle.dump(batch, self._stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self._stdin.close()

    def _receive(self) -> list[Prepared | SkipFile]:
        try:
            ok, payload = pickle.load(self._stdout)
        except Exception:  # end of file or a truncated message: the child died
            raise self._failed() from None
        if not ok:
            raise self._failed(payload)
        return payload  # type: ignore[no-any-return]

    def _failed(self, detail: str | None = None) -> UpstreamError:
        if detail is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=2)  # it is exiting (or stuck, and then killed)
            self._kill()
            code = self._process.returncode
            if code is not None and code < 0:
                with contextlib.suppress(ValueError):
                    detail = f"killed by {signal.Signals(-code).name}"
            detail = detail or f"exit status {code}"
            last = self._last_error_line()
            if last:
                detail += f": {last}"
        return UpstreamError(
            f"The local index's reader process failed ({detail}); the index was left as it was.",
            provider=PROVIDER_NAME,
        )

    def _last_error_line(self) -> str:
        with contextlib.suppress(OSError, ValueError):
            self._stderr.seek(0)
            lines = self._stderr.read()[-4096:].decode("utf-8", "replace").strip().splitlines()
            return one_line_path(lines[-1]) if lines else ""
        return ""

    def _kill(self) -> None:
        if self._process.poll() is None:
            with contextlib.suppress(OSError):
                self._process.kill()
            self._process.wait()


def _weight(results: list[Prepared | SkipFile]) -> int:
    """What a batch read ahead holds in memory, roughly: the size of the files it keeps."""
    return sum(r.size for r in results if isinstance(r, Prepared) and r.parts)


def serve() -> None:
    """The child's loop (see the module docstring): batches in on stdin, results out on stdout."""
    source = sys.stdin.buffer
    # Results go to a private copy of stdout; anything a library prints goes to stderr instead.
    sink = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    settings: Settings = pickle.load(source)
    folder = FolderReader(settings.root_fd) if settings.root_fd is not None else None
    for batch in _batches(source):
        try:
            message: tuple[bool, object] = (
                True,
                [prepare(file, previous, settings, folder) for file, previous in batch],
            )
        except Exception as exc:  # reported to the parent, which raises it
            message = (False, f"{type(exc).__name__}: {one_line_path(str(exc))}")
        try:
            pickle.dump(message, sink, protocol=pickle.HIGHEST_PROTOCOL)
            sink.flush()
        except BrokenPipeError:  # the parent stopped listening
            return
        if not message[0]:
            return


def _batches(source: IO[bytes]) -> Iterator[list[tuple[str, str | None]]]:
    while True:
        try:
            yield pickle.load(source)
        except EOFError:
            return
