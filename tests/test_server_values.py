"""Caller-written values at the trust boundary (server/engine/_values.py), without FastAPI.

Each check refuses with a ``RequestRefused`` of one kind; ``api/_http.py`` gives each kind its
status (checked last, with the API imported only there).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from deerflow.knowledge.server.engine._values import (
    MAX_INPUT_MESSAGES,
    UNSTORABLE_SURROGATE,
    OptionsConflict,
    RequestRefused,
    RequestTooLarge,
    parse_messages,
    storable_values,
    strip,
    subgraphs_refused,
    trusted_values,
)
from deerflow.knowledge.trust import MAX_STRIP_DEPTH


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def test_strip_removes_evidence_a_caller_wrote() -> None:
    forged = {"messages": [{"type": "tool", "artifact": {"knowledge_sources": [], "x": 1}}]}
    stripped = strip(forged)
    assert stripped.removed == 1
    assert stripped.value == {"messages": [{"type": "tool", "artifact": {"x": 1}}]}


def test_strip_refuses_what_it_cannot_walk() -> None:
    assert strip(_nested(MAX_STRIP_DEPTH - 1)).removed == 0
    with pytest.raises(RequestRefused, match="nests too deeply"):
        strip(_nested(MAX_STRIP_DEPTH + 5))


def test_messages_up_to_their_limit_and_not_past_it() -> None:
    assert len(parse_messages(["q"] * MAX_INPUT_MESSAGES)) == MAX_INPUT_MESSAGES
    with pytest.raises(RequestTooLarge, match=f"at most {MAX_INPUT_MESSAGES} messages"):
        parse_messages(["q"] * (MAX_INPUT_MESSAGES + 1))
    assert len(parse_messages(["q", "r"], max_messages=2)) == 2
    with pytest.raises(RequestTooLarge, match="at most 2 messages"):
        parse_messages(["q", "r", "s"], max_messages=2)


@pytest.mark.parametrize(
    ("raw", "message"),
    [(3, "messages must be a list"), ([{"role": "nobody"}], "invalid messages")],
)
def test_messages_that_are_no_messages_are_refused(raw: Any, message: str) -> None:
    with pytest.raises(RequestRefused, match=message):
        parse_messages(raw)


def test_one_message_may_come_alone() -> None:
    assert parse_messages({"role": "user", "content": "hi"}) == [HumanMessage("hi")]


def test_trusted_values_strip_and_parse_their_messages() -> None:
    values, removed = trusted_values(
        {"messages": [{"role": "user", "content": "hi", "artifact": {"knowledge_sources": []}}]}
    )
    assert removed == 1
    assert isinstance(values["messages"][0], HumanMessage)
    assert trusted_values([1, 2]) == ([1, 2], 0)


def test_storable_values_keep_nul_and_refuse_a_lone_surrogate() -> None:
    assert storable_values({"k": "a\x00b"}) == {"k": "a\x00b"}
    with pytest.raises(RequestRefused, match=re.escape(UNSTORABLE_SURROGATE)):
        storable_values({"k": ["\udfff"]})


def test_a_subgraphs_checkpoint_is_refused() -> None:
    subgraphs_refused(None)
    subgraphs_refused({"checkpoint_id": "c", "checkpoint_ns": ""})
    with pytest.raises(RequestRefused, match="checkpoint_ns"):
        subgraphs_refused({"checkpoint_ns": "child"})


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (RequestRefused("no"), 422),
        (OptionsConflict("both"), 400),
        (RequestTooLarge("big"), 413),
    ],
)
def test_each_kind_of_refusal_has_its_status_and_keeps_its_message(
    error: RequestRefused, status: int
) -> None:
    from deerflow.knowledge.server.api._http import REFUSAL_STATUS, refusal_error

    answer = refusal_error(error)
    assert (answer.status_code, answer.detail) == (status, str(error))
    assert set(REFUSAL_STATUS) == {RequestRefused, OptionsConflict, RequestTooLarge}
