"""The evidence artifact travels through real LangGraph unchanged.

A ``create_agent`` run with a deterministic chat model and ``knowledge_search`` over an in-memory
provider: the tool message's artifact must come out of every stream mode, every checkpointer
(in memory, and SQLite reopened from disk in a new saver) and both serializations byte for byte
(canonical JSON) equal to what the tool itself returned. The fakes defined here are shared by the
other agent-level suites.
"""

from __future__ import annotations

import json
import runpy
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.load import dumpd, load
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ToolMessage,
    messages_from_dict,
    messages_to_dict,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from pydantic import Field

from deerflow.knowledge import (
    KnowledgeCapabilities,
    RetrievalHit,
    RetrievalResult,
    find_citations,
    read_envelope,
)
from deerflow.knowledge.tools import make_knowledge_tool, run_knowledge_search

# ``load`` is marked beta; the warning says nothing about the artifact.
pytestmark = pytest.mark.filterwarnings("ignore:The function `load` is in beta")

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "evidence_through_agents.py"
QUERY = "When does the Grey Petrel ferry sail?"
HITS = (
    RetrievalHit(
        text="The Grey Petrel ferry sails at 07:40 from Harrow Quay.",
        title="grey_petrel_ferry.md",
        dataset_name="Island guides",
        page=3,
    ),
    RetrievalHit(
        text="Winter timetable: one crossing a day; 雪の日は欠航。🌊",
        title="Timetable [winter]",
        url="https://example.org/timetable#winter",
    ),
    RetrievalHit(text="An unattributed note about gulls.", title=None),
)


# --------------------------------------------------------------------------- shared fakes


class FakeProvider:
    """An in-memory provider returning fixed hits for any query."""

    name = "fake"
    capabilities = KnowledgeCapabilities()

    def __init__(self, hits: Sequence[RetrievalHit] = HITS, name: str = "fake") -> None:
        self.hits = tuple(hits)
        self.name = name

    async def search(self, query: str, *, limit: int | None = None) -> RetrievalResult:
        return RetrievalResult(provider=self.name, query=query, hits=self.hits)


Step = Callable[["ScriptedChatModel", list[BaseMessage]], AIMessage]


class ScriptedChatModel(BaseChatModel):
    """A deterministic chat model: one scripted step per call (the last step repeats).

    It remembers every citation link it was shown, so an answer can cite evidence that
    compaction has since removed from its context — as a real model would from its summary.
    """

    steps: list[Any]
    calls: int = 0
    seen_links: list[str] = Field(default_factory=list)
    requests: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.requests.append(list(messages))
        for message in messages:
            if isinstance(message, ToolMessage) and isinstance(message.content, str):
                for citation in find_citations(message.content):
                    link = message.content[citation.start : citation.end]
                    if citation.kind in ("shared", "native") and link not in self.seen_links:
                        self.seen_links.append(link)
        step = self.steps[min(self.calls, len(self.steps) - 1)]
        self.calls += 1
        return ChatResult(generations=[ChatGeneration(message=step(self, messages))])


def scripted(*steps: Step) -> ScriptedChatModel:
    return ScriptedChatModel(steps=list(steps))


def call_tool(name: str, **args: Any) -> Step:
    def step(model: ScriptedChatModel, messages: list[BaseMessage]) -> AIMessage:
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])

    return step


