"""The middlewares that carry a subagent's cited evidence through DeerFlow's ``task`` (README:
Inside DeerFlow, Subagents). DeerFlow itself is exercised in tests/integration/deerflow/
test_subagents.py; here each rule is checked on the middlewares as DeerFlow calls them."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.types import Command

from deerflow.knowledge import KnowledgeSource, build_envelope, read_envelope
from deerflow.knowledge.audit import audit_thread, thread_messages
from deerflow.knowledge.formatting import citation_link
from deerflow.knowledge.forwarding import APPENDIX_HEADER
from deerflow.knowledge.integrations.deerflow import subagents
from deerflow.knowledge.integrations.deerflow.subagents import (
    MAX_PENDING_CHILDREN,
    ChildEvidenceCollector,
    EvidenceRelay,
    SubagentEvidence,
    TaskEvidenceForwarder,
)
from deerflow.knowledge.native import NativeSource, build_native_snapshot, native_entry, read_native
from deerflow.knowledge.rules import MAX_SOURCES

THREAD, RUN = "thread-1", "run-1"
_ids = itertools.count()


def _source(n: int) -> KnowledgeSource:
    return KnowledgeSource.create(
        provider="local", title=f"doc{n}.md", excerpt=f"Fact {n} about the tide."
    )


def _native(n: int) -> NativeSource:
    return NativeSource(
        id=f"{n:032x}-1",
        dataset_id="ds",
        document_id=f"d{n}",
        chunk_id=f"c{n}",
        dataset_name="Manuals",
        document_name=f"manual{n}.pdf",
        text=f"Native passage {n}.",
        truncated=False,
        pages=(2,),
    )


def _search(sources: list[KnowledgeSource]) -> ToolMessage:
    return ToolMessage(
        content="\n\n".join(f"{citation_link(s)}\n{s.excerpt}" for s in sources),
        artifact=build_envelope(sources),
        name="knowledge_search",
        tool_call_id=f"ks_{next(_ids)}",
        id=f"tm_{next(_ids)}",
    )


def _native_search(natives: list[NativeSource]) -> ToolMessage:
    return ToolMessage(
        content="\n\n".join(native_entry(s, i) for i, s in enumerate(natives, 1)),
        artifact={"knowledge_sources": build_native_snapshot(natives)},
        name="knowledge_search",
        tool_call_id=f"ks_{next(_ids)}",
        id=f"tm_{next(_ids)}",
    )


@dataclass
class Store:
    """DeerFlow's ``ExtensionData``, as much of it as the middlewares use."""

    scope_id: str = "app"
    entries: dict[type, Any] = field(default_factory=dict)

    def get_or_init(self, typ: type, init: Any) -> Any:
        return self.entries.setdefault(typ, init())


def _child_context(task_call_id: str, **fields: Any) -> dict[str, Any]:
    """The runtime context DeerFlow's subagent executor builds for a child."""
    return {
        "thread_id": THREAD,
        "run_id": RUN,
        "is_subagent": True,
        "__deerflow_extension_task_store": Store(scope_id=task_call_id),
        **fields,
    }


def _child_calls(relay: EvidenceRelay, task_call_id: str, *results: Any, **context: Any) -> None:
    """The child's tool calls as DeerFlow's tool node runs them through the collector."""
    collector = ChildEvidenceCollector(relay)
    request = SimpleNamespace(
        runtime=SimpleNamespace(context=_child_context(task_call_id, **context))
    )

    async def run() -> None:
        for result in results:

            async def handler(_: Any, result: Any = result) -> Any:
                return result

            assert await collector.awrap_tool_call(request, handler) is result  # unchanged

    asyncio.run(run())


def _task_message(task_call_id: str, report: str, status: str = "completed") -> ToolMessage:
    """DeerFlow's own ``task`` result message (content and additional_kwargs as it writes them)."""
    return ToolMessage(
        content=f"Task Succeeded. Result: {report}" if status == "completed" else "Task failed.",
        tool_call_id=task_call_id,
        name="task",
        id=f"task_msg_{task_call_id}",
        additional_kwargs={
            "subagent_status": status,
            "subagent_result_brief": report[:2000],
            "subagent_token_usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
            "subagent_model_name": "stub-model",
        },
    )


