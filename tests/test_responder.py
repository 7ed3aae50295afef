from __future__ import annotations

import asyncio
from typing import Any

import pytest
from benchmarks.eval import closest_passages, declined, quoted_sentences
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from deerflow.knowledge import KnowledgeSource, build_envelope, find_citations
from deerflow.knowledge.formatting import citation_link
from deerflow.knowledge.providers.parse.chunking import chunk_text
from deerflow.knowledge.responder import (
    ANSWER_HEADING,
    CLOSEST_PASSAGES,
    NO_ANSWER,
    ExtractiveResponder,
    inert,
)
from deerflow.knowledge.responder._quotes import sentences as _sentences

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
    assert answer == NO_ANSWER


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


# --------------------------------------------------------------------------- sentence selection


def _answer(question: str, *sources: KnowledgeSource) -> str:
    content = "\n".join(f"{citation_link(s)}\n{s.excerpt}" for s in sources)
    tool = ToolMessage(
        content=content,
        tool_call_id="c1",
        name="knowledge_search",
        artifact=build_envelope(list(sources)),
    )
    return str(ExtractiveResponder().invoke([HumanMessage(question), tool]).content)


def _quotes(answer: str) -> list[str]:
    return quoted_sentences(answer)


CONTRACT = KnowledgeSource.create(
    provider="local",
    title="contract.md",
    excerpt=(
        "## Citation links\n\nThe model cites a link that names the id of what it cites.\n\n"
        "## Source ids\n\nThe id of a record is the first 32 hex digits of a SHA-256 hash.\n"
        "Because the id is derived from the content, anyone can recompute it."
    ),
)


def test_the_section_heading_counts_as_context() -> None:
    # Both sentences name the id; the one under "Source ids" is about source ids.
    first = _quotes(_answer("What is a source id?", CONTRACT))[0]
    assert first.startswith("The id of a record is the first 32 hex digits")


def test_no_answer_below_the_coverage_floor_instead_of_unrelated_quotes() -> None:
    answer = _answer("How do I deploy on Kubernetes with OAuth?", CONTRACT, GOOD)
    assert answer == NO_ANSWER
    # One generic word in common is not an answer either.
    assert _answer("Which record label released the album?", CONTRACT) == NO_ANSWER


LOCAL = KnowledgeSource.create(
    provider="local",
    title="local-index.txt",
    excerpt=(
        "The local provider is the default. It needs no server and no network.\n\n"
        "Indexing. Hidden files and symbolic links are left out. Each document is cut into "
        "chunks of at most 800 characters.\n\n"
        "Updates. Unchanged files are skipped, and files that disappeared are removed."
    ),
)
SETUP = KnowledgeSource.create(
    provider="local",
    title="providers/lightrag-setup.md",
    excerpt=(
        "## Configuration\n\nSet `LIGHTRAG_API_KEY` when the server was started with an API key. "
        "The key is sent in the `X-API-Key` header and is never printed. LightRAG 1.4.9 or newer "
        "is required."
    ),
)


def test_synonyms_and_inflections_people_use_find_the_sentence() -> None:
    quotes = _quotes(_answer("Does indexing pick up dotfiles and symlinked files?", LOCAL))
    assert quotes == ["Hidden files and symbolic links are left out."]
    quotes = _quotes(_answer("Could my API token end up being printed?", SETUP))
    assert quotes == ["The key is sent in the `X-API-Key` header and is never printed."]


def test_a_pronoun_led_sentence_is_quoted_with_the_sentence_it_refers_to() -> None:
    quotes = _quotes(_answer("Does the local provider need a network?", LOCAL))
    assert quotes == ["The local provider is the default. It needs no server and no network."]
    assert all(not q.startswith("It ") for q in _quotes(_answer("Which server is needed?", LOCAL)))


def test_one_quote_per_question_and_another_only_for_an_unanswered_clause() -> None:
    assert len(_quotes(_answer("Which LightRAG version is required?", SETUP, LOCAL))) == 1
    quotes = _quotes(
        _answer("Which header carries the key, and is LightRAG 1.4.9 or newer required?", SETUP)
    )
    assert quotes == [
        "The key is sent in the `X-API-Key` header and is never printed.",
        "LightRAG 1.4.9 or newer is required.",
    ]