def answer_citing(keep: Callable[[str], bool] = lambda link: True, prefix: str = "Answer:") -> Step:
    """Answer by copying every citation link seen so far (those ``keep`` accepts)."""

    def step(model: ScriptedChatModel, messages: list[BaseMessage]) -> AIMessage:
        links = [link for link in model.seen_links if keep(link)]
        return AIMessage(content=" ".join([prefix, *links]))

    return step


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def tool_messages(messages: Sequence[Any]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


def build_agent(checkpointer: Any = None, **kwargs: Any) -> Any:
    model = scripted(call_tool("knowledge_search", query=QUERY), answer_citing())
    return create_agent(
        model,
        tools=[make_knowledge_tool(FakeProvider())],
        checkpointer=checkpointer,
        **kwargs,
    )


# --------------------------------------------------------------------------- transport


@pytest.fixture
async def expected() -> tuple[str, str]:
    content, artifact = await run_knowledge_search(FakeProvider(), QUERY)
    assert artifact is not None and len(read_envelope(content, artifact).sources) == 2
    return content, canonical(artifact)


def _assert_carries(message: ToolMessage, expected: tuple[str, str]) -> None:
    assert message.content == expected[0]
    assert canonical(message.artifact) == expected[1]


async def test_artifact_survives_every_stream_mode(expected: tuple[str, str]) -> None:
    agent = build_agent(InMemorySaver())
    config = {"configurable": {"thread_id": "modes"}}
    found: dict[str, list[ToolMessage]] = {"values": [], "messages": [], "updates": []}
    async for mode, chunk in agent.astream(
        {"messages": [("user", QUERY)]}, config, stream_mode=["values", "messages", "updates"]
    ):
        if mode == "values":
            found["values"].extend(tool_messages(chunk["messages"]))
        elif mode == "messages":
            found["messages"].extend(tool_messages([chunk[0]]))
        else:
            for update in chunk.values():
                if isinstance(update, dict):
                    found["updates"].extend(tool_messages(update.get("messages", [])))
    for mode, messages in found.items():
        assert messages, f"no tool message in stream mode {mode}"
        for message in messages:
            _assert_carries(message, expected)

    state = await agent.aget_state(config)
    (stored,) = tool_messages(state.values["messages"])
    _assert_carries(stored, expected)
    final = state.values["messages"][-1]
    assert isinstance(final, AIMessage) and "#knowledge-source-" in str(final.content)


async def test_artifact_survives_sqlite_reopened_in_a_new_saver(
    expected: tuple[str, str], tmp_path: Path
) -> None:
    path = str(tmp_path / "checkpoints.sqlite")
    config = {"configurable": {"thread_id": "sqlite"}}
    async with AsyncSqliteSaver.from_conn_string(path) as saver:
        await build_agent(saver).ainvoke({"messages": [("user", QUERY)]}, config)

    with SqliteSaver.from_conn_string(path) as reopened:  # a new saver on the file on disk
        checkpoint = reopened.get_tuple(config)
        assert checkpoint is not None
        (stored,) = tool_messages(checkpoint.checkpoint["channel_values"]["messages"])
        _assert_carries(stored, expected)
        history = [
            tool_messages(c.checkpoint["channel_values"].get("messages", []))
            for c in reopened.list(config)
        ]
        assert any(history)
        for messages in history:
            for message in messages:
                _assert_carries(message, expected)

    async with AsyncSqliteSaver.from_conn_string(path) as again:
        state = await build_agent(again).aget_state(config)
        (stored,) = tool_messages(state.values["messages"])
        _assert_carries(stored, expected)


async def test_artifact_survives_message_and_run_event_serialization(
    expected: tuple[str, str],
) -> None:
    agent = build_agent()
    events: list[Any] = []
    async for chunk in agent.astream({"messages": [("user", QUERY)]}, stream_mode="updates"):
        events.append(chunk)
    result = await build_agent().ainvoke({"messages": [("user", QUERY)]})
    messages = result["messages"]

    wire = json.loads(json.dumps(messages_to_dict(messages)))
    (restored,) = tool_messages(messages_from_dict(wire))
    _assert_carries(restored, expected)

    for message in tool_messages(messages):
        revived = load(json.loads(json.dumps(dumpd(message))), allowed_objects="messages")
        assert isinstance(revived, ToolMessage)
        _assert_carries(revived, expected)

    revived_events = [
        load(json.loads(json.dumps(dumpd(e))), allowed_objects="messages") for e in events
    ]
    carried = [
        m
        for event in revived_events
        for update in event.values()
        if isinstance(update, dict)
        for m in tool_messages(update.get("messages", []))
    ]
    assert carried
    for message in carried:
        _assert_carries(message, expected)


def test_example_runs() -> None:
    """The README's "Evidence through agents" snippets (examples/) run as documented."""
    namespace = runpy.run_path(str(EXAMPLE), run_name="__example__")
    assert namespace["main"]() is None
