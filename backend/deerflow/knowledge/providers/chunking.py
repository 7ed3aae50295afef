"""Cut document text into chunks on paragraph, sentence and word boundaries. Pure.

Chunks are at most ``chunk_chars`` code points, cut on paragraph, then sentence, then word
boundaries (a hard cut only inside an over-long word); each repeats up to ``chunk_overlap`` code
points of whole sentences from the end of the previous one. A chunk is a slice of the text, so an
excerpt is always text the document really contains. Used by the local index
(:mod:`deerflow.knowledge.providers.local`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Final

from deerflow.knowledge._rules import MAX_EXCERPT_CHARS
from deerflow.knowledge.providers.errors import ProviderConfigError

__all__ = [
    "DEFAULT_CHUNK_CHARS",
    "DEFAULT_CHUNK_OVERLAP",
    "MAX_CHUNK_CHARS",
    "MIN_CHUNK_CHARS",
    "check_chunking",
    "chunk_text",
]

#: Chunk settings are the local provider's (an invalid one is its configuration error).
_PROVIDER: Final = "local"
#: Chunks are at most this many code points (the tool's default per-hit excerpt budget).
DEFAULT_CHUNK_CHARS: Final = 800
#: Each chunk repeats up to this many code points of whole sentences from its predecessor.
DEFAULT_CHUNK_OVERLAP: Final = 120
MIN_CHUNK_CHARS: Final = 16
MAX_CHUNK_CHARS: Final = MAX_EXCERPT_CHARS
_PARAGRAPH_BREAK_RE = re.compile(r"\n[ \t]*(?:\r?\n)\s*")
_SENTENCE_BREAK_RE = re.compile(r"(?<=[.!?;:\u3002\uff01\uff1f])\s+|\n")
_WORD_BREAK_RE = re.compile(r"\s+")
_SEPARATORS: Final = (_PARAGRAPH_BREAK_RE, _SENTENCE_BREAK_RE, _WORD_BREAK_RE)


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
