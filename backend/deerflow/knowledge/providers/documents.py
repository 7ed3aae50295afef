"""Find and read the documents of a folder: Markdown, text and PDF pages, safely. Disk reads only.

Discovery walks the folder without recursion (a folder tree of any depth costs no stack), from
directory descriptors: every folder is opened relative to its parent with ``O_NOFOLLOW |
O_DIRECTORY``, so a folder swapped for a symbolic link while the run is under way is refused, not
followed out of the indexed folder. Reading (:class:`FolderReader`) opens every component of a
file's path the same way, from the descriptor of the indexed folder that discovery opened. What is
left out is listed with a reason: hidden entries, unsupported types, symbolic links, named pipes,
sockets, devices, paths that cannot be a source title, folders nested deeper than ``max_depth``,
and paths matched by exclude patterns or a ``.gitignore`` (:mod:`.parse._ignore`). Reading opens
non-blocking, refuses a file over ``max_bytes`` before reading it, and extracts PDF text page by
page within named limits (a page number is only ever a PDF's real page). Used by the local index
(:mod:`deerflow.knowledge.providers.local`), which writes what this module reads.

It is about 500 lines because the walk and the reader share the descriptor-based opening rules
(no link followed, nothing but regular files read); keeping them together keeps one such rule.
"""

from __future__ import annotations

import errno
import io
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from deerflow.knowledge.rules import is_valid_title
from deerflow.knowledge.text import ELLIPSIS, is_blank

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_PAGE_CHARS",
    "MAX_PAGE_CONTENT_BYTES",
    "MAX_PDF_CHARS",
    "SUPPORTED_SUFFIXES",
    "Candidate",
    "FolderReader",
    "PdfLimits",
    "SkipFile",
    "SkippedFile",
    "discover",
    "document_pages",
    "one_line_path",
    "open_folder",
    "read_bytes",
]

#: Files larger than this are skipped (with a reason) instead of being read into memory; the
#: default of :meth:`LocalProvider.index`'s ``max_file_bytes``.
MAX_FILE_BYTES: Final = 64 * 1024 * 1024
#: Folders nested deeper than this below the indexed folder are not entered (one reason each):
#: the default of ``max_depth``. Its files are at depth 0. A source title is at most 512 code
#: points, so a deeper path is rarely a usable title anyway.
MAX_DEPTH: Final = 64
#: The text extracted from one PDF, all pages together (code points): a small compressed file
#: can expand to far more text than ``max_file_bytes`` (a page drawn ten thousand times, a
#: stream that inflates a thousandfold). About 5,000 pages of dense text.
MAX_PDF_CHARS: Final = 16 * 1024 * 1024
#: The text extracted from one PDF page (code points); a dense printed page holds about 5,000.
MAX_PAGE_CHARS: Final = 1024 * 1024
#: A PDF page's decoded content stream (bytes), checked before its text is extracted: the
#: parser turns the whole stream into objects before any text comes out (about 0.4 s per MiB).
MAX_PAGE_CONTENT_BYTES: Final = 8 * 1024 * 1024
SUPPORTED_SUFFIXES: Final = frozenset({".md", ".markdown", ".txt", ".pdf"})
_PDF_JUNK_RE = re.compile(r"[\x00\ud800-\udfff]")  # NULs and lone surrogates from broken fonts
_UNSUPPORTED: Final = "indexed types are " + ", ".join(sorted(SUPPORTED_SUFFIXES))


@dataclass(frozen=True, slots=True)
class SkippedFile:
    path: str
    """The path relative to the indexed folder (POSIX separators); a folder's ends with ``/``."""
    reason: str


class SkipFile(Exception):
    """A file that cannot be indexed; the message is the reason shown in the report."""


@dataclass(frozen=True, slots=True)
class Candidate:
    path: str
    file: Path
    size: int = 0
    """The size found when the folder was read (the file may change before it is read)."""


@dataclass(frozen=True, slots=True)
class PdfLimits:
    """What one PDF may expand to (see the constants of the same names)."""

    max_pdf_chars: int = MAX_PDF_CHARS
    max_page_chars: int = MAX_PAGE_CHARS
    max_page_content_bytes: int = MAX_PAGE_CONTENT_BYTES


# --------------------------------------------------------------------------- discovery

