"""Citations are the CommonMark links a renderer shows (contracts/README.md §4).

A citation is a CommonMark 0.31.2 link — inline or reference-style, its destination decoded as
CommonMark decodes it — whose destination the handle table (``handles.classify_destination``)
names. Whether something is a link is decided by a real CommonMark parser, pulldown-cmark (through
``pyromark``), which parses every spec example as the spec does (tests/test_citations.py), runs
in linear time and reports each event's source range: code spans, code blocks, HTML, autolinks and images are never mistaken for citations, and
relabeling can cut exactly the characters a link occupies. The TypeScript side finds citations
on the tree its renderer (micromark) parses; ``contracts/vectors/citations.json`` and the spec
examples pin both to CommonMark.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Final, Literal, cast

import pyromark

from deerflow.knowledge._nesting import cap_nesting, capped_starts, original_offset
from deerflow.knowledge.handles import classify_destination
from deerflow.knowledge.text import replace_lone_surrogates

__all__ = [
    "CITATION_LABEL_PREFIX",
    "MAX_PLAIN_RELABEL_PASSES",
    "Citation",
    "CitationKind",
    "find_citations",
    "relabel_citations",
    "relabel_orphans",
]

CITATION_LABEL_PREFIX: Final = "citation:"
#: Relabeling passes that replace a link by its label exactly as written. Each pass can form a
#: new link (an outer link whose label no longer holds one); only nesting deeper than this —
#: hostile input — reaches the final pass, which also escapes the brackets that could form one.
MAX_PLAIN_RELABEL_PASSES: Final = 4

CitationKind = Literal["shared", "native", "web", "malformed"]
_SHARED_ONLY: Final[tuple[CitationKind, ...]] = ("shared",)

# Plain CommonMark: no extension is on in the renderer (KnowledgeMarkdown has no remark-gfm).
_PARSER: Final = pyromark.Markdown()
_UNESCAPE_RE = re.compile(r"\\([!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])")
# Inline elements; every other start or end event is a block boundary.
_INLINE: Final = frozenset(
    {"Emphasis", "Strong", "Strikethrough", "Superscript", "Subscript", "Link", "Image"}
)
_AUTOLINKS: Final = frozenset({"Autolink", "Email"})


@dataclass(frozen=True, slots=True)
class Citation:
    kind: CitationKind
    label: str
    """The label without ``citation:`` and with backslash escapes resolved (display text)."""
    raw_label: str
    """The link text exactly as written between its brackets."""
    href: str
    """The destination as CommonMark decodes it (escapes and entities resolved, no ``<…>``)."""
    source_id: str | None
    reason: str | None
    start: int
    """Code-point offset of the opening bracket."""
    end: int
    """Code-point offset just past the link (``)``, or the reference's ``]``)."""


def find_citations(markdown: str) -> list[Citation]:
    """Every citation in ``markdown``, in document order."""
    if not isinstance(markdown, str):
        return []
    return [link.citation for link in _scan(markdown).links]


def relabel_orphans(
    markdown: str,
    keep_ids: Iterable[str],
    *,
    max_plain_passes: int = MAX_PLAIN_RELABEL_PASSES,
) -> str:
    """Replace each shared citation whose id is not kept by its label, leaving the rest intact."""
    keep = frozenset(keep_ids)
    return relabel_citations(
        markdown,
        lambda source_id: source_id not in keep,
        kinds=_SHARED_ONLY,
        max_plain_passes=max_plain_passes,
    )


def relabel_citations(
    markdown: str,
    should_relabel: Callable[[str], bool],
    *,
    kinds: Collection[CitationKind] = ("shared", "native"),
    max_plain_passes: int = MAX_PLAIN_RELABEL_PASSES,
) -> str:
    """``markdown`` with each citation of ``kinds`` whose source id satisfies ``should_relabel``
    replaced by its label as written (without ``citation:``); everything else byte-identical.

    Replacing a link by its label can form a new one (an outer link whose label no longer holds
    a link, or a label ``[x]`` meeting a following ``(#…)``), so passes repeat until none is
    left. After ``max_plain_passes`` passes, a pass also backslash-escapes every literal bracket
    of the blocks it changes — they render the same, but can no longer form a link — so the
    fixpoint takes a bounded number of linear passes whatever the nesting. The same string
    object comes back when nothing matched.
    """
    if max_plain_passes < 0:
        raise ValueError("max_plain_passes must not be negative")
    if not isinstance(markdown, str):
        return markdown
    text = markdown
    passes = 0
    while True:
        passes += 1
        relabeled = _relabel_once(text, should_relabel, kinds, escape=passes > max_plain_passes)
        if relabeled is text:
            return text
        text = relabeled


