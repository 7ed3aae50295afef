"""Answer quality of the embedded default: local search and the offline responder, measured on the
committed evaluation set (benchmarks/eval/questions.json) over the bundled sample corpus.

* recall@1 / recall@3: the share of answerable questions whose answering document (and PDF page)
  is the first hit / among the first three hits of ``LocalProvider.search``.
* first-quote hit: the share of answerable questions whose reply's first quoted sentence contains
  the answer span (white space normalized), running the real ``knowledge_search`` tool and the
  real ``ExtractiveResponder`` on its content and artifact.
* false answers: the share of unanswerable questions that get any quote instead of the
  no-answer reply.

Each figure is printed against its target, figure last on the line.

    uv run python -m benchmarks.bench_quality
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from benchmarks.eval import load_questions, quality

from deerflow.knowledge.providers.local import LocalProvider, sample_corpus_path

TARGETS = {"recall@1": None, "recall@3": 0.9, "first-quote hit": 0.7, "false answers": 0.1}


def main() -> None:
    questions = load_questions()
    with tempfile.TemporaryDirectory() as temp:
        provider = LocalProvider(Path(temp) / "index.sqlite")
        provider.index(sample_corpus_path())
        report = asyncio.run(quality(provider, questions))
        provider.close()
    print(
        f"evaluation set: {len(questions.answerable)} answerable, "
        f"{len(questions.unanswerable)} unanswerable questions"
    )
    for miss in report.misses:
        print(f"  miss: {miss}")
    for name, value in report.figures().items():
        target = TARGETS[name]
        goal = "" if target is None else f" (target {'≤' if name == 'false answers' else '≥'}"
        goal += "" if target is None else f" {target:.2f})"
        print(f"{name}{goal}: {value:.3f}")


if __name__ == "__main__":
    main()
