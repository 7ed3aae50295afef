"""Audit the citations of a saved thread or an exported report against its own evidence.

Every citation of an assistant message is classified against the tool evidence that *precedes*
it: ``verified``, ``forged`` (a record with that id exists but fails verification),
``evidence-not-loaded``, ``malformed`` or ``web``. ``deerflow-knowledge verify`` prints the
result; the logic lives here so applications can audit threads without the command line. Pure:
plain values in, frozen :class:`CitationAudit` values out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

from deerflow.knowledge.citations import find_citations
from deerflow.knowledge.envelope import KNOWLEDGE_SOURCES_KEY, record_id
from deerflow.knowledge.evidence import read_evidence
from deerflow.knowledge.messages import message_view, text_parts
from deerflow.knowledge.saved_evidence import SavedReport

__all__ = [
    "CITATION_STATUSES",
    "CitationAudit",
    "CitationStatus",
    "ThreadFormatError",
    "audit_saved_export",
    "audit_thread",
    "thread_messages",
]

CitationStatus = Literal["verified", "evidence-not-loaded", "malformed", "forged", "web"]
CITATION_STATUSES: Final[tuple[CitationStatus, ...]] = (
    "verified",
    "evidence-not-loaded",
    "malformed",
    "forged",
    "web",
)


class ThreadFormatError(ValueError):
    """The file is not a thread this command understands."""


@dataclass(frozen=True, slots=True)
class CitationAudit:
    message_index: int
    """Index of the assistant message in the thread's message list."""
    kind: str
    status: CitationStatus
    label: str
    href: str
    source_id: str | None
    reason: str | None
    title: str | None
    """The verified title, for a verified citation."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def thread_messages(data: object) -> list[dict[str, Any]]:
    """A saved thread's messages as ``{"role", "content", "artifact", "name"}`` dicts.

    Accepts a LangGraph state (``{"values": {"messages": [...]}}`` or ``{"messages": [...]}``) or
    a bare list; messages as LangChain dicts (``{"type": "ai", "content", ...}``),
    ``messages_to_dict`` form (``{"type", "data": {...}}``), LangChain's serialized constructor
    form, or role dicts (``{"role": "assistant", ...}``). Unknown items get the role ``"other"``.
    """
    if isinstance(data, Mapping):
        values = data.get("values")
        if isinstance(values, Mapping):
            data = values
        if "messages" not in data:
            raise ThreadFormatError("expected a JSON object with 'messages' (or 'values.messages')")
        data = data["messages"]
    if data is None:
        return []
    if not isinstance(data, list):
        raise ThreadFormatError("'messages' must be a list")
    return [_message(item) for item in data]


def _message(item: object) -> dict[str, Any]:
    view = message_view(item)
    if view is None:
        return {"role": "other", "content": None, "artifact": None, "name": None}
    return {
        "role": view.role,
        "content": view.content,
        "artifact": view.artifact,
        "name": view.name,
    }


def audit_thread(messages: list[dict[str, Any]]) -> list[CitationAudit]:
    """Classify every citation of every assistant message against the *preceding* tool evidence.

    * ``verified``: a preceding tool message carries a record with this id that verifies
      (``read_evidence``: read_envelope for shared ids, read_native for native ones).
    * ``forged``: no verified record has the id, but a preceding tool artifact carries a record
      with this id that fails verification (id_mismatch, excerpt_missing, handle_missing, ...,
      or an envelope-level fault such as bad_version) — evidence that was altered or fabricated.
    * ``evidence-not-loaded``: no preceding tool message mentions the id at all.
    * ``malformed``: the link's destination is not a valid citation target.
    * ``web``: an ordinary web citation (not knowledge evidence; not audited).
    """
    verified: dict[str, str] = {}  # id -> title
    failed: dict[str, str] = {}  # id -> first failure reason
    audits: list[CitationAudit] = []
    for index, message in enumerate(messages):
        content, artifact = message["content"], message["artifact"]
        if message["role"] == "tool":
            _collect_evidence(content, artifact, message["name"], verified, failed)
        elif message["role"] == "ai":
            for part in text_parts(content):
                for citation in find_citations(part):
                    audits.append(_audit(index, citation, verified, failed))
    return audits


def audit_saved_export(
    reports: list[SavedReport],
) -> tuple[list[dict[str, Any]], list[CitationAudit]]:
    """Audit each exported report's citations against its own saved evidence only.

    Verified: the evidence passed ``read_saved_evidence`` and holds the id. Forged: the evidence
    was rejected whole (the reason is its error) and its payload names the id. Otherwise the
    evidence is not loaded. Each report counts as one assistant message.
    """
    messages: list[dict[str, Any]] = []
    audits: list[CitationAudit] = []
    for index, saved in enumerate(reports):
        evidence, error = saved.result.evidence, saved.result.error
        verified = {s.id: s.document_name for s in evidence.sources} if evidence else {}
        failed: dict[str, str] = {}
        snapshot = (
            saved.payload.get(KNOWLEDGE_SOURCES_KEY) if isinstance(saved.payload, Mapping) else None
        )
        records = snapshot.get("sources") if isinstance(snapshot, Mapping) else None
        if error is not None and isinstance(records, list):
            failed = {rid: error for r in records if (rid := record_id(r)) is not None}
        messages.append({"role": "ai", "content": saved.report, "artifact": None, "name": None})
        audits.extend(_audit(index, c, verified, failed) for c in find_citations(saved.report))
    return messages, audits


def _collect_evidence(
    content: object,
    artifact: object,
    name: object,
    verified: dict[str, str],
    failed: dict[str, str],
) -> None:
    evidence = read_evidence(content, artifact, tool_name=name)
    for source in evidence.shared:
        verified.setdefault(source.id, source.title)
    for native_source in evidence.native:
        verified.setdefault(native_source.id, native_source.document_name)
    for rejection in evidence.rejected:
        if rejection.record_id is not None:
            failed.setdefault(rejection.record_id, rejection.reason)


def _audit(
    index: int, citation: Any, verified: Mapping[str, str], failed: Mapping[str, str]
) -> CitationAudit:
    status: CitationStatus
    reason: str | None = citation.reason
    title: str | None = None
    if citation.kind == "malformed":
        status = "malformed"
    elif citation.kind == "web":
        status = "web"
    elif citation.source_id in verified:
        status, title = "verified", verified[citation.source_id]
    elif citation.source_id in failed:
        status, reason = "forged", failed[citation.source_id]
    else:
        status = "evidence-not-loaded"
    return CitationAudit(
        message_index=index,
        kind=citation.kind,
        status=status,
        label=citation.label,
        href=citation.href,
        source_id=citation.source_id,
        reason=reason,
        title=title,
    )
