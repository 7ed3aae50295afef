"""prune_evidence and the budget's cuts (README: Evidence through agents)."""

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
    budget,
    build_envelope,
    find_citations,
    read_envelope,
)
from deerflow.knowledge.budget import (
    MAX_NAME_CHARS,
    budget_output,
    omission_marker,
    output_chars,
    preview_text,
    prune_evidence,
    truncate_text,
)
from deerflow.knowledge.citations import relabel_citations
from deerflow.knowledge.contract import OutputBudget
from deerflow.knowledge.evidence import read_evidence
from deerflow.knowledge.formatting import citation_link, format_result
from deerflow.knowledge.native import (
    NATIVE_OMISSION_NOTICE,
    NativeSource,
    budget_native,
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


def test_prune_evidence_never_touches_a_native_snapshot() -> None:
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
    # The shared record's excerpt is cut away: it goes, the native object stays exactly as it was
    # (budget_native is the native rule; an unreadable snapshot is left alone).
    cut = content[: content.index(shared.excerpt)] + native_entry(natives[1], 2)
    out_content, out_artifact = prune_evidence(cut, artifact)
    assert set(out_artifact) == {"knowledge_sources", "run"}
    assert out_artifact["knowledge_sources"] is snapshot
    assert shared.id not in out_content

    # Native gone from the content: prune_evidence still leaves the object alone.
    only_shared = _entry(shared)
    out_content, out_artifact = prune_evidence(only_shared, artifact)
    assert out_content is only_shared and out_artifact is artifact


@pytest.mark.parametrize(
    "snapshot",
    [
        {"version": 1, "sources": [None, {"id": "invalid", "text": 42}]},
        {"version": 2, "sources": [_native(1).to_record()]},
        {"version": 1, "sources": "not an array"},
    ],
)
def test_unreadable_native_snapshots_and_their_links_are_left_alone(snapshot: Any) -> None:
    # Before: prune_evidence deleted these snapshots and turned their links into labels.
    content = f"See {native_entry(_native(1), 1)}"
    artifact = {"knowledge_sources": snapshot, "run": "r1"}
    assert prune_evidence(content, artifact) == (content, artifact)


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
    if dual:  # the native object is never pruned by the shared rule
        assert out_artifact["knowledge_sources"] is artifact["knowledge_sources"]
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
    formatted = format_result(result, OutputBudget(max_chars=20_000))
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


# --------------------------------------------------------------------------- native budgets

NATIVE_HANDLE_RE = re.compile(r"#(?:user-content-)?knowledge-")
NATIVE_LINK_RE = re.compile(r"\]\(#knowledge-([a-f0-9]{32}-[1-9][0-9]{0,2})\)")


def _big_native(n: int, size: int = 4_800) -> NativeSource:
    return NativeSource(
        id=f"{'c' * 32}-{n}",
        dataset_id="kb",
        document_id="doc",
        chunk_id=f"chunk-{n}",
        dataset_name="Engineering",
        document_name="Manual.pdf",
        text=f"Evidence {n}: " + "x" * size,
        truncated=False,
    )


def _native_message(
    tool: str, sources: list[NativeSource], *, report: str | None = None
) -> tuple[str, dict[str, Any]]:
    """DeerFlow's fixture shape: a knowledge_search result, or a task report linking each source."""
    if tool == "task":
        links = " ".join(f"[Manual.pdf](#knowledge-{s.id})" for s in sources)
        content = report or "Task completed. Findings: " + links + "\n" + "report " * 600
    else:
        content = "\n\n".join(native_entry(s, i) for i, s in enumerate(sources, 1))
    return content, {"knowledge_sources": build_native_snapshot(sources), "other": "preserve me"}


def assert_whole_entries(
    tool: str, content: str, artifact: Any, out_content: str, out_artifact: Any, limit: int
) -> list[str]:
    """DeerFlow's pairing invariant, plus: every handle left belongs to a retained entry."""
    assert len(out_content) <= limit
    assert out_artifact is not None and out_artifact["other"] == "preserve me"
    originals = artifact["knowledge_sources"]["sources"]
    kept = out_artifact.get("knowledge_sources", {}).get("sources", [])
    assert "knowledge_sources" not in out_artifact or kept  # key removed when none is kept
    kept_ids = [r["id"] for r in kept]
    assert all(r in originals for r in kept)  # records are kept as they were, never rewritten
    read = read_native(out_content, out_artifact, tool_name=tool)
    assert read.error is None and read.rejected == ()
    for record in kept:
        assert record["text"] in out_content  # the chip shows only what the model saw
    # No partial handle: every `#knowledge-` is the destination of a retained entry's link.
    handles = [m.start() for m in NATIVE_HANDLE_RE.finditer(out_content)]
    links = [(m.start() + 2, m.group(1)) for m in NATIVE_LINK_RE.finditer(out_content)]
    assert handles == [start for start, _ in links]
    assert [source_id for _, source_id in links] == kept_ids
    # Renumbered 1..k in order, ids unchanged.
    assert re.findall(r"\[citation:(\d+)\]\(#knowledge-", out_content) == [
        str(k) for k in range(1, len(kept) + 1)
    ]
    if len(kept) < len(originals) and limit >= len(NATIVE_OMISSION_NOTICE):
        assert out_content.endswith(NATIVE_OMISSION_NOTICE)
    return kept_ids


@pytest.mark.parametrize("tool", ["knowledge_search", "task"])
@pytest.mark.parametrize("limit", [1, 60, 159, 160, 500, 7_000, 12_000])
def test_native_budget_keeps_whole_entries_only(tool: str, limit: int) -> None:
    # Before: at 500 a knowledge_search kept record 1 with ~300 of its 4,812 characters visible,
    # and a task kept all 8 records with none of their text in the content.
    sources = [_big_native(n) for n in range(1, 9)]
    content, artifact = _native_message(tool, sources)
    synopsis = truncate_text(content, max_chars=limit) if tool == "task" else ""
    out = budget_native(content, artifact, tool_name=tool, max_chars=limit, synopsis=synopsis)
    assert out is not None
    kept = assert_whole_entries(tool, content, artifact, out.content, out.artifact, limit)
    assert out.kept == tuple(kept) and out.omitted == 8 - len(kept)
    assert len(kept) == {1: 0, 60: 0, 159: 0, 160: 0, 500: 0, 7_000: 1, 12_000: 2}[limit]
    if tool == "task" and limit >= 160:  # the synopsis comes first, its old links plain text
        assert out.content.startswith("Task completed.")
    if tool == "task" and limit >= 7_000:
        assert out.content.startswith("Task completed. Findings: Manual.pdf Manual.pdf")


@pytest.mark.parametrize("tool", ["knowledge_search", "task"])
def test_every_budget_from_one_to_the_full_size_keeps_entries_whole(tool: str) -> None:
    sources = [_big_native(1, 40), _big_native(2, 5), _big_native(3, 90)]
    content, artifact = _native_message(tool, sources, report=None)
    if tool == "task":
        content = content[:400]  # a short report: every budget up to its size is swept
    seen: set[tuple[str, ...]] = set()
    for limit in range(1, len(content) + 1):
        synopsis = truncate_text(content, max_chars=limit) if tool == "task" else ""
        out = budget_native(content, artifact, tool_name=tool, max_chars=limit, synopsis=synopsis)
        assert out is not None
        seen.add(out.kept)
        assert_whole_entries(tool, content, artifact, out.content, out.artifact, limit)
    assert len(seen) >= 3  # the sweep really moved through different retained sets


def test_an_oversized_first_entry_is_skipped_and_a_small_one_after_it_kept() -> None:
    big, small = _big_native(1, 4_000), _big_native(2, 20)
    content, artifact = _native_message("knowledge_search", [big, small])
    out = budget_native(content, artifact, tool_name="knowledge_search", max_chars=500)
    assert out is not None and out.kept == (small.id,) and out.omitted == 1
    assert out.content == native_entry(small, 1) + "\n\n" + NATIVE_OMISSION_NOTICE
    assert out.artifact == {
        "knowledge_sources": {"version": 1, "sources": [small.to_record()]},
        "other": "preserve me",
    }


def test_notice_room_is_reserved_only_when_the_full_set_does_not_fit() -> None:
    a, b = _big_native(1, 10), _big_native(2, 10)
    content = "Task completed. " + f"[A](#knowledge-{a.id}) [B](#knowledge-{b.id}) " + "r" * 2_000
    artifact = {"knowledge_sources": build_native_snapshot([a, b])}
    entries = native_entry(a, 1) + "\n\n" + native_entry(b, 2)
    out = budget_native(content, artifact, tool_name="task", max_chars=len(entries))
    assert out is not None and out.content == entries and out.omitted == 0
    out = budget_native(content, artifact, tool_name="task", max_chars=len(entries) - 1)
    assert out is not None and out.kept == (a.id,)
    assert out.content == native_entry(a, 1) + "\n\n" + NATIVE_OMISSION_NOTICE


def test_task_synopsis_is_bounded_plain_text_keeping_head_and_tail() -> None:
    source = _big_native(1, 10)
    report = (
        f"Head [Manual.pdf](#knowledge-{source.id}) [x](#user-content-knowledge-{'d' * 32}-2) "
        + "middle " * 2_000
        + f"tail #knowledge-{'e' * 32}-9 /outputs/task-call.txt"
    )
    artifact = {"knowledge_sources": build_native_snapshot([source])}
    out = budget_native(report, artifact, tool_name="task", max_chars=8_000, synopsis=report)
    assert out is not None
    synopsis = out.content.split("\n\n")[0]
    assert len(synopsis) <= 1_000 and synopsis.startswith("Head Manual.pdf x middle")
    assert synopsis.endswith("tail  /outputs/task-call.txt") and "\n…\n" in synopsis
    assert out.content.count("#knowledge-") == 1
    tiny = budget_native(report, artifact, tool_name="task", max_chars=159, synopsis=report)
    assert tiny is not None and not tiny.content.startswith("Head")


@pytest.mark.parametrize(
    ("tool", "snapshot"),
    [
        ("web_search", None),  # a foreign tool's native snapshot
        ("knowledge_search", {"version": 2}),
        ("knowledge_search", {"version": "1"}),
        ("knowledge_search", {"sources": "not an array"}),
        ("knowledge_search", {"sources": [None, {"id": "invalid", "text": 42}]}),
        ("knowledge_search", {"sources": [_big_native(5).to_record()]}),  # none linked
    ],
)
def test_a_snapshot_the_reader_cannot_budget_is_left_to_the_generic_transform(
    tool: str, snapshot: dict[str, Any] | None
) -> None:
    sources = [_big_native(n) for n in range(1, 4)]
    content, artifact = _native_message("knowledge_search", sources)
    if snapshot is not None:
        artifact["knowledge_sources"] = {**artifact["knowledge_sources"], **snapshot}
    assert budget_native(content, artifact, tool_name=tool, max_chars=500) is None
    assert budget_native(content, None, tool_name=tool, max_chars=500) is None


def test_mixed_snapshot_keeps_only_retained_readable_records_and_other_keys() -> None:
    good, bad = _big_native(1, 10), {**_big_native(2, 10).to_record(), "chunk_id": ""}
    content = native_entry(good, 1) + "\n\n" + native_entry(_big_native(2, 10), 2) + "x" * 500
    snapshot = {"version": 1, "sources": [good.to_record(), bad], "omitted_count": 3}
    out = budget_native(content, {"knowledge_sources": snapshot}, tool_name="task", max_chars=400)
    assert out is not None and out.kept == (good.id,) and out.omitted == 0
    assert out.artifact == {
        "knowledge_sources": {"version": 1, "sources": [good.to_record()], "omitted_count": 3}
    }


def test_a_record_quoting_a_handle_is_skipped_rather_than_shown() -> None:
    quoting = NativeSource(
        **{
            **_big_native(1, 1).to_record(),
            "text": f"See [x](#knowledge-{'f' * 32}-1).",
            "pages": (),
        }
    )
    plain = _big_native(2, 10)
    content = native_entry(quoting, 1) + "\n\n" + native_entry(plain, 2) + "x" * 500
    artifact = {"knowledge_sources": build_native_snapshot([quoting, plain])}
    out = budget_native(content, artifact, tool_name="knowledge_search", max_chars=400)
    assert out is not None and out.kept == (plain.id,) and out.omitted == 1
    assert "f" * 32 not in out.content


def test_native_budget_refuses_a_budget_below_one() -> None:
    with pytest.raises(ValueError):
        budget_native("x", None, tool_name="task", max_chars=0)


_texts = st.lists(
    st.sampled_from([*"ab #[]()-\n:\u2026", "knowledge-", "#knowledge-", "x" * 40]), max_size=20
).map("".join)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(_texts, min_size=1, max_size=6),
    names=st.lists(st.text(alphabet="Ab ./#[]", max_size=12), min_size=2, max_size=2),
    tool=st.sampled_from(["knowledge_search", "task"]),
    report=_texts,
    limit=st.integers(1, 900),
)
def test_property_retained_text_is_wholly_visible_and_no_partial_handle_survives(
    texts: list[str], names: list[str], tool: str, report: str, limit: int
) -> None:
    sources = [
        NativeSource(
            id=f"{'a' * 32}-{n}",
            dataset_id="kb",
            document_id=f"doc-{n}",
            chunk_id=f"c-{n}",
            dataset_name=names[0],
            document_name=names[1],
            text=text,
            truncated=False,
        )
        for n, text in enumerate(texts, 1)
    ]
    content = "\n\n".join(native_entry(s, i) for i, s in enumerate(sources, 1))
    if tool == "task":
        content = report + " " + " ".join(f"[r](#knowledge-{s.id})" for s in sources) + report
    artifact = {"knowledge_sources": build_native_snapshot(sources), "other": "preserve me"}
    out = budget_native(content, artifact, tool_name=tool, max_chars=limit, synopsis=content)
    assert out is not None
    assert len(out.content) <= limit
    kept = (out.artifact or {}).get("knowledge_sources", {}).get("sources", [])
    for record in kept:
        assert record["text"] in out.content
    links = [m.start() + 2 for m in NATIVE_LINK_RE.finditer(out.content)]
    assert [m.start() for m in NATIVE_HANDLE_RE.finditer(out.content)] == links
    assert len(links) == len(kept) == len(out.kept)
    read = read_native(out.content, out.artifact, tool_name=tool)
    assert read.rejected == () and [s.id for s in read.sources] == list(out.kept)