_DIR_FLAGS: Final = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def open_folder(root: Path) -> int:
    """A descriptor of the folder ``root`` (a link naming it is followed: the operator chose it)."""
    return os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))


@dataclass(slots=True)
class _Frame:
    fd: int
    path: str
    """The folder's path relative to the root, ``""`` or ending with ``/``."""
    depth: int
    rules: Any
    entries: list[os.DirEntry[str]] = field(default_factory=list)
    next: int = 0


def discover(
    root: Path,
    *,
    root_fd: int | None = None,
    max_depth: int = MAX_DEPTH,
    exclude: Sequence[str] = (),
    gitignore: bool = True,
) -> tuple[list[Candidate], list[SkippedFile]]:
    """Regular supported files under ``root`` in a stable order, and every entry left out, with
    its reason (a folder left out is one entry; nothing below it is looked at).

    ``root_fd`` is a descriptor of ``root`` (see :func:`open_folder`; the caller keeps it open
    to read the files through a :class:`FolderReader`); without it one is opened and closed.
    ``exclude`` holds ``.gitignore``-syntax patterns; ``gitignore`` applies the ``.gitignore``
    files found in the folder (see :mod:`.parse._ignore`). Raises :class:`ValueError` for an invalid
    exclude pattern and :class:`OSError` if ``root`` cannot be opened.
    """
    from deerflow.knowledge.providers.parse._ignore import Rules, check_patterns

    rules = Rules.from_exclude(check_patterns(exclude))
    top = open_folder(root) if root_fd is None else os.dup(root_fd)  # closed with its frame
    found: list[Candidate] = []
    skipped: list[SkippedFile] = []
    stack: list[_Frame] = []
    try:
        frame = _enter(top, "", 0, rules, skipped, gitignore=gitignore)
        if frame is not None:
            stack.append(frame)
        while stack:
            frame = stack[-1]
            if frame.next == len(frame.entries):
                os.close(stack.pop().fd)
                continue
            entry = frame.entries[frame.next]
            frame.next += 1
            child = _visit(root, frame, entry, found, skipped, max_depth, gitignore)
            if child is not None:
                stack.append(child)
    finally:
        for frame in stack:
            os.close(frame.fd)
    found.sort(key=lambda c: c.path)
    skipped.sort(key=lambda s: s.path)
    return found, skipped


def _enter(
    fd: int, path: str, depth: int, rules: Any, skipped: list[SkippedFile], *, gitignore: bool
) -> _Frame | None:
    """The frame of an opened folder (its entries listed, its ``.gitignore`` applied), or None
    (then ``fd`` is closed) if it cannot be listed."""
    try:
        with os.scandir(fd) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError as exc:
        os.close(fd)
        skipped.append(SkippedFile(_printable(path) or "./", _unreadable(exc)))
        return None
    if gitignore and any(e.name == ".gitignore" for e in entries):
        text, problem = _read_gitignore(fd)
        if text is not None:
            rules = rules.with_gitignore(path, text)
        else:
            skipped.append(
                SkippedFile(_printable(path + ".gitignore"), f"{problem}; its rules were not used")
            )
    return _Frame(fd, path, depth, rules, entries)


def _visit(
    root: Path,
    frame: _Frame,
    entry: os.DirEntry[str],
    found: list[Candidate],
    skipped: list[SkippedFile],
    max_depth: int,
    gitignore: bool,
) -> _Frame | None:
    """Classify one entry of ``frame``'s folder; a subfolder to walk is returned as its frame."""
    name = entry.name
    relative = frame.path + name
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError as exc:
        skipped.append(SkippedFile(_printable(relative), _unreadable(exc)))
        return None
    mode = info.st_mode
    is_folder = stat.S_ISDIR(mode)
    if name.startswith("."):
        kind = "folder" if is_folder else "file"
        skipped.append(
            SkippedFile(_shown(relative, is_folder), f"hidden {kind} (its name starts with a dot)")
        )
        return None
    reason = frame.rules.reason(relative, folder=is_folder)
    if reason is not None:
        skipped.append(SkippedFile(_shown(relative, is_folder), reason))
        return None
    if stat.S_ISLNK(mode):
        skipped.append(SkippedFile(_shown(relative, is_folder), "symbolic link (not followed)"))
        return None
    if is_folder:
        if frame.depth + 1 > max_depth:
            skipped.append(
                SkippedFile(
                    _shown(relative, is_folder),
                    f"folder nested deeper than {max_depth} levels (not entered)",
                )
            )
            return None
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=frame.fd)
        except OSError as exc:
            skipped.append(
                SkippedFile(_shown(relative, is_folder), _component_failure(exc, name, frame.fd))
            )
            return None
        return _enter(
            fd, relative + "/", frame.depth + 1, frame.rules, skipped, gitignore=gitignore
        )
    suffix = Path(name).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        kind = f"{suffix}" if suffix else "no extension"
        skipped.append(
            SkippedFile(_shown(relative, is_folder), f"unsupported type ({kind}; {_UNSUPPORTED})")
        )
    elif (special := _not_regular(mode)) is not None:
        skipped.append(SkippedFile(_shown(relative, is_folder), special))
    elif not is_valid_title(relative):
        skipped.append(
            SkippedFile(
                _shown(relative, is_folder),
                "the path cannot be a source title (control characters, undecodable "
                "bytes or longer than 512 characters)",
            )
        )
    else:
        found.append(Candidate(relative, root / relative, info.st_size))
    return None