def test_near_misses_are_declined() -> None:
    # A name the question asks about that no sentence mentions; the thing a "which" asks for;
    # a quantity for "how many" that no sentence states.
    assert _answer("Which Kubernetes version is required?", SETUP, LOCAL) == NO_ANSWER
    assert declined(_answer("Which port does the LightRAG server need?", SETUP, LOCAL))
    assert declined(_answer("How many servers does the local provider need?", LOCAL))
    assert _quotes(_answer("How many characters are in a chunk?", LOCAL)) == [
        "Each document is cut into chunks of at most 800 characters."
    ]


def test_a_pdf_page_heading_is_not_glued_to_the_first_sentence() -> None:
    page = KnowledgeSource.create(
        provider="local",
        title="guide.pdf",
        page=3,
        excerpt=(
            "Architecture guide, part 3: rendering\nThe React renderer shows assistant Markdown "
            "with react-markdown.\nRaw HTML is not rendered and remote images are\nnot loaded.\n"
            "Page 3"
        ),
    )
    found = [s.text for s in _sentences(page.excerpt)]
    assert found == [
        "The React renderer shows assistant Markdown with react-markdown.",
        "Raw HTML is not rendered and remote images are not loaded.",
    ]
    assert _sentences(page.excerpt)[0].heading == "Architecture guide, part 3: rendering"
    first = _quotes(_answer("What does the React renderer show?", page))[0]
    assert first == "The React renderer shows assistant Markdown with react-markdown."


def test_wrapped_lines_are_not_mistaken_for_headings_or_list_items() -> None:
    text = (
        "Run input and state writes that come from callers pass through\n"
        "`strip_reserved_keys`. The artifact holds a version (exactly the number\n"
        "1) and a list."
    )
    assert [s.text for s in _sentences(text)] == [
        "Run input and state writes that come from callers pass through `strip_reserved_keys`.",
        "The artifact holds a version (exactly the number 1) and a list.",
    ]


def test_a_paragraph_may_open_in_lower_case_but_an_excerpt_may_not() -> None:
    """A name spelled in lower case ("deerflow-knowledge is…") opens a paragraph as any sentence
    does, and the pronoun-led sentence after it is quoted with it; only the excerpt's own first
    words may be the tail of a sentence the chunk cut."""
    overview = (
        "# What deerflow-knowledge is\n\n"
        "deerflow-knowledge is a provider-neutral, read-only knowledge contract for LLM agents. "
        "It gives an\nagent a `knowledge_search` tool that returns retrieved text."
    )
    first = "deerflow-knowledge is a provider-neutral, read-only knowledge contract for LLM agents."
    assert [(s.text, s.heading, s.lead) for s in _sentences(overview)] == [
        (first, "What deerflow-knowledge is", True),
        (
            f"{first} It gives an agent a `knowledge_search` tool that returns retrieved text.",
            "What deerflow-knowledge is",
            False,
        ),
    ]
    for opening in ("Intro paragraph that ends here.\n\n", "## Overview\n", "```\ncode\n```\n\n"):
        assert _sentences(opening + overview.split("\n\n", 1)[1])[-2].text == first
    # At the excerpt's start a lower-case sentence may be a cut one's tail: dropped, and so is the
    # pronoun-led sentence after it.
    assert _sentences(overview.split("\n\n", 1)[1]) == []
    assert [s.text for s in _sentences("and the rest is indexed. The report lists files.")] == [
        "The report lists files."
    ]


def test_the_words_of_a_file_path_in_a_sentence_are_not_what_it_says() -> None:
    """A path written out as an example names a file: "such as providers/lightrag-setup.md" does
    not make a sentence about local titles one about LightRAG (a title, itself a path, still
    counts as context, and a URL or an endpoint stays words)."""
    local = KnowledgeSource.create(
        provider="local",
        title="local-index.txt",
        excerpt=(
            "The title of a hit is the file path relative to the indexed folder, such as "
            "providers/lightrag-setup.md or guides/ragflow.txt."
        ),
    )
    assert declined(_answer("What title does a LightRAG hit get?", local))
    assert declined(_answer("Which title does a RAGFlow hit have?", local))
    quotes = _quotes(_answer("What title does a local hit get?", local))
    assert quotes == [local.excerpt]
    setup = KnowledgeSource.create(
        provider="local",
        title="providers/lightrag-setup.md",
        excerpt="A hit's title is the chunk's file path, and its URL is never https://x.test/a.md.",
    )
    assert _quotes(_answer("What title does a LightRAG hit get?", local, setup)) == [setup.excerpt]