def test_native_budget_on_hostile_megabyte_reports_finishes() -> None:
    # Not a timing and not a step count (the regex engine's work is invisible from Python): each
    # synopsis pattern reads a character a bounded number of times (the argument is beside the
    # patterns in handles.py), so these million-character reports finish; a quadratic scan would
    # not. The finder's own work is counted in test_citations.py.
    source = _big_native(1, 10)
    artifact = {"knowledge_sources": build_native_snapshot([source])}
    link = f"[Manual.pdf](#knowledge-{source.id})"
    for filler in ("[" * 1_000_000, "](#knowledge-" * 80_000, "[a](#knowledge-" * 70_000):
        report = link + filler
        out = budget_native(report, artifact, tool_name="task", max_chars=8_000, synopsis=report)
        assert out is not None and out.kept == (source.id,)
        assert out.content.count("#knowledge-") == 1


def test_relabeling_stops_once_the_orphans_stop_growing(monkeypatch: pytest.MonkeyPatch) -> None:
    # relabel_citations runs to its own fixpoint, so relabeling for the same orphans again would
    # change nothing: one cut record costs one relabeling pass, not two.
    calls: list[str] = []

    def counted(text: str, should_relabel: Any, **kwargs: Any) -> str:
        calls.append(text)
        return relabel_citations(text, should_relabel, **kwargs)

    monkeypatch.setattr(budget, "relabel_citations", counted)
    kept, cut = _source(1), _source(2, "A long excerpt that the budget cuts in half.")
    content = _entry(kept) + "\n\n" + _entry(cut)[:-20]
    out_content, out_artifact = prune_evidence(content, build_envelope([kept, cut]))
    assert _shared_ids(out_artifact) == [kept.id] and cut.id not in out_content
    assert len(calls) == 1