# ---------------------------------------------------------------------------------------- scan


@dataclass(frozen=True, slots=True)
class _Link:
    citation: Citation
    label_start: int
    label_end: int
    block: int
    brackets: tuple[int, ...]
    """Code-point offsets of the literal, unescaped brackets in the link's label."""


@dataclass(frozen=True, slots=True)
class _Scan:
    links: list[_Link]
    brackets: dict[int, list[int]]
    """Per block (numbered by the block boundaries before it): offsets of the literal, unescaped
    brackets outside every link."""


class _Offsets:
    """UTF-8 byte offsets (what pulldown-cmark reports) to code-point offsets, for offsets that
    never decrease: each conversion decodes only the bytes since the previous one."""

    __slots__ = ("_byte", "_char", "_data")

    def __init__(self, text: str) -> None:
        self._data: bytes | None = None if text.isascii() else text.encode()
        self._byte = 0
        self._char = 0

    def __call__(self, offset: int) -> int:
        if self._data is None:
            return offset
        if offset < self._byte:  # not reached by the callers' order; stays correct if it were
            self._byte = self._char = 0
        self._char += len(self._data[self._byte : offset].decode())
        self._byte = offset
        return self._char


def _scan(markdown: str, *, brackets: bool = False) -> _Scan:
    """The citations of ``markdown`` with their labels' extents; with ``brackets``, also the
    literal brackets of every leaf block (for the escaping relabel pass). The text parsed is the
    renderer's: under the per-line nesting budget (``_nesting``), offsets mapped back."""
    capped, edits = cap_nesting(markdown)
    if not edits:
        return _scan_text(markdown, brackets=brackets)
    scan = _scan_text(capped, brackets=brackets)
    starts = capped_starts(edits)

    def back(offset: int) -> int:
        return original_offset(edits, starts, offset)

    links: list[_Link] = []
    for link in scan.links:
        start = back(link.citation.start)
        label_end = back(link.label_end)
        raw_label = markdown[start + 1 : label_end]
        citation = replace(
            link.citation,
            raw_label=raw_label,
            label=_UNESCAPE_RE.sub(r"\1", _strip_prefix(raw_label)),
            start=start,
            end=back(link.citation.end),
        )
        found = tuple(back(offset) for offset in link.brackets)
        links.append(_Link(citation, start + 1, label_end, link.block, found))
    outside = {block: [back(o) for o in offsets] for block, offsets in scan.brackets.items()}
    return _Scan(links, outside)


def _scan_text(markdown: str, *, brackets: bool) -> _Scan:
    """:func:`_scan` of ``markdown`` as it is."""
    # pulldown-cmark takes UTF-8, which has no lone surrogates; U+FFFD is one code point too, so
    # offsets are unchanged, and it is never part of a handle.
    text = markdown if markdown.isascii() else replace_lone_surrogates(markdown)
    data = text.encode()
    # Every conversion below is at an offset no smaller than the one before (events come in
    # document order, links do not nest), so converting costs one decode of the text in all.
    to_char = _Offsets(text)
    links: list[_Link] = []
    outside: dict[int, list[int]] = {}
    block = -1
    # Inside an image or an autolink nothing is a citation and no bracket may be escaped (an
    # autolink's text is its URL; backslashes do not escape there).
    opaque = 0
    in_autolink = False
    # The link being read: its event and byte range, the furthest byte end of the events inside
    # it, and the literal brackets of its label (byte offsets).
    current: tuple[dict[str, Any], int, int] | None = None
    inner_end = 0
    inner_brackets: list[int] = []
    covered = 0  # byte end of the previous event, to tell an escape's backslash
    for event, span in _PARSER.events_with_range(text):
        start, end = span["start"], span["end"]
        literal: str | None = None
        if type(event) is dict:
            if (opened := event.get("Start")) is not None:
                kind = next(iter(opened)) if type(opened) is dict else opened
                if kind == "Link":
                    link = cast("dict[str, Any]", opened)["Link"]
                    if link["link_type"] in _AUTOLINKS:
                        opaque += 1
                        in_autolink = True
                    elif current is None and opaque == 0:
                        current, inner_end, inner_brackets = (link, start, end), start + 1, []
                        covered = start
                        continue
                elif kind == "Image":
                    opaque += 1
                elif kind not in _INLINE:
                    block += 1  # a new block: no inline run spans a block boundary
                if current is not None:
                    inner_end = max(inner_end, end)
                covered = start
                continue
            if (closed := event.get("End")) is not None:
                kind = next(iter(closed)) if type(closed) is dict else closed
                if kind == "Link" and in_autolink:
                    opaque -= 1
                    in_autolink = False
                elif kind == "Link" and current is not None and opaque == 0:
                    links.extend(
                        _finish(markdown, data, to_char, current, inner_end, inner_brackets, block)
                    )
                    current = None
                    covered = end
                    continue
                elif kind == "Image":
                    opaque -= 1
                elif kind not in _INLINE:
                    block += 1
                if current is not None:
                    inner_end = max(inner_end, end)
                covered = end
                continue
            value = event.get("Text")
            literal = value if type(value) is str else None
        if current is not None:
            inner_end = max(inner_end, end)
        if brackets and literal is not None and opaque == 0:
            found = _literal_brackets(data, start, end, literal, escaped=covered < start)
            if current is not None:
                inner_brackets.extend(found)
            elif found:
                outside.setdefault(block, []).extend(to_char(offset) for offset in found)
        covered = end
    return _Scan(links, outside)