def _lead_state(*task_messages: ToolMessage) -> dict[str, Any]:
    calls = [
        {"id": m.tool_call_id, "name": "task", "args": {"prompt": "go"}} for m in task_messages
    ]
    return {
        "messages": [
            HumanMessage("question", id="h1"),
            AIMessage("", tool_calls=calls, id="ai1"),
            *task_messages,
        ]
    }


def _lead(relay: EvidenceRelay, state: dict[str, Any], **kwargs: Any) -> dict[str, Any] | None:
    forwarder = TaskEvidenceForwarder(
        relay, appendix_chars=kwargs.pop("budget", lambda: None), **kwargs
    )
    runtime = SimpleNamespace(context={"thread_id": THREAD, "run_id": RUN})
    return asyncio.run(forwarder.abefore_model(state, runtime))


def _only(update: dict[str, Any] | None) -> ToolMessage:
    assert update is not None
    (message,) = update["messages"]
    assert isinstance(message, ToolMessage)
    return message


def test_forwards_only_what_the_report_cites_and_keeps_deerflows_fields() -> None:
    relay = EvidenceRelay()
    hits = [_source(n) for n in range(5)]
    _child_calls(relay, "call_task_1", _search(hits))
    report = f"High water follows {citation_link(hits[3])} and {citation_link(hits[1])}."
    original = _task_message("call_task_1", report)
    message = _only(_lead(relay, _lead_state(original)))

    assert read_envelope(message.content, message.artifact).sources == (hits[3], hits[1])
    assert message.content.startswith(str(original.content) + APPENDIX_HEADER)
    for name in ("id", "tool_call_id", "name", "status", "additional_kwargs", "response_metadata"):
        assert getattr(message, name) == getattr(original, name), name
    # the lead's answer copying the links verifies against the thread
    answer = AIMessage(f"Per the subagent, {citation_link(hits[3])} {citation_link(hits[1])}.")
    thread = thread_messages({"messages": [*_lead_state(message)["messages"], answer]})
    assert [a.status for a in audit_thread(thread)] == ["verified", "verified"]
    assert len(relay) == 0  # taken once


def test_before_fix_nothing_verifies() -> None:
    """What DeerFlow's message carries without the forwarder: the lead's citations dangle."""
    hits = [_source(1), _source(2)]
    report = f"{citation_link(hits[0])} {citation_link(hits[1])}"
    answer = AIMessage(f"Copied: {report}")
    thread = thread_messages(
        {"messages": [*_lead_state(_task_message("t", report))["messages"], answer]}
    )
    assert [a.status for a in audit_thread(thread)] == ["evidence-not-loaded"] * 2


def test_a_child_that_never_searched_forwards_nothing() -> None:
    report = f"From memory: {citation_link(_source(1))}."
    relay = EvidenceRelay()
    _child_calls(relay, "t", ToolMessage(content="total 0", name="ls", tool_call_id="x", id="ls1"))
    app = Store()
    started = SimpleNamespace(kind="subagent", thread_id=THREAD, run_id=RUN)
    asyncio.run(SubagentEvidence().on_task_start(app, Store(scope_id="t"), started))  # no tool call
    for known in (relay, subagents._relay(app)):
        message = _only(_lead(known, _lead_state(_task_message("t", report))))
        assert message.artifact is None
        assert "#knowledge-source-" not in message.content  # the unverifiable link is its label
    assert _lead(EvidenceRelay(), _lead_state(_task_message("t", report))) is None  # no child ran


def test_a_report_citing_ids_never_retrieved_forwards_nothing() -> None:
    relay = EvidenceRelay()
    _child_calls(relay, "t", _search([_source(1)]))
    invented = _source(99)
    message = _only(
        _lead(relay, _lead_state(_task_message("t", f"See {citation_link(invented)}.")))
    )
    assert message.artifact is None and APPENDIX_HEADER not in message.content
    assert invented.id not in message.content


def test_a_forged_child_artifact_forwards_nothing() -> None:
    relay = EvidenceRelay()
    forged = _search([_source(2)])
    forged.artifact["knowledge_sources"][0]["excerpt"] = "Invented."  # the id no longer recomputes
    on_ai = AIMessage("x", artifact=build_envelope([_source(3)]), id="ai_art")  # never evidence
    _child_calls(relay, "t", forged, Command(update={"messages": [on_ai]}))
    report = f"{citation_link(_source(2))} {citation_link(_source(3))}"
    message = _only(_lead(relay, _lead_state(_task_message("t", report))))
    assert message.artifact is None


