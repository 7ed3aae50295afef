"""A delegated question on DeerFlow's real backend: the lead hands it to a subagent with DeerFlow's
built-in ``task`` (subagents enabled per run through ``context.subagent_enabled``, as DeerFlow's UI
sends), the subagent searches with ``knowledge_search`` and reports citing two of its hits, and
the lead answers copying the subagent's links.

What is measured (and printed) for each run: the records on the lead's checkpoint and the
audit of every citation in the lead's answer. Without the package's extension middlewares the
lead holds no record and every citation is ``evidence-not-loaded``; with them, the ``task``
message carries what the report cited and the lead's citations verify. DeerFlow's own subagent
behaviour around it (status, ``additional_kwargs``, token usage, its task events) is checked
unchanged.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from deerflow.knowledge import KnowledgeSource, find_citations
from deerflow.knowledge.evidence import read_evidence
from deerflow.knowledge.formatting import citation_link
from deerflow.knowledge.forwarding import APPENDIX_HEADER
from tests.integration.deerflow.evidence import audit, state_messages, walk
from tests.integration.deerflow.gateway import Gateway, SSEEvent
from tests.integration.deerflow.runs import ASSISTANT, CONTEXT, RUN_ID, state, user
from tests.integration.deerflow.stub_model import CITATION_LINK, Script, StubModel

QUERY = "When does the high water arrive after the lighthouse bell?"
SUBAGENT_CONTEXT = {**CONTEXT, "subagent_enabled": True}
STREAM_MODES = ["values", "messages-tuple", "custom"]
#: A well-formed id of a source no search returned.
INVENTED = KnowledgeSource.create(provider="local", title="tides.md", excerpt="Never retrieved.")


def _links(text: str) -> list[str]:
    return list(dict.fromkeys(CITATION_LINK.findall(text)))


def _delegate(child_trigger: str, subagent_type: str = "general-purpose") -> Any:
    def call(question: str) -> tuple[str, dict[str, Any]]:
        prompt = f"{child_trigger} {QUERY}"
        args = {"description": "search the tide notes", "prompt": prompt,
                "subagent_type": subagent_type}  # fmt: skip
        return "task", args

    return call


def _lead_answer(task_text: str) -> str:
    links = _links(task_text.split(APPENDIX_HEADER, 1)[0])
    return "Per the subagent's research: " + " ".join(links) + "."


def _child_search(question: str) -> tuple[str, dict[str, Any]]:
    return "knowledge_search", {"query": QUERY}


SCRIPTS = (
    # The lead: delegates, then copies the subagent's links.
    Script("DELEGATE-CITED", _lead_answer, _delegate("CHILD-CITES-TWO")),
    Script("DELEGATE-NOSEARCH", _lead_answer, _delegate("CHILD-NEVER-SEARCHES")),
    Script("DELEGATE-INVENT", _lead_answer, _delegate("CHILD-INVENTS")),
    Script("DELEGATE-UNKNOWN", _lead_answer, _delegate("CHILD-CITES-TWO", "no-such-agent")),
    # The subagents.
    Script(
        "CHILD-CITES-TWO",
        lambda text: "Found: " + " and ".join(_links(text)[:2]) + ".",
        _child_search,
    ),
    Script(
        "CHILD-NEVER-SEARCHES", lambda _: f"From memory {citation_link(INVENTED)}.", lambda _: None
    ),
    Script("CHILD-INVENTS", lambda _: f"Found {citation_link(INVENTED)}.", _child_search),
)


@dataclass
class Delegated:
    thread_id: str
    events: list[SSEEvent]
    messages: list[Any]

    @property
    def task_message(self) -> Mapping[str, Any]:
        (found,) = [m for m in self.messages if m.get("type") == "tool" and m.get("name") == "task"]
        return found

    @property
    def answer(self) -> str:
        return str([m for m in self.messages if m.get("type") == "ai"][-1].get("content"))

    def records(self) -> int:
        """Verified records on the lead's checkpoint (every tool message of the lead's thread)."""
        return sum(
            len(read_evidence(m.get("content"), m.get("artifact"), tool_name=m.get("name")).sources)
            for m in self.messages
            if m.get("type") == "tool"
        )


def _ask(gateway: Gateway, question: str) -> Delegated:
    thread_id = gateway.new_thread()
    body = {
        "assistant_id": ASSISTANT,
        "input": {"messages": [user(question)]},
        "context": SUBAGENT_CONTEXT,
        "stream_mode": STREAM_MODES,
    }
    events, headers = gateway.stream(f"/api/threads/{thread_id}/runs/stream", body)
    assert RUN_ID.search(headers.get("content-location", "")), headers
    errors = [e for e in events if e.event == "error"]
    assert not errors, f"the run failed: {errors}"
    return Delegated(thread_id, events, state_messages(state(gateway, thread_id)))


@pytest.fixture(scope="module")
def scripted(stub_model: StubModel) -> Iterator[StubModel]:
    before = stub_model.scripts
    stub_model.scripts = before + SCRIPTS
    yield stub_model
    stub_model.scripts = before


@pytest.fixture(scope="module")
def cited(gateway: Gateway, scripted: StubModel) -> Delegated:
    run = _ask(gateway, f"DELEGATE-CITED {QUERY}")
    print(
        f"\ndelegated question: {run.records()} record(s) on the lead's checkpoint; "
        f"lead citations {audit(run.messages)}"
    )
    return run


def test_the_leads_citations_verify(cited: Delegated) -> None:
    assert len(find_citations(cited.answer)) == 2, cited.answer
    assert audit(cited.messages) == ["verified", "verified"]
    assert cited.records() == 2


def test_the_task_message_forwards_only_what_the_report_cited(cited: Delegated) -> None:
    message = cited.task_message
    artifact = message.get("artifact")
    assert isinstance(artifact, Mapping), message
    report_ids = [
        c.source_id
        for c in find_citations(str(message["additional_kwargs"]["subagent_result_brief"]))
    ]
    forwarded = read_evidence(message["content"], artifact, tool_name="task").sources
    assert [s.id for s in forwarded] == report_ids and len(report_ids) == 2
    assert str(message["content"]).count(APPENDIX_HEADER) == 1


def test_deerflows_subagent_fields_are_unchanged(cited: Delegated) -> None:
    message = cited.task_message
    extra = message["additional_kwargs"]
    report = extra["subagent_result_brief"]
    assert extra["subagent_status"] == "completed"
    assert extra["subagent_result_sha256"] == hashlib.sha256(report.encode()).hexdigest()
    assert extra["subagent_model_name"] == "stub-model"
    assert extra["subagent_token_usage"]["total_tokens"] > 0
    assert str(message["content"]).startswith(f"Task Succeeded. Result: {report}")
    custom = [e.data for e in cited.events if e.event.split("|")[0] == "custom"]
    kinds = [d.get("type") for d in custom if isinstance(d, Mapping)]
    assert kinds[0] == "task_started" and kinds[-1] == "task_completed", kinds
    completed = [d for d in custom if isinstance(d, Mapping) and d.get("type") == "task_completed"]
    assert completed[0]["result"] == report and completed[0]["usage"]["total_tokens"] > 0


def test_the_live_stream_carries_the_forwarded_message(cited: Delegated) -> None:
    """DeerFlow's UI renders from ``values``: its last frame holds the forwarded message."""
    frames = [e.data for e in cited.events if e.event.split("|")[0] == "values"]
    last_task = [m for m in walk(frames[-1]) if m.get("type") == "tool" and m.get("name") == "task"]
    assert last_task and isinstance(last_task[-1].get("artifact"), Mapping), last_task
    assert last_task[-1]["artifact"] == cited.task_message["artifact"]


