"""DeerFlow's native RAGFlow records: their rules, the snapshot that holds them, and its reader.

DeerFlow's RAGFlow tool writes ``ToolMessage.artifact["knowledge_sources"]`` as an *object*::

    {"version": 1, "sources": [{"id": "<32 hex>-<n>", "provider": "ragflow",
      "dataset_id": ..., "document_id": ..., "chunk_id": ...,
      "dataset_name": ..., "document_name": ..., "text": ..., "truncated": false,
      "pages": [3, 4]}]}

and cites each record in the content as ``[citation:N](#knowledge-<id>) dataset / document`` followed
by a newline and the excerpt. The id is a random per-call hex plus the entry's ordinal: it is opaque
and never recomputed, so a reader can only check the record's shape and that the message still
links to it. ``read_native`` does exactly that, with DeerFlow's bounds and tool-name allowlist
(``knowledge_search`` and ``task``), and never raises. The record's ``text`` is *not* required to
appear in the content: a ``task`` message forwards records its child cited without repeating their
text, and DeerFlow readers accept that.

Everything here is pure: plain values in, plain values out.

Tested in tests/test_native.py and, with the shared vectors in
contracts/vectors/native_ragflow.json, tests/test_vectors.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from deerflow.knowledge.envelope import KNOWLEDGE_SOURCES_KEY, unique_records
from deerflow.knowledge.handles import NATIVE_HANDLE_PREFIX, NATIVE_ID_PATTERN
from deerflow.knowledge.handles import NATIVE_LINK_PATTERN as _LINK_RE
from deerflow.knowledge.messages import text_parts
from deerflow.knowledge.rules import is_valid_page
from deerflow.knowledge.text import controls_to_space, has_lone_surrogate

NATIVE_VERSION: Final = 1
NATIVE_PROVIDER: Final = "ragflow"
#: Tool messages whose native snapshots are evidence (DeerFlow's allowlist; nested ``task``
#: delegations forward their children's records).
NATIVE_TOOL_NAMES: Final = frozenset({"knowledge_search", "task"})
MAX_NATIVE_SOURCES: Final = 100
MAX_NATIVE_ORDINAL: Final = 999
MAX_NATIVE_LOCATOR_CHARS: Final = 256
MAX_NATIVE_NAME_CHARS: Final = 512
MAX_NATIVE_TEXT_CHARS: Final = 200_000
MAX_NATIVE_PAGES: Final = 100

NativeRejectionReason = Literal["bad_field", "duplicate", "handle_missing"]
#: Why a whole snapshot was rejected; ``internal_error`` is the reader's own fault.
NativeErrorCode = Literal[
    "tool_not_allowed", "bad_version", "not_an_array", "too_many_records", "internal_error"
]


@dataclass(frozen=True, slots=True)
class NativeSource:
    """One native RAGFlow record. Locators are artifact-only: never shown to the model."""

    id: str
    dataset_id: str
    document_id: str
    chunk_id: str
    dataset_name: str
    document_name: str
    text: str
    truncated: bool
    pages: tuple[int, ...] = ()
    provider: str = NATIVE_PROVIDER

    def __post_init__(self) -> None:
        if _normalized(self.to_record()) is None:
            raise ValueError("record breaks the native RAGFlow source rules")

    @property
    def handle(self) -> str:
        return native_handle(self.id)

    def to_record(self) -> dict[str, Any]:
        """The wire record, in DeerFlow's field order."""
        return {
            "id": self.id,
            "provider": self.provider,
            "dataset_id": self.dataset_id,
            "document_id": self.document_id,
            "chunk_id": self.chunk_id,
            "dataset_name": self.dataset_name,
            "document_name": self.document_name,
            "text": self.text,
            "truncated": self.truncated,
            "pages": list(self.pages),
        }


@dataclass(frozen=True, slots=True)
class NativeRejection:
    index: int
    reason: NativeRejectionReason


@dataclass(frozen=True, slots=True)
class NativeReadResult:
    sources: tuple[NativeSource, ...] = ()
    rejected: tuple[NativeRejection, ...] = ()
    error: NativeErrorCode | None = None


def native_handle(source_id: str) -> str:
    """``#knowledge-<id>``: the destination a message links a native record with."""
    return NATIVE_HANDLE_PREFIX + source_id


def native_link(source_id: str, ordinal: int) -> str:
    """``[citation:N](#knowledge-<id>)``, the ready-to-copy link DeerFlow writes."""
    return f"[citation:{ordinal}]({native_handle(source_id)})"


def native_entry(source: NativeSource, ordinal: int, *, ellipsis: str = "") -> str:
    """One content entry: ``[citation:N](#knowledge-<id>) dataset / document`` + newline + text.

    Names stay outside the link label, so an untrusted name cannot inject a link; control
    characters in them become spaces so the header stays one line. ``ellipsis`` is appended after
    the text when the writer cut it (it is not part of the record's ``text``).
    """
    dataset = controls_to_space(source.dataset_name)
    document = controls_to_space(source.document_name)
    header = f"{native_link(source.id, ordinal)} {dataset} / {document}"
    return f"{header}\n{source.text}{ellipsis}"


def native_snapshot_of(artifact: object) -> Mapping[str, Any] | None:
    """The native snapshot object of an artifact (``knowledge_sources`` as an object), if any."""
    if not isinstance(artifact, Mapping):
        return None
    snapshot = artifact.get(KNOWLEDGE_SOURCES_KEY)
    return snapshot if isinstance(snapshot, Mapping) else None