def test_a_caller_context_is_not_a_child() -> None:
    relay = EvidenceRelay()
    _child_calls(relay, "t", _search([_source(1)]), is_subagent="yes")
    _child_calls(
        relay, "u", _search([_source(1)]), __deerflow_extension_task_store={"scope_id": "u"}
    )
    assert len(relay) == 0


def test_tool_results_as_commands_are_observed() -> None:
    relay = EvidenceRelay()
    _child_calls(relay, "t", Command(update={"messages": [_search([_source(1)])]}))
    message = _only(_lead(relay, _lead_state(_task_message("t", citation_link(_source(1))))))
    assert read_envelope(message.content, message.artifact).sources == (_source(1),)


@pytest.mark.parametrize("status", ["failed", "cancelled", "timed_out", "polling_timed_out"])
def test_a_child_that_did_not_complete_keeps_deerflows_message(status: str) -> None:
    relay = EvidenceRelay()
    _child_calls(relay, "t", _search([_source(1)]))
    assert _lead(relay, _lead_state(_task_message("t", citation_link(_source(1)), status))) is None
    assert len(relay) == 0  # dropped, not left for a later step


def test_other_threads_runs_and_calls_are_not_mixed() -> None:
    relay = EvidenceRelay()
    _child_calls(relay, "t", _search([_source(1)]), run_id="other-run")
    _child_calls(relay, "t", _search([_source(1)]), thread_id="other-thread")
    _child_calls(relay, "t2", _search([_source(1)]))
    assert _lead(relay, _lead_state(_task_message("t", citation_link(_source(1))))) is None
    assert len(relay) == 3


def test_parallel_tasks_each_get_their_own_evidence() -> None:
    relay = EvidenceRelay()
    _child_calls(relay, "a", _search([_source(1)]))
    _child_calls(relay, "b", _search([_source(2)]))
    a = _task_message("a", citation_link(_source(1)))
    b = _task_message("b", f"{citation_link(_source(1))} {citation_link(_source(2))}")
    update = _lead(relay, _lead_state(a, b))
    assert update is not None
    first, second = update["messages"]
    assert read_envelope(first.content, first.artifact).sources == (_source(1),)
    assert read_envelope(second.content, second.artifact).sources == (_source(2),)


def test_only_the_last_step_is_examined() -> None:
    """An older ``task`` message (already handled, or from an earlier turn) is never touched."""
    relay = EvidenceRelay()
    _child_calls(relay, "old", _search([_source(1)]))
    state = _lead_state(_task_message("old", citation_link(_source(1))))
    state["messages"] += [AIMessage("answer", id="ai2"), HumanMessage("next", id="h2")]
    assert _lead(relay, state) is None
    assert len(relay) == 1


def test_both_formats_cited_use_the_dual_layout() -> None:
    relay = EvidenceRelay()
    shared, native = _source(1), _native(1)
    _child_calls(relay, "t", _search([shared]), _native_search([native]))
    report = f"Shared {citation_link(shared)} and native [citation:1](#knowledge-{native.id})."
    message = _only(_lead(relay, _lead_state(_task_message("t", report))))
    assert message.artifact is not None
    assert message.artifact["knowledge_sources"] == build_native_snapshot([native])
    assert message.artifact["retrieval_sources"] == [shared.to_record()]
    assert read_native(message.content, message.artifact, tool_name="task").sources == (native,)
    assert read_envelope(message.content, message.artifact).sources == (shared,)


def test_at_most_100_records() -> None:
    relay = EvidenceRelay()
    hits = [_source(n) for n in range(MAX_SOURCES + 20)]
    _child_calls(relay, "t", *(_search(hits[i : i + 10]) for i in range(0, len(hits), 10)))
    report = " ".join(citation_link(h) for h in hits)
    message = _only(_lead(relay, _lead_state(_task_message("t", report)), max_appendix_chars=10**6))
    assert len(read_envelope(message.content, message.artifact).sources) == MAX_SOURCES


