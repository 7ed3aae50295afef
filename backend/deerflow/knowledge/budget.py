"""Keep evidence honest after a tool-output budget shortened a tool's content.

A generic budget (head-and-tail truncation, externalizing to a file with a preview) does not know
about citations. Whatever it leaves, the artifact must still only claim what the content shows:
:func:`prune_evidence` drops every record whose handle or excerpt is no longer visible and turns
each complete citation link to a dropped source back into its plain label, so the model is never
invited to cite evidence nobody can verify. (A native RAGFlow message is budgeted whole instead,
by :func:`deerflow.knowledge.native.budget_native`.)

:func:`truncate_text` and :func:`preview_text` are the budget's cuts. They never split a citation
link or a handle: a cut that would land inside one moves to its edge, so no half-link survives to
be completed by a model or a renderer.

Everything here is pure: plain values in, plain values out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from deerflow.knowledge.citations import find_citations, relabel_citations
from deerflow.knowledge.envelope import KNOWLEDGE_SOURCES_KEY, RETRIEVAL_SOURCES_KEY, VERSION_KEY
from deerflow.knowledge.evidence import EvidenceFormat, read_evidence
from deerflow.knowledge.handles import HANDLE_TOKEN_PATTERN as _HANDLE_TOKEN_RE
from deerflow.knowledge.messages import map_text_parts

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

# A native snapshot is never pruned (it is budgeted whole), so only the shared reader runs.
_SHARED: Final[tuple[EvidenceFormat]] = ("shared",)


def omission_marker(omitted: int) -> str:
    return f"\n\n[... {omitted} characters omitted ...]\n\n"


def prune_evidence(content: Any, artifact: Any) -> tuple[Any, Any]:
    """``(content, artifact)`` with only the evidence ``content`` still shows.

    * A shared record stays only while it verifies (``read_evidence``): handle and excerpt
      wholly visible, id recomputing, not a duplicate. Kept records stay where they were, untouched
      (``knowledge_sources`` or ``retrieval_sources``); dropped ones leave no trace.
    * A native snapshot is never touched here: it is budgeted whole by ``native.budget_native``,
      or left as it is when that reader cannot read it.
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
    if not shared:
        return content, artifact
    result = read_evidence(content, artifact, formats=_SHARED)
    if result.shared_error is not None:
        return content, artifact

    changed = False
    # Every id dropped in any pass: relabeling in a later pass can form a new link to one of them.
    dropped: set[str] = set()
    while True:
        kept_ids = {source.id for source in result.shared}
        rejected = result.rejected
        dropped.update(r.record_id or "" for r in rejected)
        if rejected:
            changed = True
            positions = {(r.key, r.index) for r in rejected}
            shared = {
                key: [r for i, r in enumerate(records) if (key, i) not in positions]
                for key, records in shared.items()
            }
        dropped.discard("")
        orphaned = dropped - kept_ids
        relabeled = _relabel_content(content, orphaned) if orphaned else content
        if relabeled is content:
            break
        content = relabeled
        changed = True
        result = read_evidence(content, _with_shared(artifact, shared), formats=_SHARED)

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
    return map_text_parts(content, lambda text: relabel_citations(text, dropped.__contains__))


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
