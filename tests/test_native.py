"""Unit tests of deerflow.knowledge.native (DeerFlow's native RAGFlow snapshots).

Every snapshot here is SYNTHETIC: shaped like the ``knowledge_sources`` object DeerFlow's RAGFlow
tool writes, with made-up ids, locators and texts. The shared cases live in
contracts/vectors/native_ragflow.json (tests/test_vectors.py runs them).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deerflow.knowledge.native import (
    MAX_NATIVE_LOCATOR_CHARS,
    MAX_NATIVE_SOURCES,
    NATIVE_TOOL_NAMES,
    NativeRejection,
    NativeSource,
    budget_native,
    build_native_snapshot,
    has_native_locators,
    native_entry,
    native_handle,
    native_link,
    native_snapshot_of,
    read_native,
)
from tests.strategies import ExplodingMapping

CALL = "0123456789abcdef0123456789abcdef"


def source(n: int = 1, **fields: Any) -> NativeSource:
    values: dict[str, Any] = {
        "id": f"{CALL}-{n}",
        "dataset_id": "5b1e7c2a6f3d11f0b1a40242ac120006",
        "document_id": "a6c3d2e06f3e11f0b1a40242ac120006",
        "chunk_id": f"9f2c41d07be3a5e{n % 10}",
        "dataset_name": "HR Policies",
        "document_name": "Employee_Handbook_2026.pdf",
        "text": f"Employees accrue leave (excerpt {n}).",
        "truncated": False,
        "pages": (14,),
    }
    values.update(fields)
    return NativeSource(**values)


def content_for(*sources: NativeSource) -> str:
    return "\n\n".join(native_entry(s, i) for i, s in enumerate(sources, 1))


def test_tool_allowlist() -> None:
    assert frozenset({"knowledge_search", "task"}) == NATIVE_TOOL_NAMES


def test_handles_and_entries() -> None:
    s = source(3, dataset_name="HR\nPolicies")
    assert native_handle(s.id) == f"#knowledge-{CALL}-3" == s.handle
    assert native_link(s.id, 3) == f"[citation:3](#knowledge-{CALL}-3)"
    assert native_entry(s, 3) == (
        f"[citation:3](#knowledge-{CALL}-3) HR Policies / Employee_Handbook_2026.pdf\n"
        "Employees accrue leave (excerpt 3)."
    )
    assert native_entry(s, 3, ellipsis="…").endswith("(excerpt 3).…")


@pytest.mark.parametrize(
    "fields",
    [
        {"id": f"{CALL}-0"},
        {"id": CALL},
        {"dataset_id": ""},
        {"chunk_id": "c" * 257},
        {"document_name": "n" * 513},
        {"text": "t" * 200_001},
        {"pages": (0,)},
        {"pages": tuple(range(1, 102))},
        {"provider": "lightrag"},
        {"text": "lone \ud800"},
    ],
)
def test_native_source_refuses_what_a_reader_would_reject(fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        source(**fields)


def test_build_snapshot_dedupes_and_limits() -> None:
    a, b = source(1), source(2)
    snapshot = build_native_snapshot([a, b, source(1, text="other")])
    assert snapshot == {"version": 1, "sources": [a.to_record(), b.to_record()]}
    assert snapshot["sources"][0]["pages"] == [14]
    assert build_native_snapshot([a, b], limit=1)["sources"] == [a.to_record()]
    with pytest.raises(ValueError):
        build_native_snapshot([a], limit=MAX_NATIVE_SOURCES + 1)


def test_snapshot_round_trips_through_json_and_the_reader() -> None:
    sources = [source(n) for n in range(1, 4)]
    content = content_for(*sources)
    artifact = json.loads(json.dumps({"knowledge_sources": build_native_snapshot(sources)}))
    result = read_native(content, artifact, tool_name="knowledge_search")
    assert result.sources == tuple(sources)
    assert result.rejected == () and result.error is None


def test_reader_reports_rejections_in_order() -> None:
    a, b = source(1), source(2)
    snapshot = build_native_snapshot([a, b])
    snapshot["sources"].insert(1, {"id": "nope"})
    result = read_native(content_for(a), {"knowledge_sources": snapshot}, tool_name="task")
    assert result.sources == (a,)
    assert result.rejected == (
        NativeRejection(1, "bad_field"),
        NativeRejection(2, "handle_missing"),
    )


def test_shared_layouts_are_not_native() -> None:
    assert native_snapshot_of({"knowledge_sources": []}) is None
    assert native_snapshot_of(None) is None
    snapshot = build_native_snapshot([source()])
    assert native_snapshot_of({"knowledge_sources": snapshot}) is snapshot


def test_unhashable_tool_name_is_not_allowed() -> None:
    artifact = {"knowledge_sources": build_native_snapshot([source()])}
    assert read_native(content_for(source()), artifact, tool_name=["task"]).error == (
        "tool_not_allowed"
    )


# --------------------------------------------------------------------------- hostile input

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    content=_json,
    records=st.lists(_json, max_size=4),
    version=_json,
    tool_name=_json,
)
def test_reader_and_native_budget_never_raise(
    content: Any, records: list[Any], version: Any, tool_name: Any
) -> None:
    artifact = {"knowledge_sources": {"version": version, "sources": records}}
    result = read_native(content, artifact, tool_name=tool_name)
    assert result.error is not None or len(result.rejected) + len(result.sources) == len(records)
    budget_native(content, artifact, tool_name="task", max_chars=50)
    read_native(content, records, tool_name="task")


def test_an_internal_fault_has_its_own_code() -> None:
    result = read_native("x", ExplodingMapping(knowledge_sources={}), tool_name="task")
    assert result.sources == () and result.error == "internal_error"


@pytest.mark.parametrize(
    ("locator", "complete"),
    [
        ("x" * MAX_NATIVE_LOCATOR_CHARS, True),
        ("x" * (MAX_NATIVE_LOCATOR_CHARS + 1), False),
        ("", False),
        ("a\ud800", False),
        (None, False),
    ],
)
def test_a_chunk_has_native_locators_by_the_record_rule(locator: Any, complete: bool) -> None:
    fields = {"dataset_id": "kb", "document_id": "doc", "chunk_id": "c1"}
    for name in fields:
        values = {**fields, name: locator}
        assert has_native_locators(dataset_name="Engineering", **values) is complete
        if complete:  # the writer's rule is the record's rule: such a record is valid
            assert source(1, **values).dataset_id == values["dataset_id"]
    assert not has_native_locators(dataset_name=None, **fields)
