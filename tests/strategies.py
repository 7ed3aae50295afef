"""Hypothesis strategies shared by the property tests: valid records and hostile artifacts."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from deerflow.knowledge import KnowledgeSource

json_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
safe_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60
).filter(lambda s: s.strip() != "")
titles = safe_text.map(lambda s: "".join(ch if ch.isprintable() else " " for ch in s)).filter(
    lambda s: s.strip() != ""
)


@st.composite
def knowledge_sources(draw: st.DrawFn) -> KnowledgeSource:
    fields: dict[str, Any] = {
        "provider": draw(st.from_regex(r"[a-z0-9][a-z0-9._-]{0,10}", fullmatch=True)),
        "title": draw(titles),
        "excerpt": draw(safe_text),
    }
    if draw(st.booleans()):
        fields["dataset_name"] = draw(titles)
    if draw(st.booleans()):
        fields["url"] = "https://example.com/" + draw(
            st.from_regex(r"[a-z0-9/]{0,12}", fullmatch=True)
        )
    if draw(st.booleans()):
        fields["page"] = draw(st.integers(1, 1_000_000))
    try:
        return KnowledgeSource.create(**fields)
    except ValueError:
        return KnowledgeSource.create(provider="p", title="t", excerpt="e")


def content_citing(sources: list[KnowledgeSource]) -> str:
    return "\n".join(f"[citation:x](#knowledge-source-{s.id})\n{s.excerpt}" for s in sources)


class ExplodingMapping(dict[str, Any]):
    """A mapping whose ``get`` raises: the exotic host object that reaches a reader's guard."""

    def get(self, key: str, default: Any = None) -> Any:
        raise RuntimeError("boom")
