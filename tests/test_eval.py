"""The committed evaluation sets (benchmarks/eval): well formed, grounded in the bundled corpus,
and the structural facts of the offline responder's replies to them."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from benchmarks.eval import (
    LITERAL_PATH,
    Question,
    Questions,
    Source,
    answer,
    load_questions,
    quality,
    reply,
)

from deerflow.knowledge.providers.local import LocalProvider, sample_corpus_path
from deerflow.knowledge.responder import NO_ANSWER

QUESTIONS = load_questions()
LITERAL = load_questions(LITERAL_PATH)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalProvider, Path]]:
    index = tmp_path_factory.mktemp("eval") / "index.sqlite"
    local = LocalProvider(index)
    local.index(sample_corpus_path())
    yield local, index
    local.close()


def _normal(text: str) -> str:
    return " ".join(text.split())


def test_the_sets_have_enough_distinct_questions_in_both_splits() -> None:
    for questions in (QUESTIONS, LITERAL):
        asked = [q.question for q in questions.answerable + questions.unanswerable]
        assert len(set(asked)) == len(asked)
    assert len(QUESTIONS.answerable) >= 60 and len(QUESTIONS.unanswerable) >= 15
    held_out = QUESTIONS.only("held_out")
    assert len(held_out.answerable) >= 20 and len(held_out.unanswerable) >= 5
    assert {q.split for q in QUESTIONS.answerable + QUESTIONS.unanswerable} == {"tune", "held_out"}
    assert {q.kind for q in QUESTIONS.unanswerable} == {"off-topic", "near-miss"}
    literal = {_normal(q.question).lower() for q in LITERAL.answerable}
    assert not literal & {_normal(q.question).lower() for q in QUESTIONS.answerable}


def test_every_answer_span_is_in_its_document_and_page(
    sample: tuple[LocalProvider, Path],
) -> None:
    _, index = sample
    with sqlite3.connect(index) as connection:
        pages: dict[tuple[str, int | None], str] = {}
        for title, page, text in connection.execute(
            "SELECT title, page, text FROM chunks ORDER BY id"
        ):
            pages[(title, page)] = pages.get((title, page), "") + " " + text
    for item in QUESTIONS.answerable + LITERAL.answerable:
        assert item.sources and all(source.answers for source in item.sources), item
        for source in item.sources:
            assert (source.page is not None) is source.title.endswith(".pdf"), item
            for span in source.answers:
                assert _normal(span) in _normal(pages[(source.title, source.page)]), span


@pytest.mark.parametrize("question", [q.question for q in LITERAL.unanswerable])
def test_an_unanswerable_question_gets_the_no_answer_reply(
    sample: tuple[LocalProvider, Path], question: str
) -> None:
    local, _ = sample
    assert asyncio.run(reply(local, question)) == NO_ANSWER


def test_every_quote_is_a_sentence_of_the_verified_evidence_and_cites_it(
    sample: tuple[LocalProvider, Path],
) -> None:
    local, _ = sample
    quoted = 0
    for item in QUESTIONS.answerable:
        excerpts: dict[tuple[str, int | None], list[str]] = {}
        for hit in local.search_sync(item.question).hits:
            excerpts.setdefault((hit.title, hit.page), []).append(_normal(hit.text))
        got = asyncio.run(answer(local, item.question))
        for quote, title, page in got.quotes:
            assert title is not None, quote  # the link resolves to a verified source
            assert any(quote in e for e in excerpts[(title, page)]), quote
            quoted += 1
    assert quoted >= len(QUESTIONS.answerable) // 2


@pytest.mark.parametrize(
    ("question", "title"),
    [
        ("How does a reader verify the evidence behind a citation?", "evidence-verification.md"),
        ("What is the trust boundary?", "trust-boundary.md"),
        ("How do I connect to my own LightRAG server?", "providers/lightrag-setup.md"),
    ],
)
def test_the_chat_pages_suggested_questions_are_answered_from_the_right_document(
    sample: tuple[LocalProvider, Path], question: str, title: str
) -> None:
    local, _ = sample
    got = asyncio.run(answer(local, question))
    assert got.quotes and {cited for _, cited, _ in got.quotes} == {title}


def test_answer_quotable_counts_a_span_only_when_a_quotable_sentence_holds_it(
    sample: tuple[LocalProvider, Path],
) -> None:
    local, _ = sample
    question = "How are results ranked by the local provider?"
    candidates = asyncio.run(answer(local, question)).candidates
    assert candidates
    sentence = candidates[-1]
    title = local.search_sync(question).hits[0].title

    def asked(span: str) -> Questions:
        return Questions((Question(question, "tune", (Source(title, None, (span,)),)),), ())

    held = asyncio.run(quality(local, asked(" ".join(sentence.split()[1:]))))
    assert held.figures()["answer quotable"] == 1.0
    # Words of two sentences are never inside one quotable sentence.
    across = (
        f"{candidates[0].split()[-1]} {candidates[1].split()[0]}" if len(candidates) > 1 else ""
    )
    for span in ("no such phrase in any document", across):
        if span and not any(span in c for c in candidates):
            assert asyncio.run(quality(local, asked(span))).figures()["answer quotable"] == 0.0