def test_the_appendix_is_bounded_and_fits_deerflows_task_budget() -> None:
    hits = [_source(n) for n in range(20)]
    report = " ".join(citation_link(h) for h in hits)
    length = len(str(_task_message("t", report).content))

    def forwarded(**kwargs: Any) -> ToolMessage:
        relay = EvidenceRelay()
        _child_calls(relay, "t", _search(hits))
        return _only(_lead(relay, _lead_state(_task_message("t", report)), **kwargs))

    for budget in (length - 1, length):  # no room left under DeerFlow's budget: none forwarded
        assert forwarded(budget=lambda b=budget: b).artifact is None
    message = forwarded(budget=lambda: length + 400)
    assert len(message.content) <= length + 400
    assert 0 < len(read_envelope(message.content, message.artifact).sources) < len(hits)
    message = forwarded(max_appendix_chars=300)
    assert len(message.content) - length <= 300
    assert forwarded().artifact is not None  # no host budget: the package's default


def test_relay_holds_at_most_its_limit() -> None:
    relay = EvidenceRelay(max_children=2)
    for call in ("a", "b"):
        _child_calls(relay, call, _search([_source(1)]))
    assert len(relay) == 2  # exactly at the limit: all kept
    _child_calls(relay, "c", _search([_source(1)]))
    assert len(relay) == 2  # one past: the oldest dropped
    assert relay.take((THREAD, RUN, "a")) is None
    assert relay.take((THREAD, RUN, "c")) == (_source(1),)
    assert MAX_PENDING_CHILDREN == 256
    with pytest.raises(ValueError):
        EvidenceRelay(max_children=0)


def test_the_leads_stop_drops_what_it_never_took() -> None:
    app = Store()
    evidence = SubagentEvidence()
    relay = subagents._relay(app)
    _child_calls(relay, "t", _search([_source(1)]))
    _child_calls(relay, "t", _search([_source(1)]), run_id="other-run")
    info = SimpleNamespace(kind="subagent", thread_id=THREAD, run_id=RUN)
    asyncio.run(evidence.on_task_stop(app, Store(), info, "completed"))
    assert len(relay) == 2  # a child's own stop keeps its evidence for the lead
    asyncio.run(
        evidence.on_task_stop(
            app, Store(), SimpleNamespace(kind="lead", thread_id=THREAD, run_id=RUN), "completed"
        )
    )
    assert len(relay) == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    retrieved=st.lists(st.integers(0, 30), min_size=0, max_size=12, unique=True),
    cited=st.lists(st.integers(0, 40), min_size=0, max_size=12),
    tampered=st.sets(st.integers(0, 30), max_size=3),
)
def test_property_forwarded_is_cited_and_verifiably_retrieved(
    retrieved: list[int], cited: list[int], tampered: set[int]
) -> None:
    """Whatever the child retrieved (some records forged) and its report cites: the task message
    carries exactly the cited, genuinely retrieved sources, in first-cited order, and the lead's
    copy of the report's links verifies exactly those."""
    relay = EvidenceRelay()
    messages = []
    for n in retrieved:
        message = _search([_source(n)])
        if n in tampered:
            message.artifact["knowledge_sources"][0]["excerpt"] = "Invented."
        messages.append(message)
    _child_calls(relay, "t", *messages)
    report = " ".join(citation_link(_source(n)) for n in cited) or "No sources."
    genuine = {n for n in retrieved if n not in tampered}
    expected = [_source(n) for n in dict.fromkeys(cited) if n in genuine]
    update = _lead(relay, _lead_state(_task_message("t", report)))
    message = update["messages"][0] if update else _task_message("t", report)
    found = read_envelope(message.content, message.artifact).sources if message.artifact else ()
    assert list(found) == expected
    answer = AIMessage(" ".join(citation_link(_source(n)) for n in cited))
    thread = thread_messages({"messages": [*_lead_state(message)["messages"], answer]})
    verified = [a.source_id for a in audit_thread(thread) if a.status == "verified"]
    assert set(verified) == {s.id for s in expected}


class _Counted(Sequence[Any]):
    """A message list that counts the items read from it."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self.reads = 0

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: Any) -> Any:
        self.reads += 1
        return self.items[index]


def test_a_step_costs_the_step_not_the_history() -> None:
    relay = EvidenceRelay()
    _child_calls(relay, "t", _search([_source(1)]))
    history: list[Any] = []
    for n in range(50_000):
        history += [HumanMessage(f"q{n}", id=f"h{n}"), AIMessage(f"a{n}", id=f"a{n}")]
    state = _lead_state(_task_message("t", citation_link(_source(1))))
    messages = _Counted(history + state["messages"])
    assert _lead(relay, {"messages": messages}) is not None
    assert messages.reads <= 4  # the task message, the AI message before it (and nothing else)
