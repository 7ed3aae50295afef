"""The evaluation set of the embedded default and the quality measures over it.

Shared by ``benchmarks.bench_quality`` (which prints the figures) and the tests (which check the
set itself against the corpus and the structural facts of the responder's replies).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage

from deerflow.knowledge.contract import RetrievalProvider
from deerflow.knowledge.server.responder import NO_ANSWER, ExtractiveResponder
from deerflow.knowledge.tools import run_knowledge_search

__all__ = [
    "Quality",
    "Question",
    "Questions",
    "load_questions",
    "quality",
    "quoted_sentences",
    "reply",
]

QUESTIONS_PATH = Path(__file__).resolve().parent / "questions.json"


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    title: str
    page: int | None
    answer: str


@dataclass(frozen=True, slots=True)
class Questions:
    answerable: tuple[Question, ...]
    unanswerable: tuple[str, ...]


def load_questions(path: Path = QUESTIONS_PATH) -> Questions:
    data = json.loads(path.read_text(encoding="utf-8"))
    return Questions(
        answerable=tuple(Question(**item) for item in data["answerable"]),
        unanswerable=tuple(data["unanswerable"]),
    )


def _normal(text: str) -> str:
    return " ".join(text.split())


def quoted_sentences(reply: str) -> list[str]:
    """The quoted sentences of a responder reply, in order."""
    return [line[3 : line.index("”")] for line in reply.splitlines() if line.startswith("- “")]


@dataclass(slots=True)
class Quality:
    answerable: int = 0
    unanswerable: int = 0
    top1: int = 0
    top3: int = 0
    first_quote: int = 0
    false_answers: int = 0
    misses: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, float]:
        return {
            "recall@1": self.top1 / self.answerable,
            "recall@3": self.top3 / self.answerable,
            "first-quote hit": self.first_quote / self.answerable,
            "false answers": self.false_answers / self.unanswerable,
        }


async def reply(provider: RetrievalProvider, question: str) -> str:
    """The responder's answer to ``question`` after one real ``knowledge_search`` call."""
    content, artifact = await run_knowledge_search(provider, question)
    tool = ToolMessage(
        content=content, artifact=artifact, tool_call_id="q", name="knowledge_search"
    )
    return str(ExtractiveResponder().invoke([HumanMessage(question), tool]).content)


async def quality(provider: Any, questions: Questions) -> Quality:
    """Search and answer every question of the set with ``provider`` (a LocalProvider)."""
    report = Quality(answerable=len(questions.answerable), unanswerable=len(questions.unanswerable))
    for item in questions.answerable:
        hits = (await provider.search(item.question)).hits
        ranks = [
            rank
            for rank, hit in enumerate(hits, start=1)
            if hit.title == item.title and hit.page == item.page
        ]
        rank = ranks[0] if ranks else None
        report.top1 += rank == 1
        report.top3 += rank is not None and rank <= 3
        quotes = quoted_sentences(await reply(provider, item.question))
        hit = bool(quotes) and _normal(item.answer) in _normal(quotes[0])
        report.first_quote += hit
        if rank != 1 or not hit:
            first = quotes[0][:90] if quotes else "(no quote)"
            report.misses.append(f"{item.question!r}: rank {rank}, first quote {first!r}")
    for question in questions.unanswerable:
        answer = await reply(provider, question)
        if answer != NO_ANSWER:
            report.false_answers += 1
            report.misses.append(f"{question!r} (unanswerable) got: {answer[:100]!r}")
    return report
