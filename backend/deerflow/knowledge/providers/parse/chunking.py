"""Cut document text into chunks of whole sentences. Pure.

An excerpt is what a person reads in a citation preview and what the responder quotes, so a chunk
starts and ends where a statement does. The text is read as blocks — paragraphs (separated by a
blank line) and fenced code blocks (```` ``` ```` or ``~~~`` up to the closing fence, blank lines
and all) — and each paragraph as units: its sentences, its Markdown headings, list items, table
rows and quotations (each starts on a new line), and a short heading line at its start (a PDF
page's or a text file's title). A line break inside a paragraph is a soft wrap, not a boundary.

Chunks are at most ``chunk_chars`` code points of whole units, preferring to end at a block end.
A code fence is one unit: a chunk boundary never falls inside it unless the fence alone is longer
than a chunk, and only then (like a sentence longer than a chunk) is it cut, at lines, then at
words, a hard cut only inside an over-long word. Each chunk repeats up to ``chunk_overlap`` code
points of whole units from the end of the previous one, so a statement near a boundary is found
whole. A chunk is a slice of the text, so an excerpt is always text the document really contains;
a PDF page is chunked on its own, so a chunk keeps its page. Used by the local index
(:mod:`deerflow.knowledge.providers.local`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Final

from deerflow.knowledge._provider_errors import ProviderConfigError

# Chunk settings are the local provider's (an invalid one is its configuration error).
from deerflow.knowledge._provider_settings import LOCAL as _PROVIDER
from deerflow.knowledge.rules import MAX_EXCERPT_CHARS
from deerflow.knowledge.text import looks_like_heading, sentence_ends

__all__ = [
    "DEFAULT_CHUNK_CHARS",
    "DEFAULT_CHUNK_OVERLAP",
    "MAX_CHUNK_CHARS",
    "MIN_CHUNK_CHARS",
    "check_chunking",
    "chunk_text",
]

#: Chunks are at most this many code points (the tool's default per-hit excerpt budget).
DEFAULT_CHUNK_CHARS: Final = 800
#: Each chunk repeats up to this many code points of whole sentences from its predecessor.
DEFAULT_CHUNK_OVERLAP: Final = 120
MIN_CHUNK_CHARS: Final = 16
MAX_CHUNK_CHARS: Final = MAX_EXCERPT_CHARS
_FENCE_RE = re.compile(r"[ ]{0,3}(`{3,}|~{3,})")
#: A line that starts a Markdown block of its own: heading, list item, table row, quotation.
_BLOCK_START_RE = re.compile(r"[ \t]*(?:#{1,6}(?:\s|$)|[-*+]\s|\d{1,9}[.)]\s|\||>)")
_HEADING_LINE_RE = re.compile(r"[ \t]*#{1,6}(?:\s|$)")
_WORD_BREAK_RE = re.compile(r"\s+")


def chunk_text(
    text: str,
    *,
    chunk_chars: int = DEFAULT_CHUNK_CHARS,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
) -> list[str]:
    """Cut ``text`` into chunks of at most ``chunk_chars`` code points (see the module docstring).

    Every chunk is a slice of ``text`` with surrounding white space removed; blank text gives none.
    """
    check_chunking(chunk_chars, chunk_overlap)
    units: list[tuple[int, int]] = []
    block_ends: set[int] = set()  # indexes of the units that end a block
    headings: set[int] = set()  # and of those that head what follows them
    for lines, fenced in _blocks(text):
        for unit, heading in _block_units(text, lines, fenced):
            units.extend(_fit(text, *unit, chunk_chars))
            if heading:
                headings.add(len(units) - 1)
        if units and len(units) - 1 not in headings:
            block_ends.add(len(units) - 1)
    chunks: list[str] = []
    first = 0
    while first < len(units):
        start = units[first][0]
        last = first  # the last unit that fits
        while last + 1 < len(units) and units[last + 1][1] - start <= chunk_chars:
            last += 1
        if last in headings and last + 1 < len(units):  # a heading goes with the text it heads
            last = next((u for u in range(last - 1, first - 1, -1) if u not in headings), last)
        last = _prefer_block_end(units, block_ends, first, last, chunk_chars)
        chunks.append(text[start : units[last][1]])
        if last + 1 == len(units):
            break
        first = _next_first(units, first, last, chunk_chars, chunk_overlap)
    return chunks


def check_chunking(chunk_chars: object, chunk_overlap: object) -> None:
    if type(chunk_chars) is not int or not MIN_CHUNK_CHARS <= chunk_chars <= MAX_CHUNK_CHARS:
        raise ProviderConfigError(
            f"Invalid chunk_chars: expected an integer from {MIN_CHUNK_CHARS} to {MAX_CHUNK_CHARS}.",
            provider=_PROVIDER,
        )
    if type(chunk_overlap) is not int or not 0 <= chunk_overlap < chunk_chars:
        raise ProviderConfigError(
            "Invalid chunk_overlap: expected an integer from 0 to less than chunk_chars.",
            provider=_PROVIDER,
        )


def _lines(text: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of every line, its line break excluded."""
    start = 0
    while start <= len(text):
        end = text.find("\n", start)
        if end < 0:
            if start < len(text):
                yield start, len(text)
            return
        yield start, end
        start = end + 1


