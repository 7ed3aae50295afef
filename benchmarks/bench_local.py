"""The local provider at 10k and 100k chunks: index throughput against the read + chunk floor, and
search latency against bm25s.

The corpus is ``benchmarks.synthetic_corpus``: many distinct documents from a fixed seed plus the
bundled sample corpus (with its PDF). For each size:

* **Index.** ``LocalProvider.index`` from scratch, against the floor of doing only what any index
  must do with the same code: discover, read, hash and chunk every file (the faster of a run
  before and one after indexing). Ratio floor/index
  (higher is better; 1.0 would be an index that costs nothing beyond reading). The CPU seconds of
  both are printed too (the index's in this process and in its reader process): on a shared
  machine the wall-clock ratio of a two-process index moves with the load, CPU time hardly.
* **Search.** The median of ``LocalProvider.search_sync`` (top 8) against ``bm25s.BM25`` over
  exactly the same chunk texts, tokenized with the same ``tokenize`` function, taking the same top
  8, and a bare FTS5 ``MATCH … ORDER BY rank LIMIT 8`` over the same index for reference. All are
  timed in the same run, interleaved; the ratio ours/bm25s of the medians is printed last (lower
  is better). Machines are noisy; only the ratios mean anything.

    uv run python -m benchmarks.bench_local            # 10k and 100k
    uv run python -m benchmarks.bench_local 10000      # one size
"""

from __future__ import annotations

import hashlib
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import bm25s
from benchmarks.synthetic_corpus import make_corpus, make_queries

from deerflow.knowledge.providers.documents import discover as _discover
from deerflow.knowledge.providers.documents import read_bytes as _read_bytes
from deerflow.knowledge.providers.local import DEFAULT_LIMIT, LocalProvider, fts_query, tokenize

SIZES = (10_000, 100_000)
ROUNDS = 5
SYNTHETIC_QUERIES = 36


def _floor(provider: LocalProvider, root: Path) -> tuple[float, int]:
    """Seconds to discover, read, hash and chunk every file, and the chunks that makes."""
    started = time.perf_counter()
    candidates, _ = _discover(root)
    chunks = 0
    for candidate in candidates:
        data = _read_bytes(candidate.file)
        hashlib.sha256(data).hexdigest()
        chunks += len(provider._chunks(candidate.file, data))
    return time.perf_counter() - started, chunks


def _cpu() -> tuple[float, float]:
    """CPU seconds used so far by this process and by its children that have been waited for."""
    mine = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime, children.ru_utime + children.ru_stime


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


def _p90_ms(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=10)[-1] * 1e3


def run(size: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as temp:
        work = Path(temp)
        corpus = make_corpus(work / "corpus", size)
        queries = make_queries(corpus, SYNTHETIC_QUERIES)
        provider = LocalProvider(work / "index.sqlite")
        floor_cpu = _cpu()[0]
        first_floor, floor_chunks = _floor(provider, corpus)
        floor_cpu = _cpu()[0] - floor_cpu
        cpu_before = _cpu()
        started = time.perf_counter()
        report = provider.index(corpus)
        index_seconds = time.perf_counter() - started
        parent_cpu, child_cpu = (
            after - before for after, before in zip(_cpu(), cpu_before, strict=True)
        )
        # The faster of a floor run before the index and one after (files in the page cache), so
        # that neither side gains from a cache the other warmed.
        second_cpu = _cpu()[0]
        floor_seconds = min(first_floor, _floor(provider, corpus)[0])
        floor_cpu = min(floor_cpu, _cpu()[0] - second_cpu)
        assert report.chunks == floor_chunks, (report.chunks, floor_chunks)

        connection = sqlite3.connect(work / "index.sqlite")
        texts = [row[0] for row in connection.execute("SELECT text FROM chunks ORDER BY id")]
        build_started = time.perf_counter()
        retriever = bm25s.BM25()
        retriever.index([tokenize(text) for text in texts], show_progress=False)
        build_seconds = time.perf_counter() - build_started
        del texts

        def ours(query: str) -> None:
            provider.search_sync(query)

        def baseline(query: str) -> None:
            tokens = [t for t in tokenize(query) if t in retriever.vocab_dict]
            if tokens:
                retriever.retrieve([tokens], k=DEFAULT_LIMIT, show_progress=False)

        def raw(query: str) -> None:
            expression = fts_query(query)
            connection.execute(
                "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?",
                (expression, DEFAULT_LIMIT),
            ).fetchall()

        runs: dict[str, Callable[[str], None]] = {"bm25s": baseline, "raw": raw, "ours": ours}
        for query in queries:  # warm up (connection pool, page cache)
            for run_one in runs.values():
                run_one(query)
        timings: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(ROUNDS):
            for query in queries:
                for name, run_one in runs.items():
                    start = time.perf_counter()
                    run_one(query)
                    timings[name].append(time.perf_counter() - start)
        connection.close()
        provider.close()

    base, mine, bare = (_median_ms(timings[name]) for name in ("bm25s", "ours", "raw"))
    tails = {name: _p90_ms(samples) for name, samples in timings.items()}
    throughput = report.chunks / index_seconds
    floor_throughput = floor_chunks / floor_seconds
    print(f"--- {report.documents:,} files, {report.chunks:,} chunks, {len(queries)} queries")
    print(f"read + hash + chunk floor: {floor_throughput:,.0f} chunks/s ({floor_seconds:.2f} s)")
    print(
        f"LocalProvider.index: {throughput:,.0f} chunks/s ({index_seconds:.2f} s; "
        f"bm25s index build {build_seconds:.2f} s)"
    )
    # CPU time hardly depends on what else the machine runs: the floor's against the busier of
    # the index's two processes bounds the ratio that two idle cores could reach.
    print(
        f"CPU: floor {floor_cpu:.2f} s; index {parent_cpu:.2f} s here + {child_cpu:.2f} s in its "
        f"reader process; floor / busier process {floor_cpu / max(parent_cpu, child_cpu):.3f}"
    )
    print(f"index/floor throughput ratio at {size:,}: {throughput / floor_throughput:.3f}")
    print(f"bm25s search, median:                   {base:.2f} ms (p90 {tails['bm25s']:.2f} ms)")
    print(f"bare FTS5 MATCH ORDER BY rank, median:  {bare:.2f} ms (p90 {tails['raw']:.2f} ms)")
    print(f"LocalProvider.search, median:           {mine:.2f} ms (p90 {tails['ours']:.2f} ms)")
    print(f"local/bm25s p90 search latency ratio at {size:,}: {tails['ours'] / tails['bm25s']:.3f}")
    print(f"local/bm25s search latency ratio at {size:,}: {mine / base:.3f}")
    return throughput / floor_throughput, mine / base


def main(argv: list[str]) -> None:
    sizes = tuple(int(arg) for arg in argv) or SIZES
    for size in sizes:
        run(size)


if __name__ == "__main__":
    main(sys.argv[1:])