def _shown(relative: str, is_folder: bool) -> str:
    """How a path left out is listed (built only then: most paths are indexed)."""
    return _printable(relative) + ("/" if is_folder else "")


def _read_gitignore(folder_fd: int) -> tuple[bytes | None, str]:
    """The ``.gitignore``'s bytes (git matches bytes, so they are not decoded), or why not."""
    from deerflow.knowledge.providers.parse._ignore import MAX_GITIGNORE_BYTES

    try:
        data = _read_at(folder_fd, ".gitignore", max_bytes=MAX_GITIGNORE_BYTES)
    except SkipFile as exc:
        return None, str(exc)
    return data, ""


def _component_failure(exc: OSError, name: str, parent_fd: int) -> str:
    """Why a folder could not be opened: a symbolic link (``O_NOFOLLOW | O_DIRECTORY`` reports
    one as ``ENOTDIR`` or ``ELOOP``), no longer a folder, or unreadable."""
    if exc.errno in (errno.ENOTDIR, errno.ELOOP):
        try:
            mode = os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode
        except OSError:
            mode = 0
        if stat.S_ISLNK(mode) or exc.errno == errno.ELOOP:
            return "symbolic link (not followed)"
        return "no longer a folder"
    return _unreadable(exc)


# --------------------------------------------------------------------------- reading

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