# --------------------------------------------------------------------------- the budget's entry


def test_output_within_its_budget_is_none() -> None:
    content, artifact = _formatted()
    assert budget_output(content, artifact, tool_name="x", max_chars=len(content)) is None
    assert output_chars(content) == len(content)
    assert output_chars(["ab", {"type": "text", "text": "cd"}, {"type": "image"}]) == 6
    with pytest.raises(ValueError, match="at least 1"):
        budget_output(content, artifact, tool_name="x", max_chars=0)


def test_shared_output_is_cut_and_pruned_and_writes_nothing(tmp_path: Any) -> None:
    content, artifact = _formatted()
    out = budget_output(content, artifact, tool_name="knowledge_search", max_chars=1_500)
    assert out is not None and out.write is None
    assert len(out.content) <= 1_500
    assert out.record == {"original_chars": len(content), "max_chars": 1_500, "kind": "truncated"}
    assert read_envelope(out.content, out.artifact).rejected == ()
    planned = budget_output(
        content,
        artifact,
        tool_name="knowledge_search",
        max_chars=1_500,
        call_id="call/1",
        output_dir=tmp_path / "out",
        preview_chars=400,
    )
    assert planned is not None and planned.write is not None
    path, text = planned.write
    assert text == content and path.parent == tmp_path / "out"
    assert path.name.startswith("knowledge_search-call_1-")
    assert planned.record["kind"] == "externalized" and planned.record["path"] == str(path)
    assert str(path) in planned.content and len(planned.content) <= 1_500
    assert not (tmp_path / "out").exists()  # the entry plans the file; the caller writes it


