"""Write and read the shared evidence envelope (contracts/README.md §1 and §3).

Readers treat every artifact as hostile: it may come from a caller, a replayed checkpoint or a
buggy tool. ``read_envelope`` therefore re-derives everything it trusts — the id from the record's
content, the handle and the excerpt from the message's own text — and never raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, get_args

from deerflow.knowledge.contract import KnowledgeSource
from deerflow.knowledge.handles import SHARED_HANDLE_PATTERN as _HANDLE_RE
from deerflow.knowledge.handles import SHARED_HANDLE_PREFIX
from deerflow.knowledge.ids import verified_record_id
from deerflow.knowledge.messages import text_parts
from deerflow.knowledge.rules import (
    ENVELOPE_VERSION,
    MAX_EXCERPT_CHARS,
    MAX_SOURCES,
    normalized_record,
)

__all__ = [
    "ENVELOPE_ERRORS",
    "KNOWLEDGE_SOURCES_KEY",
    "REJECTION_REASONS",
    "RESERVED_KEYS",
    "RETRIEVAL_SOURCES_KEY",
    "VERSION_KEY",
    "EnvelopeErrorCode",
    "ReadResult",
    "Rejection",
    "RejectionReason",
    "build_envelope",
    "handle_for",
    "read_envelope",
    "record_id",
    "unique_records",
]

KNOWLEDGE_SOURCES_KEY: Final = "knowledge_sources"
VERSION_KEY: Final = "knowledge_sources_version"
RETRIEVAL_SOURCES_KEY: Final = "retrieval_sources"
RESERVED_KEYS: Final = frozenset({KNOWLEDGE_SOURCES_KEY, VERSION_KEY, RETRIEVAL_SOURCES_KEY})

RejectionReason = Literal[
    "bad_field", "id_mismatch", "duplicate", "handle_missing", "excerpt_missing"
]
#: Why a whole envelope was rejected; ``internal_error`` is the reader's own fault (never the
#: input's: only exotic host objects can reach it), kept apart so it is not blamed on the data.
EnvelopeErrorCode = Literal["not_an_array", "bad_version", "too_many_records", "internal_error"]
REJECTION_REASONS: Final[tuple[str, ...]] = get_args(RejectionReason)
ENVELOPE_ERRORS: Final[tuple[str, ...]] = get_args(EnvelopeErrorCode)

# Writers put the excerpt at the start of the line after its handle's line (or after one locator
# line), so the common case is settled with a bounded ``startswith`` near the record's first handle.
_EXCERPT_WINDOW: Final = 4_096
_NEAR_LINES: Final = 2
# The fallback searches one haystack: the text parts joined by a lone surrogate, which no valid
# excerpt contains (so a match never straddles two parts), padded to at least this length. CPython's
# ``str.find`` is the two-way algorithm (at most 2n + m comparisons) once the haystack is at least
# 30,000 characters and over 4/3 of the needle (Objects/stringlib/fastsearch.h, 3.10+); a needle
# under 6 characters takes the simple loop, at most 5 comparisons a character. Below those sizes
# the simple loop is O(n·m), so the padding keeps every search in the linear regime.
_SEPARATOR: Final = "\ud800"
_MIN_HAYSTACK: Final = 4 * MAX_EXCERPT_CHARS + 30_000


def handle_for(source_id_: str) -> str:
    return SHARED_HANDLE_PREFIX + source_id_


@dataclass(frozen=True, slots=True)
class Rejection:
    key: str
    index: int
    reason: RejectionReason


@dataclass(frozen=True, slots=True)
class ReadResult:
    sources: tuple[KnowledgeSource, ...] = ()
    rejected: tuple[Rejection, ...] = ()
    error: EnvelopeErrorCode | None = None
    native: Mapping[str, Any] | None = field(default=None)
    """The native RAGFlow snapshot object when ``knowledge_sources`` is one (unverified here)."""


def record_id(record: object) -> str | None:
    """The ``id`` of an artifact record when it is a string (before any other check)."""
    if isinstance(record, Mapping) and isinstance(value := record.get("id"), str):
        return value
    return None


class _HasIdAndRecord(Protocol):
    @property
    def id(self) -> str: ...

    def to_record(self) -> dict[str, Any]: ...


def unique_records(sources: Iterable[_HasIdAndRecord], *, limit: int) -> list[dict[str, Any]]:
    """The wire records of ``sources``: the first of each id, at most ``limit`` of them."""
    seen: set[str] = set()
    records: list[dict[str, Any]] = []
    for source in sources:
        if source.id in seen:
            continue
        if len(records) == limit:
            break
        seen.add(source.id)
        records.append(source.to_record())
    return records


def build_envelope(
    sources: Iterable[KnowledgeSource], *, limit: int = MAX_SOURCES
) -> dict[str, Any]:
    """The artifact for ``sources``: deduplicated by id (first kept), at most ``limit`` records."""
    if not 0 <= limit <= MAX_SOURCES:
        raise ValueError(f"limit must be between 0 and {MAX_SOURCES}")
    return {
        VERSION_KEY: ENVELOPE_VERSION,
        KNOWLEDGE_SOURCES_KEY: unique_records(sources, limit=limit),
    }


def _is_version_one(value: object) -> bool:
    return (type(value) is int and value == ENVELOPE_VERSION) or (
        type(value) is float and value == ENVELOPE_VERSION
    )


def _starts_at(text: str, excerpt: str, at: int) -> bool:
    return text.startswith(excerpt, at)


def _occurs(excerpt: str, haystack: str) -> bool:
    return haystack.find(excerpt) != -1


class _Text:
    """The message's text parts, each record's first handle, and every excerpt looked up so far.

    Each distinct excerpt is searched at most once, whatever the number of records carrying it or
    of handle occurrences: the whole read costs O(content + artifact) characters examined.
    """

    __slots__ = ("_found", "_haystack", "first_handle", "parts")

    def __init__(self, parts: list[str]) -> None:
        self.parts = parts
        self.first_handle: dict[str, tuple[int, int]] = {}
        for part_index, part in enumerate(parts):
            for match in _HANDLE_RE.finditer(part):
                self.first_handle.setdefault(match.group(1), (part_index, match.end()))
        self._found: dict[str, bool] = {}
        self._haystack: str | None = None

    def has_excerpt(self, record_id: str, excerpt: str) -> bool:
        found = self._found.get(excerpt)
        if found is None:
            found = self._near_handle(record_id, excerpt) or self._anywhere(excerpt)
            self._found[excerpt] = found
        return found

    def _near_handle(self, record_id: str, excerpt: str) -> bool:
        part_index, at = self.first_handle[record_id]
        part = self.parts[part_index]
        limit = at + _EXCERPT_WINDOW
        for _ in range(_NEAR_LINES):
            newline = part.find("\n", at, limit)
            if newline == -1:
                return False
            at = newline + 1
            if _starts_at(part, excerpt, at):
                return True
        return False

    def _anywhere(self, excerpt: str) -> bool:
        if self._haystack is None:
            joined = _SEPARATOR.join(self.parts)
            self._haystack = joined + _SEPARATOR * max(0, _MIN_HAYSTACK - len(joined))
        return _occurs(excerpt, self._haystack)


def read_envelope(content: object, artifact: object) -> ReadResult:
    """Verified shared records of one tool message; never raises on hostile input."""
    try:
        return _read(content, artifact)
    except Exception:  # defence in depth: a reader must never raise
        return ReadResult(error="internal_error")


def _read(content: object, artifact: object) -> ReadResult:
    if not isinstance(artifact, Mapping):
        return ReadResult()
    has_primary = KNOWLEDGE_SOURCES_KEY in artifact
    has_secondary = RETRIEVAL_SOURCES_KEY in artifact
    if not has_primary and not has_secondary:
        return ReadResult()
    primary = artifact.get(KNOWLEDGE_SOURCES_KEY)
    secondary = artifact.get(RETRIEVAL_SOURCES_KEY)
    native = primary if isinstance(primary, Mapping) else None
    if has_primary and not isinstance(primary, list | Mapping):
        return ReadResult(error="not_an_array")
    if has_secondary and not isinstance(secondary, list):
        return ReadResult(error="not_an_array", native=native)
    arrays: list[tuple[str, list[Any]]] = []
    if isinstance(primary, list):
        arrays.append((KNOWLEDGE_SOURCES_KEY, primary))
    if isinstance(secondary, list):
        arrays.append((RETRIEVAL_SOURCES_KEY, secondary))
    if not arrays:
        return ReadResult(native=native)
    if not _is_version_one(artifact.get(VERSION_KEY)):
        return ReadResult(error="bad_version", native=native)
    if sum(len(records) for _, records in arrays) > MAX_SOURCES:
        return ReadResult(error="too_many_records", native=native)

    text = _Text(text_parts(content))
    accepted: dict[str, KnowledgeSource] = {}
    rejected: list[Rejection] = []
    for key, records in arrays:
        for index, record in enumerate(records):
            normalized = normalized_record(record)
            reason = "bad_field" if normalized is None else _verify(normalized, text, accepted)
            if reason is None:
                assert normalized is not None
                accepted[normalized["id"]] = KnowledgeSource._trusted(normalized)
            else:
                rejected.append(Rejection(key, index, reason))
    return ReadResult(tuple(accepted.values()), tuple(rejected), None, native)


def _verify(
    record: dict[str, Any], text: _Text, accepted: Mapping[str, KnowledgeSource]
) -> RejectionReason | None:
    record_id: str = record["id"]
    if verified_record_id(record) != record_id:
        return "id_mismatch"
    if record_id in accepted:
        return "duplicate"
    if record_id not in text.first_handle:
        return "handle_missing"
    if not text.has_excerpt(record_id, record["excerpt"]):
        return "excerpt_missing"
    return None
