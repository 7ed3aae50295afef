"""prune_evidence and the budget's cuts (DESIGN §9, tool-output budget)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deerflow.knowledge import (
    KnowledgeSource,
    RetrievalHit,
    RetrievalResult,
    build_envelope,
    find_citations,
    read_envelope,
)
from deerflow.knowledge.budget import (
    omission_marker,
    preview_text,
    prune_evidence,
    truncate_text,
)
from deerflow.knowledge.citations import relabel_citations
from deerflow.knowledge.formatting import citation_link, format_result
from deerflow.knowledge.native import (
    NativeSource,
    build_native_snapshot,
    native_entry,
    read_native,
)
from tests.strategies import content_citing, knowledge_sources

PARTIAL_HANDLE_RE = re.compile(r"#knowledge-source-(?![0-9a-f]{32})")


def _source(n: int, excerpt: str | None = None) -> KnowledgeSource:
    return KnowledgeSource.create(
        provider="lightrag", title=f"doc{n}.md", excerpt=excerpt or f"Fact {n}: petrels nest."
    )


def _native(n: int) -> NativeSource:
    return NativeSource(
        id=f"{n:032x}-{n}",
        dataset_id="ds1",
        document_id=f"doc{n}",
        chunk_id=f"chunk{n}",
        dataset_name="Guides",
        document_name=f"manual{n}.pdf",
        text=f"Native text {n}.",
        truncated=False,
        pages=(n,),
    )


def _entry(source: KnowledgeSource) -> str:
    return f"{citation_link(source)}\n{source.excerpt}"


def _shared_ids(artifact: Any) -> list[str]:
    if not isinstance(artifact, dict):
        return []
    return [
        record["id"]
        for key in ("knowledge_sources", "retrieval_sources")
        if isinstance(artifact.get(key), list)
        for record in artifact[key]
    ]


# --------------------------------------------------------------------------- prune_evidence


def test_nothing_to_prune_returns_the_same_objects() -> None:
    sources = [_source(1), _source(2)]
    content = "\n\n".join(map(_entry, sources))
    artifact = {**build_envelope(sources), "chart": [1, 2]}
    out_content, out_artifact = prune_evidence(content, artifact)
    assert out_content is content and out_artifact is artifact
    assert prune_evidence(content, None) == (content, None)
    assert prune_evidence(content, {"chart": 1}) == (content, {"chart": 1})


def test_cut_excerpt_drops_the_record_and_relabels_its_link() -> None:
    kept, cut = _source(1), _source(2, "A long excerpt that the budget cuts in half.")
    content = _entry(kept) + "\n\n" + _entry(cut)[:-20]
    artifact = {**build_envelope([kept, cut]), "chart": {"x": 1}}
    out_content, out_artifact = prune_evidence(content, artifact)
    assert _shared_ids(out_artifact) == [kept.id]
    assert out_artifact["chart"] == {"x": 1}
    assert cut.id not in out_content and "doc2.md" in out_content
    assert citation_link(kept) in out_content
    assert read_envelope(out_content, out_artifact).rejected == ()
    assert artifact["knowledge_sources"][1]["id"] == cut.id  # the input is not mutated


def test_everything_dropped_removes_envelope_keys() -> None:
    source = _source(1)
    out_content, out_artifact = prune_evidence("nothing left", build_envelope([source]))
    assert (out_content, out_artifact) == ("nothing left", None)
    _, with_extra = prune_evidence("nothing left", {**build_envelope([source]), "chart": 1})
    assert with_extra == {"chart": 1}


def test_an_envelope_a_reader_rejects_whole_is_left_alone() -> None:
    source = _source(1)
    artifact = {"knowledge_sources_version": 2, "knowledge_sources": [source.to_record()]}
    assert prune_evidence("cut", artifact) == ("cut", artifact)


def test_native_snapshot_is_pruned_by_its_own_rules_and_never_overwritten() -> None:
    natives = [_native(1), _native(2)]
    shared = _source(3)
    content = (
        native_entry(natives[0], 1) + "\n\n" + _entry(shared) + "\n\n" + native_entry(natives[1], 2)
    )
    snapshot = build_native_snapshot(natives)
    artifact = {
        "knowledge_sources": snapshot,
        "knowledge_sources_version": 1,
        "retrieval_sources": [shared.to_record()],
        "run": "r1",
    }
    cut = content[: content.index("[citation:2]")]  # the second native link is gone
    out_content, out_artifact = prune_evidence(cut, artifact)
    assert out_artifact["knowledge_sources"]["sources"] == [natives[0].to_record()]
    assert out_artifact["retrieval_sources"][0] is artifact["retrieval_sources"][0]
    assert out_artifact["run"] == "r1"
    assert [s.id for s in read_native(out_content, out_artifact, tool_name="task").sources] == [
        natives[0].id
    ]

    # Shared gone, native kept: the shared keys go, the native object stays an object.
    no_shared = cut[: cut.index(citation_link(shared))] + native_entry(natives[1], 2)
    out_content, out_artifact = prune_evidence(no_shared, artifact)
    assert set(out_artifact) == {"knowledge_sources", "run"}
    assert isinstance(out_artifact["knowledge_sources"], dict)
    assert len(out_artifact["knowledge_sources"]["sources"]) == 2

    # Native gone, shared kept: the shared records stay in retrieval_sources.
    only_shared = _entry(shared)
    out_content, out_artifact = prune_evidence(only_shared, artifact)
    assert set(out_artifact) == {"knowledge_sources_version", "retrieval_sources", "run"}
    assert read_envelope(only_shared, out_artifact).sources == (shared,)


def test_native_links_to_dropped_records_become_labels() -> None:
    native = _native(1)
    broken = {**native.to_record(), "chunk_id": ""}  # a bad field: the reader drops it
    content = f"See {native_entry(native, 1)}"
    out_content, out_artifact = prune_evidence(
        content, {"knowledge_sources": {"version": 1, "sources": [broken]}}
    )
    assert out_artifact is None
    assert "#knowledge-" not in out_content and out_content.startswith("See 1 Guides")


def test_list_content_is_pruned_per_text_part() -> None:
    first, second = _source(1), _source(2)
    content = [
        {"type": "text", "text": _entry(first)},
        {"type": "image_url", "image_url": {"url": "https://example.org/x.png"}},
        citation_link(second),  # its excerpt is nowhere
    ]
    out_content, out_artifact = prune_evidence(content, build_envelope([first, second]))
    assert _shared_ids(out_artifact) == [first.id]
    assert out_content[0] is content[0] and out_content[1] is content[1]
    assert out_content[2] == "doc2.md"


def test_relabeling_repeats_until_nothing_changes() -> None:
    inner = _source(2, "Inner excerpt that will be cut away.")
    # The outer excerpt quotes the inner record's link: relabeling that link hides the excerpt.
    outer = _source(1, f"Outer quotes {citation_link(inner)} verbatim.")
    content = f"{citation_link(outer)}\n{outer.excerpt}\n\n{citation_link(inner)}\nInner excerpt"
    out_content, out_artifact = prune_evidence(content, build_envelope([outer, inner]))
    assert out_artifact is None
    assert find_citations(out_content) == []
    assert prune_evidence(out_content, out_artifact) == (out_content, out_artifact)


def test_duplicates_and_forgeries_are_dropped_but_their_kept_twin_is_not_relabeled() -> None:
    source = _source(1)
    forged = {**source.to_record(), "excerpt": "Not what the provider said."}
    artifact = {
        "knowledge_sources_version": 1,
        "knowledge_sources": [source.to_record(), forged, source.to_record()],
    }
    content = _entry(source)
    out_content, out_artifact = prune_evidence(content, artifact)
    assert out_content == content
    assert out_artifact == build_envelope([source])


def test_relabel_citations_touches_only_matching_ids() -> None:
    a, b = _source(1), _source(2)
    native = _native(3)
    text = f"x {citation_link(a)} y {citation_link(b)} z [n](#knowledge-{native.id}) `{citation_link(b)}`"
    out = relabel_citations(text, {b.id, native.id}.__contains__)
    assert out == f"x {citation_link(a)} y doc2.md z n `{citation_link(b)}`"
    assert relabel_citations(text, lambda _: False) is text


# --------------------------------------------------------------------------- property


def _cut(content: str, how: int, a: int, b: int) -> str:
    a, b = sorted((a % (len(content) + 1), b % (len(content) + 1)))
    return [
        content[:a],
        content[a:],
        content[:a] + content[b:],
        truncate_text(content, max_chars=a),
        preview_text(content, max_chars=a),
    ][how]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(knowledge_sources(), min_size=1, max_size=5),
    st.integers(0, 4),
    st.integers(0, 10_000),
    st.integers(0, 10_000),
    st.booleans(),
)
def test_prune_leaves_only_evidence_that_verifies_and_is_idempotent(
    sources: list[KnowledgeSource], how: int, a: int, b: int, dual: bool
) -> None:
    content = content_citing(sources)
    artifact: dict[str, Any] = {**build_envelope(sources), "extra": {"keep": True}}
    native = _native(7)
    if dual:
        content += "\n\n" + native_entry(native, 1)
        artifact["retrieval_sources"] = artifact.pop("knowledge_sources")
        artifact["knowledge_sources"] = build_native_snapshot([native])
    cut = _cut(content, how, a, b)
    out_content, out_artifact = prune_evidence(cut, artifact)

    assert out_artifact is not None and out_artifact["extra"] == {"keep": True}
    result = read_envelope(out_content, out_artifact)
    assert result.error is None and result.rejected == ()  # no record whose handle/excerpt is gone
    kept = {s.id for s in result.sources}
    assert kept == set(_shared_ids(out_artifact))
    original = {s.id for s in sources}
    for citation in find_citations(out_content):
        if citation.kind == "shared":  # no link left to a record that was dropped
            assert citation.source_id in kept or citation.source_id not in original
    if dual:
        assert "knowledge_sources" not in out_artifact or isinstance(
            out_artifact["knowledge_sources"], dict
        )
        natives = read_native(out_content, out_artifact, tool_name="task")
        assert natives.rejected == () and natives.error is None
    again = prune_evidence(out_content, out_artifact)
    assert again[0] is out_content and again[1] is out_artifact


# --------------------------------------------------------------------------- cuts


def _formatted(hits: int = 12) -> tuple[str, dict[str, Any]]:
    result = RetrievalResult(
        provider="lightrag",
        query="q",
        hits=tuple(
            RetrievalHit(text=f"Excerpt {i}: " + "petrel " * 20, title=f"Guide [{i}]", page=i + 1)
            for i in range(hits)
        ),
    )
    formatted = format_result(result, max_chars=20_000)
    assert formatted.artifact is not None
    return formatted.content, formatted.artifact


@pytest.mark.parametrize(
    "max_chars", [*range(0, 120, 7), 150, 200, 333, 500, 1_000, 2_500, 5_000, 50_000]
)
def test_cuts_never_split_a_link_or_leave_a_partial_handle(max_chars: int) -> None:
    content, artifact = _formatted()
    for cut in (
        truncate_text(content, max_chars=max_chars),
        preview_text(content, max_chars=max_chars),
    ):
        assert len(cut) <= max_chars or len(content) <= max_chars
        assert PARTIAL_HANDLE_RE.search(cut) is None
        out_content, out_artifact = prune_evidence(cut, artifact)
        handles = set(re.findall(r"#knowledge-source-([0-9a-f]{32})", out_content))
        assert handles <= set(_shared_ids(out_artifact))
        if out_artifact is not None:
            assert read_envelope(out_content, out_artifact).rejected == ()


def test_truncate_keeps_head_and_tail_around_a_marker() -> None:
    text = "H" * 500 + "M" * 1_000 + "T" * 500
    cut = truncate_text(text, max_chars=400)
    assert len(cut) <= 400 and cut.startswith("H") and cut.endswith("T")
    assert "characters omitted" in cut
    omitted = int(re.search(r"\[\.\.\. (\d+) characters omitted", cut).group(1))  # type: ignore[union-attr]
    assert len(cut) - len(omission_marker(omitted)) + omitted == len(text)
    assert truncate_text(text, max_chars=len(text)) is text
    assert truncate_text("abc" * 10, max_chars=5) == "abcab"  # no room for a marker: head only
    with pytest.raises(ValueError):
        truncate_text(text, max_chars=-1)
    with pytest.raises(ValueError):
        truncate_text(text, max_chars=10, head_share=1.5)


def test_relabeling_that_forms_a_new_link_to_a_pruned_record_is_relabeled_too() -> None:
    # Found in review: a relabeled label `[see]` meeting `(#…)`, or an outer link freed of its
    # inner one, used to form a complete link to a record pruned in an earlier pass.
    d = KnowledgeSource.create(provider="x", title="D", excerpt="excerpt of D (cut away)")
    k = KnowledgeSource.create(provider="x", title="K", excerpt="excerpt of K (cut away)")
    artifact = build_envelope([d, k])
    hd, hk = f"#knowledge-source-{d.id}", f"#knowledge-source-{k.id}"
    for content in (f"[citation:[see]]({hd})({hk})", f"[citation:A [citation:B]({hk})]({hd})"):
        pruned_content, pruned_artifact = prune_evidence(content, artifact)
        assert pruned_artifact is None
        assert [c for c in find_citations(pruned_content) if c.kind == "shared"] == []
        assert prune_evidence(pruned_content, pruned_artifact) == (pruned_content, pruned_artifact)
