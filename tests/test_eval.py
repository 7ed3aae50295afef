"""The committed evaluation set (benchmarks/eval): well formed, grounded in the bundled corpus,
and the structural facts of the offline responder's replies to it."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from benchmarks.eval import load_questions, quoted_sentences, reply

from deerflow.knowledge.providers.local import LocalProvider, sample_corpus_path
from deerflow.knowledge.server.responder import NO_ANSWER

QUESTIONS = load_questions()


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalProvider, Path]]:
    index = tmp_path_factory.mktemp("eval") / "index.sqlite"
    local = LocalProvider(index)
    local.index(sample_corpus_path())
    yield local, index
    local.close()


def _normal(text: str) -> str:
    return " ".join(text.split())


def test_the_set_has_enough_distinct_questions() -> None:
    asked = [q.question for q in QUESTIONS.answerable] + list(QUESTIONS.unanswerable)
    assert len(QUESTIONS.answerable) >= 30 and len(QUESTIONS.unanswerable) >= 5
    assert len(set(asked)) == len(asked)


def test_every_answer_span_is_in_the_named_document_and_page(
    sample: tuple[LocalProvider, Path],
) -> None:
    _, index = sample
    with sqlite3.connect(index) as connection:
        pages: dict[tuple[str, int | None], str] = {}
        for title, page, text in connection.execute(
            "SELECT title, page, text FROM chunks ORDER BY id"
        ):
            pages[(title, page)] = pages.get((title, page), "") + " " + text
    for item in QUESTIONS.answerable:
        assert (item.page is not None) is item.title.endswith(".pdf"), item
        assert _normal(item.answer) in _normal(pages[(item.title, item.page)]), item


@pytest.mark.parametrize("question", QUESTIONS.unanswerable)
def test_an_unanswerable_question_gets_the_no_answerreply(
    sample: tuple[LocalProvider, Path], question: str
) -> None:
    local, _ = sample
    assert asyncio.run(reply(local, question)) == NO_ANSWER


def test_every_quote_is_a_sentence_of_the_verified_evidence(
    sample: tuple[LocalProvider, Path],
) -> None:
    local, _ = sample
    quoted = 0
    for item in QUESTIONS.answerable:
        excerpts = [_normal(hit.text) for hit in local.search_sync(item.question).hits]
        for quote in quoted_sentences(asyncio.run(reply(local, item.question))):
            assert any(quote in excerpt for excerpt in excerpts), quote
            quoted += 1
    assert quoted >= len(QUESTIONS.answerable)
