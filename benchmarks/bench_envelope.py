"""read_envelope on a 100-record envelope (~800-character excerpts) against a stdlib baseline.

Baseline: ``json.dumps(sort_keys=True)`` + ``hashlib.sha256`` over the same records — the least
any verifier must do. Both are timed in the same run, interleaved, and the ratio of the medians is
printed last (target <= 3.0). Machines are noisy; only the ratio means anything.
"""

from __future__ import annotations

import hashlib
import json
import random
import statistics
import time

from deerflow.knowledge import KnowledgeSource, build_envelope, read_envelope

ROUNDS = 31
LOOPS = 20


def _corpus() -> tuple[str, dict[str, object]]:
    rng = random.Random(7)
    words = "deer fawn antler acorn forest meadow herd winter browse rut doe buck trail".split()
    sources = []
    for i in range(100):
        excerpt = " ".join(rng.choice(words) for _ in range(160))[:800]
        sources.append(
            KnowledgeSource.create(
                provider="lightrag", title=f"notes/{i:03d}.md", excerpt=excerpt, page=i + 1
            )
        )
    content = "\n\n".join(
        f"[{i}] [citation:{s.title}](#knowledge-source-{s.id}) page {s.page}\n{s.excerpt}"
        for i, s in enumerate(sources, 1)
    )
    return content, build_envelope(sources)


def main() -> None:
    content, artifact = _corpus()
    records = artifact["knowledge_sources"]
    assert isinstance(records, list)
    assert len(read_envelope(content, artifact).sources) == 100

    def baseline() -> None:
        for record in records:
            hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()

    def reader() -> None:
        read_envelope(content, artifact)

    timings: dict[str, list[float]] = {"baseline": [], "read_envelope": []}
    for _ in range(ROUNDS):
        for name, fn in (("baseline", baseline), ("read_envelope", reader)):
            start = time.perf_counter()
            for _ in range(LOOPS):
                fn()
            timings[name].append((time.perf_counter() - start) / LOOPS)
    base = statistics.median(timings["baseline"])
    ours = statistics.median(timings["read_envelope"])
    print(f"baseline json.dumps+sha256, 100 records: {base * 1e6:.0f} µs")
    print(f"read_envelope, 100 records:              {ours * 1e6:.0f} µs")
    print(f"read_envelope/baseline ratio: {ours / base:.2f}")


if __name__ == "__main__":
    main()
