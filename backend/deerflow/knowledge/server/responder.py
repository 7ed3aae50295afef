"""The offline extractive responder: a deterministic chat model for the demo and the tests.

It is not a language model and says so. Given a question it calls ``knowledge_search`` once; given
the tool's answer it quotes the sentences of the *verified* evidence (re-read with
``read_envelope``) that best overlap the question, each followed by that source's citation link
copied exactly. So the demo runs with no credentials and no network, and every citation it
writes resolves — which makes it a useful baseline against which a real model's citations can be
compared.
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

from deerflow.knowledge.envelope import read_envelope
from deerflow.knowledge.formatting import citation_link

__all__ = ["MAX_QUOTED_SENTENCES", "NO_ANSWER", "RESPONDER_LABEL", "ExtractiveResponder"]

RESPONDER_LABEL: Final = "offline extractive responder (no language model)"
MAX_QUOTED_SENTENCES: Final = 4
NO_ANSWER: Final = "I found nothing in the knowledge base that answers this."
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+")
_BLOCK_SPLIT_RE = re.compile(r"\n\s*\n")
_WORD_RE = re.compile(r"\w+")
_STOP_WORDS: Final = frozenset(
    "a an and are as at be by can do does for from how i in is it of on or so that the this to "
    "what when where which who why will with you your".split()
)


def _sentences(excerpt: str) -> list[str]:
    """Whole sentences of an excerpt: hard-wrapped lines joined, Markdown headings, fences and
    table rows skipped, and the fragments an excerpt starts or ends with (mid-sentence cuts)
    dropped, so every quote is a complete statement from the document."""
    found = []
    for block in _BLOCK_SPLIT_RE.split(excerpt):
        lines = [line.strip() for line in block.splitlines()]
        if not lines or lines[0].startswith(("#", "```", "~~~", "|")):
            continue
        text = " ".join(line for line in lines if line)
        for sentence in _SENTENCE_END_RE.split(text):
            sentence = sentence.strip()
            if (
                len(sentence) > 20
                and sentence[-1] in ".!?"
                and (sentence[0].isupper() or sentence[0].isdigit() or sentence[0] in "`\"'“")
            ):
                found.append(sentence)
    return found


def _words(text: str) -> set[str]:
    return {w for w in _WORD_RE.findall(text.lower()) if w not in _STOP_WORDS and len(w) > 1}


class ExtractiveResponder(BaseChatModel):
    """Calls the knowledge tool, then answers with quoted evidence and exact citation links."""

    tool_name: str = "knowledge_search"
    max_sentences: int = MAX_QUOTED_SENTENCES

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
        sources = read_envelope(content, tool_message.artifact).sources
        if not sources:
            return NO_ANSWER
        wanted = _words(question)
        scored: list[tuple[int, int, str, str]] = []
        for rank, source in enumerate(sources):
            for sentence in _sentences(source.excerpt):
                overlap = len(wanted & _words(sentence))
                if overlap and len(sentence) > 20:
                    scored.append((-overlap, rank, sentence, citation_link(source)))
        if not scored:
            best = sources[0]
            first = next(iter(_sentences(best.excerpt)), " ".join(best.excerpt.split()[:40]))
            scored = [(0, 0, first, citation_link(best))]
        scored.sort(key=lambda item: (item[0], item[1]))
        lines = ["From the knowledge base:", ""]
        used: set[str] = set()
        for _, _, sentence, link in scored:
            if sentence in used:
                continue
            used.add(sentence)
            lines.append(f"- “{sentence}” {link}")
            if len(used) == self.max_sentences:
                break
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


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
