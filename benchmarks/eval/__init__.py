"""The evaluation sets of the embedded default and the quality measures over them.

Shared by ``benchmarks.bench_quality`` (which prints the figures) and the tests (which check the
sets themselves against the corpus and the structural facts of the responder's replies).

* ``questions.json``: questions worded as people ask them, split into ``tune`` (looked at while
  the responder is developed) and ``held_out`` (only ever measured, never read for tuning).
* ``held_out_2.json``: a second held-out split (``held_out_2``), written from the corpus alone
  before the confidence rule was chosen a second time, and only ever measured.
* ``held_out_3.json``: a third held-out split (``held_out_3``), written from the corpus alone
  before the third pass at the rule. The earlier held-out splits had been measured by then, so for
  any rule chosen after it they are seen data; this split is the honest report.
* ``literal.json``: questions that reuse the documents' own words, a check that the literal case
  keeps working.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage

from deerflow.knowledge.citations import find_citations
from deerflow.knowledge.contract import RetrievalProvider
from deerflow.knowledge.envelope import read_envelope
from deerflow.knowledge.responder import NO_ANSWER, ExtractiveResponder
from deerflow.knowledge.responder._quotes import sentences
from deerflow.knowledge.tools import run_knowledge_search

__all__ = [
    "CLOSEST_HEADING",
    "HELD_OUT_2_PATH",
    "HELD_OUT_3_PATH",
    "LITERAL_PATH",
    "QUESTIONS_PATH",
    "Answer",
    "Quality",
    "Question",
    "Questions",
    "Source",
    "Unanswerable",
    "answer",
    "closest_passages",
    "declined",
    "load_questions",
    "quality",
    "quoted_sentences",
    "reply",
]

QUESTIONS_PATH = Path(__file__).resolve().parent / "questions.json"
LITERAL_PATH = Path(__file__).resolve().parent / "literal.json"
HELD_OUT_2_PATH = Path(__file__).resolve().parent / "held_out_2.json"
HELD_OUT_3_PATH = Path(__file__).resolve().parent / "held_out_3.json"


@dataclass(frozen=True, slots=True)
class Source:
    """A document (and, for a PDF, a page) that answers a question, with its answer spans."""

    title: str
    page: int | None
    answers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    split: str
    sources: tuple[Source, ...]
    """The first is the main answering document; any other answers the question as well."""

    @property
    def spans(self) -> tuple[str, ...]:
        return tuple(span for source in self.sources for span in source.answers)


@dataclass(frozen=True, slots=True)
class Unanswerable:
    question: str
    split: str
    kind: str
    """``off-topic``, or ``near-miss``: sounds answerable, but the corpus does not say."""


@dataclass(frozen=True, slots=True)
class Questions:
    answerable: tuple[Question, ...]
    unanswerable: tuple[Unanswerable, ...]

    def only(self, split: str | None) -> Questions:
        """The questions of one split (all of them for None)."""
        if split is None:
            return self
        return Questions(
            tuple(q for q in self.answerable if q.split == split),
            tuple(q for q in self.unanswerable if q.split == split),
        )


def load_questions(path: Path = QUESTIONS_PATH) -> Questions:
    data = json.loads(path.read_text(encoding="utf-8"))
    return Questions(
        answerable=tuple(
            Question(
                question=item["question"],
                split=item["split"],
                sources=tuple(
                    Source(s["title"], s["page"], tuple(s["answers"])) for s in item["sources"]
                ),
            )
            for item in data["answerable"]
        ),
        unanswerable=tuple(Unanswerable(**item) for item in data["unanswerable"]),
    )


def _normal(text: str) -> str:
    return " ".join(text.split())


#: The heading a declining reply shows its closest passages under.
CLOSEST_HEADING = "Closest passages"
_QUOTE_LINE_RE = re.compile(r"- “(?P<quote>.*)” (?P<link>\[[^\n]*\))\Z")
_UNESCAPE_RE = re.compile(r"\\([!-/:-@\[-`{-~])")


def declined(reply: str) -> bool:
    """Whether a responder reply is its no-answer reply (closest passages may follow it)."""
    return reply.split("\n", 1)[0] == NO_ANSWER


def _quote_lines(reply: str) -> tuple[list[str], list[str]]:
    """The quote lines of a reply's answer, and those under its closest-passages heading."""
    answer: list[str] = []
    closest: list[str] = []
    target = answer
    for line in reply.splitlines():
        if line.lstrip("#").strip() == CLOSEST_HEADING:
            target = closest
        elif line.startswith("- “"):
            target.append(line)
    return answer, closest


def _quote_of(line: str) -> str:
    """The sentence a quote line quotes, as the document wrote it (Markdown escapes resolved)."""
    match = _QUOTE_LINE_RE.match(line)
    quoted = match.group("quote") if match else line[3 : line.rindex("”")]
    return _UNESCAPE_RE.sub(r"\1", quoted)


def quoted_sentences(reply: str) -> list[str]:
    """The sentences a responder reply quotes as its answer, in order (closest passages aside)."""
    return [_quote_of(line) for line in _quote_lines(reply)[0]]


def closest_passages(reply: str) -> list[str]:
    """The sentences a declining reply shows as its closest passages, in order."""
    return [_quote_of(line) for line in _quote_lines(reply)[1]]


