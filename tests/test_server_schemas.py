"""Request bodies (server/_schemas.py): metadata and ids that no backend can store are refused."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from deerflow.knowledge.server.api._schemas import (
    HistoryRequest,
    RunCreate,
    ThreadCreate,
    ThreadPatch,
    ThreadSearch,
)
from deerflow.knowledge.server.engine._values import UNSTORABLE_NUL, nul_free_nodes


@pytest.mark.parametrize(
    ("model", "body"),
    [
        (ThreadCreate, {"metadata": {"k": "a\x00"}}),
        (ThreadPatch, {"metadata": {"\x00": 1}}),
        (ThreadSearch, {"metadata": {"k": [{"deep": "\x00"}]}}),
        (ThreadSearch, {"ids": ["\x00"]}),
        (HistoryRequest, {"metadata": {"k": "\x00"}}),
        (RunCreate, {"metadata": {"k": "\x00"}}),
    ],
)
def test_a_nul_in_metadata_or_ids_is_refused(model: Any, body: dict[str, Any]) -> None:
    # On PostgreSQL these were a 500 (jsonb and text refuse U+0000).
    with pytest.raises(ValidationError, match=re.escape(UNSTORABLE_NUL)):
        model.model_validate(body)


def test_other_characters_pass() -> None:
    body = {"metadata": {"k": "a\x01b\u2028", "n": [1, None, {"x": "\U0001f600"}]}}
    assert ThreadSearch.model_validate(body).metadata == body["metadata"]


def test_the_walk_visits_each_value_once_on_a_million_values() -> None:
    wide: dict[str, Any] = {f"k{i}": i for i in range(500_000)}  # 1 + 500,000 keys + values
    assert nul_free_nodes(wide) == 1_000_001
    deep: Any = "leaf"
    for _ in range(1_000_000):  # nesting far past any recursion limit
        deep = [deep]
    assert nul_free_nodes(deep) == 1_000_001


@given(
    st.recursive(
        st.text() | st.integers() | st.none(),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    )
)
def test_refused_exactly_when_some_string_holds_a_nul(value: Any) -> None:
    def strings(item: Any) -> list[str]:
        if isinstance(item, str):
            return [item]
        if isinstance(item, dict):
            return [s for k, v in item.items() for s in [k, *strings(v)]]
        if isinstance(item, list):
            return [s for v in item for s in strings(v)]
        return []

    if any("\x00" in s for s in strings(value)):
        with pytest.raises(ValueError, match=re.escape(UNSTORABLE_NUL)):
            nul_free_nodes(value)
    else:
        assert nul_free_nodes(value) >= 1