def test_a_sentence_ends_where_the_chunker_ends_it() -> None:
    """One rule for both (deerflow.knowledge.text): a closing quote or bracket belongs to the
    sentence it closes, and an ideographic full stop ends a sentence with no space after it."""
    said = [
        'The server says "the key is never printed." ',
        "The log shows the request (and its status.) ",
        "Every run compares a content hash per file.",
    ]
    cjk = [
        "本地索引不需要服务器也不需要网络连接就可以直接运行。",
        "每次运行都会比较每个文件的内容哈希值来决定是否重建。",
    ]
    for parts in (said, cjk):
        text = "".join(parts)
        expected = [p.strip() for p in parts]
        assert [s.text for s in _sentences(text)] == expected
        longest = max(len(p) for p in expected)
        assert chunk_text(text, chunk_chars=longest, chunk_overlap=0) == expected


def test_list_items_are_separate_statements() -> None:
    text = "Checks:\n\n1. `bad_field`: a field is missing.\n2. `id_mismatch`: the id is wrong."
    assert [s.text for s in _sentences(text)] == [
        "`bad_field`: a field is missing.",
        "`id_mismatch`: the id is wrong.",
    ]


@settings(max_examples=200, deadline=None)
@given(
    excerpt=st.text(
        alphabet=st.sampled_from(list("abc ABC.?!\n#-1`:"))
        | st.characters(blacklist_categories=("Cs",)),
        max_size=300,
    ).filter(lambda s: s.strip() != ""),
    question=st.text(alphabet=st.sampled_from(list("abc ABC?")), min_size=1, max_size=30),
)
def test_every_quote_is_text_of_a_verified_excerpt(excerpt: str, question: str) -> None:
    try:
        source = KnowledgeSource.create(provider="local", title="t.md", excerpt=excerpt)
    except ValueError:
        assume(False)  # not a valid excerpt (control characters): the reader never sees it
    answer = _answer(question, source)
    normal = " ".join(excerpt.split())
    for quote in _quotes(answer):
        assert quote in normal
    assert declined(answer) or answer.startswith(ANSWER_HEADING)
    for quote in closest_passages(answer):
        assert quote in normal


def test_unverified_evidence_is_never_quoted_even_when_it_matches() -> None:
    tool = _tool(CONTRACT, forged_title="Official.md")
    answer = str(
        ExtractiveResponder().invoke([HumanMessage("How is a source id computed?"), tool]).content
    )
    assert answer == NO_ANSWER


FAQ = KnowledgeSource.create(
    provider="local",
    title="faq.md",
    excerpt=(
        "## Can a lantern be charged from a laptop?\n\nA lantern charges only from its own dock.\n"
        "The dock of a lantern is sold with every laptop bag."
    ),
)
GUIDE = KnowledgeSource.create(
    provider="local",
    title="guide.txt",
    excerpt=(
        "Batteries. A battery lasts a year in a lantern kept indoors. A lantern left outside "
        "loses its battery charge in a month."
    ),
)


def test_a_section_is_answered_by_its_first_sentence() -> None:
    # Both sentences share the question's words; the one opening the section whose heading asks
    # the question is its answer (a FAQ), and "Batteries." is a run-in heading, not a sentence.
    quotes = _quotes(_answer("Can I charge a lantern from my laptop?", FAQ))
    assert quotes == ["A lantern charges only from its own dock."]
    assert [(s.text, s.heading, s.lead) for s in _sentences(GUIDE.excerpt)] == [
        ("A battery lasts a year in a lantern kept indoors.", "Batteries", True),
        ("A lantern left outside loses its battery charge in a month.", "Batteries", False),
    ]


