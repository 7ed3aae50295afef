"""The committed evaluation sets (benchmarks/eval): well formed, grounded in the bundled corpus,
and the structural facts of the offline responder's replies to them."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from benchmarks.eval import (
    CLOSEST_HEADING,
    HELD_OUT_2_PATH,
    HELD_OUT_3_PATH,
    LITERAL_PATH,
    Question,
    Questions,
    Source,
    answer,
    closest_passages,
    declined,
    load_questions,
    quality,
    reply,
)

from deerflow.knowledge.citations import find_citations
from deerflow.knowledge.envelope import read_envelope
from deerflow.knowledge.providers.local import LocalProvider, sample_corpus_path
from deerflow.knowledge.responder import NO_ANSWER
from deerflow.knowledge.tools import run_knowledge_search

QUESTIONS = load_questions()
LITERAL = load_questions(LITERAL_PATH)
HELD_OUT_2 = load_questions(HELD_OUT_2_PATH)
HELD_OUT_3 = load_questions(HELD_OUT_3_PATH)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalProvider, Path]]:
    index = tmp_path_factory.mktemp("eval") / "index.sqlite"
    local = LocalProvider(index)
    local.index(sample_corpus_path())
    yield local, index
    local.close()


def _normal(text: str) -> str:
    return " ".join(text.split())


def test_the_sets_have_enough_distinct_questions_in_every_split() -> None:
    for questions in (QUESTIONS, LITERAL, HELD_OUT_2, HELD_OUT_3):
        asked = [q.question for q in questions.answerable + questions.unanswerable]
        assert len(set(asked)) == len(asked)
    assert len(QUESTIONS.answerable) >= 60 and len(QUESTIONS.unanswerable) >= 15
    held_out = QUESTIONS.only("held_out")
    assert len(held_out.answerable) >= 20 and len(held_out.unanswerable) >= 5
    assert {q.split for q in QUESTIONS.answerable + QUESTIONS.unanswerable} == {"tune", "held_out"}
    assert {q.kind for q in QUESTIONS.unanswerable} == {"off-topic", "near-miss"}
    assert len(HELD_OUT_2.answerable) >= 30 and len(HELD_OUT_2.unanswerable) >= 12
    assert {q.split for q in HELD_OUT_2.answerable + HELD_OUT_2.unanswerable} == {"held_out_2"}
    assert {q.kind for q in HELD_OUT_2.unanswerable} == {"off-topic", "near-miss"}
    for fresh, split in ((HELD_OUT_2, "held_out_2"), (HELD_OUT_3, "held_out_3")):
        assert len(fresh.answerable) >= 30 and len(fresh.unanswerable) >= 12
        assert {q.split for q in fresh.answerable + fresh.unanswerable} == {split}
        assert {q.kind for q in fresh.unanswerable} == {"off-topic", "near-miss"}
    # The third held-out split asks nothing another set already asks.
    earlier = {
        _normal(q.question).lower()
        for questions in (QUESTIONS, LITERAL, HELD_OUT_2)
        for q in questions.answerable + questions.unanswerable
    }
    assert not earlier & {
        _normal(q.question).lower() for q in HELD_OUT_3.answerable + HELD_OUT_3.unanswerable
    }
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
    for item in (
        QUESTIONS.answerable + LITERAL.answerable + HELD_OUT_2.answerable + HELD_OUT_3.answerable
    ):
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
    assert declined(asyncio.run(reply(local, question)))


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


@pytest.mark.parametrize(
    "question",
    [
        # Near misses that were once answered with a sentence next to the asked fact.
        "How long is a RAGFlow API key valid before it expires?",
        "Under which open-source license is it released?",
        "What is the largest PDF the local index accepts, in megabytes?",
    ],
)
def test_a_near_miss_is_declined_and_shows_its_closest_passages_with_citations(
    sample: tuple[LocalProvider, Path], question: str
) -> None:
    local, _ = sample
    got = asyncio.run(answer(local, question))
    assert declined(got.text) and not got.quotes
    lines = got.text.splitlines()
    assert lines[:4] == [NO_ANSWER, "", f"### {CLOSEST_HEADING}", ""]
    closest = closest_passages(got.text)
    assert closest and len(closest) == len(lines) - 4
    # Each closest passage is a verified excerpt's sentence, followed by that record's citation.
    content, artifact = asyncio.run(run_knowledge_search(local, question))
    excerpts = {s.id: _normal(s.excerpt) for s in read_envelope(content, artifact).sources}
    for line, quote in zip(lines[4:], closest, strict=True):
        cited = find_citations(line)
        assert len(cited) == 1 and cited[0].end == len(line)
        assert cited[0].source_id in excerpts and quote in excerpts[cited[0].source_id]


def test_bench_quality_prints_every_measure_for_every_held_out_split_tune_and_the_literal_set(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks import bench_quality

    def few(path: Path | None = None) -> Questions:
        """Two questions of each kind and split: the printing is under test, not the figures."""
        questions = {
            LITERAL_PATH: LITERAL,
            HELD_OUT_2_PATH: HELD_OUT_2,
            HELD_OUT_3_PATH: HELD_OUT_3,
        }.get(path, QUESTIONS)
        splits = ("tune", "held_out", "held_out_2", "held_out_3", "literal")
        return Questions(
            tuple(q for s in splits for q in [a for a in questions.answerable if a.split == s][:2]),
            tuple(
                q for s in splits for q in [u for u in questions.unanswerable if u.split == s][:2]
            ),
        )

    monkeypatch.setattr(bench_quality, "load_questions", few)
    bench_quality.main([])
    printed = capsys.readouterr().out
    runs = printed.split("\n")
    headers = [line.split(":")[0] for line in runs if line and not line.startswith(" ")]
    assert {"tune", "held_out", "held_out_2", "held_out_3", "old literal set"} <= set(headers)
    for measure in (
        "precision",
        "coverage",
        "expected document",
        "declined",
        "off-question quotes",
        "answer quotable",
    ):
        assert sum(line.startswith(f"  {measure} ") for line in runs) == len(headers), measure
