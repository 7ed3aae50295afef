"""Keep evidence honest after a tool-output budget shortened a tool's content (DESIGN §9).

A generic budget (head-and-tail truncation, externalizing to a file with a preview) does not know
about citations. Whatever it leaves, the artifact must still only claim what the content shows:
:func:`prune_evidence` drops every record whose handle or excerpt is no longer visible and turns
each complete citation link to a dropped source back into its plain label, so the model is never
invited to cite evidence nobody can verify. A native RAGFlow snapshot is pruned by its own rules
(``native.prune_native_snapshot``) and is never replaced by shared records.

:func:`truncate_text` and :func:`preview_text` are the budget's cuts. They never split a citation
link or a handle: a cut that would land inside one moves to its edge, so no half-link survives to
be completed by a model or a renderer.

Everything here is pure: plain values in, plain values out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from deerflow.knowledge.citations import find_citations, relabel_citations
from deerflow.knowledge.envelope import (
    KNOWLEDGE_SOURCES_KEY,
    RETRIEVAL_SOURCES_KEY,
    VERSION_KEY,
    read_envelope,
    text_parts,
)
from deerflow.knowledge.handles import HANDLE_TOKEN_PATTERN as _HANDLE_TOKEN_RE
from deerflow.knowledge.native import prune_native_snapshot

__all__ = [
    "DEFAULT_HEAD_SHARE",
    "MIN_CUT_CHARS",
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


def omission_marker(omitted: int) -> str:
    return f"\n\n[... {omitted} characters omitted ...]\n\n"


def prune_evidence(content: Any, artifact: Any) -> tuple[Any, Any]:
    """``(content, artifact)`` with only the evidence ``content`` still shows.

    * A shared record stays only while it verifies (``read_envelope``): handle and excerpt wholly
      visible, id recomputing, not a duplicate. Kept records stay where they were, untouched
      (``knowledge_sources`` or ``retrieval_sources``); dropped ones leave no trace.
    * A native snapshot is pruned by ``prune_native_snapshot``; ``None`` removes it.
    * Each complete citation link (shared or native) to a dropped source becomes its label.
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
    native = artifact.get(KNOWLEDGE_SOURCES_KEY)
    native = native if isinstance(native, Mapping) else None
    if not shared and native is None:
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
                dropped.add(_record_id(record))
            if result.rejected:
                changed = True
                rejected = {(r.key, r.index) for r in result.rejected}
                shared = {
                    key: [r for i, r in enumerate(records) if (key, i) not in rejected]
                    for key, records in shared.items()
                }
        if native is not None:
            pruned = prune_native_snapshot(content, native)
            if pruned != native:
                before = {_record_id(r) for r in _native_records(native)}
                after = {_record_id(r) for r in _native_records(pruned)}
                dropped.update(before - after)
                native = pruned
                changed = True
            kept_ids.update(_record_id(r) for r in _native_records(native))
        dropped.discard("")
        orphaned = dropped - kept_ids
        relabeled = _relabel_content(content, orphaned) if orphaned else content
        if relabeled is content:
            break
        content = relabeled
        changed = True

    if not changed:
        return content, artifact
    return content, _rebuild(artifact, shared, native)


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


def _record_id(record: object) -> str:
    if isinstance(record, Mapping) and isinstance(record_id := record.get("id"), str):
        return record_id
    return ""


def _native_records(snapshot: Mapping[str, Any] | None) -> list[Any]:
    if snapshot is None:
        return []
    records = snapshot.get("sources")
    return records if isinstance(records, list) else []


def _with_shared(artifact: Mapping[str, Any], shared: Mapping[str, list[Any]]) -> dict[str, Any]:
    return {**artifact, **shared}


def _rebuild(
    artifact: Mapping[str, Any],
    shared: Mapping[str, list[Any]],
    native: Mapping[str, Any] | None,
) -> dict[str, Any] | None:
    rebuilt: dict[str, Any] = {}
    remaining_shared = any(records for records in shared.values())
    for key, value in artifact.items():
        if key in shared:
            if shared[key]:
                rebuilt[key] = shared[key]
        elif key == KNOWLEDGE_SOURCES_KEY and isinstance(value, Mapping):
            if native is not None:
                rebuilt[key] = native
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
