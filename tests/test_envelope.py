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
from deerflow.knowledge import envelope as envelope_module
from deerflow.knowledge.envelope import KNOWLEDGE_SOURCES_KEY, VERSION_KEY, handle_for
from deerflow.knowledge.rules import MAX_EXCERPT_CHARS, MAX_SOURCES, check_record
from tests.strategies import ExplodingMapping, content_citing, json_values, knowledge_sources


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


def test_reader_survives_mappings_that_raise() -> None:
    artifact = ExplodingMapping(knowledge_sources=[])
    result = read_envelope("x", artifact)
    assert result.sources == ()
    assert result.error == "internal_error"  # the reader's fault, not blamed on the data


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


# --- Linear time (issue 12 item 2) --------------------------------------------------------------


def _two_way_or_short(haystack_chars: int, needle_chars: int) -> bool:
    """CPython's fastsearch.h: a needle under 6 characters scans at most 5 per position; two-way
    (at most 2n + m comparisons) needs n >= 30,000 and (m >> 2) * 3 < (n >> 2)."""
    if needle_chars < 6:
        return True
    return haystack_chars >= 30_000 and (needle_chars >> 2) * 3 < (haystack_chars >> 2)


class _Work:
    """Characters the reader hands to its search primitives, each checked to be linear-time."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.examined = 0
        self.searches = 0
        starts_at, occurs = envelope_module._starts_at, envelope_module._occurs

        def counted_starts_at(text: str, excerpt: str, at: int) -> bool:
            self.examined += len(excerpt)
            return starts_at(text, excerpt, at)

        def counted_occurs(excerpt: str, haystack: str) -> bool:
            assert _two_way_or_short(len(haystack), len(excerpt))
            self.searches += 1
            self.examined += 2 * len(haystack) + len(excerpt)
            return occurs(excerpt, haystack)

        monkeypatch.setattr(envelope_module, "_starts_at", counted_starts_at)
        monkeypatch.setattr(envelope_module, "_occurs", counted_occurs)


def _same_record_repeated(excerpt: str, handle_chars: int) -> tuple[str, dict[str, Any]]:
    source = KnowledgeSource.create(provider="local", title="t.md", excerpt=excerpt)
    handle = handle_for(source.id) + " "
    content = handle * (handle_chars // len(handle))
    return content, {VERSION_KEY: 1, KNOWLEDGE_SOURCES_KEY: [source.to_record()] * MAX_SOURCES}


@pytest.mark.parametrize("chars", [10_000, 100_000, 1_000_000])
def test_repeated_handles_and_failing_records_cost_linear_work(
    monkeypatch: pytest.MonkeyPatch, chars: int
) -> None:
    # Before: every handle occurrence searched a 24k window, for each of the 100 identical records.
    content, artifact = _same_record_repeated("x" * MAX_EXCERPT_CHARS, chars)
    work = _Work(monkeypatch)
    result = read_envelope(content, artifact)
    assert {r.reason for r in result.rejected} == {"excerpt_missing"}
    assert work.searches == 1  # one distinct excerpt, searched once
    assert work.examined <= 2 * (len(content) + 100_000) + 3 * MAX_EXCERPT_CHARS


@pytest.mark.parametrize("chars", [10_000, 100_000, 1_000_000])
def test_periodic_excerpts_cost_linear_work(monkeypatch: pytest.MonkeyPatch, chars: int) -> None:
    # `a^k b a^(k-1)` against `a^n` is the worst case of naive and Horspool-style searches.
    excerpt = "a" * 10_000 + "b" + "a" * 9_999
    sources = [
        KnowledgeSource.create(provider="local", title=f"t{i}.md", excerpt=excerpt)
        for i in range(MAX_SOURCES)
    ]
    content = " ".join(handle_for(s.id) for s in sources) + "\n" + "a" * chars
    work = _Work(monkeypatch)
    result = read_envelope(content, build_envelope(sources))
    assert result.sources == ()
    assert work.searches == 1
    assert work.examined <= 2 * (len(content) + 100_000) + 3 * MAX_EXCERPT_CHARS + MAX_SOURCES * (
        2 * len(excerpt)
    )


@pytest.mark.parametrize("parts", [400, 4_000])
def test_many_small_parts_stay_in_the_linear_regime(
    monkeypatch: pytest.MonkeyPatch, parts: int
) -> None:
    # CPython's simple loop (O(n·m)) serves haystacks under 2,500 characters: parts are joined.
    excerpts = ["a" * 1_200 + "b" + str(i) for i in range(MAX_SOURCES)]
    sources = [KnowledgeSource.create(provider="local", title="t.md", excerpt=e) for e in excerpts]
    handles = " ".join(handle_for(s.id) for s in sources)
    content = [handles] + [{"type": "text", "text": "a" * 2_499}] * parts
    work = _Work(monkeypatch)
    result = read_envelope(content, build_envelope(sources))
    assert result.sources == ()
    total = len(handles) + 2_500 * parts
    assert work.searches == MAX_SOURCES
    assert work.examined <= MAX_SOURCES * (2 * (total + 110_000) + 2 * 1_210)


def test_excerpt_is_found_in_any_part_and_never_across_parts() -> None:
    source = KnowledgeSource.create(provider="local", title="t.md", excerpt="alpha beta")
    handle = handle_for(source.id)
    artifact = build_envelope([source])
    assert read_envelope([handle, "xx alpha beta yy"], artifact).sources == (source,)
    assert read_envelope([handle, "alpha", " beta"], artifact).sources == ()
    assert read_envelope([handle + " alpha", " beta"], artifact).sources == ()
    # Near its handle, or far from it: both verify.
    far = handle + "\n" + "z" * 10_000 + "\nalpha beta"
    assert read_envelope(far, artifact).sources == (source,)