@dataclass(frozen=True, slots=True)
class Answer:
    """A reply with what each of its quotes cites: ``(quote, title, page)`` in order."""

    text: str
    evidence: tuple[tuple[str, int | None], ...]
    """``(title, page)`` of every verified source the tool returned, in rank order."""
    quotes: tuple[tuple[str, str | None, int | None], ...]
    candidates: tuple[str, ...] = ()
    """Every sentence of the verified evidence the responder could quote, in rank order."""


async def answer(provider: RetrievalProvider, question: str) -> Answer:
    """The responder's answer after one real ``knowledge_search`` call, with its citations
    resolved against the tool's verified evidence."""
    content, artifact = await run_knowledge_search(provider, question)
    tool = ToolMessage(
        content=content, artifact=artifact, tool_call_id="q", name="knowledge_search"
    )
    text = str(ExtractiveResponder().invoke([HumanMessage(question), tool]).content)
    sources = {s.id: s for s in read_envelope(content, artifact).sources}
    quotes: list[tuple[str, str | None, int | None]] = []
    for line in _quote_lines(text)[0]:
        cited = [sources.get(c.source_id) for c in find_citations(line) if c.source_id]
        source = cited[-1] if cited else None
        quotes.append(
            (
                _quote_of(line),
                source.title if source else None,
                source.page if source else None,
            )
        )
    evidence = tuple((s.title, s.page) for s in sources.values())
    candidates = tuple(
        candidate.text
        for source in sources.values()
        for candidate in sentences(source.excerpt)
        if candidate.text in _normal(source.excerpt)
    )
    return Answer(text, evidence, tuple(quotes), candidates)


async def reply(provider: RetrievalProvider, question: str) -> str:
    """The responder's answer to ``question`` after one real ``knowledge_search`` call."""
    return (await answer(provider, question)).text


def _addresses(quote: str, spans: Iterable[str]) -> bool:
    normal = _normal(quote)
    return any(_normal(span) in normal for span in spans)


@dataclass(slots=True)
class Quality:
    answerable: int = 0
    unanswerable: int = 0
    top1: int = 0
    top3: int = 0
    in_evidence: int = 0
    quotable: int = 0
    answered: int = 0
    first_quote: int = 0
    right_document: int = 0
    declined: int = 0
    off_question_quotes: int = 0
    misses: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, float]:
        """Every measure, keyed by the name ``bench_quality`` prints (see :func:`quality`)."""
        answerable = max(self.answerable, 1)
        answered = max(self.answered, 1)
        return {
            "recall@1": self.top1 / answerable,
            "recall@3": self.top3 / answerable,
            "answer in evidence": self.in_evidence / answerable,
            "answer quotable": self.quotable / answerable,
            "answered": self.answered / answerable,
            "precision": self.first_quote / answered,
            "coverage": self.first_quote / answerable,
            "expected document": self.right_document / answerable,
            "declined": self.declined / max(self.unanswerable, 1),
            "off-question quotes": self.off_question_quotes / answered,
        }


async def quality(provider: Any, questions: Questions) -> Quality:
    """Search and answer every question of the set with ``provider`` (a LocalProvider).

    An *answer* is a reply that is not the no-answer reply; its quotes are the sentences it
    quotes as the answer (a declining reply's closest passages are not an answer).

    * answer quotable (the ceiling of coverage): a sentence the responder could quote from the
      verified evidence contains an answer span;
    * answered: the share of answerable questions that get an answer;
    * precision: the answer's first quoted sentence contains an answer span, of the answerable
      questions answered;
    * coverage: the same, of all answerable questions;
    * expected document: an answer quote cites an answering document (and PDF page), of all
      answerable questions;
    * declined: the reply to an unanswerable question is the no-answer reply;
    * off-question quotes: answer quotes that contain no answer span, per answer.
    """
    report = Quality(answerable=len(questions.answerable), unanswerable=len(questions.unanswerable))
    for item in questions.answerable:
        where = {(s.title, s.page) for s in item.sources}
        hits = (await provider.search(item.question)).hits
        ranks = [rank for rank, hit in enumerate(hits, 1) if (hit.title, hit.page) in where]
        rank = ranks[0] if ranks else None
        report.top1 += rank == 1
        report.top3 += rank is not None and rank <= 3
        got = await answer(provider, item.question)
        report.in_evidence += any(e in where for e in got.evidence)
        report.quotable += any(_addresses(c, item.spans) for c in got.candidates)
        report.answered += bool(got.quotes)
        first = bool(got.quotes) and _addresses(got.quotes[0][0], item.spans)
        report.first_quote += first
        report.right_document += any((title, page) in where for _, title, page in got.quotes)
        off = sum(not _addresses(quote, item.spans) for quote, _, _ in got.quotes)
        report.off_question_quotes += off
        if not first or off:
            shown = [f"{q[:70]!r} ({t})" for q, t, _ in got.quotes] or ["(declined)"]
            report.misses.append(f"{item.question!r}: rank {rank}; " + " | ".join(shown))
    for unanswerable in questions.unanswerable:
        text = await reply(provider, unanswerable.question)
        if declined(text):
            report.declined += 1
        else:
            report.misses.append(f"{unanswerable.question!r} (unanswerable) got: {text[:100]!r}")
    return report
