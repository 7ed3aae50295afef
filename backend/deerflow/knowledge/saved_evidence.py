"""DeerFlow's saved batch evidence, read back exactly as DeerFlow's own reader does.

A durable batch task stores its report beside a self-contained evidence payload
``{"knowledge_sources": {"version": 1, "sources": [...], "omitted_count": n}}``
(docs/RATIONALE.md#saved-evidence), and exports both. Nothing else of the run survives, so the
payload is the only evidence a saved report's citations can resolve against — never a
conversation's sources.
:func:`read_saved_evidence` applies DeerFlow's rules to it: version 1, an integer
``omitted_count``, at most 100 native records, each cited in the stored report, with non-blank
names and text, text at most 200,000 and pages at most 100, and the whole payload at most
1,000,000 characters of JSON. One broken rule rejects the whole evidence: it is never partially
rewritten. :func:`read_saved_export` reads an export file (a JSON item, a list of them, or JSON
Lines) into reports and their evidence.

Pure: plain values in, frozen values out. Never raises on hostile input.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from deerflow.knowledge.envelope import KNOWLEDGE_SOURCES_KEY
from deerflow.knowledge.evidence import read_evidence
from deerflow.knowledge.native import (
    MAX_NATIVE_PAGES,
    MAX_NATIVE_SOURCES,
    MAX_NATIVE_TEXT_CHARS,
    NativeSource,
)

__all__ = [
    "MAX_SAVED_PAGES",
    "MAX_SAVED_PAYLOAD_CHARS",
    "MAX_SAVED_SOURCES",
    "MAX_SAVED_TEXT_CHARS",
    "SAVED_EVIDENCE_ERRORS",
    "SavedEvidence",
    "SavedEvidenceErrorCode",
    "SavedEvidenceResult",
    "SavedReport",
    "read_saved_evidence",
    "read_saved_export",
]

MAX_SAVED_SOURCES: Final = MAX_NATIVE_SOURCES
MAX_SAVED_TEXT_CHARS: Final = MAX_NATIVE_TEXT_CHARS
MAX_SAVED_PAGES: Final = MAX_NATIVE_PAGES
#: Code points of the payload's compact JSON (DeerFlow's writer measures with spaced separators,
#: which is never shorter, so everything it writes stays within this).
MAX_SAVED_PAYLOAD_CHARS: Final = 1_000_000

SavedEvidenceErrorCode = Literal[
    "not_an_object",
    "too_large",
    "bad_version",
    "bad_omitted_count",
    "not_an_array",
    "too_many_records",
    "bad_field",
    "duplicate",
    "not_cited",
    "blank_field",
    "internal_error",
]
SAVED_EVIDENCE_ERRORS: Final[tuple[str, ...]] = get_args(SavedEvidenceErrorCode)

_NATIVE_TO_SAVED: Final[dict[str, SavedEvidenceErrorCode]] = {
    "bad_field": "bad_field",
    "duplicate": "duplicate",
    "handle_missing": "not_cited",
    "bad_version": "bad_version",
    "not_an_array": "not_an_array",
    "too_many_records": "too_many_records",
    "internal_error": "internal_error",
}
#: A saved report is a batch ``task``'s result, so its snapshot is read as a ``task`` message's.
_SAVED_TOOL_NAME: Final = "task"
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


@dataclass(frozen=True, slots=True)
class SavedEvidence:
    sources: tuple[NativeSource, ...]
    omitted_count: int
    """Sources the report cites that the writer could not keep (DeerFlow's count)."""


@dataclass(frozen=True, slots=True)
class SavedEvidenceResult:
    evidence: SavedEvidence | None
    """None when there is no evidence or it was rejected whole."""
    error: SavedEvidenceErrorCode | None = None
    index: int | None = None
    """The first offending record, for record-level errors."""


@dataclass(frozen=True, slots=True)
class SavedReport:
    """One exported batch result: the stored report and its evidence, as read."""

    report: str
    payload: object
    result: SavedEvidenceResult


def read_saved_evidence(report: object, payload: object) -> SavedEvidenceResult:
    """The verified evidence of a saved report, or why it was rejected whole. Never raises.

    ``payload`` is the stored ``result_artifact``; ``None`` means no evidence (no error). Checks,
    first failing wins: an object with a ``knowledge_sources`` object (``not_an_object``); compact
    JSON at most 1,000,000 code points (``too_large``); ``version`` 1; ``omitted_count`` a
    non-negative integer; ``sources`` an array of at most 100; then per record the native field
    rules (``bad_field``), a first id (``duplicate``), a ``](#knowledge-<id>)`` link in the report
    (``not_cited``) and non-blank ``dataset_name``, ``document_name`` and ``text``
    (``blank_field``).
    """
    try:
        return _read(report, payload)
    except Exception:  # defence in depth: a reader must never raise
        return SavedEvidenceResult(None, "internal_error")


def read_saved_export(data: object) -> list[SavedReport] | None:
    """The reports of a batch export, or None when ``data`` is not one.

    ``data`` is the export's text (JSON Lines, or one JSON document) or its parsed JSON: an item,
    or a list of items, each an object with a string ``result`` (the stored report) and a
    ``result_artifact`` (the evidence payload, possibly null). Any other shape is not an export.
    """
    if isinstance(data, str):
        text = data
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            try:
                data = [json.loads(line) for line in text.splitlines() if line.strip()]
            except (ValueError, RecursionError):
                return None
    items: list[Any] = data if isinstance(data, list) else [data]
    if not items or not all(_is_export_item(item) for item in items):
        return None
    reports: list[SavedReport] = []
    for item in items:
        report, payload = item["result"], item["result_artifact"]
        reports.append(SavedReport(report, payload, read_saved_evidence(report, payload)))
    return reports


# --------------------------------------------------------------------------- internals


def _is_export_item(item: object) -> bool:
    return (
        isinstance(item, Mapping)
        and isinstance(item.get("result"), str)
        and "result_artifact" in item
    )


def _integer(value: object) -> int | None:
    # JSON cannot tell 2.0 from 2, so an integral float is the integer (as the native version).
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    return None


def _read(report: object, payload: object) -> SavedEvidenceResult:
    if payload is None:
        return SavedEvidenceResult(None)
    snapshot = payload.get(KNOWLEDGE_SOURCES_KEY) if isinstance(payload, Mapping) else None
    if not isinstance(snapshot, Mapping):
        return SavedEvidenceResult(None, "not_an_object")
    try:
        size = len(_ENCODE(payload))
    except (TypeError, ValueError, RecursionError):
        return SavedEvidenceResult(None, "not_an_object")
    if size > MAX_SAVED_PAYLOAD_CHARS:
        return SavedEvidenceResult(None, "too_large")
    if _integer(snapshot.get("version")) != 1:
        return SavedEvidenceResult(None, "bad_version")
    omitted = _integer(snapshot.get("omitted_count"))
    if omitted is None or omitted < 0:
        return SavedEvidenceResult(None, "bad_omitted_count")
    text = report if isinstance(report, str) else ""
    read = read_evidence(text, {KNOWLEDGE_SOURCES_KEY: snapshot}, tool_name=_SAVED_TOOL_NAME)
    if read.native_error is not None:
        return SavedEvidenceResult(None, _NATIVE_TO_SAVED[read.native_error])
    if read.rejected:
        first = read.rejected[0]
        return SavedEvidenceResult(None, _NATIVE_TO_SAVED[first.reason], first.index)
    for index, source in enumerate(read.native):
        if any(
            not value.strip() for value in (source.dataset_name, source.document_name, source.text)
        ):
            return SavedEvidenceResult(None, "blank_field", index)
    return SavedEvidenceResult(SavedEvidence(read.native, omitted))
