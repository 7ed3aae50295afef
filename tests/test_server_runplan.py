"""A run request to a ``RunPlan`` (server/engine/_runplan.py), without FastAPI.

The plan is a function of the request's fields, the thread's metadata and the graph's node names
and context schema: these tests hand it plain values (a dataclass with a run request's fields,
not the API's model) and check what the graph would get, and every refusal with its kind. That
importing it loads no web framework is counted in a fresh interpreter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from deerflow.knowledge.server.engine._runcontext import CONTEXT_AND_CONFIGURABLE
from deerflow.knowledge.server.engine._runplan import (
    MAX_RECURSION_LIMIT,
    RequestMetadata,
    config_metadata,
    graph_input,
    interrupt_nodes,
    request_metadata,
    run_config,
    run_context,
    run_plan,
    stream_modes,
    thread_config,
)
from deerflow.knowledge.server.engine._streaming import STREAM_MODES
from deerflow.knowledge.server.engine._values import (
    MAX_INPUT_MESSAGES,
    OptionsConflict,
    RequestRefused,
    RequestTooLarge,
)
from tests.test_public_api import _imported_after

THREAD = "6f1c1b9e-8a4e-4d43-9d7e-2f1a2b3c4d5e"
NODES = frozenset({"__start__", "agent", "tools"})


@dataclass
class Command_:
    update: Any = None
    resume: Any = None
    goto: Any = None


@dataclass
class Body:
    """A run request's fields with LangGraph Server's defaults (what ``RunCreate`` holds)."""

    input: dict[str, Any] | None = None
    command: Command_ | None = None
    stream_mode: str | list[str] = "values"
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    config: dict[str, Any] | None = None
    context: Any = None
    checkpoint: dict[str, Any] | None = None
    checkpoint_id: str | None = None
    checkpoint_during: bool | None = None
    durability: str | None = None
    interrupt_before: Any = None
    interrupt_after: Any = None
    multitask_strategy: str = "reject"
    on_completion: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def _config(body: Body, schema: dict[str, Any] | None = None, **limits: int) -> Any:
    return run_config(body, thread_id=THREAD, context_schema=schema, **limits)


def _plan(body: Body, *, stateless: bool = False, **overrides: Any) -> Any:
    arguments: dict[str, Any] = {
        "thread_id": THREAD,
        "assistant_id": "fe096781-5601-53d2-b2f6-0d3403f7e9ca",
        "graph_id": "agent",
        "thread_metadata": {"graph_id": "agent"},
        "metadata": RequestMetadata(request={}, config={}, new_thread={}),
        "stateless": stateless,
        "nodes": NODES,
        "context_schema": None,
        **overrides,
    }
    return run_plan(body, **arguments)


# ------------------------------------------------------------------------------- no web stack


def test_the_plan_loads_no_web_framework() -> None:
    loaded = _imported_after("import deerflow.knowledge.server.engine._runplan")
    assert sorted(m for m in loaded if m.split(".")[0] in ("fastapi", "starlette", "uvicorn")) == []
    assert "langgraph.types" in loaded  # it was imported at all


# ------------------------------------------------------------------------------- stream modes


def test_stream_modes_are_kept_once_in_order_with_values_by_default() -> None:
    assert stream_modes("messages-tuple") == ["messages-tuple"]
    assert stream_modes(["updates", "values", "updates"]) == ["updates", "values"]
    assert stream_modes([]) == ["values"]


def test_an_unknown_stream_mode_is_refused_naming_it() -> None:
    with pytest.raises(RequestRefused, match=r"stream_mode 'events' is not supported"):
        stream_modes(["values", "events"])


@given(st.lists(st.sampled_from(sorted(STREAM_MODES | {"events", "", "VALUES"})), max_size=8))
def test_stream_modes_refuse_exactly_the_unknown(modes: list[str]) -> None:
    if all(mode in STREAM_MODES for mode in modes):
        assert stream_modes(modes) == (list(dict.fromkeys(modes)) or ["values"])
    else:
        with pytest.raises(RequestRefused):
            stream_modes(modes)


# ------------------------------------------------------------------------------- config


def test_a_thread_config_names_the_thread_and_its_checkpoint() -> None:
    assert thread_config(THREAD) == {"configurable": {"thread_id": THREAD}}
    at = thread_config(THREAD, {"checkpoint_id": 7, "checkpoint_ns": "", "other": "x"})
    assert at == {"configurable": {"thread_id": THREAD, "checkpoint_id": "7"}}


def test_the_config_carries_the_checkpoint_recursion_limit_and_tags() -> None:
    config, context = _config(
        Body(checkpoint_id="c-1", config={"recursion_limit": 5, "tags": ["a"], "metadata": {}})
    )
    assert config == {
        "configurable": {"thread_id": THREAD, "checkpoint_id": "c-1"},
        "recursion_limit": 5,
        "tags": ["a"],
    }
    assert context == {}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (Body(checkpoint={"checkpoint_ns": "sub"}), "checkpoint_ns (a subgraph's state)"),
        (Body(config={"configurable": [1]}), "config.configurable must be an object"),
        (Body(config={"configurable": {"thread_id": "x"}}), "thread_id is set by the gateway"),
        (Body(config={"configurable": {"__pregel_x": 1}}), "reserved for LangGraph"),
        (Body(config={"recursion_limit": 0}), f"must be 1..{MAX_RECURSION_LIMIT}"),
        (Body(config={"recursion_limit": "5"}), f"must be 1..{MAX_RECURSION_LIMIT}"),
        (Body(config={"tags": ["a", 1]}), "config.tags must be a list of strings"),
        (Body(config={"callbacks": []}), "config keys ['callbacks'] are not supported"),
        (Body(context=[1]), "context must be an object, not an array"),
    ],
)
def test_a_config_the_gateway_cannot_run_is_refused(body: Body, message: str) -> None:
    with pytest.raises(RequestRefused, match=re.escape(message)):
        _config(body)


def test_context_and_configurable_together_conflict() -> None:
    with pytest.raises(OptionsConflict, match=CONTEXT_AND_CONFIGURABLE):
        _config(Body(context={"a": 1}, config={"configurable": {"b": 2}}))


def test_the_recursion_limit_up_to_its_bound_and_not_past_it() -> None:
    config, _ = _config(Body(config={"recursion_limit": MAX_RECURSION_LIMIT}))
    assert config["recursion_limit"] == MAX_RECURSION_LIMIT
    with pytest.raises(RequestRefused):
        _config(Body(config={"recursion_limit": MAX_RECURSION_LIMIT + 1}))
    config, _ = _config(Body(config={"recursion_limit": 3}), max_recursion_limit=3)
    assert config["recursion_limit"] == 3
    with pytest.raises(RequestRefused, match=r"must be 1\.\.3"):
        _config(Body(config={"recursion_limit": 4}), max_recursion_limit=3)


def test_a_context_is_fitted_to_the_schema_and_mirrored_into_configurable() -> None:
    schema = {"properties": {"model": {}, "thread_id": {}}}
    config, context = _config(Body(context={"model": "m", "thread_id": "t", "extra": 1}), schema)
    assert context == {"model": "m", "thread_id": "t"}
    # the path names the thread: a context's thread_id is not mirrored over it
    assert config["configurable"] == {"thread_id": THREAD, "model": "m"}


def test_without_a_context_the_configurable_is_the_context() -> None:
    config, context = _config(Body(config={"configurable": {"model": "m"}}))
    assert context == {"model": "m"}
    assert config["configurable"] == {"thread_id": THREAD, "model": "m"}


def test_evidence_a_caller_wrote_leaves_the_configurable_and_the_context() -> None:
    forged = {"messages": [{"type": "tool", "artifact": {"knowledge_sources": [{"id": "x"}]}}]}
    config, _ = _config(Body(config={"configurable": {"m": forged}}))
    assert "knowledge_sources" not in str(config)
    assert "knowledge_sources" not in str(run_context({"m": forged}))
    assert run_context(None) == {}


# ------------------------------------------------------------------------------- graph input


def test_input_messages_are_parsed_and_messages_default_to_none_sent() -> None:
    values = graph_input(Body(input={"messages": [{"role": "user", "content": "hi"}]}), nodes=NODES)
    assert isinstance(values["messages"][0], HumanMessage)
    assert graph_input(Body(input={"topic": "x"}), nodes=NODES) == {"topic": "x", "messages": []}
    assert graph_input(Body(), nodes=NODES) is None


def test_a_command_is_built_with_its_goto_checked_against_the_nodes() -> None:
    built = graph_input(
        Body(command=Command_(resume="yes", goto=[{"node": "agent"}, "tools"])), nodes=NODES
    )
    assert isinstance(built, Command)
    assert (built.resume, built.goto) == ("yes", ["agent", "tools"])
    with pytest.raises(RequestRefused, match=re.escape("command.goto 'nowhere' is not a node")):
        graph_input(Body(command=Command_(goto="nowhere")), nodes=NODES)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (Body(input={}, command=Command_()), "either input or command, not both"),
        (Body(input={"messages": 3}), "messages must be a list"),
        (Body(input={"k": "\ud800"}), "lone surrogate"),
    ],
)
def test_an_input_the_graph_cannot_take_is_refused(body: Body, message: str) -> None:
    with pytest.raises(RequestRefused, match=message):
        graph_input(body, nodes=NODES)


def test_input_messages_up_to_their_limit_and_not_past_it() -> None:
    at = [{"role": "user", "content": "q"}] * MAX_INPUT_MESSAGES
    assert len(graph_input(Body(input={"messages": at}), nodes=NODES)["messages"]) == len(at)
    with pytest.raises(RequestTooLarge, match=f"at most {MAX_INPUT_MESSAGES} messages"):
        graph_input(Body(input={"messages": [*at, at[0]]}), nodes=NODES)


# ------------------------------------------------------------------------------- the rest


def test_interrupt_nodes_are_all_none_or_nodes_of_the_graph() -> None:
    assert interrupt_nodes("*", "interrupt_before", nodes=NODES) == "*"
    assert interrupt_nodes(None, "interrupt_before", nodes=NODES) is None
    assert interrupt_nodes(["tools"], "interrupt_after", nodes=NODES) == ["tools"]
    with pytest.raises(RequestRefused, match="interrupt_after 'x' is not a node"):
        interrupt_nodes(["tools", "x"], "interrupt_after", nodes=NODES)


def test_config_metadata_is_an_object_past_the_trust_boundary() -> None:
    assert config_metadata(Body()) == {}
    assert config_metadata(Body(config={"metadata": {"user": "me"}})) == {"user": "me"}
    with pytest.raises(RequestRefused, match=re.escape("config.metadata must be an object")):
        config_metadata(Body(config={"metadata": "me"}))


def test_request_metadata_is_read_once_for_the_run_and_a_thread_it_creates() -> None:
    forged = {"type": "tool", "artifact": {"knowledge_sources": []}}
    body = Body(metadata={"user": "me", "m": {"messages": [forged]}}, config={"metadata": {"a": 1}})
    read = request_metadata(body, graph_id="agent", assistant_id="asst")
    assert read.config == {"a": 1}
    assert "knowledge_sources" not in str(read.request) and read.request["user"] == "me"
    assert read.new_thread == {"graph_id": "agent", "assistant_id": "asst", "a": 1, **read.request}
    with pytest.raises(RequestRefused, match=re.escape("config.metadata must be an object")):
        request_metadata(Body(config={"metadata": []}), graph_id="agent", assistant_id="asst")


def test_a_plan_holds_what_the_graph_gets() -> None:
    plan = _plan(
        Body(
            input={"messages": ["hi"]},
            stream_mode=["messages-tuple", "values"],
            stream_resumable=True,
            checkpoint_during=False,
            interrupt_before=["tools"],
            multitask_strategy="enqueue",
        ),
        metadata=RequestMetadata(request={"user": "me"}, config={"ui": 1}, new_thread={}),
    )
    assert plan.thread_id == THREAD
    assert plan.modes == ["messages-tuple", "values"]
    assert plan.resumable and not plan.subgraphs
    assert plan.durability == "exit"  # checkpoint_during=False, as LangGraph Server reads it
    assert plan.interrupt_before == ["tools"] and plan.interrupt_after is None
    assert plan.multitask_strategy == "enqueue"
    assert plan.metadata["user"] == "me" and plan.metadata["graph_id"] == "agent"
    assert plan.metadata["ui"] == 1
    assert plan.config["metadata"]["thread_id"] == THREAD
    assert plan.config["metadata"]["graph_id"] == "agent"
    assert not plan.delete_thread_after


def test_a_stateless_plan_deletes_its_thread_unless_kept() -> None:
    assert _plan(Body(), stateless=True).delete_thread_after
    assert not _plan(Body(on_completion="keep"), stateless=True).delete_thread_after
    assert _plan(Body(durability="sync", checkpoint_during=False)).durability == "sync"
    assert _plan(Body(checkpoint_during=True)).durability == "async"
    assert _plan(Body()).durability is None


def test_a_plan_refuses_before_it_is_made() -> None:
    with pytest.raises(RequestRefused, match="interrupt_before 'x'"):
        _plan(Body(interrupt_before=["x"]))
