"""Keep evidence honest after a tool-output budget shortened a tool's content.

A generic budget (head-and-tail truncation, externalizing to a file with a preview) does not know
about citations. Whatever it leaves, the artifact must still only claim what the content shows:
:func:`prune_evidence` drops every record whose handle or excerpt is no longer visible and turns
each complete citation link to a dropped source back into its plain label, so the model is never
invited to cite evidence nobody can verify.

A native RAGFlow message follows DeerFlow's own rule instead: never shorten an excerpt under an
existing id. :func:`budget_native` re-renders the message from its snapshot — each retained source
as its complete ``[citation:k](#knowledge-<id>) dataset / document`` line and full stored text,
renumbered 1..k, ids unchanged — and skips whole the entries that do not fit (``WholeEntries``, the
same rule the shared formatter lays hits out by). A snapshot it cannot read (an unknown version, a
malformed snapshot, one on a tool outside the allowlist) is left exactly as it is: the generic
transform runs, and nothing in the snapshot is rewritten or deleted.

:func:`truncate_text` and :func:`preview_text` are the budget's cuts. They never split a citation
link or a handle: a cut that would land inside one moves to its edge, so no half-link survives to
be completed by a model or a renderer.

Everything here is pure: plain values in, plain values out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from deerflow.knowledge.citations import find_citations, relabel_citations
from deerflow.knowledge.envelope import (
    KNOWLEDGE_SOURCES_KEY,
    RETRIEVAL_SOURCES_KEY,
    VERSION_KEY,
    read_envelope,
    record_id,
    text_parts,
)
from deerflow.knowledge.fitting import WholeEntries
from deerflow.knowledge.handles import HANDLE_TOKEN_PATTERN as _HANDLE_TOKEN_RE
from deerflow.knowledge.handles import KNOWLEDGE_FRAGMENT_PATTERN as _KNOWLEDGE_FRAGMENT_RE
from deerflow.knowledge.handles import KNOWLEDGE_LINK_PATTERN as _KNOWLEDGE_LINK_RE
from deerflow.knowledge.handles import KNOWLEDGE_PREFIXES
from deerflow.knowledge.native import native_entry, native_snapshot_of, read_native

__all__ = [
    "DEFAULT_HEAD_SHARE",
    "MAX_SYNOPSIS_CHARS",
    "MIN_CUT_CHARS",
    "MIN_SYNOPSIS_BUDGET",
    "NATIVE_OMISSION_NOTICE",
    "NativeBudget",
    "budget_native",
    "omission_marker",
    "preview_text",
    "prune_evidence",
    "truncate_text",
]

#: Share of a truncated output's budget given to its head; the rest keeps the tail (often the
#: conclusion or the error a tool printed last).
DEFAULT_HEAD_SHARE: Final = 0.75
#: Below this many characters of kept text, an omission marker is not worth its own length.
MIN_CUT_CHARS: Final = 16

#: DeerFlow's notice after a native budget skipped a source (its words, so agents see one text).
NATIVE_OMISSION_NOTICE: Final = (
    "Knowledge sources omitted to fit output budget; request smaller excerpts."
)
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


def omission_marker(omitted: int) -> str:
    return f"\n\n[... {omitted} characters omitted ...]\n\n"


def prune_evidence(content: Any, artifact: Any) -> tuple[Any, Any]:
    """``(content, artifact)`` with only the evidence ``content`` still shows.

    * A shared record stays only while it verifies (``read_envelope``): handle and excerpt wholly
      visible, id recomputing, not a duplicate. Kept records stay where they were, untouched
      (``knowledge_sources`` or ``retrieval_sources``); dropped ones leave no trace.
    * A native snapshot is never touched here: it is budgeted whole by :func:`budget_native`, or
      left as it is when that reader cannot read it.
    * Each complete shared citation link to a dropped source becomes its label.
      Relabeling can hide an excerpt that quoted such a link, so the steps repeat until nothing
      changes.
    * An envelope that a reader rejects whole (wrong version, not an array, over 100 records) is
      left as it is: nothing in it verifies, and repairing it is a writer's job.
    * Unrelated artifact keys are kept; envelope keys left empty are removed, and an artifact
      left with no key at all becomes ``None`` (a tool without evidence has no artifact).

    Idempotent; when nothing needs pruning the very same objects are returned.
    """
    if not isinstance(artifact, Mapping):
        return content, artifact
    # Only a readable envelope's arrays are pruned; an unreadable one is left exactly as it is.
    shared: dict[str, list[Any]] = {
        key: list(records)
        for key in (KNOWLEDGE_SOURCES_KEY, RETRIEVAL_SOURCES_KEY)
        if isinstance(records := artifact.get(key), list)
    }
    if shared and read_envelope(content, artifact).error is not None:
        shared = {}
    if not shared:
        return content, artifact

    changed = False
    # Every id dropped in any pass: relabeling in a later pass can form a new link to one of them.
    dropped: set[str] = set()
    while True:
        kept_ids: set[str] = set()
        if shared:
            result = read_envelope(content, _with_shared(artifact, shared))
            kept_ids.update(source.id for source in result.sources)
            for rejection in result.rejected:
                record = shared[rejection.key][rejection.index]
                dropped.add(record_id(record) or "")
            if result.rejected:
                changed = True
                rejected = {(r.key, r.index) for r in result.rejected}
                shared = {
                    key: [r for i, r in enumerate(records) if (key, i) not in rejected]
                    for key, records in shared.items()
                }
        dropped.discard("")
        orphaned = dropped - kept_ids
        relabeled = _relabel_content(content, orphaned) if orphaned else content
        if relabeled is content:
            break
        content = relabeled
        changed = True

    if not changed:
        return content, artifact
    return content, _rebuild(artifact, shared)


def truncate_text(text: str, *, max_chars: int, head_share: float = DEFAULT_HEAD_SHARE) -> str:
    """``text`` cut to at most ``max_chars``: head, an omission marker, tail.

    Cuts never fall inside a citation link or a handle (they move to its edge, keeping less). When
    even the marker does not fit with some text around it, only a head is kept.
    """
    if max_chars < 0:
        raise ValueError("max_chars must not be negative")
    if not 0.0 <= head_share <= 1.0:
        raise ValueError("head_share must be between 0 and 1")
    if len(text) <= max_chars:
        return text
    # The marker's length depends on the omitted count; reserve the longest it can be.
    available = max_chars - len(omission_marker(len(text)))
    if available < MIN_CUT_CHARS:
        return preview_text(text, max_chars=max_chars)
    spans = _protected_spans(text)
    head_end = _snap_back(int(available * head_share), spans)
    tail_start = _snap_forward(len(text) - (available - int(available * head_share)), spans)
    tail_start = max(tail_start, head_end)
    return text[:head_end] + omission_marker(tail_start - head_end) + text[tail_start:]


def preview_text(text: str, *, max_chars: int) -> str:
    """The first at most ``max_chars`` characters of ``text``, never ending inside a link."""
    if max_chars < 0:
        raise ValueError("max_chars must not be negative")
    if len(text) <= max_chars:
        return text
    return text[: _snap_back(max_chars, _protected_spans(text))]


# --------------------------------------------------------------------------- internals


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


def _with_shared(artifact: Mapping[str, Any], shared: Mapping[str, list[Any]]) -> dict[str, Any]:
    return {**artifact, **shared}


def _rebuild(artifact: Mapping[str, Any], shared: Mapping[str, list[Any]]) -> dict[str, Any] | None:
    rebuilt: dict[str, Any] = {}
    remaining_shared = any(records for records in shared.values())
    for key, value in artifact.items():
        if key in shared:
            if shared[key]:
                rebuilt[key] = shared[key]
        elif key == VERSION_KEY and shared and not remaining_shared:
            continue  # the version of shared arrays that are all gone
        else:
            rebuilt[key] = value
    return rebuilt or None


def _relabel_content(content: Any, dropped: set[str]) -> Any:
    """``content`` with every complete citation link to a ``dropped`` id made its label.

    Returns the very same object when no link changed, so callers can test with ``is``.
    """
    return _map_text(content, lambda text: relabel_citations(text, dropped.__contains__))


def _map_text(content: Any, transform: Callable[[str], str]) -> Any:
    """Apply ``transform`` to each text part (the parts ``text_parts`` reads); same object if
    nothing changed."""
    if isinstance(content, str):
        return transform(content)
    if not isinstance(content, list) or not text_parts(content):
        return content
    changed = False
    mapped: list[Any] = []
    for item in content:
        new = item
        if isinstance(item, str):
            new = transform(item)
        elif isinstance(item, Mapping) and item.get("type") == "text":
            text = item.get("text")
            if isinstance(text, str) and (replaced := transform(text)) != text:
                new = {**item, "text": replaced}
        changed = changed or (new is not item and new != item)
        mapped.append(new)
    return mapped if changed else content


def _protected_spans(text: str) -> list[tuple[int, int]]:
    spans = [(c.start, c.end) for c in find_citations(text)]
    spans.extend(m.span() for m in _HANDLE_TOKEN_RE.finditer(text))
    return spans


def _snap_back(cut: int, spans: list[tuple[int, int]]) -> int:
    """Move a head cut back to the start of any span it would split (latest spans first, so a
    move into an earlier span is caught too)."""
    for start, end in sorted(spans, reverse=True):
        if start < cut < end:
            cut = start
    return cut


def _snap_forward(cut: int, spans: list[tuple[int, int]]) -> int:
    """Move a tail cut forward past any span it would split."""
    for start, end in sorted(spans):
        if start < cut < end:
            cut = end
    return cut
