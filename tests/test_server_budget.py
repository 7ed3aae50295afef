"""A hostile run cannot starve the gateway: it runs under a time budget and fails with a clear error
event, while an unrelated run on another thread, started during it, completes.

The hostile message is the one from issue 12 (``"[" * 50000 + "[x](#a)" * 7142``, 100 KB in a tool
message), which made the budget step quadratic: one run took 52 s and an unrelated run went from
0.05 s to 85 s. The gateway runs with a 3 s budget here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph_sdk import get_client

from deerflow.knowledge.providers.local import LocalProvider, sample_corpus_path
from tests.gateway_process import gateway_process

BUDGET_SECONDS = 3
HOSTILE = "[" * 50000 + "[x](#a)" * 7142
QUESTION = {"type": "human", "content": "What is the trust boundary?"}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("gateway")
    index = work / "index.sqlite"
    LocalProvider(index).index(sample_corpus_path())
    with gateway_process(
        index, str(work / "threads.sqlite"), work, "--run-timeout", str(BUDGET_SECONDS)
    ) as url:
        yield url + "api"


def hostile_turn() -> list[dict[str, Any]]:
    call = {"name": "knowledge_search", "args": {"query": "x"}, "id": "hostile"}
    return [
        {"type": "ai", "content": "", "tool_calls": [call]},
        {"type": "tool", "tool_call_id": "hostile", "name": "knowledge_search", "content": HOSTILE},
        QUESTION,
    ]


async def test_hostile_run_fails_within_budget_and_others_go_on(base: str) -> None:
    client = get_client(url=base, timeout=120)
    hostile_thread = (await client.threads.create())["thread_id"]
    other_thread = (await client.threads.create())["thread_id"]
    finished: list[str] = []

    async def run(thread_id: str, messages: list[Any], label: str) -> list[Any]:
        events = [
            p async for p in client.runs.stream(thread_id, "agent", input={"messages": messages})
        ]
        finished.append(label)
        return events

    hostile = asyncio.create_task(run(hostile_thread, hostile_turn(), "hostile"))
    await asyncio.sleep(0.3)
    other = await run(other_thread, [QUESTION], "other")
    hostile_events = await hostile

    assert [p.event for p in other if p.event == "error"] == []
    assert other[-1].data["messages"][-1]["type"] == "ai"
    errors = [p.data for p in hostile_events if p.event == "error"]
    (run_record,) = await client.runs.list(hostile_thread)
    if errors:  # the budget step is still slow on this input: the budget stopped it
        assert errors[-1]["error"] == "TimeoutError"
        assert f"time budget of {BUDGET_SECONDS} s" in errors[-1]["message"]
        assert run_record["status"] == "timeout"
        assert (await client.threads.get(hostile_thread))["status"] == "error"
        assert finished == ["other", "hostile"]
    else:  # the budget step became linear: the run simply succeeds
        assert run_record["status"] == "success"
    # The gateway still answers on the hostile thread, and the thread is not stuck busy.
    state = await client.threads.get_state(hostile_thread)
    assert state["values"]["messages"][0]["type"] == "ai"
