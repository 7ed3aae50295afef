"""A varied synthetic corpus for the local-index benchmarks, generated from a fixed seed.

Copying the bundled corpus thousands of times gives every term the same document frequency and
every query the same few thousand matches, which flatters neither engine. Instead this writes many
distinct Markdown documents whose words follow a Zipf law over a pseudo-word vocabulary mixed with
English function words (so stopwords, common and rare terms all occur), each with a title and
sections, plus one copy of the bundled sample corpus (with its PDF). Queries are drawn from the
same seed: phrases lifted from random documents, and the project's own questions.
"""

from __future__ import annotations

import itertools
import random
import shutil
from pathlib import Path

from deerflow.knowledge.providers.local import sample_corpus_path

__all__ = ["PROJECT_QUERIES", "make_corpus", "make_queries"]

SEED = 20_261_201
VOCABULARY = 30_000
ZIPF_EXPONENT = 1.07
#: About this many code points per chunk (the default chunk size is 800; chunks end on sentences).
CHARS_PER_CHUNK = 530
PROJECT_QUERIES = (
    "how are citations verified",
    "trust boundary reserved keys",
    "LightRAG query data endpoint",
    "RAGFlow datasets embedding model",
    "page numbers from PDF",
    "tool output budget pruned evidence",
    "subagent source accumulator",
    "what happens when the tool output is too long",
    "source id SHA-256 canonical JSON",
    "incremental index unchanged files",
    "React renderer chips",
    "How is a source id computed?",
)
_FUNCTION_WORDS = (
    "the of and to a in is that for it as with was on be by at this are from or an which "
    "not have has but can all when if will one each so more their other these some only into "
    "any may its also than then there what about after before every where most such"
).split()
_SYLLABLES = (
    "ka ri to na me su lo vi de ra mo ti ne pa ku se li ro fa zu ba ge hi jo ve wa ye xo qui"
).split()


def _vocabulary(rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < VOCABULARY:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    ordered = sorted(words)
    rng.shuffle(ordered)
    # Function words take the top ranks, the way they do in real text.
    return _FUNCTION_WORDS + ordered


class _Writer:
    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._words = _vocabulary(rng)
        self._cum = list(
            itertools.accumulate(
                1 / (rank**ZIPF_EXPONENT) for rank in range(1, len(self._words) + 1)
            )
        )

    def words(self, count: int) -> list[str]:
        return self._rng.choices(self._words, cum_weights=self._cum, k=count)

    def sentence(self) -> str:
        words = self.words(self._rng.randint(6, 22))
        return " ".join(words).capitalize() + self._rng.choice(".....?!")

    def paragraph(self) -> str:
        return " ".join(self.sentence() for _ in range(self._rng.randint(2, 6)))

    def document(self, chunks: int) -> str:
        title = " ".join(self.words(self._rng.randint(2, 5))).title()
        parts = [f"# {title}"]
        size = 0
        while size < chunks * CHARS_PER_CHUNK:
            if self._rng.random() < 0.15:
                parts.append("## " + " ".join(self.words(self._rng.randint(2, 4))).title())
            paragraph = self.paragraph()
            parts.append(paragraph)
            size += len(paragraph)
        return "\n\n".join(parts) + "\n"


def make_corpus(root: Path, target_chunks: int, *, seed: int = SEED) -> Path:
    """Write about ``target_chunks`` chunks' worth of distinct documents (and the bundled corpus)
    under ``root``, the same bytes for the same arguments."""
    rng = random.Random(seed)
    writer = _Writer(rng)
    shutil.copytree(sample_corpus_path(), root / "sample")
    written = 0
    number = 0
    while written < target_chunks:
        chunks = rng.randint(1, 16)
        folder = root / f"topic{number % 97:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"doc{number:05d}.md").write_text(writer.document(chunks), encoding="utf-8")
        written += chunks
        number += 1
    return root


def make_queries(root: Path, count: int, *, seed: int = SEED) -> list[str]:
    """``count`` phrases of 2 to 6 consecutive words lifted from random synthetic documents, then
    the project's questions (which the sample documents answer)."""
    rng = random.Random(seed + 1)
    files = sorted(root.glob("topic*/doc*.md"))
    queries = []
    for file in rng.sample(files, count):
        words = file.read_text(encoding="utf-8").split()
        length = rng.randint(2, 6)
        start = rng.randrange(0, max(1, len(words) - length))
        queries.append(" ".join(w.strip(".?!#") for w in words[start : start + length]))
    return queries + list(PROJECT_QUERIES)
