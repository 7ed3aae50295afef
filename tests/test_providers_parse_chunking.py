"""Chunks of whole statements: sentence and block boundaries, code fences kept whole, whole-sentence
overlap, and the bundled corpus cut that way."""

from __future__ import annotations

import itertools
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from deerflow.knowledge.providers.documents import document_pages
from deerflow.knowledge.providers.local import sample_corpus_path
from deerflow.knowledge.providers.parse.chunking import chunk_text

_FENCE_LINE = re.compile(r"^ {0,3}(```|~~~)", re.MULTILINE)


def _starts_a_statement(text: str, at: int) -> bool:
    """``text[at:]`` starts a block, a Markdown block line, or a sentence."""
    before = text[:at].rstrip()
    if not before or text[:at].endswith("\n\n") or before[-1] in ".!?":
        return True
    line_start = text.rfind("\n", 0, at) + 1
    previous = text[text.rfind("\n", 0, line_start - 1) + 1 : line_start - 1]
    return line_start == at and (
        re.match(r"#{1,6} |[-*+] |\d+\. |\|", text[at:]) is not None
        or previous.startswith("#")
        or previous == text[: line_start - 1]  # the line after a first-line title
    )


def _ends_a_statement(text: str, end: int) -> bool:
    after = text[end:]
    return not after.strip() or after.startswith("\n\n") or text[:end].rstrip()[-1] in ".!?`)"


def test_every_chunk_of_the_bundled_corpus_is_whole_statements() -> None:
    chunks = 0
    for path in sorted(sample_corpus_path().rglob("*")):
        if not path.is_file():
            continue
        for _, text in document_pages(path, path.read_bytes()):
            for chunk in chunk_text(text):
                at = text.index(chunk)
                assert _starts_a_statement(text, at), (path.name, chunk[:60])
                assert _ends_a_statement(text, at + len(chunk)), (path.name, chunk[-60:])
                assert not chunk.lstrip().startswith("#") or "\n" in chunk, chunk  # no lone heading
                assert len(_FENCE_LINE.findall(chunk)) % 2 == 0, chunk  # no cut inside a fence
                chunks += 1
    assert chunks >= 20


def test_a_chunk_boundary_never_falls_inside_a_code_fence() -> None:
    fence = "```python\ndef f():\n    return 1\n\n\nprint(f()). Not a sentence end.\n```"
    prose = " ".join(f"Sentence {i} is here." for i in range(12))
    text = f"{prose}\n\n{fence}\n\n{prose}"
    for size in range(len(fence), 260, 7):
        chunks = chunk_text(text, chunk_chars=size, chunk_overlap=40)
        assert any(fence in chunk for chunk in chunks), size
        for chunk in chunks:
            assert len(_FENCE_LINE.findall(chunk)) % 2 == 0, (size, chunk)


def test_a_fence_longer_than_a_chunk_is_cut_at_lines() -> None:
    fence = "```\n" + "\n".join(f"line {i} of code" for i in range(20)) + "\n```"
    chunks = chunk_text(fence, chunk_chars=60, chunk_overlap=0)
    assert len(chunks) > 1 and all(len(c) <= 60 for c in chunks)
    assert all(line in {x for c in chunks for x in c.splitlines()} for line in fence.splitlines())


def test_soft_line_breaks_are_not_boundaries_and_headings_stay_with_their_text() -> None:
    text = (
        "# Title\n\nThe first sentence is wrapped\nacross two lines here. The second one\n"
        "is wrapped as well.\n\n## Next\n\nA third sentence follows the heading."
    )
    chunks = chunk_text(text, chunk_chars=90, chunk_overlap=0)
    assert chunks == [
        "# Title\n\nThe first sentence is wrapped\nacross two lines here.",
        "The second one\nis wrapped as well.\n\n## Next\n\nA third sentence follows the heading.",
    ]
    # A heading that would end a chunk moves to the next one, with its text.
    assert chunk_text(text, chunk_chars=60, chunk_overlap=0)[-1] == (
        "## Next\n\nA third sentence follows the heading."
    )


def test_a_lower_case_continuation_is_not_a_sentence_start() -> None:
    text = "Use a flag, e.g. the one below. Then run it again."
    chunks = chunk_text(text, chunk_chars=35, chunk_overlap=0)
    assert chunks == ["Use a flag, e.g. the one below.", "Then run it again."]


def test_overlap_repeats_whole_sentences_only() -> None:
    sentences = [f"Statement {i} has {'several ' * (i % 4)}words in it." for i in range(30)]
    text = "\n".join(sentences)  # wrapped at sentence ends: lines are not units of their own
    chunks = chunk_text(text, chunk_chars=150, chunk_overlap=70)
    assert len(chunks) > 3
    for chunk in chunks:
        lines = chunk.splitlines()
        assert all(line in sentences for line in lines), chunk
    assert any(set(a.splitlines()) & set(b.splitlines()) for a, b in itertools.pairwise(chunks))


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab A.?!\n#-`~|1 ")), max_size=400),
    size=st.integers(16, 120),
    overlap=st.integers(0, 15),
)
def test_chunks_are_bounded_slices_that_cover_every_word(
    text: str, size: int, overlap: int
) -> None:
    chunks = chunk_text(text, chunk_chars=size, chunk_overlap=overlap)
    cursor = 0
    for chunk in chunks:
        assert chunk and chunk == chunk.strip() and len(chunk) <= size
        at = text.find(chunk, max(0, cursor - size))
        assert at >= 0
        cursor = at + len(chunk)
    covered = "".join(chunks)
    assert all(word in covered for word in text.split())
