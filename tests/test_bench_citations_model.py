"""The model-citation benchmark's scoring, and its whole run against the scripted server (so the
opt-in live test and benchmark are known to work before a real model is at hand)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from benchmarks.bench_citations_model import (
    MANGLED_EDITS,
    MODEL_NAME_ENV,
    MODEL_URL_ENV,
    edit_distance,
    live_model,
    questions,
    report,
    run_arms,
    score,
)

from deerflow.knowledge import RetrievalHit, RetrievalResult, format_result
from tests.scripted_model import MODEL_NAME, ScriptedModel

FORGED = "[citation:Forged](#knowledge-source-" + "f" * 32 + ")"


def _turn() -> tuple[list[dict[str, Any]], str]:
    result = format_result(
        RetrievalResult(
            provider="local", query="q", hits=[RetrievalHit(title="guide.md", text="Deer.")]
        )
    )
    tool = {
        "type": "tool",
        "name": "knowledge_search",
        "tool_call_id": "c",
        "content": result.content,
        "artifact": result.artifact,
    }
    link = f"[citation:guide.md](#knowledge-source-{result.sources[0].id})"
    return [{"type": "human", "content": "q"}, tool], link


def test_each_kind_of_link_is_counted_once() -> None:
    turn, link = _turn()
    source_id = link[-33:-1]
    swapped = link[:-3] + ("0" if link[-3] != "0" else "1") + link[-2:]
    answer = (
        f"{link} [citation:Guide](#knowledge-source-{source_id}) {swapped} {FORGED} "
        "[citation:x](#knowledge-source-12) [web](https://example.com)"
    )
    got = score(answer, turn)
    assert (got.exact, got.relabeled, got.mangled, got.invented, got.malformed) == (1, 1, 1, 1, 1)
    assert got.audit_malformed == 1 and got.forged == 0


def test_edit_distance_stops_past_its_limit() -> None:
    assert edit_distance("abcd", "abcd", limit=MANGLED_EDITS) == 0
    assert edit_distance("abcd", "abed", limit=MANGLED_EDITS) == 1
    assert edit_distance("a" * 10, "b" * 10, limit=MANGLED_EDITS) == MANGLED_EDITS + 1
    assert edit_distance("a", "a" * 20, limit=MANGLED_EDITS) == MANGLED_EDITS + 1


def test_live_runs_say_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODEL_URL_ENV, raising=False)
    monkeypatch.setenv(MODEL_NAME_ENV, "smollm2")
    reason = live_model()
    assert isinstance(reason, str) and MODEL_URL_ENV in reason and MODEL_NAME_ENV in reason


@pytest.fixture
def scripted() -> Iterator[ScriptedModel]:
    model = ScriptedModel()
    yield model
    model.close()


def test_the_benchmark_runs_end_to_end_against_the_scripted_server(
    scripted: ScriptedModel,
) -> None:
    arms = asyncio.run(run_arms(scripted.base_url, MODEL_NAME, questions(limit=1), pasted=True))
    rows = {arm.name: report(arm) for arm in arms}
    assert list(rows) == ["plain", "grammar", "pasted", "pasted+grammar"]
    # The scripted model mangles an id unless the grammar stops it. Pasted, the last message is a
    # question, which it answers with a tool call: no link either way.
    assert rows["plain"]["mangled"] == rows["plain"]["answers"] == 2
    for name in ("grammar",):
        assert rows[name]["exact"] == rows[name]["answers"] == 2
        assert rows[name]["verify forged"] == rows[name]["verify malformed"] == 0
    assert rows["pasted"]["with a link"] == rows["pasted+grammar"]["with a link"] == 0
    bodies_with_grammar = [body for body in scripted.requests if "grammar" in body]
    assert len(bodies_with_grammar) == 4
    pasted_bodies = bodies_with_grammar[1::2]
    assert all(body["messages"][-1]["role"] == "user" for body in pasted_bodies)