def test_the_lead_model_saw_the_evidence(cited: Delegated, scripted: StubModel) -> None:
    leads = [
        body["messages"]
        for body in scripted.requests
        if any("DELEGATE-CITED" in str(m.get("content")) for m in body.get("messages") or [])
    ]
    seen = [
        str(m.get("content"))
        for messages in leads
        for m in messages
        if m.get("role") == "tool" and str(m.get("content")).startswith("Task Succeeded")
    ]
    assert seen and all(APPENDIX_HEADER in text for text in seen)


def test_a_child_that_never_searched_forwards_nothing(
    gateway: Gateway, scripted: StubModel
) -> None:
    run = _ask(gateway, f"DELEGATE-NOSEARCH {QUERY}")
    assert run.task_message.get("artifact") is None
    assert run.records() == 0
    assert "verified" not in audit(run.messages)


def test_a_report_citing_ids_never_retrieved_forwards_nothing(
    gateway: Gateway, scripted: StubModel
) -> None:
    run = _ask(gateway, f"DELEGATE-INVENT {QUERY}")
    assert run.task_message.get("artifact") is None
    assert run.records() == 0
    assert not re.search(re.escape(INVENTED.id), str(run.task_message["content"]))
    assert "verified" not in audit(run.messages)


def test_a_failed_delegation_keeps_deerflows_message(gateway: Gateway, scripted: StubModel) -> None:
    """DeerFlow refuses an unknown subagent type before any child runs: its own failed message."""
    run = _ask(gateway, f"DELEGATE-UNKNOWN {QUERY}")
    message = run.task_message
    assert message["additional_kwargs"]["subagent_status"] == "failed"
    assert "Unknown subagent type 'no-such-agent'" in str(message["content"])
    assert message.get("artifact") is None and APPENDIX_HEADER not in str(message["content"])