def _literal_brackets(
    data: bytes, start: int, end: int, literal: str, *, escaped: bool
) -> list[int]:
    """Byte offsets of the brackets in a text event that are written literally in the source."""
    if "[" not in literal and "]" not in literal:
        return []
    if data[start:end] != literal.encode():
        return []  # an entity or similar: no bracket is written literally
    first = start
    if escaped and data[start - 1 : start] == b"\\":
        first = start + 1  # a backslash escape: the event starts at the escaped character
    return [i for i in range(first, end) if data[i] in b"[]"]


def _finish(
    markdown: str,
    data: bytes,
    to_char: _Offsets,
    current: tuple[dict[str, Any], int, int],
    inner_end: int,
    inner_brackets: list[int],
    block: int,
) -> Iterator[_Link]:
    link, start, end = current
    # The label closes at the first `]` after the last event inside it: nothing between the two
    # is label text (only trimmed white space or an escape's backslash).
    label_end = data.find(b"]", inner_end)
    if link["link_type"] == "Collapsed" and data[end : end + 2] == b"[]":
        end += 2  # pulldown-cmark's range stops before a collapsed reference's `[]`
    if not start < label_end < end:
        return
    char_start = to_char(start)
    brackets = tuple(to_char(offset) for offset in inner_brackets)
    char_label_end = to_char(label_end)
    char_end = to_char(end)
    raw_label = markdown[char_start + 1 : char_label_end]
    href: str = link["dest_url"]
    kind, source_id, reason = classify_destination(
        href, citation_label=raw_label.startswith(CITATION_LABEL_PREFIX)
    )
    if kind == "other":
        return
    label = _UNESCAPE_RE.sub(r"\1", _strip_prefix(raw_label))
    citation = Citation(kind, label, raw_label, href, source_id, reason, char_start, char_end)
    yield _Link(citation, char_start + 1, char_label_end, block, brackets)


# ------------------------------------------------------------------------------------- relabel


def _relabel_once(
    markdown: str,
    should_relabel: Callable[[str], bool],
    kinds: Collection[CitationKind],
    *,
    escape: bool,
) -> str:
    scan = _scan(markdown, brackets=escape)
    chosen = [
        link
        for link in scan.links
        if link.citation.kind in kinds
        and link.citation.source_id is not None
        and should_relabel(link.citation.source_id)
    ]
    if not chosen:
        return markdown
    # Edits: (offset, end, replacement), in order. A relabeled link becomes its label; in an
    # escaping pass every literal bracket of a changed block gains a backslash.
    edits: list[tuple[int, int, str]] = []
    if escape:
        blocks = {link.block for link in chosen}
        for block in blocks:
            edits.extend((offset, offset, "\\") for offset in scan.brackets.get(block, ()))
    for link in chosen:
        label_start = link.label_start
        if markdown.startswith(CITATION_LABEL_PREFIX, label_start):
            label_start += len(CITATION_LABEL_PREFIX)
        if not escape:
            edits.append(
                (link.citation.start, link.citation.end, markdown[label_start : link.label_end])
            )
            continue
        pieces: list[str] = []
        cursor = label_start
        for offset in link.brackets:
            if offset < label_start:
                continue
            pieces.append(markdown[cursor:offset])
            pieces.append("\\")
            cursor = offset
        pieces.append(markdown[cursor : link.label_end])
        edits.append((link.citation.start, link.citation.end, "".join(pieces)))
    edits.sort(key=lambda edit: (edit[0], edit[1]))
    out: list[str] = []
    cursor = 0
    for offset, end, replacement in edits:
        out.append(markdown[cursor:offset])
        out.append(replacement)
        cursor = end
    out.append(markdown[cursor:])
    return "".join(out)


def _strip_prefix(label: str) -> str:
    return label[len(CITATION_LABEL_PREFIX) :] if label.startswith(CITATION_LABEL_PREFIX) else label
