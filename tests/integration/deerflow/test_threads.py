"""One knowledge_search thread through DeerFlow's real gateway: the tool message's evidence
verifies in every stream mode DeerFlow supports, in ``state``, ``history``, the thread's and the
run's messages and DeerFlow's run events, and the answer's citation audits as verified."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.deerflow.evidence import (
    assert_verifies,
    audit,
    state_messages,
    tool_messages,
)
from tests.integration.deerflow.gateway import Gateway
from tests.integration.deerflow.runs import Run, history, state, stream_run, user

QUERY = "When does the high water arrive after the lighthouse bell?"
# DeerFlow's RunStreamMode minus "custom" (only what a tool writes itself; ours writes nothing).
STREAM_MODES = ["values", "messages-tuple", "updates", "debug", "tasks", "checkpoints"]
# The SSE event name of each mode (LangGraph's name for messages-tuple is "messages").
EVENT_NAME = {mode: "messages" if mode == "messages-tuple" else mode for mode in STREAM_MODES}


@pytest.fixture(scope="module")
def runs(gateway: Gateway) -> dict[str, Run]:
    """One thread per stream mode (the scripted model makes each cheap)."""
    return {mode: stream_run(gateway, [user(QUERY)], mode) for mode in STREAM_MODES}


@pytest.fixture(scope="module")
def values_run(runs: dict[str, Run]) -> Run:
    return runs["values"]


@pytest.mark.parametrize("mode", STREAM_MODES)
def test_stream_mode_carries_verified_evidence(runs: dict[str, Run], mode: str) -> None:
    run = runs[mode]
    payloads = [event.data for event in run.events if event.event.split("|")[0] == EVENT_NAME[mode]]
    assert payloads, f"no {EVENT_NAME[mode]!r} events in {sorted({e.event for e in run.events})}"
    found = tool_messages(payloads)
    assert found, f"no knowledge_search tool message in the {mode!r} stream"
    for message in found:
        assert_verifies(message, f"{mode} stream")


@pytest.mark.parametrize("mode", STREAM_MODES)
def test_answer_citation_verifies_in_checkpoint(
    gateway: Gateway, runs: dict[str, Run], mode: str
) -> None:
    messages = state_messages(state(gateway, runs[mode].thread_id))
    statuses = audit(messages)
    assert statuses == ["verified"], statuses


def test_state(gateway: Gateway, values_run: Run) -> None:
    found = tool_messages(state_messages(state(gateway, values_run.thread_id)))
    assert len(found) == 1
    assert_verifies(found[0], "state")


def test_history(gateway: Gateway, values_run: Run) -> None:
    entries = history(gateway, values_run.thread_id)
    with_tool = [entry for entry in entries if tool_messages(entry.get("values", {}))]
    assert with_tool, "no history entry holds the tool message"
    for entry in with_tool:
        for message in tool_messages(entry["values"]):
            assert_verifies(message, f"history checkpoint {entry.get('checkpoint_id')}")


def _run_message_rows(gateway: Gateway, run: Run) -> Any:
    return gateway.get(f"/api/threads/{run.thread_id}/runs/{run.run_id}/messages")


def test_thread_messages(gateway: Gateway, values_run: Run) -> None:
    found = tool_messages(gateway.get(f"/api/threads/{values_run.thread_id}/messages"))
    assert found, "GET /messages returned no knowledge_search tool message"
    for message in found:
        assert_verifies(message, "thread messages")


def test_run_messages(gateway: Gateway, values_run: Run) -> None:
    found = tool_messages(_run_message_rows(gateway, values_run))
    assert found, "GET /runs/{id}/messages returned no knowledge_search tool message"
    for message in found:
        assert_verifies(message, "run messages")


def test_run_events(gateway: Gateway, values_run: Run) -> None:
    events = gateway.get(f"/api/threads/{values_run.thread_id}/runs/{values_run.run_id}/events")
    found = tool_messages(events)
    assert found, "DeerFlow's run events hold no knowledge_search tool message"
    for message in found:
        assert_verifies(message, "run events")
