"""The citation grammar with a real model (opt-in: a local llama.cpp server; not in CI).

    DEERFLOW_KNOWLEDGE_LIVE_MODEL=http://127.0.0.1:8080/v1 DEERFLOW_KNOWLEDGE_LIVE_MODEL_NAME=smollm2 \\
        uv run pytest -q -s tests/test_local_model_live.py

``scripts/setup_local_model.sh`` sets the server up (SmolLM2-135M on llama-cpp-python; the build
takes about 20 minutes). A fixed set of questions goes through the real ``knowledge_search`` tool
and the model answers each with and without the grammar; with it, every link must be exactly a
verified record and ``verify`` must find nothing forged or malformed. The figures of both arms
are printed (``-s``). Without the variables the test is skipped and says what to set.
"""

from __future__ import annotations

import asyncio

import pytest
from benchmarks.bench_citations_model import live_model, questions, report, run_arms

#: Questions the live test asks (the benchmark asks them all): held-out ones, then the canary.
LIVE_QUESTIONS = 5


def test_a_real_model_cites_only_verified_records_under_the_grammar() -> None:
    found = live_model()
    if isinstance(found, str):
        pytest.skip(found)
    url, name = found
    plain, constrained = asyncio.run(run_arms(url, name, questions(limit=LIVE_QUESTIONS)))
    print("\nplain:", report(plain), "\ngrammar:", report(constrained))
    assert constrained.failures == 0 and constrained.scores
    for item in constrained.scores:
        assert item.links == item.exact, item
        assert item.forged == 0 and item.audit_malformed == 0, item
