"""The renderer's per-line nesting budget, so that citations are found in the text it parses.

The TypeScript renderer (``guard.ts``) escapes block-quote and list markers past
:data:`MAX_NESTING_DEPTH` on a line and trims leading indentation past :data:`MAX_INDENT_COLUMNS`
columns (deeper nesting overflows its parser's stack). That changes what the rest of such a line
is — indented code, a fence or an HTML block at depth 33 becomes a paragraph — so
``find_citations`` parses the same capped text and maps its offsets back: a link is a chip exactly
when it is reported. The rule here is the TypeScript one, line for line (fenced code exempt).
"""

from __future__ import annotations

import bisect
import re
from typing import Final

__all__ = [
    "MAX_INDENT_COLUMNS",
    "MAX_NESTING_DEPTH",
    "CapEdit",
    "cap_nesting",
    "capped_starts",
    "original_offset",
]

#: Block quotes and list items nested deeper than this on one line are written as text.
MAX_NESTING_DEPTH: Final = 32
#: Leading indentation kept per line, in columns (a tab counts 4).
MAX_INDENT_COLUMNS: Final = 128

#: ``(start, end, text)``: the code-point range ``[start, end)`` becomes ``text``.
CapEdit = tuple[int, int, str]

_FENCE: Final = re.compile(r" {0,3}(?:`{3,}|~{3,})")
# What JavaScript's String.prototype.trim removes (the guard's fence test uses it).
_JS_SPACE: Final = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_BLANK: Final = frozenset(" \t\n\r\x00")
_DIGITS: Final = frozenset("0123456789")


def cap_nesting(
    markdown: str,
    *,
    max_depth: int = MAX_NESTING_DEPTH,
    max_indent_columns: int = MAX_INDENT_COLUMNS,
) -> tuple[str, list[CapEdit]]:
    """``markdown`` under the per-line budget, and the edits (in order) that made it."""
    edits: list[CapEdit] = []
    fence: str | None = None
    n = len(markdown)
    line_start = 0
    while line_start <= n:
        line_end = markdown.find("\n", line_start)
        if line_end == -1:
            line_end = n
        line = markdown[line_start:line_end]
        opener = _FENCE.match(line) if line[:1] in (" ", "`", "~") else None
        if fence is not None:
            if opener is not None:
                mark = opener.group().strip(_JS_SPACE)
                if mark[0] == fence and len(line.strip(_JS_SPACE)) == len(mark):
                    fence = None
            line_start = line_end + 1
            continue
        if opener is not None:
            fence = opener.group().strip(_JS_SPACE)[0]
        i = line_start
        columns = 0
        while i < line_end and markdown[i] in " \t":
            columns += 4 - columns % 4 if markdown[i] == "\t" else 1
            i += 1
        if columns > max_indent_columns:
            edits.append((line_start, i, " " * max_indent_columns))
        depth = 0
        while True:
            code = markdown[i] if i < line_end else ""
            following = markdown[i + 1] if i + 1 < line_end else ""
            after = -1
            escape_at = i
            bullet = code in ("-", "*", "+") and (following == "" or following in _BLANK)
            if code == ">" or (code and bullet):
                after = i + 1
            elif code and code in _DIGITS:
                j = i
                while j < line_end and j - i < 9 and markdown[j] in _DIGITS:
                    j += 1
                mark = markdown[j] if j < line_end else ""
                beyond = markdown[j + 1] if j + 1 < line_end else ""
                if mark in (".", ")") and mark and (beyond == "" or beyond in _BLANK):
                    after = j + 1
                    escape_at = j
            if after == -1:
                break
            depth += 1
            if depth > max_depth:
                edits.append((escape_at, escape_at, "\\"))
                break
            i = after
            while i < line_end and markdown[i] in " \t":
                i += 1
        line_start = line_end + 1
    if not edits:
        return markdown, edits
    pieces: list[str] = []
    cursor = 0
    for start, end, text in edits:
        pieces += (markdown[cursor:start], text)
        cursor = end
    pieces.append(markdown[cursor:])
    return "".join(pieces), edits


def original_offset(edits: list[CapEdit], starts: list[int], offset: int) -> int:
    """The offset of the original text that ``offset`` of the capped text stands for;
    ``starts`` are :func:`capped_starts` of ``edits``."""
    k = bisect.bisect_right(starts, offset)
    if k == 0:
        return offset
    start, end, text = edits[k - 1]
    capped_start = starts[k - 1]
    if offset < capped_start + len(text):
        return start + min(offset - capped_start, end - start)
    return end + (offset - capped_start - len(text))


def capped_starts(edits: list[CapEdit]) -> list[int]:
    """Where each edit starts in the capped text."""
    starts: list[int] = []
    delta = 0
    for start, end, text in edits:
        starts.append(start + delta)
        delta += len(text) - (end - start)
    return starts
