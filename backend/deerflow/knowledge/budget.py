"""The tool-output budget, pure: what a tool message becomes when its content is over its limit.

:func:`budget_output` is the one entry. It takes a message's content and artifact and owns the
choice of format: a native RAGFlow snapshot is re-rendered whole by
:func:`deerflow.knowledge.native.budget_native` (DeerFlow's rule: never shorten an excerpt under an
existing id), a ``task`` keeps a synopsis of its report before that evidence, and anything else
gets the generic cut — the full text saved to a file with a preview and the path (when the caller
can write one), else head and tail around an omission marker. The entry plans the file but does not
write it: the caller (:mod:`deerflow.knowledge.middleware`) writes it, and asks again without a
file when that fails.

A generic cut does not know about citations. Whatever it leaves, the artifact must still only claim
what the content shows: :func:`prune_evidence` drops every record whose handle or excerpt is no
longer visible and turns each complete citation link to a dropped source back into its plain label,
so the model is never invited to cite evidence nobody can verify. The entry runs the same steps
on its cut while it is still one string, and puts that string into the content's form once at the
end: a tool message's walk through the budget leaves it only for the native budget, the cut's
link scan and the prune's reads and relabel (and, for list content, the message reader).

:func:`truncate_text` and :func:`preview_text` are the budget's cuts. They never split a citation
link or a handle: a cut that would land inside one moves to its edge, so no half-link survives to
be completed by a model or a renderer.

Everything here is pure: plain values in, plain values out.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Final, TypeVar

from deerflow.knowledge.citations import find_citations, relabel_citations
from deerflow.knowledge.envelope import KNOWLEDGE_SOURCES_KEY, RETRIEVAL_SOURCES_KEY, VERSION_KEY
from deerflow.knowledge.evidence import EvidenceFormat, read_evidence
from deerflow.knowledge.handles import HANDLE_TOKEN_PATTERN as _HANDLE_TOKEN_RE
from deerflow.knowledge.messages import map_text_parts, replace_text, text_parts
from deerflow.knowledge.native import SYNOPSIS_TOOL_NAMES, budget_native
from deerflow.knowledge.rules import DEFAULT_OUTPUT_PREVIEW_CHARS

__all__ = [
    "DEFAULT_HEAD_SHARE",
    "MAX_NAME_CHARS",
    "MIN_CUT_CHARS",
    "BudgetedOutput",
    "budget_output",
    "omission_marker",
    "output_chars",
    "preview_text",
    "prune_evidence",
    "truncate_text",
]

#: Share of a truncated output's budget given to its head; the rest keeps the tail (often the
#: conclusion or the error a tool printed last).
DEFAULT_HEAD_SHARE: Final = 0.75
#: Below this many characters of kept text, an omission marker is not worth its own length.
MIN_CUT_CHARS: Final = 16

#: Longest tool-name or call-id fragment in an externalized file's name.
MAX_NAME_CHARS: Final = 64

# A native snapshot is never pruned (it is budgeted whole), so only the shared reader runs.
_SHARED: Final[tuple[EvidenceFormat]] = ("shared",)
# The text parts of list content are cut as one text, joined by this.
_PART_SEPARATOR: Final = "\n\n"
_HASH_CHARS: Final = 16
_UNSAFE_NAME_RE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class BudgetedOutput:
    """A tool message's content and artifact within its budget, and what the budget did."""

    content: Any
    artifact: Any
    record: dict[str, Any]
    """The kind of cut (``truncated`` or ``externalized``), the original and allowed sizes, the
    file's path, and for a native message the sources kept and omitted."""
    write: tuple[PurePath, str] | None = None
    """``(path, full text)`` the caller must save before showing ``content``, which names the path;
    None when nothing was externalized."""