def _blocks(text: str) -> Iterator[tuple[list[tuple[int, int]], bool]]:
    """The lines of each paragraph and fenced code block, in order, and whether it is a fence."""
    lines: list[tuple[int, int]] = []
    fence: str | None = None
    for line_start, line_end in _lines(text):
        line = text[line_start:line_end]
        if fence is not None:
            lines.append((line_start, line_end))
            closing = _FENCE_RE.match(line)
            if (
                closing
                and closing.group(1)[0] == fence[0]
                and len(closing.group(1)) >= len(fence)
                and line[closing.end() :].strip() == ""
            ):
                yield lines, True
                lines, fence = [], None
            continue
        opening = _FENCE_RE.match(line)
        # A backtick fence's info string holds no backtick (else it is inline code).
        if opening and not (opening.group(1)[0] == "`" and "`" in line[opening.end() :]):
            if lines:
                yield lines, False
            lines, fence = [(line_start, line_end)], opening.group(1)
        elif line.strip() == "":
            if lines:
                yield lines, False
            lines = []
        else:
            lines.append((line_start, line_end))
    if lines:
        yield lines, fence is not None  # an unclosed fence runs to the end of the text


def _block_units(
    text: str, lines: list[tuple[int, int]], fenced: bool
) -> Iterator[tuple[tuple[int, int], bool]]:
    """The units of one block, each with whether it is a heading: a fence whole; a paragraph's
    lines grouped into statements (a new one at each Markdown block line, after a heading line and
    after a first-line title), each cut into sentences."""
    if fenced:
        for unit in _trimmed(text, lines[0][0], lines[-1][1]):
            yield unit, False
        return
    groups: list[tuple[list[tuple[int, int]], bool]] = []
    for index, (line_start, line_end) in enumerate(lines):
        line = text[line_start:line_end]
        following = (
            text[lines[index + 1][0] : lines[index + 1][1]] if index + 1 < len(lines) else ""
        )
        heading = bool(_HEADING_LINE_RE.match(line)) or (
            index == 0 and looks_like_heading(line.strip(), following.strip())
        )
        if not groups or heading or groups[-1][1] or _BLOCK_START_RE.match(line):
            groups.append(([(line_start, line_end)], heading))
        else:
            groups[-1][0].append((line_start, line_end))
    for group, heading in groups:
        if heading:
            for unit in _trimmed(text, group[0][0], group[-1][1]):
                yield unit, True
        else:
            for unit in _sentences(text, group[0][0], group[-1][1]):
                yield unit, False


def _sentences(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    cursor = start
    for cut in sentence_ends(text, start, end):
        yield from _trimmed(text, cursor, cut)
        cursor = cut
    yield from _trimmed(text, cursor, end)


def _trimmed(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end:
        yield start, end


def _fit(text: str, start: int, end: int, size: int) -> Iterator[tuple[int, int]]:
    """A unit longer than ``size`` cut at lines, then words, then (one over-long word) anywhere."""
    if end - start <= size:
        yield start, end
        return
    for pattern in (re.compile(r"\n"), _WORD_BREAK_RE):
        pieces = list(_split(text, start, end, pattern))
        if len(pieces) > 1:
            for piece in pieces:
                yield from _fit(text, *piece, size)
            return
    for cut in range(start, end, size):
        yield cut, min(cut + size, end)


def _split(text: str, start: int, end: int, pattern: re.Pattern[str]) -> Iterator[tuple[int, int]]:
    cursor = start
    for match in pattern.finditer(text, start, end):
        yield from _trimmed(text, cursor, match.start())
        cursor = match.end()
    yield from _trimmed(text, cursor, end)


def _prefer_block_end(
    units: Sequence[tuple[int, int]], block_ends: set[int], first: int, last: int, size: int
) -> int:
    """End a full chunk at its last block end if that keeps it at least half full."""
    if last + 1 == len(units):
        return last
    start = units[first][0]
    for candidate in range(last, first, -1):
        if units[candidate][1] - start < size // 2:
            break
        if candidate in block_ends:
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
