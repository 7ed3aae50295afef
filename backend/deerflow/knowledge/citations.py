"""The citation link grammar (contracts/README.md §4): find citations, relabel orphans.

A deliberate subset of CommonMark that agrees with it on everything a model emits: fenced code
blocks, code spans, backslash escapes, images, and the bracket-matching rule that links do not
nest. It runs in one left-to-right pass with a bracket stack (like CommonMark's delimiter stack),
so hostile input cannot make it quadratic. The TypeScript twin in ``frontend/src/citations.ts``
implements the same steps; ``contracts/vectors/citations.json`` pins both.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Final, Literal

from deerflow.knowledge.contract import CONTROL_CHARACTERS, WHITE_SPACE

__all__ = [
    "CITATION_LABEL_PREFIX",
    "MAX_DESTINATION_CHARS",
    "MAX_LABEL_CHARS",
    "Citation",
    "CitationKind",
    "find_citations",
    "relabel_citations",
    "relabel_orphans",
]

MAX_LABEL_CHARS: Final = 2_048
MAX_DESTINATION_CHARS: Final = 2_048
CITATION_LABEL_PREFIX: Final = "citation:"

CitationKind = Literal["shared", "native", "web", "malformed"]
_SHARED_ONLY: Final[tuple[CitationKind, ...]] = ("shared",)

_SHARED_RE = re.compile(r"#(?:user-content-)?knowledge-source-([0-9a-f]{32})")
_NATIVE_RE = re.compile(r"#(?:user-content-)?knowledge-([0-9a-f]{32}-[1-9][0-9]{0,2})")
_SHARED_PREFIXES: Final = ("#knowledge-source-", "#user-content-knowledge-source-")
_WEB_PREFIXES: Final = ("http://", "https://")
_ASCII_PUNCTUATION: Final = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_DESTINATION_STOP: Final = WHITE_SPACE | CONTROL_CHARACTERS | frozenset("()<>")
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")
_FENCE_OPEN_RE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)", re.DOTALL)
_BACKTICKS_RE = re.compile(r"`+")
_UNESCAPE_RE = re.compile(r"\\([!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])")


@dataclass(frozen=True, slots=True)
class Citation:
    kind: CitationKind
    label: str
    """The label without ``citation:`` and with backslash escapes resolved (display text)."""
    raw_label: str
    """The label exactly as written between the brackets."""
    href: str
    source_id: str | None
    reason: str | None
    start: int
    """Code-point offset of the opening bracket."""
    end: int
    """Code-point offset just past the closing parenthesis."""


def find_citations(
    markdown: str,
    *,
    max_label_chars: int = MAX_LABEL_CHARS,
    max_destination_chars: int = MAX_DESTINATION_CHARS,
) -> list[Citation]:
    """Every citation-like link in ``markdown``, in document order."""
    if not isinstance(markdown, str):
        return []
    code = _code_mask(markdown)
    return [
        citation
        for start, label_end, end in _links(markdown, code, max_label_chars, max_destination_chars)
        if (citation := _classify(markdown, start, label_end, end)) is not None
    ]


def relabel_orphans(markdown: str, keep_ids: Iterable[str]) -> str:
    """Replace each shared citation whose id is not kept by its label, leaving the rest intact."""
    keep = frozenset(keep_ids)
    return relabel_citations(markdown, lambda source_id: source_id not in keep, kinds=_SHARED_ONLY)


def relabel_citations(
    markdown: str,
    should_relabel: Callable[[str], bool],
    *,
    kinds: Collection[CitationKind] = ("shared", "native"),
) -> str:
    """``markdown`` with each citation of ``kinds`` whose source id satisfies ``should_relabel``
    replaced by its label as written (without ``citation:``); everything else byte-identical.

    Relabeling can form a new link (a label ``[x]`` meeting a following ``(#…)``, or an outer link
    whose label no longer holds one), so it repeats until no matching citation is left; each pass
    removes a destination, so this ends. The same string object comes back when nothing matched.
    """
    text = markdown
    while True:
        relabeled = _relabel_once(text, should_relabel, kinds)
        if relabeled is text:
            return text
        text = relabeled


def _relabel_once(
    markdown: str, should_relabel: Callable[[str], bool], kinds: Collection[CitationKind]
) -> str:
    pieces: list[str] = []
    cursor = 0
    for citation in find_citations(markdown):
        if citation.kind not in kinds or citation.source_id is None:
            continue
        if not should_relabel(citation.source_id):
            continue
        pieces.append(markdown[cursor : citation.start])
        pieces.append(_strip_prefix(citation.raw_label))
        cursor = citation.end
    if not pieces:
        return markdown
    pieces.append(markdown[cursor:])
    return "".join(pieces)


def _strip_prefix(label: str) -> str:
    return label[len(CITATION_LABEL_PREFIX) :] if label.startswith(CITATION_LABEL_PREFIX) else label


def _classify(markdown: str, start: int, label_end: int, end: int) -> Citation | None:
    raw_label = markdown[start + 1 : label_end]
    href = markdown[label_end + 2 : end - 1]
    label = _UNESCAPE_RE.sub(r"\1", _strip_prefix(raw_label))
    is_citation_label = raw_label.startswith(CITATION_LABEL_PREFIX)

    def make(kind: CitationKind, source_id: str | None, reason: str | None) -> Citation:
        return Citation(kind, label, raw_label, href, source_id, reason, start, end)

    if match := _SHARED_RE.fullmatch(href):
        return make("shared", match.group(1), None)
    if href.startswith(_SHARED_PREFIXES):
        return make("malformed", None, "bad_source_id")
    if match := _NATIVE_RE.fullmatch(href):
        return make("native", match.group(1), None)
    if not is_citation_label:
        return None
    if href.startswith(_WEB_PREFIXES):
        return make("web", None, None)
    return make("malformed", None, "unsupported_destination")


def _code_mask(text: str) -> bytearray:
    """1 for every code point inside a fenced block (2 marks the fence lines) or a code span."""
    mask = bytearray(len(text))
    segment_start = 0
    fence: tuple[str, int] | None = None
    for line in _LINE_RE.finditer(text):
        line_start, line_end = line.span()
        if line_start == line_end:
            break
        body = line.group().rstrip("\r\n")
        if fence is None:
            opened = _FENCE_OPEN_RE.fullmatch(body)
            if opened and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
                _mark_code_spans(text, segment_start, line_start, mask)
                fence = (opened.group(1)[0], len(opened.group(1)))
                mask[line_start:line_end] = b"\x02" * (line_end - line_start)
            continue
        mask[line_start:line_end] = b"\x02" * (line_end - line_start)
        char, length = fence
        stripped = body.lstrip(" ")
        run = len(stripped) - len(stripped.lstrip(char))
        if len(body) - len(stripped) <= 3 and run >= length and stripped[run:].strip(" \t") == "":
            fence = None
            segment_start = line_end
    if fence is None:
        _mark_code_spans(text, segment_start, len(text), mask)
    return mask


def _mark_code_spans(text: str, start: int, end: int, mask: bytearray) -> None:
    runs: dict[int, list[int]] = {}
    for match in _BACKTICKS_RE.finditer(text, start, end):
        runs.setdefault(match.end() - match.start(), []).append(match.start())
    if not runs:
        return
    i = start
    while i < end:
        char = text[i]
        if char == "\\" and i + 1 < end and text[i + 1] in _ASCII_PUNCTUATION:
            i += 2
            continue
        if char != "`":
            i += 1
            continue
        j = i
        while j < end and text[j] == "`":
            j += 1
        length = j - i
        starts = runs.get(length, [])
        k = bisect.bisect_left(starts, j)
        if k < len(starts):
            close_end = starts[k] + length
            mask[i:close_end] = b"\x01" * (close_end - i)
            i = close_end
        else:
            i = j


def _links(
    text: str, code: bytearray, max_label_chars: int, max_destination_chars: int
) -> list[tuple[int, int, int]]:
    """(start, label_end, end) of every inline link, images and their contents excluded."""
    openers: list[tuple[int, bool, bool]] = []  # (position, is_image, active)
    links: list[tuple[int, int, int]] = []
    images: list[tuple[int, int]] = []
    n = len(text)
    i = 0
    while i < n:
        if code[i]:
            if code[i] == 2:
                openers.clear()
            i += 1
            continue
        char = text[i]
        if char == "\\" and i + 1 < n and text[i + 1] in _ASCII_PUNCTUATION and not code[i + 1]:
            i += 2
            continue
        if char in "\r\n" and _blank_line_follows(text, i + 1):
            openers.clear()
        elif char == "[":
            is_image = (
                i > 0 and text[i - 1] == "!" and not code[i - 1] and not _escaped(text, i - 1)
            )
            openers.append((i, is_image, True))
        elif char == "]" and openers:
            start, is_image, active = openers.pop()
            end = _destination_end(text, code, i, max_destination_chars)
            if active and end is not None and i - start - 1 <= max_label_chars:
                if is_image:
                    images.append((start - 1, end))
                else:
                    links.append((start, i, end))
                    openers[:] = [(p, img, a and img) for p, img, a in openers]
                i = end
                continue
        i += 1
    if images:
        links = [link for link in links if not any(a <= link[0] < b for a, b in images)]
    links.sort()
    return links


def _escaped(text: str, i: int) -> bool:
    backslashes = 0
    while i - backslashes - 1 >= 0 and text[i - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _blank_line_follows(text: str, i: int) -> bool:
    n = len(text)
    while i < n and text[i] in " \t":
        i += 1
    if i < n and text[i] == "\n" and text[i - 1] == "\r":
        return False  # the \n of a \r\n pair: the line break was seen at the \r
    return i < n and text[i] in "\r\n"


def _destination_end(text: str, code: bytearray, close: int, limit: int) -> int | None:
    """Offset just past ``)`` when ``](destination)`` follows ``close``, else None."""
    n = len(text)
    if close + 1 >= n or text[close + 1] != "(" or code[close + 1]:
        return None
    j = close + 2
    stop = min(n, j + limit + 1)
    while j < stop:
        char = text[j]
        if code[j]:
            return None
        if char == ")":
            return j + 1 if j > close + 2 else None
        if char in _DESTINATION_STOP:
            return None
        j += 1
    return None
