from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from deerflow.knowledge import find_citations, relabel_orphans

H1 = "0123456789abcdef0123456789abcdef"
H2 = "fedcba9876543210fedcba9876543210"

markdown_alphabet = st.sampled_from(
    [*list("[]()!`~\\\n #:-abc"), f"#knowledge-source-{H1}", "citation:", "```\n", "🦌"]
)
markdown = st.lists(markdown_alphabet, max_size=60).map("".join)


@settings(max_examples=500)
@given(markdown)
def test_spans_are_ordered_and_within_bounds(text: str) -> None:
    previous_end = 0
    for citation in find_citations(text):
        assert previous_end <= citation.start < citation.end <= len(text)
        assert text[citation.start] == "[" and text[citation.end - 1] == ")"
        previous_end = citation.end


@settings(max_examples=300)
@given(markdown)
def test_relabel_keeping_everything_is_identity(text: str) -> None:
    ids = [c.source_id for c in find_citations(text) if c.source_id]
    assert relabel_orphans(text, ids) == text


@settings(max_examples=300)
@given(markdown)
def test_relabel_removes_every_orphan(text: str) -> None:
    relabeled = relabel_orphans(text, [])
    assert [c for c in find_citations(relabeled) if c.kind == "shared"] == [] or relabeled != text


def test_hostile_input_is_linear_enough() -> None:
    # Counts, not time: the scanner visits each bracket a bounded number of times, so a long run of
    # openers finishes and yields nothing.
    assert find_citations("[" * 50_000 + "](" * 10_000) == []
    assert find_citations("`" * 10_000 + "a") == []


def test_non_string_input() -> None:
    assert find_citations(None) == []  # type: ignore[arg-type]


def test_streaming_prefixes_never_report_a_partial_link() -> None:
    full = f"Deer eat acorns [citation:Guide](#knowledge-source-{H1}) and [citation:N](#knowledge-source-{H2})."
    final = find_citations(full)
    for cut in range(len(full) + 1):
        for citation in find_citations(full[:cut]):
            assert citation in final