class FolderReader:
    """Reads files by their path relative to a folder descriptor, opening every folder on the
    way with ``O_NOFOLLOW | O_DIRECTORY`` and the file with ``O_NOFOLLOW``: nothing outside the
    folder is ever read, whatever is renamed or swapped for a link after discovery.

    The folders of the last file stay open (files come in path order, so most share them); use
    one reader per thread, and :meth:`close` it. The folder descriptor itself is the caller's.
    """

    def __init__(self, root_fd: int) -> None:
        self._root = root_fd
        self._chain: list[tuple[str, int]] = []

    def read(self, path: str, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
        """The bytes of the file at ``path`` (POSIX separators), as :func:`read_bytes` reads."""
        *folders, name = path.split("/")
        kept = 0
        while (
            kept < len(self._chain)
            and kept < len(folders)
            and self._chain[kept][0] == folders[kept]
        ):
            kept += 1
        for _, fd in self._chain[kept:]:
            os.close(fd)
        del self._chain[kept:]
        for folder in folders[kept:]:
            parent = self._chain[-1][1] if self._chain else self._root
            try:
                fd = os.open(folder, _DIR_FLAGS, dir_fd=parent)
            except OSError as exc:
                reason = _component_failure(exc, folder, parent)
                raise SkipFile(f"the folder {_printable(folder)!r} on its path: {reason}") from None
            self._chain.append((folder, fd))
        parent = self._chain[-1][1] if self._chain else self._root
        return _read_at(parent, name, max_bytes=max_bytes)

    def close(self) -> None:
        for _, fd in self._chain:
            os.close(fd)
        self._chain.clear()


def read_bytes(file: Path, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes, or :class:`SkipFile` without ever blocking on a pipe or device, and
    without reading more than ``max_bytes`` (a file may grow after its size was checked).

    Only the last component of ``file`` is not followed; an index run reads through a
    :class:`FolderReader`, which guards every component."""
    return _read_at(None, os.fspath(file), max_bytes=max_bytes)


def _read_at(folder_fd: int | None, name: str, *, max_bytes: int) -> bytes:
    try:
        descriptor = os.open(name, _OPEN_FLAGS, dir_fd=folder_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SkipFile("symbolic link (not followed)") from None
        raise SkipFile(_unreadable(exc)) from None
    try:
        with open(descriptor, "rb", closefd=True) as stream:
            info = os.fstat(stream.fileno())
            special = _not_regular(info.st_mode)
            if special is not None:
                raise SkipFile(special)
            if info.st_size > max_bytes:
                raise SkipFile(_too_large(max_bytes))
            data = stream.read(max_bytes + 1)
    except OSError as exc:
        raise SkipFile(_unreadable(exc)) from None
    if len(data) > max_bytes:
        raise SkipFile(_too_large(max_bytes))
    return data


# --------------------------------------------------------------------------- text


def document_pages(
    file: Path | str, data: bytes, *, limits: PdfLimits = PdfLimits()
) -> list[tuple[int | None, str]]:
    """The document's text as ``(page, text)`` parts: real PDF pages, or one part without a page.

    A PDF whose text or a page's text or content stream is over ``limits`` is a :class:`SkipFile`
    (its extraction stops there)."""
    if Path(file).suffix.lower() == ".pdf":
        return _pdf_pages(data, limits)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SkipFile(f"not UTF-8 text (invalid byte at offset {exc.start})") from None
    if "\x00" in text:
        raise SkipFile("binary content (NUL bytes) in a text file")
    return [(None, text.replace("\r\n", "\n").replace("\r", "\n"))]


class _TextLimit(Exception):
    """Raised from pypdf's text visitor to stop an extraction that is over a limit."""


def _pdf_pages(data: bytes, limits: PdfLimits) -> list[tuple[int | None, str]]:
    from pypdf import PdfReader  # imported on first PDF: searching never needs it

    total = 0
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise SkipFile("encrypted PDF (a password is needed)")
        pages: list[tuple[int | None, str]] = []
        for number, page in enumerate(reader.pages, start=1):
            contents = page.get_contents()
            size = len(contents.get_data()) if contents is not None else 0
            if size > limits.max_page_content_bytes:
                raise SkipFile(
                    f"page {number}'s content is larger than {limits.max_page_content_bytes} "
                    "bytes (the limit on a PDF page)"
                )
            remaining = limits.max_pdf_chars - total
            text = _page_text(page, min(limits.max_page_chars, remaining))
            if text is None:
                if remaining < limits.max_page_chars:
                    raise SkipFile(
                        f"its text is longer than {limits.max_pdf_chars} characters (the limit "
                        f"on a PDF; reached at page {number})"
                    )
                raise SkipFile(
                    f"page {number}'s text is longer than {limits.max_page_chars} characters "
                    "(the limit on a PDF page)"
                )
            total += len(text)
            pages.append((number, _clean_pdf_text(text)))
    except SkipFile:
        raise
    except Exception as exc:  # pypdf raises many types for damaged files
        detail = one_line_path(str(exc))
        raise SkipFile(
            f"corrupt or unsupported PDF ({type(exc).__name__}{': ' + detail if detail else ''})"
        ) from None
    if all(is_blank(text) for _, text in pages):
        raise SkipFile("no extractable text (a scanned PDF needs OCR first)")
    return pages


def _page_text(page: Any, limit: int) -> str | None:
    """The page's text, or None once pypdf has produced more than ``limit`` code points of it
    (counted as it goes, so a page that expands without bound stops early)."""
    produced = 0
    # pypdf hands the visitor the page's text piece by piece (in every PDF tried, exactly the
    # text it returns); stopping at twice the limit leaves room for any layout it adds.
    bound = 2 * limit

    def count(text: str, *_: object) -> None:
        nonlocal produced
        produced += len(text)
        if produced > bound:
            raise _TextLimit

    try:
        text = page.extract_text(visitor_text=count) or ""
    except _TextLimit:
        return None
    return text if len(text) <= limit else None


def _clean_pdf_text(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _PDF_JUNK_RE.sub("", text)


def one_line_path(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS
