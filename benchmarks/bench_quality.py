"""Answer quality of the embedded default: local search and the offline responder, measured on the
committed evaluation sets (benchmarks/eval) over the bundled sample corpus.

The four answer measures (see :func:`benchmarks.eval.quality`), each against its target:

* first quote answers: the reply's first quoted sentence contains an answer span;
* cites the right document: a quote cites an answering document (and PDF page);
* unanswerable declined: unanswerable and near-miss questions get the no-answer reply;
* off-question quotes per answer: quotes that contain no answer span, per answerable question.

Retrieval figures (recall@1, recall@3, the answering document among the tool's evidence) and the
share of questions whose answer is in a sentence the responder could quote (the ceiling of the
first measure: below it the responder ranks, above it retrieval or sentence splitting fails) are
printed for context. The figures are printed for the ``tune`` split (with its misses), the
``held_out`` split (figures only: its questions are never read while the responder is tuned), the
whole natural-language set, and the literal set. Each figure is last on its line.

    uv run python -m benchmarks.bench_quality
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from benchmarks.eval import LITERAL_PATH, Quality, load_questions, quality

from deerflow.knowledge.providers.local import LocalProvider, sample_corpus_path

#: (comparison, target) per measure; None for the figures printed for context.
TARGETS: dict[str, tuple[str, float] | None] = {
    "recall@1": None,
    "recall@3": None,
    "answer in evidence": None,
    "answer quotable": None,
    "first quote answers": ("≥", 0.85),
    "cites the right document": ("≥", 0.95),
    "unanswerable declined": ("≥", 0.95),
    "off-question quotes per answer": ("≤", 0.1),
}


def _print(name: str, report: Quality, *, misses: bool) -> None:
    print(f"{name}: {report.answerable} answerable, {report.unanswerable} unanswerable questions")
    if misses:
        for miss in report.misses:
            print(f"  miss: {miss}")
    for measure, value in report.figures().items():
        target = TARGETS[measure]
        goal = "" if target is None else f" (target {target[0]} {target[1]:.2f})"
        print(f"  {measure}{goal}: {value:.3f}")


def main(argv: list[str] | None = None) -> None:
    """``--misses`` prints the tune and literal sets' misses (never the held-out split's)."""
    show = "--misses" in (sys.argv[1:] if argv is None else argv)
    natural = load_questions()
    literal = load_questions(LITERAL_PATH)
    with tempfile.TemporaryDirectory() as temp:
        provider = LocalProvider(Path(temp) / "index.sqlite")
        provider.index(sample_corpus_path())
        runs = [
            ("tune", natural.only("tune"), show),
            ("held_out", natural.only("held_out"), False),
            ("all (tune + held_out)", natural, False),
            ("literal", literal, show),
        ]
        for name, questions, misses in runs:
            _print(name, asyncio.run(quality(provider, questions)), misses=misses)
        provider.close()


if __name__ == "__main__":
    main()
