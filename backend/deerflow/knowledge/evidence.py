"""One reader for the evidence of a tool message, whichever format carries it.

A tool message carries its evidence in the shared envelope (contracts/README.md §1 and §3, read by
:func:`~deerflow.knowledge.envelope.read_envelope`), as DeerFlow's native RAGFlow snapshot (§7,
:func:`~deerflow.knowledge.native.read_native`), or both (the dual layout a ``task`` writes when
it forwards both). :func:`read_evidence` reads both and names, for every record that did not
verify, where it is, the id it claims and why, so no consumer walks the raw artifact again. It adds
no rule of its own: what verifies, and why a record does not, is exactly what the two format
readers say. Pure; never raises.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from deerflow.knowledge.contract import KnowledgeSource
from deerflow.knowledge.envelope import (
    KNOWLEDGE_SOURCES_KEY,
    RETRIEVAL_SOURCES_KEY,
    EnvelopeErrorCode,
    ReadResult,
    read_envelope,
    record_id,
)
from deerflow.knowledge.native import (
    NativeErrorCode,
    NativeReadResult,
    NativeSource,
    native_snapshot_of,
    read_native,
)

__all__ = [
    "EVIDENCE_FORMATS",
    "EvidenceFormat",
    "EvidenceRejection",
    "EvidenceSource",
    "MessageEvidence",
    "read_evidence",
]

#: Which reader a record belongs to: ``shared`` (the envelope) or ``native`` (the RAGFlow snapshot).
EvidenceFormat = Literal["shared", "native"]
EVIDENCE_FORMATS: Final[tuple[EvidenceFormat, ...]] = get_args(EvidenceFormat)
#: A verified record of either format.
EvidenceSource = KnowledgeSource | NativeSource


@dataclass(frozen=True, slots=True)
class EvidenceRejection:
    """One record of the artifact that did not verify."""

    format: EvidenceFormat
    key: str
    """The artifact key of its array: ``knowledge_sources`` or ``retrieval_sources`` (a native
    record sits in ``knowledge_sources.sources``)."""
    index: int
    """Its position in that array."""
    record_id: str | None
    """The ``id`` the record claims when it is a string (what a citation to it would name); not
    verified, since the record was not."""
    reason: str
    """The record's own fault (``id_mismatch``, ``handle_missing``…) or, when ``whole``, the
    reason its format's whole array was refused (``bad_version``, ``tool_not_allowed``…)."""
    whole: bool = False


@dataclass(frozen=True, slots=True)
class MessageEvidence:
    """What one tool message's evidence verifies to, in both formats."""

    shared: tuple[KnowledgeSource, ...] = ()
    """Verified shared records, in artifact order (``knowledge_sources``, ``retrieval_sources``)."""
    native: tuple[NativeSource, ...] = ()
    """Verified native records, in snapshot order."""
    rejected: tuple[EvidenceRejection, ...] = ()
    """Every indexable record that did not verify, in artifact order: shared, then native."""
    shared_error: EnvelopeErrorCode | None = None
    native_error: NativeErrorCode | None = None

    @property
    def sources(self) -> tuple[EvidenceSource, ...]:
        """Every verified record: the shared ones first, then the native ones."""
        return (*self.shared, *self.native)

    @property
    def errors(self) -> tuple[str, ...]:
        """The whole-format errors (shared first), without the Nones."""
        return tuple(e for e in (self.shared_error, self.native_error) if e is not None)


def read_evidence(
    content: object,
    artifact: object,
    *,
    tool_name: object = None,
    formats: Collection[EvidenceFormat] = EVIDENCE_FORMATS,
) -> MessageEvidence:
    """The verified evidence of one tool message, in both formats. Never raises.

    ``tool_name`` is the message's ``name``: a native snapshot is evidence only on a tool DeerFlow
    allows (``knowledge_search``, ``task``); on any other (or ``None``) its records are refused
    whole as ``tool_not_allowed``. Shared records are read whatever the name: the artifact key is
    the boundary. ``formats`` names the readers to run; a format left out reads as empty (a caller
    that only handles shared records, such as :func:`~deerflow.knowledge.budget.prune_evidence`,
    does not pay for verifying a native snapshot).
    """
    try:
        return _read(content, artifact, tool_name, formats)
    except Exception:  # defence in depth: a reader must never raise
        return MessageEvidence(shared_error="internal_error", native_error="internal_error")


# --------------------------------------------------------------------------- internals

_NO_SHARED: Final = ReadResult()
_NO_NATIVE: Final = NativeReadResult()


def _read(
    content: object, artifact: object, tool_name: object, formats: Collection[EvidenceFormat]
) -> MessageEvidence:
    shared = read_envelope(content, artifact) if "shared" in formats else _NO_SHARED
    native = (
        read_native(content, artifact, tool_name=tool_name) if "native" in formats else _NO_NATIVE
    )
    if not isinstance(artifact, Mapping) or (
        not shared.rejected and not native.rejected and not shared.error and not native.error
    ):
        return MessageEvidence(shared.sources, native.sources, (), shared.error, native.error)
    rejected: list[EvidenceRejection] = []
    arrays = {
        key: records
        for key in (KNOWLEDGE_SOURCES_KEY, RETRIEVAL_SOURCES_KEY)
        if isinstance(records := artifact.get(key), list)
    }
    if shared.error is not None:
        for key, records in arrays.items():
            rejected.extend(_refused("shared", key, records, shared.error))
    for rejection in shared.rejected:
        record = arrays[rejection.key][rejection.index]
        rejected.append(
            EvidenceRejection(
                "shared", rejection.key, rejection.index, record_id(record), rejection.reason
            )
        )
    snapshot = native_snapshot_of(artifact) if native.rejected or native.error else None
    native_records: Any = snapshot.get("sources") if snapshot is not None else None
    if isinstance(native_records, list):
        if native.error is not None:
            rejected.extend(_refused("native", KNOWLEDGE_SOURCES_KEY, native_records, native.error))
        for native_rejection in native.rejected:
            rejected.append(
                EvidenceRejection(
                    "native",
                    KNOWLEDGE_SOURCES_KEY,
                    native_rejection.index,
                    record_id(native_records[native_rejection.index]),
                    native_rejection.reason,
                )
            )
    return MessageEvidence(
        shared.sources, native.sources, tuple(rejected), shared.error, native.error
    )


def _refused(
    format_: EvidenceFormat, key: str, records: list[Any], error: str
) -> list[EvidenceRejection]:
    return [
        EvidenceRejection(format_, key, index, record_id(record), error, whole=True)
        for index, record in enumerate(records)
    ]