def test_a_negated_question_prefers_the_negated_sentence() -> None:
    source = KnowledgeSource.create(
        provider="local",
        title="records.md",
        excerpt=(
            "A record whose handle appears in the content is kept for the reader. "
            "A record whose handle does not appear in the content is dropped."
        ),
    )
    quotes = _quotes(_answer("What if a record's handle isn't in the content?", source))
    assert quotes == ["A record whose handle does not appear in the content is dropped."]


def test_how_many_inside_a_question_still_asks_for_a_quantity() -> None:
    source = KnowledgeSource.create(
        provider="local",
        title="budget.md",
        excerpt=(
            "A tool result that hits the cap carries a notice that says how many results "
            "were left out. At most 100 results fit in one tool result."
        ),
    )
    answer = _answer("Is there a cap on how many results a tool result carries?", source)
    # In so small an evidence the sentence that states a number of results is not sure enough
    # to answer ("carries" is unstated), but it is the closest passage.
    assert (_quotes(answer) or closest_passages(answer))[0] == (
        "At most 100 results fit in one tool result."
    )


def test_a_further_quote_comes_from_the_document_that_answered_first() -> None:
    key = KnowledgeSource.create(
        provider="local",
        title="providers/lightrag-setup.md",
        excerpt="Set `LIGHTRAG_API_KEY` when the server was started with an API key.",
    )
    elsewhere = KnowledgeSource.create(
        provider="local",
        title="trust-boundary.md",
        excerpt="The header a caller sets is in every message the server was sent.",
    )
    question = "My server was started with an API key: how do I set it, and which header is it in?"
    assert _quotes(_answer(question, key, elsewhere)) == [
        "Set `LIGHTRAG_API_KEY` when the server was started with an API key."
    ]


_WORDS = ("deer", "eat", "acorns", "winter", "the", "key", "server", "is", "not", "It", "How")
_SENTENCE = st.lists(st.sampled_from(_WORDS), min_size=2, max_size=9).map(
    lambda words: " ".join(words).capitalize() + "."
)
_EXCERPT = st.lists(
    st.one_of(_SENTENCE, st.sampled_from(["\n", "\n\n", "## Deer\n\n", "```\n", "- ", "| a |\n"])),
    min_size=1,
    max_size=12,
).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(
    excerpts=st.lists(_EXCERPT, min_size=1, max_size=5),
    titles=st.lists(
        st.text(alphabet=st.sampled_from(list("ab [](){}<>*_`\\|#.")), min_size=1, max_size=12),
        min_size=5,
        max_size=5,
    ),
    forged=st.integers(min_value=-1, max_value=4),
    question=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6).map(" ".join),
)
# Equal excerpts collapse into one record: index 4 names no envelope entry, nothing is forged.
@example(
    excerpts=["Deer deer."] * 4 + ["Deer deer deer deer deer."],
    titles=["<"] * 5,
    forged=4,
    question="deer",
)
def test_quotes_are_verified_text_cited_by_the_exact_link_of_their_source(
    excerpts: list[str], titles: list[str], forged: int, question: str
) -> None:
    try:
        sources = [
            KnowledgeSource.create(provider="local", title=title, excerpt=excerpt)
            for excerpt, title in zip(excerpts, titles, strict=False)
        ]
    except ValueError:
        assume(False)  # not a valid record: the tool never emits it
    envelope = build_envelope(sources)
    records = envelope["knowledge_sources"]
    # Equal records share one id and one envelope entry, so the forged one is named by its id.
    forged_id = records[forged]["id"] if 0 <= forged < len(records) else None
    if forged_id is not None:
        records[forged]["title"] = "Official.md"  # no longer matches its id: not verified
    tool = ToolMessage(
        content="\n".join(f"{citation_link(s)}\n{s.excerpt}" for s in sources),
        tool_call_id="c1",
        name="knowledge_search",
        artifact=envelope,
    )
    answer = str(ExtractiveResponder().invoke([HumanMessage(question), tool]).content)
    verified = [s for s in sources if s.id != forged_id]
    lines = answer.splitlines()
    if declined(answer):
        assert answer == NO_ANSWER or lines[1:4] == ["", f"### {CLOSEST_PASSAGES}", ""]
        quoted = lines[4:]
    else:
        assert lines[:2] == [ANSWER_HEADING, ""]
        quoted = lines[2:]
    for line, quote in zip(
        quoted, quoted_sentences(answer) or closest_passages(answer), strict=True
    ):
        assert any(
            line == f"- “{inert(quote)}” {citation_link(s)}"
            and quote in " ".join(s.excerpt.split())
            for s in verified
        ), line


