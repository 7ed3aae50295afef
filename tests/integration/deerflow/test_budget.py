"""DeerFlow's own tool-output budget (``tool_output`` in config.yaml) cutting knowledge_search:
every record left on the checkpointed message verifies, and no citation link the model was
shown lacks evidence on that message. One gateway serves every budget: DeerFlow re-reads
config.yaml when it changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deerflow.knowledge import read_envelope
from tests.integration.deerflow.deerflow_config import DeerFlowConfig
from tests.integration.deerflow.evidence import (
    audit,
    citation_ids,
    state_messages,
    tool_messages,
    verdict,
)
from tests.integration.deerflow.gateway import Gateway
from tests.integration.deerflow.runs import run_body, state, user
from tests.integration.deerflow.stub_model import StubModel, _text

BUDGETS = [200, 1000, 3000, 30000]
QUERY = "tide bell pilots channel lighthouse harbour ledger"


def setting(kind: str, chars: int) -> dict[str, Any]:
    if kind == "tool_overrides":
        return {"tool_overrides": {"knowledge_search": chars}}
    return {"fallback_max_chars": chars}


def seen_by_model(model: StubModel, tool_call_id: str) -> str:
    """The text of the tool message with ``tool_call_id`` as the model last received it."""
    for body in reversed(model.requests):
        for message in body.get("messages") or []:
            if message.get("role") == "tool" and message.get("tool_call_id") == tool_call_id:
                return _text(message.get("content"))
    raise AssertionError(f"the model never received tool result {tool_call_id}")


@pytest.mark.parametrize("chars", BUDGETS)
@pytest.mark.parametrize("kind", ["tool_overrides", "fallback_max_chars"])
def test_budget_keeps_evidence_honest(
    gateway: Gateway, reset_config: DeerFlowConfig, stub_model: StubModel, kind: str, chars: int
) -> None:
    reset_config.tool_output = setting(kind, chars)
    reset_config.write()
    thread_id = gateway.new_thread()
    gateway.stream(f"/api/threads/{thread_id}/runs/stream", run_body([user(QUERY)], "values"))
    messages = state_messages(state(gateway, thread_id))
    (tool,) = tool_messages(messages)
    found = verdict(tool)
    verified = {
        source.id for source in read_envelope(tool.get("content"), tool.get("artifact")).sources
    }
    shown = citation_ids(seen_by_model(stub_model, tool["tool_call_id"]))
    unbacked = [i for i in shown if i not in verified]
    statuses = audit(messages)
    (run,) = gateway.get(f"/api/threads/{thread_id}/runs")
    events = gateway.get(f"/api/threads/{thread_id}/runs/{run['run_id']}/events")
    event_rejected = sum(verdict(m).rejected for m in tool_messages(events))
    summary = (
        f"{kind}={chars}: content {len(_text(tool.get('content')))} chars; {found.sources} of "
        f"{found.records} records verify; model shown {len(shown)} links, {len(unbacked)} without "
        f"evidence; answer {statuses}; run events: {event_rejected} records rejected"
    )
    print(summary)
    assert found.error is None, summary
    assert found.rejected == 0, summary
    assert not unbacked, summary
    assert set(statuses) <= {"verified"}, summary
    assert event_rejected == 0, summary


LISTED_FILES = 120


@pytest.mark.parametrize("kind", ["tool_overrides", "fallback_max_chars"])
def test_deerflow_tools_keep_deerflow_budget(
    gateway: Gateway, reset_config: DeerFlowConfig, kind: str
) -> None:
    """DeerFlow's own ``ls`` under the same settings: a knowledge_search override leaves it
    whole, a global fallback cuts it as DeerFlow does."""
    chars = 1000
    reset_config.tool_output = setting(kind, chars)
    reset_config.write()
    thread_id = gateway.new_thread()
    gateway.post(f"/api/threads/{thread_id}/runs/wait", run_body([user(QUERY)]))
    workspace = Path(state(gateway, thread_id)["values"]["thread_data"]["workspace_path"])
    workspace.mkdir(parents=True, exist_ok=True)  # DeerFlow creates it lazily
    for n in range(LISTED_FILES):
        (workspace / f"tide-ledger-page-{n:04d}-of-the-velmont-harbour.txt").write_text("x")
    ask = user("please run ls /mnt/user-data/workspace")
    gateway.post(f"/api/threads/{thread_id}/runs/wait", run_body([ask]))
    listings = [
        m
        for m in state_messages(state(gateway, thread_id))
        if m.get("type") == "tool" and m.get("name") == "ls"
    ]
    assert len(listings) == 1, listings
    content = _text(listings[0].get("content"))
    names = content.count("tide-ledger-page-")
    if kind == "tool_overrides":
        assert names == LISTED_FILES, f"ls lost entries under a knowledge_search override ({names})"
    else:
        assert names < LISTED_FILES and len(content) <= chars + 500, (
            f"DeerFlow's fallback did not cut ls: {len(content)} chars, {names} entries"
        )
