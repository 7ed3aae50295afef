"""audit.py without the command line: a saved thread's citations, each against the evidence before
it (``deerflow-knowledge verify`` prints the same audits; tests/test_cli.py covers the printing)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deerflow.knowledge import KnowledgeSource, build_envelope
from deerflow.knowledge.audit import (
    CITATION_STATUSES,
    ThreadFormatError,
    audit_thread,
    thread_messages,
)
from deerflow.knowledge.formatting import citation_link

SOURCE = KnowledgeSource.create(provider="x", title="Guide.md", excerpt="Petrels nest on cliffs.")
OTHER = KnowledgeSource.create(provider="x", title="Other.md", excerpt="Terns nest on sand.")


def _tool(sources: list[KnowledgeSource], **record: Any) -> dict[str, Any]:
    content = "\n\n".join(f"{citation_link(s)}\n{s.excerpt}" for s in sources)
    envelope = build_envelope(sources)
    if record:
        envelope["knowledge_sources"][0].update(record)
    return {"type": "tool", "name": "knowledge_search", "content": content, "artifact": envelope}


def _ai(text: str) -> dict[str, Any]:
    return {"type": "ai", "content": text}


def _statuses(messages: list[dict[str, Any]]) -> list[str]:
    return [audit.status for audit in audit_thread(thread_messages(messages))]


def test_a_citation_after_its_evidence_is_verified_with_its_title() -> None:
    audits = audit_thread(thread_messages([_tool([SOURCE]), _ai(f"Yes {citation_link(SOURCE)}.")]))
    assert [(a.status, a.title, a.source_id, a.message_index) for a in audits] == [
        ("verified", "Guide.md", SOURCE.id, 1)
    ]


def test_a_citation_before_its_evidence_is_not_loaded() -> None:
    assert _statuses([_ai(citation_link(SOURCE)), _tool([SOURCE])]) == ["evidence-not-loaded"]


def test_an_altered_record_is_forged_with_its_reason() -> None:
    audits = audit_thread(
        thread_messages([_tool([SOURCE], excerpt="Not what it said."), _ai(citation_link(SOURCE))])
    )
    assert [a.status for a in audits] == ["forged"]
    assert audits[0].reason is not None


def test_web_and_malformed_citations_are_classified_and_plain_links_skipped() -> None:
    text = "[site](https://example.org) [citation:Web](https://example.org) [citation:x](#knowledge-source-nothex)"
    assert _statuses([_tool([SOURCE]), _ai(text)]) == ["web", "malformed"]


def test_only_assistant_messages_are_audited() -> None:
    link = citation_link(SOURCE)
    messages = [{"type": "human", "content": link}, _tool([SOURCE]), _ai(link)]
    assert _statuses(messages) == ["verified"]


@pytest.mark.parametrize(
    "data",
    [
        {"values": {"messages": []}},
        {"messages": []},
        [],
        {"messages": None},
    ],
)
def test_the_saved_forms_of_an_empty_thread_are_read(data: object) -> None:
    assert thread_messages(data) == []


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"other": 1}, "expected a JSON object"),
        ({"messages": "x"}, "must be a list"),
        ("x", "list"),
    ],
)
def test_a_file_that_is_not_a_thread_is_a_format_error(data: object, message: str) -> None:
    with pytest.raises(ThreadFormatError, match=message):
        thread_messages(data)


@given(st.lists(st.sampled_from(["tool", "tool-other", "ai", "ai-other", "junk"]), max_size=8))
def test_every_citation_gets_one_known_status(kinds: list[str]) -> None:
    items: list[object] = [
        {
            "tool": _tool([SOURCE]),
            "tool-other": _tool([OTHER]),
            "ai": _ai(citation_link(SOURCE)),
            "ai-other": _ai(citation_link(OTHER)),
            "junk": 7,
        }[kind]
        for kind in kinds
    ]
    audits = audit_thread(thread_messages(items))
    assert len(audits) == sum(kind.startswith("ai") for kind in kinds)
    assert {audit.status for audit in audits} <= set(CITATION_STATUSES)