def test_a_file_name_keeps_at_most_max_name_chars_of_each_part(tmp_path: Any) -> None:
    content, artifact = _formatted()
    out = budget_output(
        content,
        artifact,
        tool_name="t" * (MAX_NAME_CHARS + 1),
        call_id="c" * MAX_NAME_CHARS,
        max_chars=1_500,
        output_dir=tmp_path,
    )
    assert out is not None and out.write is not None
    stem = out.write[0].name.rsplit("-", 1)[0]
    assert stem == "t" * MAX_NAME_CHARS + "-" + "c" * MAX_NAME_CHARS


def test_a_native_task_keeps_its_synopsis_and_its_whole_entries() -> None:
    sources = [_big_native(n, 800) for n in range(1, 5)]
    content, artifact = _native_message("task", sources)
    out = budget_output(content, artifact, tool_name="task", max_chars=3_000)
    assert out is not None and out.write is None
    assert out.content.startswith("Task completed. Findings: Manual.pdf")
    assert out.record["kind"] == "truncated" and out.record["sources_omitted"] > 0
    assert out.record["sources_kept"] == len(out.artifact["knowledge_sources"]["sources"]) > 0
    assert_whole_entries("task", content, artifact, out.content, out.artifact, 3_000)


def test_a_megabyte_output_is_scanned_once_and_pruned_on_its_cut_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Counted, not timed: the link-safe cut scans the million characters once; the prune reads
    # and relabels only the cut (at most max_chars), however many links the input repeats.
    seen: dict[str, list[int]] = {"scan": [], "read": [], "relabel": []}

    def counting(name: str, function: Any) -> Any:
        def counted(text: Any, *args: Any, **kwargs: Any) -> Any:
            seen[name].append(output_chars(text))
            return function(text, *args, **kwargs)

        return counted

    monkeypatch.setattr(budget, "find_citations", counting("scan", find_citations))
    monkeypatch.setattr(budget, "read_evidence", counting("read", read_evidence))
    monkeypatch.setattr(budget, "relabel_citations", counting("relabel", relabel_citations))
    kept, cut = _source(1), _source(2, "An excerpt the budget leaves in the middle.")
    link = citation_link(cut) + " "
    filler = link * (1_000_000 // len(link))
    content = _entry(kept) + "\n\n" + filler + _entry(cut) + "\n\n" + filler
    assert len(content) > 2_000_000
    out = budget_output(
        content, build_envelope([kept, cut]), tool_name="knowledge_search", max_chars=2_000
    )
    assert out is not None and len(out.content) <= 2_000
    assert _shared_ids(out.artifact) == [kept.id] and cut.id not in out.content
    assert seen["scan"] == [len(content)]
    assert len(seen["read"]) == 2 and max(seen["read"]) <= 2_000
    assert len(seen["relabel"]) == 1 and seen["relabel"][0] <= 2_000
