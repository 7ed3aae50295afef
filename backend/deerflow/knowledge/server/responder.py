"""The offline extractive responder: a deterministic chat model for the demo and the tests.

It is not a language model and says so. Given a question it calls ``knowledge_search`` once; given
the tool's answer it quotes the sentences of the *verified* evidence (re-read with
``read_envelope``) that best overlap the question, each followed by that source's citation link
copied exactly. So the demo runs with no credentials and no network, and every citation it
writes resolves — which makes it a useful baseline against which a real model's citations can be
compared.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
import statistics
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
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
from deerflow.knowledge.envelope import read_envelope
from deerflow.knowledge.formatting import citation_link

__all__ = ["MAX_QUOTED_SENTENCES", "NO_ANSWER", "RESPONDER_LABEL", "ExtractiveResponder"]

RESPONDER_LABEL: Final = "offline extractive responder (no language model)"
MAX_QUOTED_SENTENCES: Final = 4
NO_ANSWER: Final = "I found nothing in the knowledge base that answers this."
#: A sentence is quoted only when it (with its section heading) covers at least this share of the
#: question's weighted terms: below it, overlap is one generic word, not an answer.
MIN_COVERAGE: Final = 0.5
#: A question term found only in the heading of the sentence's section counts this much.
HEADING_WEIGHT: Final = 0.8
#: Each pair of consecutive question terms that also occur consecutively in a sentence adds this
#: share of their weight (word order separates "artifact keys are reserved" from "reserved keys").
PAIR_WEIGHT: Final = 0.25
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+")
_BLOCK_SPLIT_RE = re.compile(r"\n\s*\n")
_WORD_RE = re.compile(r"\w+")
_HEADING_MAX_CHARS: Final = 80
_LIST_ITEM_RE = re.compile(r"(?:[-*+]|\d{1,3}\.)\s")
#: Identifiers (``excerpt_missing``, ``X-API-Key`` parts excluded) name one thing exactly.
_IDENTIFIER_WEIGHT: Final = 2.0
_STOP_WORDS: Final = frozenset(
    "a about an and are as at be by can could do does did for from get happen happens has have "
    "how i if in is it its like look me mean means my of on or should so that the their there "
    "this to was what when where which who why will with would you your".split()
)
_SUFFIXES: Final = ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "s", "e")


@dataclass(frozen=True, slots=True)
class _Sentence:
    text: str
    heading: str
    """The heading of the section the sentence is in, as far as the excerpt shows it."""


#: Distinct words whose stems stay cached (a stem is looked up ~1,600 times per answer).
_STEMS_CACHED: Final = 65_536


@functools.lru_cache(maxsize=_STEMS_CACHED)
def _stem(word: str) -> str:
    """A crude suffix stripper: enough that "computed", "computes" and "compute" meet."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= (2 if suffix == "s" else 3):
            return word[: -len(suffix)]
    return word


def _terms(text: str) -> list[str]:
    """Stemmed content words in order (stop words and one-letter words dropped)."""
    return [_stem(w) for w in _WORD_RE.findall(text.lower()) if w not in _STOP_WORDS and len(w) > 1]


def _is_complete(sentence: str) -> bool:
    return (
        len(sentence) > 20
        and sentence[-1] in ".!?"
        and (sentence[0].isupper() or sentence[0].isdigit() or sentence[0] in "`\"'“")
    )


def _looks_like_heading(line: str, following: str | None) -> bool:
    """A short first line with no sentence punctuation at its end, followed by a line that starts
    with a capital: a PDF page's or a text file's heading (wrapped prose ends lines mid-sentence
    and goes on in lower case or with code instead)."""
    return (
        following is not None
        and len(line) <= _HEADING_MAX_CHARS
        and line[0].isupper()
        and line[-1] not in ".!?,;:"
        and following[0].isupper()
    )


def _sentences(excerpt: str) -> list[_Sentence]:
    """Whole sentences of an excerpt: hard-wrapped lines joined, Markdown headings, fences and
    table rows skipped (a heading becomes the context of the sentences below it), PDF and text
    headings split from the sentence that follows them, and the fragments an excerpt starts or
    ends with (mid-sentence cuts) dropped, so every quote is a complete statement from the
    document."""
    found: list[_Sentence] = []
    heading = ""
    for block in _BLOCK_SPLIT_RE.split(excerpt):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if not lines or lines[0].startswith(("```", "~~~", "|")):
            continue
        if lines[0].startswith("#"):
            heading = lines[0].lstrip("#").strip()
            lines = lines[1:]
        if lines and _looks_like_heading(lines[0], lines[1] if len(lines) > 1 else None):
            heading = lines[0]
            lines = lines[1:]
        # A list item starts a new statement; other lines continue the one before.
        items: list[list[str]] = []
        for line in lines:
            if not items or _LIST_ITEM_RE.match(line):
                items.append([line])
            else:
                items[-1].append(line)
        for item in items:
            for sentence in _SENTENCE_END_RE.split(" ".join(item)):
                sentence = sentence.strip()
                if _is_complete(sentence):
                    found.append(_Sentence(sentence, heading))
    return found