def build_native_snapshot(
    sources: Iterable[NativeSource], *, limit: int = MAX_NATIVE_SOURCES
) -> dict[str, Any]:
    """``{"version": 1, "sources": [...]}``: deduplicated by id (first kept), at most ``limit``."""
    if not 0 <= limit <= MAX_NATIVE_SOURCES:
        raise ValueError(f"limit must be between 0 and {MAX_NATIVE_SOURCES}")
    records = unique_records(sources, limit=limit)
    return {"version": NATIVE_VERSION, "sources": records}


def read_native(content: object, artifact: object, *, tool_name: object) -> NativeReadResult:
    """Verified native records of one tool message. Never raises.

    Order of checks: no native snapshot (``knowledge_sources`` missing or not an object) → empty,
    no error; tool name outside :data:`NATIVE_TOOL_NAMES` → ``tool_not_allowed``; ``version`` not
    exactly 1 → ``bad_version``; ``sources`` not an array → ``not_an_array``; more than 100
    records → ``too_many_records``. Then per record, first failing check wins: ``bad_field``,
    ``duplicate`` (an id already accepted), ``handle_missing`` (no ``](#knowledge-<id>)`` in any
    text part of ``content``).
    """
    try:
        return _read(content, artifact, tool_name)
    except Exception:  # defence in depth: a reader must never raise
        return NativeReadResult(error="internal_error")


# --------------------------------------------------------------------------- internals


def _read(content: object, artifact: object, tool_name: object) -> NativeReadResult:
    snapshot = native_snapshot_of(artifact)
    if snapshot is None:
        return NativeReadResult()
    if type(tool_name) is not str or tool_name not in NATIVE_TOOL_NAMES:
        return NativeReadResult(error="tool_not_allowed")
    return _read_snapshot(text_parts(content), snapshot)


def _read_snapshot(parts: Sequence[str], snapshot: Mapping[str, Any]) -> NativeReadResult:
    version = snapshot.get("version")
    if not (type(version) in (int, float) and version == NATIVE_VERSION):
        return NativeReadResult(error="bad_version")
    records = snapshot.get("sources")
    if not isinstance(records, list):
        return NativeReadResult(error="not_an_array")
    if len(records) > MAX_NATIVE_SOURCES:
        return NativeReadResult(error="too_many_records")

    linked: set[str] = set()
    for part in parts:
        linked.update(_LINK_RE.findall(part))
    accepted: dict[str, NativeSource] = {}
    rejected: list[NativeRejection] = []
    for index, record in enumerate(records):
        source = _normalized(record)
        reason: NativeRejectionReason | None
        if source is None:
            reason = "bad_field"
        elif source.id in accepted:
            reason = "duplicate"
        elif source.id not in linked:
            reason = "handle_missing"
        else:
            accepted[source.id] = source
            continue
        rejected.append(NativeRejection(index, reason))
    return NativeReadResult(tuple(accepted.values()), tuple(rejected))


def is_locator(value: object) -> bool:
    """True when ``value`` may be a native ``dataset_id``, ``document_id`` or ``chunk_id``."""
    return _is_string(value, min_chars=1, max_chars=MAX_NATIVE_LOCATOR_CHARS)


def _is_string(value: object, *, min_chars: int, max_chars: int) -> bool:
    return (
        type(value) is str
        and min_chars <= len(value) <= max_chars
        and not has_lone_surrogate(value)
    )


def _page(value: object) -> int | None:
    # The shared page rule (an integral float is the integer: JSON cannot tell 2.0 from 2).
    return int(value) if is_valid_page(value) else None  # type: ignore[call-overload]


def _normalized(record: object) -> NativeSource | None:
    """The record as a :class:`NativeSource` when every native field rule holds, else None.

    Unknown fields are ignored (DeerFlow readers ignore them too) and not carried over.
    """
    if not isinstance(record, Mapping):
        return None
    record_id = record.get("id")
    if type(record_id) is not str or NATIVE_ID_PATTERN.fullmatch(record_id) is None:
        return None
    if record.get("provider") != NATIVE_PROVIDER or type(record.get("provider")) is not str:
        return None
    for field in ("dataset_id", "document_id", "chunk_id"):
        if not is_locator(record.get(field)):
            return None
    for field in ("dataset_name", "document_name"):
        if not _is_string(record.get(field), min_chars=0, max_chars=MAX_NATIVE_NAME_CHARS):
            return None
    if not _is_string(record.get("text"), min_chars=0, max_chars=MAX_NATIVE_TEXT_CHARS):
        return None
    truncated = record.get("truncated")
    if type(truncated) is not bool:
        return None
    raw_pages = record.get("pages")
    if not isinstance(raw_pages, list) or len(raw_pages) > MAX_NATIVE_PAGES:
        return None
    pages: list[int] = []
    for raw in raw_pages:
        page = _page(raw)
        if page is None:
            return None
        pages.append(page)
    source = object.__new__(NativeSource)  # already validated: skip __post_init__
    for name, value in (
        ("id", record_id),
        ("provider", NATIVE_PROVIDER),
        ("dataset_id", record["dataset_id"]),
        ("document_id", record["document_id"]),
        ("chunk_id", record["chunk_id"]),
        ("dataset_name", record["dataset_name"]),
        ("document_name", record["document_name"]),
        ("text", record["text"]),
        ("truncated", truncated),
        ("pages", tuple(pages)),
    ):
        object.__setattr__(source, name, value)
    return source
