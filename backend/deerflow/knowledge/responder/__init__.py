"""The offline extractive responder: a deterministic chat model for the demo and the tests.

It is not a language model and says so. Given a question it calls ``knowledge_search`` once; given
the tool's answer it quotes the sentences of the *verified* evidence (re-read with
``read_evidence``) that answer the question (chosen by :mod:`deerflow.knowledge.responder._quotes`:
the best sentence first, a further one only for a clause the first leaves open), each followed
by that source's citation link copied exactly. It answers only when it is confident that its first
quote answers the question; otherwise it says plainly that it found no sentence that answers it
and shows the closest passages under their own heading, so a guess is never presented as an
answer. So the demo runs with no credentials and no network, and every citation it writes
resolves — which makes it a useful baseline against which a real model's citations can be
compared.

A quote is text a document wrote, and a document is untrusted: a Markdown link, autolink, raw
HTML, image or citation inside a quoted sentence is escaped (:func:`inert`), so it shows as the
characters the document wrote and is no link; the only link after a quote is the responder's own
citation of the record the sentence came from.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, Final

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool

from deerflow.knowledge.contract import KnowledgeSource
from deerflow.knowledge.evidence import read_evidence
from deerflow.knowledge.formatting import citation_link
from deerflow.knowledge.responder._quotes import MAX_CLOSEST, Evidence, choose, sentences

__all__ = [
    "ANSWER_HEADING",
    "CLOSEST_PASSAGES",
    "MAX_QUOTED_SENTENCES",
    "NO_ANSWER",
    "RESPONDER_LABEL",
    "ExtractiveResponder",
    "inert",
]

RESPONDER_LABEL: Final = "offline extractive responder (no language model)"
MAX_QUOTED_SENTENCES: Final = 4
#: The first line of every reply that does not answer (closest passages may follow it).
NO_ANSWER: Final = "I found no sentence in the knowledge base that answers this."
#: The heading the closest passages of a declined question are shown under.
CLOSEST_PASSAGES: Final = "Closest passages"
ANSWER_HEADING: Final = "From the knowledge base:"
#: Every character CommonMark can read as markup inside a line (links, autolinks, images, raw
#: HTML, entities, code spans, emphasis) and the backslash itself.
_MARKUP_RE = re.compile(r"([\\`*_\[\]<>!&~|])")


def inert(text: str) -> str:
    """``text`` as CommonMark that renders exactly these characters and holds no link, image,
    autolink, HTML, entity or code: each character that could start markup is backslash-escaped
    (CommonMark renders an escaped ASCII punctuation character as itself)."""
    return _MARKUP_RE.sub(r"\\\1", text)


class ExtractiveResponder(BaseChatModel):
    """Calls the knowledge tool, then answers with quoted evidence and exact citation links."""

    tool_name: str = "knowledge_search"
    max_sentences: int = MAX_QUOTED_SENTENCES
    max_closest: int = MAX_CLOSEST

    @property
    def _llm_type(self) -> str:
        return "deerflow-extractive-responder"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self

    # -- the decision -------------------------------------------------------------------------
    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        question_index = max(
            (i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1
        )
        if question_index < 0:
            return AIMessage(content="Ask me a question about the indexed documents.")
        question = messages[question_index].text.strip()
        tool_results = [m for m in messages[question_index + 1 :] if isinstance(m, ToolMessage)]
        if not tool_results:
            if not question:
                return AIMessage(content="Ask me a question about the indexed documents.")
            return AIMessage(
                content="",
                tool_calls=[
                    {
                        "name": self.tool_name,
                        "args": {"query": question},
                        "id": f"call_{len(messages)}",
                        "type": "tool_call",
                    }
                ],
            )
        return AIMessage(content=self._answer(question, tool_results[-1]))

    def _answer(self, question: str, tool_message: ToolMessage) -> str:
        content = tool_message.content
        if isinstance(content, str) and content.startswith("Error:"):
            return f"I could not search the knowledge base. {content}"
        sources = _verified_sources(tool_message)
        if not sources:
            return NO_ANSWER
        # Belt and braces: a sentence is quoted only if the verified excerpt really contains it
        # (white space aside: quotes join hard-wrapped lines).
        evidence = [
            Evidence(candidate, rank, position, source.title)
            for rank, source in enumerate(sources)
            for normal in (" ".join(source.excerpt.split()),)
            for position, candidate in enumerate(sentences(source.excerpt))
            if candidate.text in normal
        ]
        choice = choose(question, evidence, limit=self.max_sentences, closest=self.max_closest)
        if choice.answer:
            lines = [ANSWER_HEADING, ""]
            lines += [_quote(item, sources) for item in choice.answer]
            return "\n".join(lines)
        if not choice.closest:
            return NO_ANSWER
        lines = [NO_ANSWER, "", f"### {CLOSEST_PASSAGES}", ""]
        lines += [_quote(item, sources) for item in choice.closest]
        return "\n".join(lines)

    # -- BaseChatModel plumbing ---------------------------------------------------------------
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in self._chunks(self._reply(messages)):
            if run_manager is not None:
                run_manager.on_llm_new_token(str(chunk.message.content), chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._chunks(self._reply(messages)):
            if run_manager is not None:
                await run_manager.on_llm_new_token(str(chunk.message.content), chunk=chunk)
            yield chunk

    @staticmethod
    def _chunks(reply: AIMessage) -> Iterator[ChatGenerationChunk]:
        if reply.tool_calls:
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content="",
                    tool_call_chunks=[
                        {
                            "name": call["name"],
                            "args": _json(call["args"]),
                            "id": call["id"],
                            "index": 0,
                            "type": "tool_call_chunk",
                        }
                        for call in reply.tool_calls
                    ],
                )
            )
            return
        # Word-sized pieces, so a UI sees a real stream (links arrive split across chunks).
        for piece in re.findall(r"\S+\s*|\s+", str(reply.content)):
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))


def _quote(item: Evidence, sources: Sequence[KnowledgeSource]) -> str:
    """One quote line: the sentence as inert text, then the citation of the record it came from."""
    return f"- “{inert(item.candidate.text)}” {citation_link(sources[item.rank])}"


def _verified_sources(tool_message: ToolMessage) -> Sequence[KnowledgeSource]:
    """The tool message's verified evidence, in the tool's rank order: the one place the
    responder reads the evidence envelope (forged or unverifiable records are already gone)."""
    return read_evidence(tool_message.content, tool_message.artifact, formats={"shared"}).shared


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
