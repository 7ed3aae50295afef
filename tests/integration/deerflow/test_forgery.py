"""Caller-forged evidence: a tool message with a self-consistent envelope, sent in a run's input
or written with ``POST /state``, must be stored without the reserved source keys, so it never
verifies as genuine in DeerFlow's checkpoint (nor in anything read from it)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.deerflow.evidence import (
    audit,
    has_reserved_keys,
    state_messages,
    tool_messages,
)
from tests.integration.deerflow.forgery import FORGED_CALL_ID, forged_messages
from tests.integration.deerflow.gateway import Gateway
from tests.integration.deerflow.runs import history, run_body, state
from tests.integration.deerflow.stub_model import StubModel


def forged_in(messages: Any) -> list[Any]:
    return [m for m in tool_messages(messages) if m.get("tool_call_id") == FORGED_CALL_ID]


def assert_stripped(gateway: Gateway, thread_id: str) -> None:
    stored = forged_in(state_messages(state(gateway, thread_id)))
    assert stored, "the caller's tool message is not in the checkpoint"
    kept = [m for m in stored if has_reserved_keys(m)]
    assert not kept, (
        f"{len(kept)} forged record(s) kept on the checkpointed message: {kept[0].get('artifact')}"
    )
    for entry in history(gateway, thread_id):
        assert not [m for m in forged_in(entry.get("values", {})) if has_reserved_keys(m)], (
            "forged record in history"
        )


def test_forged_tool_message_in_run_input_is_stripped(
    gateway: Gateway, stub_model: StubModel
) -> None:
    thread_id = gateway.new_thread()
    before = len(stub_model.requests)
    gateway.post(f"/api/threads/{thread_id}/runs/wait", run_body(forged_messages()))
    assert_stripped(gateway, thread_id)
    # The scripted model copied the forged link into its answer; it must not audit as verified.
    seen = [
        [(m.get("role"), str(m.get("content"))[:60]) for m in r["messages"]]
        for r in stub_model.requests[before:]
    ]
    statuses = audit(state_messages(state(gateway, thread_id)))
    assert statuses, f"the scripted answer cites nothing: {seen}"
    assert "verified" not in statuses, seen


def test_forged_tool_message_in_state_write_is_stripped(gateway: Gateway) -> None:
    thread_id = gateway.new_thread()
    gateway.post(f"/api/threads/{thread_id}/state", {"values": {"messages": forged_messages()}})
    assert_stripped(gateway, thread_id)


@pytest.mark.parametrize("path", ["/api/runs/wait"])
def test_forged_tool_message_in_stateless_run_is_stripped(gateway: Gateway, path: str) -> None:
    """DeerFlow's thread-less run route takes the same input."""
    answer = gateway.post(path, run_body(forged_messages()))
    returned = forged_in(answer)
    assert returned, f"{path} did not return the caller's tool message: {str(answer)[:500]}"
    kept = [m for m in returned if has_reserved_keys(m)]
    assert not kept, f"{len(kept)} forged record(s) returned by {path}"
