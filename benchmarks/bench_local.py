"""The local provider on ~10,000 chunks: index throughput, and search latency against rank_bm25.

The bundled sample corpus is copied into enough sub-folders to make about 10,000 chunks, then
indexed from scratch (throughput in chunks/s). Search latency is the median of
``await LocalProvider.search`` (SQLite FTS5 bm25() in a worker thread, top 8) against a
``rank_bm25.BM25Okapi`` baseline over exactly the same chunk texts, tokenized with the same
``tokenize`` function, taking the same top 8 (``get_scores`` + ``heapq.nlargest``). Both are timed
in the same run, interleaved; the ratio ours/baseline of the medians is printed last (lower is
better). Machines are noisy; only the ratio means anything.

    uv run python benchmarks/bench_local.py
"""

from __future__ import annotations

import asyncio
import heapq
import math
import shutil
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from rank_bm25 import BM25Okapi

from deerflow.knowledge.providers.local import (
    DEFAULT_LIMIT,
    LocalProvider,
    sample_corpus_path,
    tokenize,
)

TARGET_CHUNKS = 10_000
ROUNDS = 7
QUERIES = (
    "how are citations verified",
    "trust boundary reserved keys",
    "LightRAG query data endpoint",
    "RAGFlow datasets embedding model",
    "page numbers from PDF",
    "tool output budget pruned evidence",
    "subagent source accumulator",
    "what happens when the tool output is too long",
    "source id SHA-256 canonical JSON",
    "hostile payloads script",
    "incremental index unchanged files",
    "React renderer chips",
)


def _replicate(work: Path) -> Path:
    corpus = work / "corpus"
    probe = LocalProvider(work / "probe.sqlite")
    per_copy = probe.index(sample_corpus_path()).chunks
    copies = math.ceil(TARGET_CHUNKS / per_copy)
    for number in range(copies):
        shutil.copytree(sample_corpus_path(), corpus / f"copy{number:04d}")
    return corpus


def main() -> None:
    with tempfile.TemporaryDirectory() as temp:
        work = Path(temp)
        corpus = _replicate(work)
        provider = LocalProvider(work / "index.sqlite")
        started = time.perf_counter()
        report = provider.index(corpus)
        seconds = time.perf_counter() - started
        with sqlite3.connect(work / "index.sqlite") as connection:
            texts = [row[0] for row in connection.execute("SELECT text FROM chunks ORDER BY id")]

        build_started = time.perf_counter()
        baseline_index = BM25Okapi([tokenize(text) for text in texts])
        build_seconds = time.perf_counter() - build_started

        loop = asyncio.new_event_loop()

        def ours(query: str) -> None:
            loop.run_until_complete(provider.search(query))

        def baseline(query: str) -> None:
            scores = baseline_index.get_scores(tokenize(query))
            heapq.nlargest(DEFAULT_LIMIT, range(len(scores)), key=scores.__getitem__)

        for query in QUERIES:  # warm up both (connection pool, page cache)
            ours(query)
            baseline(query)
        timings: dict[str, list[float]] = {"baseline": [], "ours": []}
        for _ in range(ROUNDS):
            for query in QUERIES:
                for name, run in (("baseline", baseline), ("ours", ours)):
                    start = time.perf_counter()
                    run(query)
                    timings[name].append(time.perf_counter() - start)
        loop.close()
        provider.close()

    base = statistics.median(timings["baseline"])
    mine = statistics.median(timings["ours"])
    print(f"corpus: {report.documents} files, {report.chunks} chunks")
    print(
        f"index throughput: {report.chunks / seconds:,.0f} chunks/s "
        f"({seconds:.2f} s; rank_bm25 index build {build_seconds:.2f} s)"
    )
    print(f"baseline rank_bm25 BM25Okapi search, median: {base * 1e3:.2f} ms")
    print(f"LocalProvider.search (FTS5 bm25), median:   {mine * 1e3:.2f} ms")
    print(f"local/baseline search latency ratio: {mine / base:.3f}")


if __name__ == "__main__":
    main()