def budget_output(
    content: Any,
    artifact: Any,
    *,
    tool_name: str | None,
    max_chars: int,
    call_id: str | None = None,
    output_dir: PurePath | None = None,
    preview_chars: int = DEFAULT_OUTPUT_PREVIEW_CHARS,
) -> BudgetedOutput | None:
    """``content`` and ``artifact`` within ``max_chars`` characters of text; None when they fit.

    * A readable native snapshot is re-rendered whole (``budget_native``); a tool in
      ``SYNOPSIS_TOOL_NAMES`` (``task``) first gets the generic cut of its report as its synopsis.
    * Anything else gets the generic cut: with ``output_dir``, a preview of at most
      ``preview_chars`` and the path of a file there named by tool, ``call_id`` and a hash of the
      text (so the same output reuses the same file), unless not even the notice fits; otherwise
      head and tail (:func:`truncate_text`).
    * List content: the text parts become one, other parts (images…) are kept after it.
    * The evidence the cut made invisible is pruned (:func:`prune_evidence`).
    """
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    text = _PART_SEPARATOR.join(_text_parts(content))
    if len(text) <= max_chars:
        return None
    cut: str | None = None
    record: dict[str, Any] = {}
    write: tuple[PurePath, str] | None = None
    if tool_name in SYNOPSIS_TOOL_NAMES:  # its synopsis is the generic cut of the report
        cut, record, write = _generic_cut(
            text, max_chars, tool_name, call_id, output_dir, preview_chars
        )
    native = budget_native(
        content, artifact, tool_name=tool_name, max_chars=max_chars, synopsis=cut or ""
    )
    if native is not None:
        cut, artifact = native.content, native.artifact
        record = {
            "original_chars": len(text),
            "max_chars": max_chars,
            **record,
            "kind": record.get("kind", "truncated"),
            "sources_kept": len(native.kept),
            "sources_omitted": native.omitted,
        }
    elif cut is None:
        cut, record, write = _generic_cut(
            text, max_chars, tool_name, call_id, output_dir, preview_chars
        )
    assert cut is not None  # set by one of the branches above
    # The cut is the content's only text, so it is pruned as one string (read and relabeled
    # directly) and put into the content's form once, at the end.
    shown, artifact = _prune_shared(cut, artifact, _relabel_text)
    return BudgetedOutput(_with_text(content, shown), artifact, record, write)


def output_chars(content: object) -> int:
    """How many characters of text :func:`budget_output` measures in ``content``."""
    parts = text_parts(content)
    return sum(map(len, parts)) + len(_PART_SEPARATOR) * max(0, len(parts) - 1)


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
    return _prune_shared(content, artifact, _relabel_content)


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


_C = TypeVar("_C")


def _prune_shared(
    content: _C, artifact: Any, relabel: Callable[[_C, set[str]], _C]
) -> tuple[_C, Any]:
    """:func:`prune_evidence` for content that ``relabel`` rewrites (a message's content, or the
    budget's one cut text): the evidence is read once, and again only after a relabel changed
    the content."""
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
    # The orphans the content was last relabeled for: relabel_citations runs to its fixpoint, so
    # the same set again would change nothing (the set only grows: kept records only leave).
    relabeled_for: set[str] = set()
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
        if orphaned == relabeled_for:
            break
        relabeled = relabel(content, orphaned)
        relabeled_for = orphaned
        if relabeled is content:
            break
        content = relabeled
        changed = True
        result = read_evidence(content, _with_shared(artifact, shared), formats=_SHARED)

    if not changed:
        return content, artifact
    return content, _rebuild(artifact, shared)


def _generic_cut(
    text: str,
    limit: int,
    tool_name: str | None,
    call_id: str | None,
    output_dir: PurePath | None,
    preview_chars: int,
) -> tuple[str, dict[str, Any], tuple[PurePath, str] | None]:
    record: dict[str, Any] = {"original_chars": len(text), "max_chars": limit}
    if output_dir is not None:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
        stem = "-".join(_safe_name(part) for part in (tool_name or "tool", call_id or "call"))
        path = output_dir / f"{stem}-{digest}.txt"
        # The notice's length depends on the preview's; reserve the longest it can be.
        room = min(preview_chars, limit - len(_notice(len(text), len(text), path)))
        if room >= 0:  # else not even the path fits: truncation keeps more of the output
            preview = preview_text(text, max_chars=room)
            content = preview + _notice(len(preview), len(text), path)
            return content, {**record, "kind": "externalized", "path": str(path)}, (path, text)
    return truncate_text(text, max_chars=limit), {**record, "kind": "truncated"}, None


def _safe_name(name: str) -> str:
    return _UNSAFE_NAME_RE.sub("_", name).strip("._")[:MAX_NAME_CHARS] or "x"


def _notice(shown: int, total: int, path: PurePath) -> str:
    return (
        f"\n\n[Output too long: showing the first {shown} of {total} characters. "
        f"The full output was saved to {path}; read that file for the rest.]"
    )


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
    return map_text_parts(content, lambda text: _relabel_text(text, dropped))


def _relabel_text(text: str, dropped: set[str]) -> str:
    return relabel_citations(text, dropped.__contains__)


def _text_parts(content: object) -> list[str]:
    # A string is its own one text part (``text_parts``); only list content needs the reader.
    return [content] if isinstance(content, str) else text_parts(content)


def _with_text(content: object, text: str) -> str | list[Any]:
    # ``replace_text`` for the content :func:`budget_output` cut, which is a string or a list.
    return text if isinstance(content, str) else replace_text(content, text)


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