_Terms = Callable[[str], Sequence[str]]


def _term_memo() -> _Terms:
    """``_terms`` remembered for one answer: a sentence is scored against the question twice."""
    seen: dict[str, list[str]] = {}

    def terms(text: str) -> list[str]:
        found = seen.get(text)
        if found is None:
            found = seen[text] = _terms(text)
        return found

    return terms


def _weights(
    question: Sequence[str], sentences: Sequence[_Sentence], terms: _Terms = _terms
) -> dict[str, float]:
    """Inverse sentence frequency of each question term over the evidence; a term the evidence
    never mentions weighs the mean of those it does (it counts against coverage without
    drowning every other term)."""
    counts = dict.fromkeys(question, 0)
    for sentence in sentences:
        for term in set(terms(sentence.text)) & counts.keys():
            counts[term] += 1
    total = len(sentences)
    weights = {t: math.log(1 + (total + 1) / (n + 0.5)) for t, n in counts.items() if n}
    typical = statistics.fmean(weights.values()) if weights else 1.0
    return {t: weights.get(t, typical) * (_IDENTIFIER_WEIGHT if "_" in t else 1.0) for t in counts}


def _score(
    question: Sequence[str],
    weights: dict[str, float],
    sentence: _Sentence,
    title: str,
    terms: _Terms = _terms,
) -> tuple[float, float]:
    """(score, coverage) of a sentence for the question's terms.

    The sentence's section heading and its document's title are context: each question term
    (and each pair of consecutive terms) they name adds ``HEADING_WEIGHT`` of its weight, also
    when the sentence names it too, since a sentence under "Source ids" is *about* source ids.
    Coverage counts each term once: in the sentence, else at ``HEADING_WEIGHT`` in the context.
    """
    words = terms(sentence.text)
    context = terms(f"{sentence.heading} {title}")
    present, around = set(words), set(context)
    score = sum(weights[t] for t in weights if t in present)
    covered = score + HEADING_WEIGHT * sum(weights[t] for t in weights if t in around - present)
    score += HEADING_WEIGHT * sum(weights[t] for t in weights if t in around)
    coverage = covered / sum(weights.values())
    pairs = set(itertools.pairwise(words))
    context_pairs = set(itertools.pairwise(context))
    for first, second in itertools.pairwise(question):
        pair = PAIR_WEIGHT * (weights[first] + weights[second]) / 2
        score += pair * ((first, second) in pairs)
        score += HEADING_WEIGHT * pair * ((first, second) in context_pairs)
    return score, coverage


def _coverage(weights: dict[str, float], source: KnowledgeSource, terms: _Terms = _terms) -> float:
    """The weighted share of the question's terms in a whole excerpt (its title at
    ``HEADING_WEIGHT``)."""
    present = set(terms(source.excerpt))
    titled = set(terms(source.title)) - present
    found = sum(w for t, w in weights.items() if t in present)
    found += HEADING_WEIGHT * sum(w for t, w in weights.items() if t in titled)
    return found / sum(weights.values())


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
        question_terms = list(dict.fromkeys(_terms(question)))
        # Belt and braces: a sentence is quoted only if the verified excerpt really contains it
        # (white space aside: quotes join hard-wrapped lines).
        candidates = [
            (rank, position, sentence, source)
            for rank, source in enumerate(sources)
            for normal in (" ".join(source.excerpt.split()),)
            for position, sentence in enumerate(_sentences(source.excerpt))
            if sentence.text in normal
        ]
        if not question_terms:
            return NO_ANSWER
        terms = _term_memo()
        weights = _weights(question_terms, [c[2] for c in candidates], terms)
        covered = [_coverage(weights, source, terms) for source in sources]
        scored: list[tuple[float, int, int, str, str]] = []
        for rank, position, sentence, source in candidates:
            score, coverage = _score(question_terms, weights, sentence, source.title, terms)
            # The sentence, or its excerpt as a whole (words in lines that are not sentences,
            # such as a table or a code line, count there), must cover the question.
            if score > 0 and max(coverage, covered[rank]) >= MIN_COVERAGE:
                scored.append((-score, rank, position, sentence.text, citation_link(source)))
        if not scored:
            return NO_ANSWER
        scored.sort(key=lambda item: item[:3])
        lines = ["From the knowledge base:", ""]
        used: set[str] = set()
        for *_, sentence_text, link in scored:
            if sentence_text in used:
                continue
            used.add(sentence_text)
            lines.append(f"- “{sentence_text}” {link}")
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
