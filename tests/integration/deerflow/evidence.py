"""Find the tool messages and answers in whatever DeerFlow returns, and check their evidence with
the package's own readers (``read_envelope``, ``audit_thread``) — the checks every reader runs."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from deerflow.knowledge import KNOWLEDGE_SOURCES_KEY, RESERVED_KEYS, find_citations, read_envelope
from deerflow.knowledge.audit import audit_thread, thread_messages

TOOL_NAME = "knowledge_search"


def walk(value: Any) -> Iterator[Mapping[str, Any]]:
    """Every mapping nested anywhere in ``value`` (JSON as DeerFlow serialises it)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)


def _is_tool_message(item: Mapping[str, Any]) -> bool:
    kind = item.get("type") or item.get("role")
    return kind in {"tool", "ToolMessage", "ToolMessageChunk"} and "tool_call_id" in item


def tool_messages(value: Any) -> list[Mapping[str, Any]]:
    """The knowledge_search tool messages anywhere in ``value``, deduplicated by id/call id."""
    seen: set[tuple[Any, ...]] = set()
    found = []
    for item in walk(value):
        if _is_tool_message(item) and item.get("name") == TOOL_NAME:
            key = (
                item.get("id"),
                item.get("tool_call_id"),
                str(item.get("content"))[:200],
                str(item.get("artifact"))[:200],
            )
            if key not in seen:
                seen.add(key)
                found.append(item)
    return found


@dataclass(frozen=True)
class Verdict:
    sources: int
    rejected: int
    error: str | None
    records: int
    """Records present on the artifact (verified or not)."""


def verdict(message: Mapping[str, Any]) -> Verdict:
    artifact = message.get("artifact")
    result = read_envelope(message.get("content"), artifact)
    records = artifact.get(KNOWLEDGE_SOURCES_KEY) if isinstance(artifact, Mapping) else None
    return Verdict(
        sources=len(result.sources),
        rejected=len(result.rejected),
        error=result.error,
        records=len(records) if isinstance(records, list) else 0,
    )


def assert_verifies(message: Mapping[str, Any], where: str) -> Verdict:
    found = verdict(message)
    assert found.error is None, f"{where}: envelope error {found.error}"
    assert found.sources > 0, f"{where}: no verified source on the tool message ({found})"
    assert found.rejected == 0, f"{where}: {found.rejected} record(s) rejected ({found})"
    return found


def has_reserved_keys(message: Mapping[str, Any]) -> bool:
    artifact = message.get("artifact")
    return isinstance(artifact, Mapping) and bool(RESERVED_KEYS & set(artifact))


def audit(messages: Any) -> list[str]:
    """The audit status of every citation in the answers of ``messages`` (a list or a state)."""
    return [entry.status for entry in audit_thread(thread_messages(messages))]


def citation_ids(text: str) -> list[str]:
    return [c.source_id for c in find_citations(text) if getattr(c, "source_id", None)]


def state_messages(state: Mapping[str, Any]) -> list[Any]:
    values = state.get("values", state)
    messages = values.get("messages") if isinstance(values, Mapping) else None
    assert isinstance(messages, list), f"no messages in {str(state)[:500]}"
    return messages
