"""Find and read the documents of a folder: Markdown, text and PDF pages, safely. Disk reads only.

Discovery skips what must not be indexed (symbolic links, named pipes, sockets, devices, paths
that cannot be a source title) with a reason; reading opens non-blocking and never follows a
link, refuses a file over ``max_bytes`` before reading it, and extracts PDF text page by page
(a page number is only ever a PDF's real page). Used by the local index
(:mod:`deerflow.knowledge.providers.local`), which writes what this module reads.
"""

from __future__ import annotations

import errno
import io
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from deerflow.knowledge._rules import is_valid_title
from deerflow.knowledge.text import is_blank

__all__ = [
    "MAX_FILE_BYTES",
    "SUPPORTED_SUFFIXES",
    "Candidate",
    "SkipFile",
    "SkippedFile",
    "discover",
    "document_pages",
    "one_line_path",
    "read_bytes",
]

#: Files larger than this are skipped (with a reason) instead of being read into memory; the
#: default of :meth:`LocalProvider.index`'s ``max_file_bytes``.
MAX_FILE_BYTES: Final = 64 * 1024 * 1024
SUPPORTED_SUFFIXES: Final = frozenset({".md", ".markdown", ".txt", ".pdf"})
_PDF_JUNK_RE = re.compile(r"[\x00\ud800-\udfff]")  # NULs and lone surrogates from broken fonts


@dataclass(frozen=True, slots=True)
class SkippedFile:
    path: str
    """The path relative to the indexed folder (POSIX separators)."""
    reason: str


class SkipFile(Exception):
    """A file that cannot be indexed; the message is the reason shown in the report."""


@dataclass(frozen=True, slots=True)
class Candidate:
    path: str
    file: Path
    size: int = 0
    """The size found when the folder was read (the file may change before it is read)."""


def discover(root: Path) -> tuple[list[Candidate], list[SkippedFile]]:
    """Regular supported files under ``root`` in a stable order; hidden entries, symlinks, pipes,
    sockets and devices are left out (all but hidden ones with a reason)."""
    found: list[Candidate] = []
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
                info = file.lstat()
            except OSError as exc:
                skipped.append(SkippedFile(_printable(relative), _unreadable(exc)))
                continue
            mode = info.st_mode
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
                found.append(Candidate(relative, file, info.st_size))
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


def read_bytes(file: Path, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes, or :class:`SkipFile` without ever blocking on a pipe or device, and
    without reading more than ``max_bytes`` (a file may grow after its size was checked)."""
    try:
        descriptor = os.open(file, _OPEN_FLAGS)
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


def document_pages(file: Path, data: bytes) -> list[tuple[int | None, str]]:
    """The document's text as ``(page, text)`` parts: real PDF pages, or one part without a page."""
    if file.suffix.lower() == ".pdf":
        return _pdf_pages(data)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SkipFile(f"not UTF-8 text (invalid byte at offset {exc.start})") from None
    if "\x00" in text:
        raise SkipFile("binary content (NUL bytes) in a text file")
    return [(None, text.replace("\r\n", "\n").replace("\r", "\n"))]


def _pdf_pages(data: bytes) -> list[tuple[int | None, str]]:
    from pypdf import PdfReader  # imported on first PDF: searching never needs it

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise SkipFile("encrypted PDF (a password is needed)")
        pages: list[tuple[int | None, str]] = []
        for number, page in enumerate(reader.pages, start=1):
            text = page.extract_text() or ""
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


def _clean_pdf_text(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _PDF_JUNK_RE.sub("", text)


def one_line_path(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
