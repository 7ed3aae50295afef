"""SourceAccumulator, forward_cited_sources and the reference task tool (README: Evidence through agents)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, messages_to_dict
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphInterrupt

from deerflow.knowledge import (
    KnowledgeCapabilities,
    KnowledgeSource,
    RetrievalHit,
    RetrievalResult,
    build_envelope,
    find_citations,
    read_envelope,
)
from deerflow.knowledge.formatting import citation_link
from deerflow.knowledge.forwarding import (
    APPENDIX_HEADER,
    SourceAccumulator,
    final_report,
    forward_cited_sources,
    make_task_tool,
)
from deerflow.knowledge.native import NativeSource, build_native_snapshot, native_entry, read_native
from deerflow.knowledge.tools import make_knowledge_tool
from tests.test_langgraph_transport import (
    FakeProvider,
    answer_citing,
    call_tool,
    scripted,
    tool_messages,
)


def _source(n: int) -> KnowledgeSource:
    return KnowledgeSource.create(
        provider="lightrag", title=f"doc{n}.md", excerpt=f"Fact {n} about petrels."
    )


def _native(n: int) -> NativeSource:
    return NativeSource(
        id=f"{n:032x}-1",
        dataset_id="ds",
        document_id=f"d{n}",
        chunk_id=f"c{n}",
        dataset_name="Manuals",
        document_name=f"manual{n}.pdf",
        text=f"Native passage {n}.",
        truncated=False,
        pages=(2,),
    )


_ids = itertools.count()


def _tool(
    sources: list[KnowledgeSource], name: str = "lightrag_search", **fields: Any
) -> ToolMessage:
    content = "\n\n".join(f"{citation_link(s)}\n{s.excerpt}" for s in sources)
    return ToolMessage(
        content=content,
        artifact=build_envelope(sources),
        name=name,
        tool_call_id=f"call_{next(_ids)}",
        id=f"tool_{next(_ids)}",
        **fields,
    )


def _native_tool(natives: list[NativeSource], name: str = "knowledge_search") -> ToolMessage:
    content = "\n\n".join(native_entry(s, i) for i, s in enumerate(natives, 1))
    return ToolMessage(
        content=content,
        artifact={"knowledge_sources": build_native_snapshot(natives)},
        name=name,
        tool_call_id=f"call_{next(_ids)}",
        id=f"tool_{next(_ids)}",
    )


def _ai(text: str = "thinking") -> AIMessage:
    return AIMessage(content=text, id=f"ai_{next(_ids)}")


# --------------------------------------------------------------------------- accumulator


def test_collects_validated_shared_and_allowlisted_native_evidence() -> None:
    shared, native = _source(1), _native(1)
    forged = _tool([_source(2)])
    forged.artifact["knowledge_sources"][0]["excerpt"] = "Invented."  # id no longer recomputes
    messages = [
        HumanMessage("q", id="h"),
        AIMessage("", artifact=build_envelope([_source(3)]), id="ai_art"),  # never evidence
        _tool([shared], name="any_tool"),
        _native_tool([native], name="knowledge_search"),
        _native_tool([_native(2)], name="web_search"),  # native only from the allowlist
        forged,
        _tool([shared], name="task"),  # duplicate
    ]
    accumulator = SourceAccumulator()
    accumulator.feed(messages)
    assert accumulator.sources == (shared, native)
    assert accumulator.examined == len(messages)


def test_reads_dict_frames_like_message_objects() -> None:
    messages = [HumanMessage("q", id="h"), _tool([_source(1)]), _native_tool([_native(1)])]
    dict_frames = [
        [{**d["data"], "type": d["type"]} for d in messages_to_dict(messages)],  # SDK/JSON frames
        messages_to_dict(messages),
        [
            {
                "role": "tool",
                "name": m.name,
                "content": m.content,
                "artifact": m.artifact,
                "id": m.id,
            }
            for m in messages[1:]
        ],
    ]
    for frame in dict_frames:
        accumulator = SourceAccumulator()
        accumulator.feed(frame)
        assert accumulator.sources == (_source(1), _native(1))


def test_keeps_the_first_limit_sources() -> None:
    accumulator = SourceAccumulator(limit=2)
    accumulator.feed([_tool([_source(1), _source(2)]), _tool([_source(3)])])
    assert [s.id for s in accumulator.sources] == [_source(1).id, _source(2).id]
    assert accumulator.full
    with pytest.raises(ValueError):
        SourceAccumulator(limit=101)


def test_none_frames_are_empty_and_compaction_loses_nothing() -> None:
    early = _tool([_source(1)])
    frame = [HumanMessage("q", id="h"), _ai(), early, _ai(), _tool([_source(2)])]
    accumulator = SourceAccumulator()
    accumulator.feed(frame)
    accumulator.feed(None)
    assert accumulator.examined == 5
    # Summarization: RemoveMessage(REMOVE_ALL) + a summary + the kept tail.
    compacted = [
        HumanMessage("Summary of the conversation so far.", id="summary"),
        *frame[3:],
        _ai(),
    ]
    accumulator.feed(compacted)
    assert accumulator.examined == 5 + len(compacted)
    assert {s.id for s in accumulator.sources} == {_source(1).id, _source(2).id}


def test_rescans_only_from_the_first_changed_index() -> None:
    frame = [HumanMessage("q", id="h"), *[_ai() for _ in range(8)]]
    accumulator = SourceAccumulator()
    accumulator.feed(frame)
    late = _tool([_source(9)])
    # RemoveMessage of index 5, plus a new message: messages 0..4 are unchanged.
    accumulator.feed([*frame[:5], *frame[6:], late])
    assert accumulator.examined == 9 + 4
    assert accumulator.sources == (_source(9),)
    # The same list again: nothing to examine.
    accumulator.feed([*frame[:5], *frame[6:], late])
    assert accumulator.examined == 13


@pytest.mark.parametrize("with_ids", [True, False])
def test_scan_is_incremental_over_ten_thousand_frames(with_ids: bool) -> None:
    frames = 10_000
    pool = [_tool([_source(n)]) for n in range(150)]
    history: list[Any] = [HumanMessage("q", id="h" if with_ids else None)]
    accumulator = SourceAccumulator()
    accumulator.feed(history)
    for n in range(frames - 1):
        message = (
            pool[(n // 3) % len(pool)]
            if n % 3 == 0
            else AIMessage("step", id=f"a{n}" if with_ids else None)
        )
        if not with_ids and isinstance(message, ToolMessage):
            message = message.model_copy(update={"id": None})
        history = [*history, message] if n % 500 == 0 else history  # a fresh list now and then
        if history[-1] is not message:
            history.append(message)
        accumulator.feed(history)
    assert len(history) == frames
    assert accumulator.examined == frames  # every message examined exactly once
    assert len(accumulator.sources) == 100


# --------------------------------------------------------------------------- forwarding


def test_forwards_only_cited_sources_with_a_verifiable_appendix() -> None:
    a, b, c = _source(1), _source(2), _source(3)
    invented = "f" * 32
    report = f"B first {citation_link(b)}, then A {citation_link(a)} and [x](#knowledge-source-{invented})."
    content, artifact = forward_cited_sources([a, b, c], report)
    assert artifact == build_envelope([b, a])
    assert content.startswith(f"B first {citation_link(b)}, then A {citation_link(a)} and x.")
    assert APPENDIX_HEADER in content and c.excerpt not in content
    result = read_envelope(content, artifact)
    assert result.sources == (b, a) and result.rejected == ()


def test_nothing_cited_forwards_nothing() -> None:
    assert forward_cited_sources([_source(1)], "No citations here.") == ("No citations here.", None)
    assert forward_cited_sources([], f"Cites {citation_link(_source(1))}") == (
        "Cites doc1.md",
        None,
    )


def test_appendix_is_bounded_and_sources_that_do_not_fit_are_not_forwarded() -> None:
    big = KnowledgeSource.create(provider="lightrag", title="big.md", excerpt="B" * 600)
    small = _source(2)
    report = f"{citation_link(big)} {citation_link(small)}"
    content, artifact = forward_cited_sources([big, small], report, max_appendix_chars=300)
    assert artifact == build_envelope([small])
    assert big.id not in content and "big.md" in content
    assert len(content) - len(report.replace(citation_link(big), "big.md")) <= 300
    assert read_envelope(content, artifact).sources == (small,)
    with pytest.raises(ValueError):
        forward_cited_sources([], "x", max_appendix_chars=-1)


def test_both_formats_cited_use_the_dual_layout() -> None:
    shared, native = _source(1), _native(1)
    report = f"Shared {citation_link(shared)} and native [citation:1](#knowledge-{native.id})."
    content, artifact = forward_cited_sources([native, shared], report)
    assert artifact is not None
    assert artifact["knowledge_sources"] == build_native_snapshot([native])
    assert artifact["retrieval_sources"] == [shared.to_record()]
    assert artifact["knowledge_sources_version"] == 1
    assert read_envelope(content, artifact).sources == (shared,)
    assert read_native(content, artifact, tool_name="task").sources == (native,)
    _, native_only = forward_cited_sources([native], report)
    assert native_only == {"knowledge_sources": build_native_snapshot([native])}


def test_final_report_reads_the_last_ai_message() -> None:
    assert (
        final_report(
            [HumanMessage("q"), AIMessage("first"), AIMessage([{"type": "text", "text": "last"}])]
        )
        == "last"
    )
    assert final_report([{"role": "assistant", "content": "dict"}]) == "dict"
    assert final_report(None) is None and final_report([HumanMessage("q")]) is None


# --------------------------------------------------------------------------- through real agents


def _child(*steps: Any, tools: list[Any] | None = None, middleware: tuple[Any, ...] = ()) -> Any:
    return create_agent(
        scripted(*steps),
        tools=tools if tools is not None else [make_knowledge_tool(FakeProvider())],
        middleware=middleware,
    )


async def test_task_forwards_what_the_child_cited_to_the_parent() -> None:
    provider = FakeProvider()
    child = _child(
        call_tool("knowledge_search", query="ferry"),
        answer_citing(keep=lambda link: "grey_petrel" in link, prefix="Report:"),
        tools=[make_knowledge_tool(provider)],
    )
    parent = create_agent(
        scripted(call_tool("task", prompt="When does the ferry sail?"), answer_citing()),
        tools=[make_task_tool(child)],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "parent"}}
    await parent.ainvoke({"messages": [("user", "Ferry times?")]}, config)
    state = await parent.aget_state(config)
    (task,) = tool_messages(state.values["messages"])
    result = read_envelope(task.content, task.artifact)
    assert [s.title for s in result.sources] == ["grey_petrel_ferry.md"]
    assert result.rejected == ()
    answer = state.values["messages"][-1].content
    assert {c.source_id for c in find_citations(answer)} == {result.sources[0].id}


class _QueryProvider:
    """Different evidence per query, so each search of a run adds new sources."""

    name = "fake"
    capabilities = KnowledgeCapabilities()

    async def search(self, query: str, *, limit: int | None = None) -> RetrievalResult:
        hit = RetrievalHit(text=f"Finding about {query}.", title=f"{query}.md")
        return RetrievalResult(provider=self.name, query=query, hits=(hit,))


async def test_sources_collected_before_compaction_are_still_forwarded() -> None:
    summarizer = GenericFakeChatModel(
        messages=itertools.repeat(AIMessage("Summary: searched a lot."))
    )
    summarization = SummarizationMiddleware(
        summarizer, trigger=("messages", 6), keep=("messages", 2)
    )
    steps = [call_tool("knowledge_search", query=q) for q in ("alpha", "beta", "gamma", "delta")]
    child = _child(
        *steps,
        answer_citing(keep=lambda link: "alpha.md" in link, prefix="Report:"),
        tools=[make_knowledge_tool(_QueryProvider())],
        middleware=(summarization,),
    )
    # Run the child once directly to prove compaction removed the first search from its state.
    frames = [
        frame async for frame in child.astream({"messages": [("user", "go")]}, stream_mode="values")
    ]
    final_tools = tool_messages(frames[-1]["messages"])
    assert final_tools and all("alpha.md" not in str(m.content) for m in final_tools)
    assert any(
        isinstance(m, HumanMessage) and "Summary" in str(m.content) for m in frames[-1]["messages"]
    )

    child = _child(
        *steps,
        answer_citing(keep=lambda link: "alpha.md" in link, prefix="Report:"),
        tools=[make_knowledge_tool(_QueryProvider())],
        middleware=(summarization,),
    )
    content, artifact = await make_task_tool(child).coroutine(prompt="go")  # type: ignore[misc]
    result = read_envelope(content, artifact)
    assert [s.title for s in result.sources] == ["alpha.md"]


async def test_child_citing_both_formats_yields_the_dual_layout() -> None:
    native = _native(5)
    shared = _source(6)

    def native_search(query: str) -> tuple[str, dict[str, Any]]:
        return native_entry(native, 1), {"knowledge_sources": build_native_snapshot([native])}

    def shared_search(query: str) -> tuple[str, dict[str, Any]]:
        return f"{citation_link(shared)}\n{shared.excerpt}", build_envelope([shared])

    tools = [
        StructuredTool.from_function(
            func=f, name=n, description=n, response_format="content_and_artifact"
        )
        for f, n in ((native_search, "knowledge_search"), (shared_search, "lightrag_search"))
    ]
    child = _child(
        call_tool("knowledge_search", query="a"),
        call_tool("lightrag_search", query="b"),
        answer_citing(prefix="Report:"),
        tools=tools,
    )
    task = make_task_tool(child)
    message = await task.ainvoke(
        {"type": "tool_call", "id": "t1", "name": "task", "args": {"prompt": "go"}}
    )
    assert isinstance(message, ToolMessage)
    assert read_envelope(message.content, message.artifact).sources == (shared,)
    assert read_native(message.content, message.artifact, tool_name="task").sources == (native,)
    assert message.artifact["retrieval_sources"] == [shared.to_record()]

    sync_child = _child(
        call_tool("lightrag_search", query="b"), answer_citing(prefix="Report:"), tools=tools
    )
    sync_message = make_task_tool(sync_child).invoke(
        {"type": "tool_call", "id": "t2", "name": "task", "args": {"prompt": "go"}}
    )
    assert read_envelope(sync_message.content, sync_message.artifact).sources == (shared,)


async def test_a_failing_child_is_an_error_without_artifact() -> None:
    def broken(query: str) -> str:
        raise RuntimeError("secret-token-123 leaked")

    tool = StructuredTool.from_function(func=broken, name="boom", description="boom")
    child = create_agent(scripted(call_tool("boom", query="x")), tools=[tool])
    content, artifact = await make_task_tool(child).coroutine(prompt="go")  # type: ignore[misc]
    assert content == "Error: the subagent failed (RuntimeError)." and artifact is None
    silent = create_agent(GenericFakeChatModel(messages=iter([])), tools=[])
    content, artifact = await make_task_tool(silent).coroutine(prompt="go")  # type: ignore[misc]
    assert content.startswith("Error:") and artifact is None


def test_forwarding_never_leaves_a_link_formed_by_relabeling() -> None:
    from deerflow.knowledge import KnowledgeSource, find_citations, forward_cited_sources

    kept = KnowledgeSource.create(provider="x", title="A", excerpt="Kept excerpt.")
    missing = [
        KnowledgeSource.create(provider="x", title=t, excerpt=f"{t} text.") for t in ("K", "D")
    ]
    hk, hd = (f"#knowledge-source-{s.id}" for s in missing)
    content, _ = forward_cited_sources([kept], f"Claim [citation:[y]]({hk})({hd})")
    assert {c.source_id for c in find_citations(content) if c.kind == "shared"} <= {kept.id}


class _FailingChild:
    """A child graph whose stream fails after its first frame (sync and async alike)."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def stream(self, *args: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
        yield {"messages": []}
        raise self.exc

    async def astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        yield {"messages": []}
        raise self.exc


async def test_the_sync_and_async_task_share_one_failure_rule() -> None:
    for exc in (RuntimeError("secret-token-123"), ValueError("x")):
        tool = make_task_tool(_FailingChild(exc))
        expected = (f"Error: the subagent failed ({type(exc).__name__}).", None)
        assert tool.func(prompt="go") == expected  # type: ignore[misc]
        assert await tool.coroutine(prompt="go") == expected  # type: ignore[misc]
    for propagated in (GraphInterrupt(), asyncio.CancelledError()):
        tool = make_task_tool(_FailingChild(propagated))
        with pytest.raises(type(propagated)):
            tool.func(prompt="go")  # type: ignore[misc]
        with pytest.raises(type(propagated)):
            await tool.coroutine(prompt="go")  # type: ignore[misc]
