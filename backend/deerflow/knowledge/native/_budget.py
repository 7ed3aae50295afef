"""A tool-output budget for native RAGFlow messages: whole entries, never a shortened excerpt.

DeerFlow's rule for a native message is never to shorten an excerpt under an existing id.
:func:`budget_native` re-renders the message from its snapshot — each retained source as its
complete ``[citation:k](#knowledge-<id>) dataset / document`` line and full stored text,
renumbered 1..k, ids unchanged — and skips whole the entries that do not fit (``WholeEntries``, the
same rule the shared formatter lays hits out by). A snapshot it cannot read (an unknown version, a
malformed snapshot, one on a tool outside the allowlist) is left exactly as it is: the caller's
generic transform runs, and nothing in the snapshot is rewritten or deleted. A tool in
:data:`SYNOPSIS_TOOL_NAMES` (``task``) keeps a short synopsis of its report before its evidence.

Pure: plain values in, plain values out.

Tested in tests/test_budget.py (native budgets) and, with DeerFlow's cases in
contracts/vectors/native_budgets.json, tests/test_vectors.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from deerflow.knowledge.envelope import KNOWLEDGE_SOURCES_KEY
from deerflow.knowledge.fitting import WholeEntries
from deerflow.knowledge.handles import KNOWLEDGE_FRAGMENT_PATTERN as _KNOWLEDGE_FRAGMENT_RE
from deerflow.knowledge.handles import KNOWLEDGE_LINK_PATTERN as _KNOWLEDGE_LINK_RE
from deerflow.knowledge.handles import KNOWLEDGE_PREFIXES
from deerflow.knowledge.native._records import native_entry, native_snapshot_of, read_native

#: DeerFlow's notice after a native budget skipped a source (its words, so agents see one text).
NATIVE_OMISSION_NOTICE: Final = (
    "Knowledge sources omitted to fit output budget; request smaller excerpts."
)
#: Tools whose budgeted native message starts with a synopsis of their report: a ``task``'s report
#: is its subagent's findings, which the parent needs next to the forwarded evidence. The synopsis
#: is the caller's generic cut of the report (so an externalized report's path stays visible).
SYNOPSIS_TOOL_NAMES: Final = frozenset({"task"})
#: A ``task`` synopsis is at most this long, and at most a quarter of the budget (DeerFlow).
MAX_SYNOPSIS_CHARS: Final = 1_000
#: Below this budget a ``task`` keeps no synopsis: the evidence needs all the room.
MIN_SYNOPSIS_BUDGET: Final = 160

_ENTRY_SEPARATOR: Final = "\n\n"
_SYNOPSIS_JOIN: Final = "\n…\n"


@dataclass(frozen=True, slots=True)
class NativeBudget:
    """A native RAGFlow message re-rendered within its budget."""

    content: str
    artifact: dict[str, Any] | None
    kept: tuple[str, ...]
    """Ids of the retained sources, in their new order (ordinal k is ``kept[k-1]``)."""
    omitted: int
    """Readable sources skipped whole because they did not fit."""


def budget_native(
    content: Any,
    artifact: Any,
    *,
    tool_name: object,
    max_chars: int,
    synopsis: str = "",
) -> NativeBudget | None:
    """``content`` re-rendered from its native snapshot in at most ``max_chars``; None when the
    snapshot is not one this reader can budget.

    * Only a readable snapshot (``read_native``: allowlisted tool, version 1, an array of at most
      100 records) with at least one verified record is budgeted. Anything else — no snapshot, a
      foreign tool, an unknown version, a malformed snapshot — returns None, and the caller leaves
      the snapshot exactly as it is.
    * Each verified source, in snapshot order, is re-rendered as its complete entry (``native_entry``)
      with the next ordinal; an entry that does not fit is skipped whole and takes no number. A
      source whose names or text contain a knowledge handle of their own is skipped too: showing it
      would put a handle in the content that no retained record answers for.
    * ``synopsis`` (a ``task``'s report, already cut by the generic transform) comes first with its
      knowledge links made plain text, bounded to ``min(1000, max_chars // 4)`` keeping head and
      tail (none below a 160-character budget).
    * When any source was skipped, :data:`NATIVE_OMISSION_NOTICE` ends the content; its room is
      reserved only when the full set would not fit.
    * The artifact keeps exactly the retained records, as they were (other snapshot keys and other
      artifact keys kept); without any, the key is removed, and an empty artifact becomes None.
    """
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    snapshot = native_snapshot_of(artifact)
    if snapshot is None:
        return None
    read = read_native(content, artifact, tool_name=tool_name)
    if read.error is not None or not read.sources:
        return None
    rejected = {rejection.index for rejection in read.rejected}
    records: list[Any] = snapshot["sources"]
    raw_records = [record for index, record in enumerate(records) if index not in rejected]
    candidates = [
        (source, raw)
        for source, raw in zip(read.sources, raw_records, strict=True)
        if not _quotes_a_handle(source.dataset_name, source.document_name, source.text)
    ]
    unsafe = len(read.sources) - len(candidates)

    head = _synopsis(synopsis, max_chars=max_chars)
    full = _lay_out(head, candidates, budget=max_chars)
    if unsafe == 0 and full.skipped == 0:
        fit = full
    else:
        fit = _lay_out(
            head, candidates, budget=max_chars - len(NATIVE_OMISSION_NOTICE) - len(_ENTRY_SEPARATOR)
        )
    pieces = [head] if head else []
    pieces.extend(fit.entries)
    omitted = fit.skipped + unsafe
    if omitted:
        room = (
            max_chars
            - len(_ENTRY_SEPARATOR.join(pieces))
            - (len(_ENTRY_SEPARATOR) if pieces else 0)
        )
        notice = NATIVE_OMISSION_NOTICE[: max(room, 0)]
        if notice:
            pieces.append(notice)
    kept_records = [raw for _, raw in fit.kept]
    rebuilt = {
        key: {**snapshot, "sources": kept_records} if key == KNOWLEDGE_SOURCES_KEY else value
        for key, value in artifact.items()
        if key != KNOWLEDGE_SOURCES_KEY or kept_records
    }
    return NativeBudget(
        content=_ENTRY_SEPARATOR.join(pieces),
        artifact=rebuilt or None,
        kept=tuple(source.id for source, _ in fit.kept),
        omitted=omitted,
    )


# ---------------------------------------------------------------------------- internals


@dataclass(frozen=True, slots=True)
class _Layout:
    entries: list[str]
    kept: list[tuple[Any, Any]]
    skipped: int


def _lay_out(head: str, candidates: list[tuple[Any, Any]], *, budget: int) -> _Layout:
    room = WholeEntries(budget, used=len(head), separator=_ENTRY_SEPARATOR)
    entries: list[str] = []
    kept: list[tuple[Any, Any]] = []
    for source, raw in candidates:
        entry = native_entry(source, len(kept) + 1)
        if room.take(entry):
            entries.append(entry)
            kept.append((source, raw))
    return _Layout(entries, kept, room.skipped)


def _quotes_a_handle(*texts: str) -> bool:
    return any(prefix in text for text in texts for prefix in KNOWLEDGE_PREFIXES)


def _synopsis(report: str, *, max_chars: int) -> str:
    """DeerFlow's ``task`` synopsis: links made plain, bounded keeping head and tail."""
    limit = min(MAX_SYNOPSIS_CHARS, max_chars // 4) if max_chars >= MIN_SYNOPSIS_BUDGET else 0
    if not limit or not report:
        return ""
    plain = _KNOWLEDGE_FRAGMENT_RE.sub("", _KNOWLEDGE_LINK_RE.sub(r"\1", report))
    if len(plain) > limit:
        head = (limit - len(_SYNOPSIS_JOIN)) // 2
        tail = limit - head - len(_SYNOPSIS_JOIN)
        plain = plain[:head] + _SYNOPSIS_JOIN + (plain[-tail:] if tail else "")
    return plain.rstrip()
