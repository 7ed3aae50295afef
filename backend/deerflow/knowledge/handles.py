"""The one handle grammar (contracts/README.md §4): which link destinations name evidence.

A handle is the fragment a citation links to: ``#knowledge-source-<32 hex>`` for a shared record,
``#knowledge-<32 hex>-<n>`` for a native RAGFlow record, each also in the ``#user-content-`` form
a sanitizing renderer rewrites fragments to. Every module that looks for handles (the envelope
reader, the native reader, the citation finder, the budget's cuts) takes its patterns from here,
so the grammar cannot drift between them.
"""

from __future__ import annotations

import re
from typing import Final, Literal

__all__ = [
    "HANDLE_TOKEN_PATTERN",
    "KNOWLEDGE_FRAGMENT_PATTERN",
    "KNOWLEDGE_LINK_PATTERN",
    "KNOWLEDGE_PREFIXES",
    "NATIVE_HANDLE_PREFIX",
    "NATIVE_ID_PATTERN",
    "NATIVE_LINK_PATTERN",
    "SHARED_HANDLE_PATTERN",
    "SHARED_HANDLE_PREFIX",
    "SHARED_HANDLE_PREFIXES",
    "USER_CONTENT_PREFIX",
    "WEB_PREFIXES",
    "DestinationKind",
    "classify_destination",
]

SHARED_HANDLE_PREFIX: Final = "#knowledge-source-"
NATIVE_HANDLE_PREFIX: Final = "#knowledge-"
#: What rehype-sanitize (GitHub's clobber rule) prefixes to fragments; both forms are handles.
USER_CONTENT_PREFIX: Final = "user-content-"
SHARED_HANDLE_PREFIXES: Final = (SHARED_HANDLE_PREFIX, f"#{USER_CONTENT_PREFIX}knowledge-source-")
#: The start of every knowledge fragment, shared or native, in both forms.
KNOWLEDGE_PREFIXES: Final = (NATIVE_HANDLE_PREFIX, f"#{USER_CONTENT_PREFIX}knowledge-")
WEB_PREFIXES: Final = ("http://", "https://")

#: A native record id: ``<call>-<n>``, ``n`` 1 to 999 without a leading zero (§7).
NATIVE_ID_PATTERN: Final = re.compile(r"[a-f0-9]{32}-[1-9][0-9]{0,2}")
#: ``#knowledge-source-<id>`` where it occurs in text (the envelope reader's handle check).
SHARED_HANDLE_PATTERN: Final = re.compile(r"#knowledge-source-([0-9a-f]{32})")
#: ``](#knowledge-<id>)``: DeerFlow's own substring rule for native handles; the closing
#: parenthesis makes ``…-1`` differ from ``…-12``.
NATIVE_LINK_PATTERN: Final = re.compile(
    r"\]\(#(?:user-content-)?knowledge-([a-f0-9]{32}-[1-9][0-9]{0,2})\)"
)
#: Handle-like tokens, complete or not: a budget cut must not leave the front half of one.
HANDLE_TOKEN_PATTERN: Final = re.compile(
    r"#(?:user-content-)?knowledge-(?:source-)?[0-9a-f]*(?:-[0-9]*)?"
)

#: Any knowledge link, and any knowledge fragment left after removing those: DeerFlow's rule for
#: making a ``task`` synopsis plain text (the native budget). Both scans are linear: a label or
#: destination stops at the next bracket, so no two match attempts read the same characters; and
#: removing fragments cannot form a new one, since every character of the prefix after `#` is one
#: the fragment pattern would have consumed.
KNOWLEDGE_LINK_PATTERN: Final = re.compile(
    r"\[([^\[\]\n]*)\]\(#(?:user-content-)?knowledge-[^()\[\]\s]*\)"
)
KNOWLEDGE_FRAGMENT_PATTERN: Final = re.compile(r"#(?:user-content-)?knowledge-[\w-]*")

_SHARED_DESTINATION: Final = re.compile(r"#(?:user-content-)?knowledge-source-([0-9a-f]{32})")
_NATIVE_DESTINATION: Final = re.compile(
    r"#(?:user-content-)?knowledge-([0-9a-f]{32}-[1-9][0-9]{0,2})"
)

DestinationKind = Literal["shared", "native", "web", "malformed", "other"]


def classify_destination(
    destination: str, *, citation_label: bool
) -> tuple[DestinationKind, str | None, str | None]:
    """``(kind, source_id, reason)`` of a link destination (the table of §4).

    ``destination`` is the destination as CommonMark decodes it (escapes and entities resolved,
    ``<…>`` removed). ``citation_label`` says whether the link's label starts ``citation:``:
    web and unsupported destinations are citations only then. ``other`` is an ordinary link.
    """
    if match := _SHARED_DESTINATION.fullmatch(destination):
        return "shared", match.group(1), None
    if destination.startswith(SHARED_HANDLE_PREFIXES):
        return "malformed", None, "bad_source_id"
    if match := _NATIVE_DESTINATION.fullmatch(destination):
        return "native", match.group(1), None
    if not citation_label:
        return "other", None, None
    if destination.startswith(WEB_PREFIXES):
        return "web", None, None
    return "malformed", None, "unsupported_destination"