def test_a_declined_question_shows_at_most_max_closest_passages() -> None:
    from deerflow.knowledge.responder._quotes import MAX_CLOSEST

    many = KnowledgeSource.create(
        provider="local",
        title="deer.md",
        excerpt=" ".join(
            f"Deer number {n} eat acorns in the woods near hill {n}." for n in range(9)
        ),
    )
    question = "Which colour are the acorns deer eat in the woods?"
    for most in (MAX_CLOSEST, MAX_CLOSEST + 1):
        tool = _tool(many)
        answer = str(
            ExtractiveResponder(max_closest=most).invoke([HumanMessage(question), tool]).content
        )
        assert declined(answer) and len(closest_passages(answer)) == most
    assert len(closest_passages(_answer(question, many))) == MAX_CLOSEST


def test_a_quantity_is_a_number_of_what_was_asked_and_a_date_is_a_date() -> None:
    chunks = KnowledgeSource.create(
        provider="local",
        title="local-index.txt",
        excerpt=(
            "Each index chunk holds at most 800 characters of a file. The index server listens "
            "at http://localhost:9380 for API key requests. LightRAG 1.4.9 or newer is required."
        ),
    )
    # "How many files": 800 counts characters; "how long": a port in a URL is no duration;
    # "When was … released?": a version is no date.
    assert declined(_answer("How many files can one index chunk hold?", chunks))
    assert declined(_answer("How long is an index server API key valid?", chunks))
    assert declined(_answer("When was LightRAG 1.4.9 released?", chunks))
    assert _quotes(_answer("How many characters can one index chunk hold?", chunks)) == [
        "Each index chunk holds at most 800 characters of a file."
    ]
    dated = KnowledgeSource.create(
        provider="local",
        title="changes.md",
        excerpt="LightRAG 1.4.9 was released in March 2025 with a new query endpoint.",
    )
    assert _quotes(_answer("When was LightRAG 1.4.9 released?", dated)) == [
        "LightRAG 1.4.9 was released in March 2025 with a new query endpoint."
    ]


def test_reading_quantities_and_quoting_inertly_cost_linear_work(monkeypatch: Any) -> None:
    from deerflow.knowledge.responder import _quotes

    calls = 0
    counted = _quotes.concepts

    def counting(text: str) -> tuple[str, ...]:
        nonlocal calls
        calls += 1
        return counted(text)

    monkeypatch.setattr(_quotes, "concepts", counting)
    focus = _quotes._focus("How many acorns do deer eat?")
    work = []
    for size in (100_000, 200_000):
        text = "1 x " * (size // 4)  # a number every four characters, none counting acorns
        item = _quotes._Scored(
            _quotes.Evidence(_quotes.Candidate(text, ""), 0, 0, "t.md"),
            frozenset(),
            frozenset(),
            frozenset(),
        )
        calls = 0
        assert not focus.met(item)
        work.append(calls)
    # Each number reads at most a few words after it: twice the text, twice the work.
    assert work[1] <= 2 * work[0] + _quotes._UNIT_WORDS
    assert work[1] <= _quotes._UNIT_WORDS * 200_000 // 4
    assert inert("<[`" * 333_334).count("\\") == 3 * 333_334  # a million characters


def test_blanking_file_paths_costs_work_linear_in_the_sentence() -> None:
    """Counted: one look at each white-space separated token, a million characters of tokens
    that are paths, almost paths, or one long slashed token alike."""
    from deerflow.knowledge.responder import _quotes

    for text in (
        "a/b.md " * 142_858,
        "a/b/c/d " * 125_000,
        "/x" * 500_000,
        "/" + "a" * 999_999,
    ):
        calls = 0
        is_path = _quotes._is_path

        def counting(token: str, is_path: Any = is_path) -> bool:
            nonlocal calls
            calls += 1
            return bool(is_path(token))

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_quotes, "_is_path", counting)
            blanked = _quotes._without_paths(text)
        assert calls == len(text.split()) and len(blanked) <= len(text)
