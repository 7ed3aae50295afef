from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deerflow.knowledge import find_citations, read_envelope
from deerflow.knowledge.contract import OutputBudget, RetrievalHit, RetrievalResult
from deerflow.knowledge.formatting import ELLIPSIS, NO_RESULTS, citation_link, format_result
from deerflow.knowledge.rules import MIN_MAX_CHARS


def _result(*hits: RetrievalHit, provider: str = "lightrag") -> RetrievalResult:
    return RetrievalResult(provider=provider, query="deer", hits=hits)


def test_no_hits_means_no_artifact() -> None:
    formatted = format_result(_result())
    assert formatted.content == NO_RESULTS and formatted.artifact is None and formatted.omitted == 0


def test_cited_hit_has_link_locators_and_excerpt() -> None:
    hit = RetrievalHit(
        text="Deer eat acorns.",
        title="guide.md",
        dataset_name="Wildlife",
        page=4,
        url="https://example.com/g",
    )
    formatted = format_result(_result(hit))
    (source,) = formatted.sources
    assert citation_link(source) in formatted.content
    assert "Dataset: Wildlife · Page: 4 · URL: https://example.com/g" in formatted.content
    assert formatted.artifact is not None
    assert formatted.artifact["knowledge_sources"] == [source.to_record()]
    assert read_envelope(formatted.content, formatted.artifact).sources == (source,)


def test_only_supplied_locators_are_shown() -> None:
    formatted = format_result(_result(RetrievalHit(text="Deer eat acorns.", title="guide.md")))
    assert (
        "Dataset:" not in formatted.content
        and "Page:" not in formatted.content
        and "URL:" not in formatted.content
    )
    assert set(formatted.artifact["knowledge_sources"][0]) == {"id", "provider", "title", "excerpt"}  # type: ignore[index]


def test_invalid_locators_are_dropped_not_repaired() -> None:
    hit = RetrievalHit(
        text="x y z", title="a.md", url="javascript:alert(1)", page=0, dataset_name="\n"
    )
    (source,) = format_result(_result(hit)).sources
    assert source.url is None and source.page is None and source.dataset_name is None


def test_unattributed_hit_is_shown_without_handle_or_record() -> None:
    formatted = format_result(
        _result(RetrievalHit(text="Anonymous deer text."), RetrievalHit(text="t", title="  "))
    )
    assert "Anonymous deer text." in formatted.content
    assert "#knowledge-source-" not in formatted.content
    assert formatted.artifact is None and formatted.sources == ()


def test_excerpt_cut_on_code_points_with_ellipsis_outside() -> None:
    text = "🦌" * 30
    formatted = format_result(
        _result(RetrievalHit(text=text, title="deer.md")), OutputBudget(max_chars_per_hit=10)
    )
    (source,) = formatted.sources
    assert source.excerpt == "🦌" * 10
    assert source.excerpt + ELLIPSIS in formatted.content
    assert ELLIPSIS not in source.excerpt


def test_whole_hit_omission_with_notice() -> None:
    hits = [RetrievalHit(text=f"{i} " + "deer " * 100, title=f"doc{i}.md") for i in range(10)]
    formatted = format_result(_result(*hits), OutputBudget(1500, 500))
    assert len(formatted.content) <= 1500
    assert formatted.omitted == 10 - len(formatted.sources) > 0
    assert f"{formatted.omitted} more results were omitted" in formatted.content
    assert len(read_envelope(formatted.content, formatted.artifact).sources) == len(
        formatted.sources
    )


def test_max_hits_caps_and_counts() -> None:
    hits = [RetrievalHit(text=f"fact {i}", title="a.md") for i in range(5)]
    formatted = format_result(_result(*hits), max_hits=2)
    assert len(formatted.sources) == 2 and formatted.omitted == 3


def test_duplicate_hits_are_shown_once() -> None:
    hit = RetrievalHit(text="same", title="a.md")
    formatted = format_result(_result(hit, hit))
    assert len(formatted.sources) == 1 and formatted.content.count("#knowledge-source-") == 1


@pytest.mark.parametrize(
    "title", ["a [draft] b.md", "back\\slash", "line\nbreak", "tick`s", "]", "[[x]]", "C:\\x\\"]
)
def test_hostile_titles_parse_back_to_the_id(title: str) -> None:
    formatted = format_result(_result(RetrievalHit(text="Deer text.", title=title)))
    (source,) = formatted.sources
    (citation,) = find_citations(formatted.content)
    assert citation.kind == "shared" and citation.source_id == source.id


@pytest.mark.parametrize(
    ("kwargs"), [{"max_chars": MIN_MAX_CHARS - 1}, {"max_chars_per_hit": 0}, {"max_hits": 101}]
)
def test_budget_bounds(kwargs: dict[str, int]) -> None:
    budget = {key: value for key, value in kwargs.items() if key != "max_hits"}
    with pytest.raises(ValueError):
        format_result(
            _result(RetrievalHit(text="x", title="t")),
            OutputBudget(**budget),
            max_hits=kwargs.get("max_hits", 100),
        )


def test_budget_at_the_limit() -> None:
    format_result(
        _result(RetrievalHit(text="x", title="t")),
        OutputBudget(max_chars=MIN_MAX_CHARS),
        max_hits=100,
    )


hit_strategy = st.builds(
    RetrievalHit,
    text=st.text(min_size=1, max_size=300),
    title=st.none() | st.text(max_size=40),
    page=st.none() | st.integers(-2, 2_000_000),
    dataset_name=st.none() | st.text(max_size=20),
)


@settings(max_examples=200)
@given(st.lists(hit_strategy, max_size=12), st.integers(MIN_MAX_CHARS, 5000), st.integers(1, 400))
def test_artifact_always_verifies_against_content(
    hits: list[RetrievalHit], max_chars: int, per_hit: int
) -> None:
    formatted = format_result(_result(*hits), OutputBudget(max_chars, per_hit))
    assert len(formatted.content) <= max_chars or formatted.content == NO_RESULTS
    result = read_envelope(formatted.content, formatted.artifact)
    assert result.sources == formatted.sources and result.rejected == ()
    # Excerpts may hold Markdown (an unclosed fence), so count handles, not parsed links.
    handles = set(re.findall(r"#knowledge-source-([0-9a-f]{32})", formatted.content))
    assert handles == {s.id for s in formatted.sources}


def test_the_ellipsis_has_one_home() -> None:
    from deerflow.knowledge import formatting, text

    assert formatting.ELLIPSIS is text.ELLIPSIS  # re-exported, not written again
