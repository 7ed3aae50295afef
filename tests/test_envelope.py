from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deerflow.knowledge import (
    KnowledgeSource,
    build_envelope,
    read_envelope,
    source_id,
    text_parts,
)
from deerflow.knowledge.contract import check_record
from tests.strategies import content_citing, json_values, knowledge_sources


def test_build_envelope_dedupes_and_caps() -> None:
    sources = [KnowledgeSource.create(provider="p", title="t", excerpt=f"e{i}") for i in range(120)]
    envelope = build_envelope(sources[:3] + sources[:3] + sources)
    assert envelope["knowledge_sources_version"] == 1
    ids = [r["id"] for r in envelope["knowledge_sources"]]
    assert len(ids) == 100 and len(set(ids)) == 100
    assert ids[:3] == [s.id for s in sources[:3]]


def test_build_envelope_omits_absent_fields() -> None:
    source = KnowledgeSource.create(provider="p", title="t", excerpt="e")
    assert build_envelope([source])["knowledge_sources"] == [
        {"id": source.id, "provider": "p", "title": "t", "excerpt": "e"}
    ]


def test_build_envelope_rejects_bad_limit() -> None:
    with pytest.raises(ValueError):
        build_envelope([], limit=101)


def test_round_trip() -> None:
    sources = [
        KnowledgeSource.create(
            provider="lightrag", title=f"doc{i}.md", excerpt=f"Excerpt {i}.", page=i + 1
        )
        for i in range(5)
    ]
    result = read_envelope(content_citing(sources), build_envelope(sources))
    assert result.sources == tuple(sources)
    assert result.rejected == () and result.error is None


def test_native_object_is_exposed_not_verified() -> None:
    native = {"version": 1, "sources": []}
    assert read_envelope("x", {"knowledge_sources": native}).native == native


def test_text_parts() -> None:
    assert text_parts("a") == ["a"]
    assert text_parts(
        [
            "a",
            {"type": "text", "text": "b"},
            {"type": "text", "text": 1},
            {"type": "x", "text": "c"},
            3,
        ]
    ) == ["a", "b"]
    assert text_parts(None) == [] and text_parts({"text": "a"}) == []


class _Exploding(dict[str, Any]):
    def get(self, key: str, default: Any = None) -> Any:
        raise RuntimeError("boom")


def test_reader_survives_mappings_that_raise() -> None:
    artifact = _Exploding(knowledge_sources=[])
    result = read_envelope("x", artifact)
    assert result.sources == ()


@settings(max_examples=300)
@given(content=json_values, artifact=json_values)
def test_never_raises_on_arbitrary_json(content: Any, artifact: Any) -> None:
    read_envelope(content, artifact)
    read_envelope(content, {"knowledge_sources_version": 1, "knowledge_sources": artifact})
    read_envelope(content, {"knowledge_sources_version": 1, "retrieval_sources": [artifact]})


@st.composite
def mutated_envelopes(draw: st.DrawFn) -> tuple[Any, Any]:
    sources = draw(st.lists(knowledge_sources(), max_size=5))
    envelope = build_envelope(sources)
    records = envelope["knowledge_sources"]
    content: Any = content_citing(sources)
    for _ in range(draw(st.integers(0, 4))):
        action = draw(st.sampled_from(["field", "drop", "content", "dup", "junk"]))
        dicts = [r for r in records if isinstance(r, dict) and r]
        if dicts and action == "field":
            record = draw(st.sampled_from(dicts))
            record[draw(st.sampled_from(["id", "title", "excerpt", "page", "url", "extra"]))] = (
                draw(json_values)
            )
        elif dicts and action == "drop":
            record = draw(st.sampled_from(dicts))
            record.pop(draw(st.sampled_from(sorted(record))), None)
        elif action == "content":
            cut = draw(st.integers(0, len(content)))
            content = content[:cut]
        elif dicts and action == "dup":
            records.append(dict(draw(st.sampled_from(dicts))))
        else:
            records.append(draw(json_values))
    if draw(st.booleans()):
        content = [{"type": "text", "text": content}]
    return content, envelope


@settings(max_examples=300)
@given(mutated_envelopes())
def test_only_returns_records_that_reverify(case: tuple[Any, Any]) -> None:
    content, artifact = case
    result = read_envelope(content, artifact)
    parts = text_parts(content)
    seen = set()
    for source in result.sources:
        record = source.to_record()
        assert check_record(record)
        assert source_id(record) == source.id
        assert any(f"#knowledge-source-{source.id}" in p for p in parts)
        assert any(source.excerpt in p for p in parts)
        assert source.id not in seen
        seen.add(source.id)
    total = len(artifact.get("knowledge_sources", []))
    if result.error is None:
        assert len(result.sources) + len(result.rejected) == total
