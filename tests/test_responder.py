from __future__ import annotations

import asyncio

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from deerflow.knowledge import KnowledgeSource, build_envelope, find_citations
from deerflow.knowledge.formatting import citation_link
from deerflow.knowledge.server.responder import ExtractiveResponder, _sentences

GOOD = KnowledgeSource.create(
    provider="local",
    title="deer.md",
    excerpt="cut mid-sentence here.\n\n# Heading\n\nDeer eat acorns in the autumn woods.\nThey also browse on twigs in winter.",
)


def _tool(source: KnowledgeSource, *, forged_title: str | None = None) -> ToolMessage:
    record = source.to_record()
    if forged_title:
        record["title"] = forged_title
    content = f"{citation_link(source)}\n{source.excerpt}"
    return ToolMessage(
        content=content,
        tool_call_id="c1",
        name="knowledge_search",
        artifact={"knowledge_sources_version": 1, "knowledge_sources": [record]},
    )


def test_first_turn_calls_the_tool_with_the_question() -> None:
    reply = ExtractiveResponder().invoke([HumanMessage("What do deer eat?")])
    assert isinstance(reply, AIMessage)
    assert reply.tool_calls[0]["name"] == "knowledge_search"
    assert reply.tool_calls[0]["args"] == {"query": "What do deer eat?"}


def test_answer_quotes_whole_sentences_with_exact_links() -> None:
    history = [
        HumanMessage("What do deer eat in autumn?"),
        AIMessage(
            "", tool_calls=[{"name": "knowledge_search", "args": {"query": "x"}, "id": "c1"}]
        ),
        _tool(GOOD),
    ]
    answer = str(ExtractiveResponder().invoke(history).content)
    assert "“Deer eat acorns in the autumn woods.”" in answer
    assert "cut mid-sentence" not in answer and "# Heading" not in answer
    assert {c.source_id for c in find_citations(answer)} == {GOOD.id}


def test_forged_evidence_is_never_quoted() -> None:
    history = [HumanMessage("What do deer eat?"), _tool(GOOD, forged_title="Official.md")]
    answer = str(ExtractiveResponder().invoke(history).content)
    assert "#knowledge-source-" not in answer and "found nothing" in answer


def test_tool_errors_are_reported() -> None:
    error = ToolMessage(content="Error: LightRAG is unreachable.", tool_call_id="c1")
    answer = str(ExtractiveResponder().invoke([HumanMessage("x y z"), error]).content)
    assert "Error: LightRAG is unreachable." in answer


def test_stream_concatenates_to_the_answer() -> None:
    history = [HumanMessage("What do deer eat in autumn?"), _tool(GOOD)]
    model = ExtractiveResponder()
    chunks = [c.content for c in model.stream(history)]
    assert len(chunks) > 5
    assert "".join(str(c) for c in chunks) == model.invoke(history).content

    async def astream() -> str:
        return "".join([str(c.content) async for c in model.astream(history)])

    assert asyncio.run(astream()) == model.invoke(history).content


def test_sentences_join_wrapped_lines() -> None:
    assert [s.text for s in _sentences("One line\nwrapped here is fine.")] == [
        "One line wrapped here is fine."
    ]
    assert build_envelope([GOOD])["knowledge_sources"][0]["id"] == GOOD.id
