"""ToolOutputBudgetMiddleware: budgets that never leave evidence the content no longer shows."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from deerflow.knowledge import RetrievalHit, RetrievalResult, find_citations, read_envelope
from deerflow.knowledge.contract import OutputBudget
from deerflow.knowledge.formatting import format_result
from deerflow.knowledge.middleware import BUDGET_METADATA_KEY, ToolOutputBudgetMiddleware
from deerflow.knowledge.native import (
    NATIVE_OMISSION_NOTICE,
    NativeSource,
    build_native_snapshot,
    native_entry,
)
from deerflow.knowledge.tools import make_knowledge_tool
from tests.native_budget_runner import as_model_sees_it
from tests.test_langgraph_transport import (
    FakeProvider,
    answer_citing,
    call_tool,
    scripted,
    tool_messages,
)

PARTIAL_HANDLE_RE = re.compile(r"#knowledge-source-(?![0-9a-f]{32})")
HANDLE_RE = re.compile(r"#knowledge-source-([0-9a-f]{32})")
MANY_HITS = tuple(
    RetrievalHit(
        text=f"Excerpt {i}: the petrel colony count was {100 + i}. " * 3, title=f"Survey {i}"
    )
    for i in range(20)
)


def _formatted(hits: tuple[RetrievalHit, ...] = MANY_HITS) -> tuple[str, dict[str, Any]]:
    formatted = format_result(
        RetrievalResult(provider="fake", query="q", hits=hits), OutputBudget(max_chars=50_000)
    )
    assert formatted.artifact is not None
    return formatted.content, formatted.artifact


def _message(name: str = "knowledge_search", **overrides: Any) -> ToolMessage:
    content, artifact = _formatted()
    fields = {
        "content": content,
        "artifact": artifact,
        "name": name,
        "tool_call_id": "call_1",
        "id": "m1",
    }
    return ToolMessage(**{**fields, **overrides})


def _assert_honest(message: ToolMessage, max_chars: int) -> None:
    text = message.content if isinstance(message.content, str) else message.content[0]["text"]
    assert len(text) <= max_chars
    assert PARTIAL_HANDLE_RE.search(text) is None
    result = read_envelope(message.content, message.artifact)
    assert result.rejected == () and result.error is None
    kept = {source.id for source in result.sources}
    assert set(HANDLE_RE.findall(text)) <= kept  # every handle shown resolves


def test_output_within_budget_is_the_same_object() -> None:
    message = _message()
    assert (
        ToolOutputBudgetMiddleware(max_chars=len(message.content)).budget_message(message)
        is message
    )


def test_truncation_keeps_head_and_tail_and_prunes_evidence() -> None:
    message = _message()
    budgeted = ToolOutputBudgetMiddleware(max_chars=1_500).budget_message(message)
    _assert_honest(budgeted, 1_500)
    assert budgeted.id == message.id and budgeted.tool_call_id == message.tool_call_id
    assert "characters omitted" in budgeted.content
    assert (
        0 < len(budgeted.artifact["knowledge_sources"]) < len(message.artifact["knowledge_sources"])
    )
    assert budgeted.response_metadata[BUDGET_METADATA_KEY] == {
        "original_chars": len(message.content),
        "max_chars": 1_500,
        "kind": "truncated",
    }
    assert message.artifact == _formatted()[1]  # the original message is untouched


def test_externalizing_writes_the_full_output_once_and_shows_a_preview(tmp_path: Path) -> None:
    message = _message()
    middleware = ToolOutputBudgetMiddleware(
        max_chars=1_200, output_dir=tmp_path / "out", preview_chars=700
    )
    budgeted = middleware.budget_message(message)
    _assert_honest(budgeted, 1_200)
    record = budgeted.response_metadata[BUDGET_METADATA_KEY]
    assert record["kind"] == "externalized"
    path = Path(record["path"])
    assert path.read_text(encoding="utf-8") == message.content
    assert str(path) in budgeted.content and path.name.startswith("knowledge_search-call_1-")
    assert budgeted.content.index("[Output too long") <= 700
    again = middleware.budget_message(message)
    assert again.content == budgeted.content and again.artifact == budgeted.artifact
    assert len(list((tmp_path / "out").iterdir())) == 1


def test_externalizing_falls_back_to_truncation(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    failing = ToolOutputBudgetMiddleware(max_chars=1_000, output_dir=blocker / "out")
    budgeted = failing.budget_message(_message())
    assert budgeted.response_metadata[BUDGET_METADATA_KEY]["kind"] == "truncated"
    _assert_honest(budgeted, 1_000)
    tiny = ToolOutputBudgetMiddleware(max_chars=40, output_dir=tmp_path)  # the path cannot fit
    assert (
        tiny.budget_message(_message()).response_metadata[BUDGET_METADATA_KEY]["kind"]
        == "truncated"
    )
    assert list(tmp_path.iterdir()) == [blocker]


@pytest.mark.parametrize("externalize", [False, True])
@pytest.mark.parametrize(
    "max_chars", [1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1_597, 4_181, 100_000]
)
def test_tiny_to_large_budgets_never_leave_a_partial_handle_resolving(
    max_chars: int, externalize: bool, tmp_path: Path
) -> None:
    middleware = ToolOutputBudgetMiddleware(
        max_chars=max_chars, output_dir=tmp_path if externalize else None, preview_chars=max_chars
    )
    budgeted = middleware.budget_message(_message())
    if budgeted.artifact is None:
        assert HANDLE_RE.search(budgeted.content) is None
        assert len(budgeted.content) <= max_chars
    else:
        _assert_honest(budgeted, max_chars)
    assert middleware.budget_message(budgeted) is budgeted  # within budget now: idempotent


def test_overrides_and_exempt_tools() -> None:
    middleware = ToolOutputBudgetMiddleware(
        max_chars=800, tool_overrides={"task": 2_000}, exempt_tools={"shell"}
    )
    assert middleware.budget_message(_message("shell")) is not None
    assert middleware.budget_message(_message("shell")).content == _message("shell").content
    assert len(middleware.budget_message(_message("task")).content) <= 2_000
    assert len(middleware.budget_message(_message("task")).content) > 800
    assert len(middleware.budget_message(_message("other")).content) <= 800
    with pytest.raises(ValueError):
        ToolOutputBudgetMiddleware(max_chars=0)
    with pytest.raises(ValueError):
        ToolOutputBudgetMiddleware(tool_overrides={"task": -1})


def test_list_content_becomes_one_budgeted_text_part_and_keeps_other_parts() -> None:
    content, artifact = _formatted()
    image = {"type": "image_url", "image_url": {"url": "https://example.org/chart.png"}}
    message = _message(content=[{"type": "text", "text": content}, image], artifact=artifact)
    budgeted = ToolOutputBudgetMiddleware(max_chars=900).budget_message(message)
    assert budgeted.content[1] == image
    _assert_honest(budgeted, 900)


def test_command_results_have_their_tool_messages_budgeted() -> None:
    middleware = ToolOutputBudgetMiddleware(max_chars=700)
    command = Command(update={"messages": [_message()], "other": 1})
    result = middleware.wrap_tool_call(None, lambda request: command)  # type: ignore[arg-type]
    assert isinstance(result, Command) and result.update["other"] == 1
    _assert_honest(result.update["messages"][0], 700)
    small = Command(update={"messages": [ToolMessage(content="ok", tool_call_id="c")]})
    assert middleware.wrap_tool_call(None, lambda request: small) is small  # type: ignore[arg-type]


async def test_async_agent_tool_outputs_are_budgeted_before_the_model_sees_them() -> None:
    model = scripted(call_tool("knowledge_search", query="petrels"), answer_citing())
    agent = create_agent(
        model,
        tools=[make_knowledge_tool(FakeProvider(MANY_HITS), max_chars=50_000)],
        middleware=[ToolOutputBudgetMiddleware(max_chars=1_000)],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "budget"}}
    await agent.ainvoke({"messages": [("user", "petrels?")]}, config)
    state = await agent.aget_state(config)
    (stored,) = tool_messages(state.values["messages"])
    _assert_honest(stored, 1_000)
    kept = {s.id for s in read_envelope(stored.content, stored.artifact).sources}
    answer = state.values["messages"][-1].content
    cited = {c.source_id for c in find_citations(answer)}
    assert cited and cited <= kept  # the model could only copy links whose evidence survived


def test_sync_agent_tool_outputs_are_budgeted() -> None:
    def search(query: str) -> tuple[str, dict[str, Any] | None]:
        return _formatted()

    tool = StructuredTool.from_function(
        func=search,
        name="knowledge_search",
        description="search",
        response_format="content_and_artifact",
    )
    model = scripted(call_tool("knowledge_search", query="petrels"), answer_citing())
    agent = create_agent(
        model, tools=[tool], middleware=[ToolOutputBudgetMiddleware(max_chars=900)]
    )
    result = agent.invoke({"messages": [("user", "petrels?")]})
    (stored,) = tool_messages(result["messages"])
    _assert_honest(stored, 900)


@pytest.mark.parametrize("use_async", [False, True])
async def test_model_request_history_is_budgeted_without_touching_state(use_async: bool) -> None:
    oversized = _message(tool_call_id="old_call", id="old")
    history = [
        ("user", "earlier question"),
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"name": "knowledge_search", "args": {"query": "x"}, "id": "old_call"}],
        },
        oversized,
        ("user", "and now?"),
    ]
    model = scripted(answer_citing())
    agent = create_agent(
        model,
        tools=[],
        middleware=[ToolOutputBudgetMiddleware(max_chars=800)],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": f"history-{use_async}"}}
    if use_async:
        await agent.ainvoke({"messages": history}, config)
    else:
        agent.invoke({"messages": history}, config)
    (seen,) = tool_messages(model.requests[0])
    _assert_honest(seen, 800)
    state = await agent.aget_state(config) if use_async else agent.get_state(config)
    (stored,) = tool_messages(state.values["messages"])
    assert stored.content == oversized.content and stored.artifact == oversized.artifact
    kept = {s.id for s in read_envelope(seen.content, seen.artifact).sources}
    assert {c.source_id for c in find_citations(state.values["messages"][-1].content)} <= kept


def test_history_budgeting_can_be_switched_off() -> None:
    model = scripted(answer_citing())
    middleware = ToolOutputBudgetMiddleware(max_chars=800, budget_model_requests=False)
    agent = create_agent(model, tools=[], middleware=[middleware])
    agent.invoke({"messages": [_message(), ("user", "q")]})
    (seen,) = tool_messages(model.requests[0])
    assert seen.content == _message().content


# --------------------------------------------------------------------------- native snapshots


def _native_message(name: str = "knowledge_search") -> ToolMessage:
    """DeerFlow's fixture: eight 4,812-character native entries (or a task report citing them)."""
    sources = [
        NativeSource(
            id=f"{'b' * 32}-{i}",
            dataset_id="kb",
            document_id="doc",
            chunk_id=f"chunk-{i}",
            dataset_name="Engineering",
            document_name="Manual.pdf",
            text=f"Evidence {i}: " + "x" * 4_800,
            truncated=False,
        )
        for i in range(1, 9)
    ]
    content = "\n\n".join(native_entry(s, i) for i, s in enumerate(sources, 1))
    if name == "task":
        links = " ".join(f"[Manual.pdf](#knowledge-{s.id})" for s in sources)
        content = "Task completed. Findings: " + links + "\n" + "report " * 6_000
    artifact = {"knowledge_sources": build_native_snapshot(sources), "other": "preserve me"}
    return ToolMessage(content=content, artifact=artifact, name=name, tool_call_id="call-1")


def _assert_paired(original: ToolMessage, result: ToolMessage, limit: int) -> None:
    assert isinstance(result.content, str) and len(result.content) <= limit
    assert result.artifact["other"] == "preserve me"
    kept = result.artifact.get("knowledge_sources", {}).get("sources", [])
    assert 0 < len(kept) < len(original.artifact["knowledge_sources"]["sources"])
    for record in original.artifact["knowledge_sources"]["sources"]:
        if record in kept:
            assert f"](#knowledge-{record['id']})" in result.content
            assert record["text"] in result.content
        else:
            assert f"#knowledge-{record['id']}" not in result.content
    assert result.content.endswith(NATIVE_OMISSION_NOTICE)


@pytest.mark.parametrize("name", ["knowledge_search", "task"])
@pytest.mark.parametrize("mode", ["externalize", "truncate", "override", "history"])
@pytest.mark.parametrize("use_async", [False, True])
async def test_native_entries_survive_every_budget_path_whole(
    tmp_path: Path, name: str, mode: str, use_async: bool
) -> None:
    # Before: knowledge_search kept a record whose text was cut to a few hundred characters, and
    # a task kept all eight records with none of their text visible.
    original = _native_message(name)
    snapshot = original.model_copy(deep=True)
    limit = 12_000 if mode == "externalize" else 7_000
    middleware = {
        "externalize": lambda: ToolOutputBudgetMiddleware(max_chars=limit, output_dir=tmp_path),
        "truncate": lambda: ToolOutputBudgetMiddleware(max_chars=limit),
        "override": lambda: ToolOutputBudgetMiddleware(
            max_chars=1_000_000, tool_overrides={name: limit}
        ),
        "history": lambda: ToolOutputBudgetMiddleware(max_chars=limit),
    }[mode]()
    if mode == "history":
        result = await as_model_sees_it(middleware, original, use_async=use_async)
    else:
        command = Command(update={"messages": [original], "unrelated": 42})
        call = ToolCallRequest(
            tool_call={"name": name, "args": {}, "id": "call-1"},
            tool=None,
            state={},
            runtime=None,  # type: ignore[arg-type]
        )
        if use_async:

            async def respond(_: ToolCallRequest) -> Command[Any]:
                return command

            patched = await middleware.awrap_tool_call(call, respond)
        else:
            patched = middleware.wrap_tool_call(call, lambda _: command)
        assert isinstance(patched, Command) and patched.update["unrelated"] == 42
        result = patched.update["messages"][0]
    _assert_paired(original, result, limit)
    assert original == snapshot  # the input message is not mutated
    record = result.response_metadata[BUDGET_METADATA_KEY]
    assert record["sources_omitted"] == 8 - record["sources_kept"]
    if name == "task" and mode == "externalize":
        assert record["kind"] == "externalized" and record["path"] in result.content
    # A later model hook must not rewrite the same evidence again.
    assert middleware.budget_message(result) is result


@pytest.mark.parametrize("change", ["other_tool", "unknown_version", "malformed", "none"])
def test_unreadable_native_results_keep_the_generic_budget(change: str) -> None:
    original = _native_message()
    artifact = original.artifact
    if change == "other_tool":
        original = original.model_copy(update={"name": "web_search"})
    elif change == "unknown_version":
        artifact = {
            **artifact,
            "knowledge_sources": {**artifact["knowledge_sources"], "version": 2},
        }
    elif change == "malformed":
        artifact = {"knowledge_sources": {"version": 1, "sources": [None, {"id": "x", "text": 4}]}}
    else:
        artifact = None
    original = original.model_copy(update={"artifact": artifact})
    middleware = ToolOutputBudgetMiddleware(max_chars=7_000)
    control = middleware.budget_message(original.model_copy(update={"artifact": None}))
    result = middleware.budget_message(original)
    assert result.content == control.content
    assert result.artifact == original.artifact  # nothing rewritten or deleted


def test_exempt_native_tool_is_untouched() -> None:
    original = _native_message()
    middleware = ToolOutputBudgetMiddleware(max_chars=100, exempt_tools=["knowledge_search"])
    assert middleware.budget_message(original) is original


# --------------------------------------------------------------------------- the module walk

#: Modules that each hold one rule and call no other module of the package (message forms, text
#: helpers, the handle grammar, ids, record rules, fitting): a call into one is a look-up, counted
#: as part of the module that made it. Every other module is a step of the walk.
_LOOK_UPS = frozenset(
    {"messages", "text", "rules", "handles", "_nesting", "ids", "contract", "fitting"}
)
_PACKAGE = "deerflow.knowledge."


def _walk(run: Any) -> dict[str, Any]:
    """The modules ``run()`` passes through, as a tree: each call into another module is a child
    of the module that made it, repeated calls from one visit merged. A subpackage is one module
    (``native._records`` is ``native``); calls into a look-up module stay with their caller."""
    root: dict[str, Any] = {}
    stack: list[tuple[dict[str, Any], str | None]] = [(root, None)]

    def enter(module: str) -> None:
        node, current = stack[-1]
        if module in _LOOK_UPS or module == current:
            stack.append((node, current))
        else:
            stack.append((node.setdefault(module, {}), module))

    _follow(run, enter, stack.pop)
    return root


def _follow(run: Any, enter: Callable[[str], None], leave: Callable[[], object]) -> None:
    """``run()`` with ``enter(module)`` told of each call into the package (its module below
    ``deerflow.knowledge``, a subpackage's first part) and ``leave()`` of each return from one."""

    def profile(frame: Any, event: str, _: object) -> None:
        if event not in ("call", "return"):
            return
        name = frame.f_globals.get("__name__", "")
        if not name.startswith(_PACKAGE):
            return
        if event == "return":
            leave()
        else:
            enter(name.removeprefix(_PACKAGE).split(".")[0])

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)


def _entered_twice(tree: dict[str, Any]) -> list[str]:
    seen: list[str] = []

    def visit(node: dict[str, Any]) -> None:
        for module, children in node.items():
            seen.append(module)
            visit(children)

    visit(tree)
    return sorted({module for module in seen if seen.count(module) > 1})


def _dual_task_message() -> ToolMessage:
    """A ``task`` forwarding both formats: the native snapshot and shared records (dual layout)."""
    native = _native_message()
    shared_content, shared_artifact = _formatted()
    artifact = {
        **native.artifact,
        "knowledge_sources_version": 1,
        "retrieval_sources": shared_artifact["knowledge_sources"],
    }
    content = "Report: " + "findings " * 500 + "\n\n" + native.content + "\n\n" + shared_content
    return ToolMessage(content=content, artifact=artifact, name="task", tool_call_id="call-1")


def _list_message() -> ToolMessage:
    """The shared message with list content: its text as one text part, then an image."""
    content, artifact = _formatted()
    image = {"type": "image_url", "image_url": {"url": "https://example.org/chart.png"}}
    return _message(content=[{"type": "text", "text": content}, image], artifact=artifact)


def _budget_case(kind: str, tmp_path: Path) -> tuple[ToolMessage, ToolOutputBudgetMiddleware]:
    """One tool message of ``kind`` and a middleware over it (externalizing for one kind)."""
    message = {
        "shared": _message,
        "shared_externalized": _message,
        "shared_list": _list_message,
        "native": _native_message,
        "native_task": lambda: _native_message("task"),
        "dual_task": _dual_task_message,
    }[kind]()
    output_dir = tmp_path if kind == "shared_externalized" else None
    return message, ToolOutputBudgetMiddleware(max_chars=1_500, output_dir=output_dir)


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (
            "shared",
            {
                "middleware": {
                    "budget": {"native": {}, "citations": {}, "evidence": {"envelope": {}}}
                }
            },
        ),
        (
            "shared_externalized",
            {
                "middleware": {
                    "budget": {"native": {}, "citations": {}, "evidence": {"envelope": {}}}
                }
            },
        ),
        ("native", {"middleware": {"budget": {"native": {}}}}),
        (
            "dual_task",
            {
                "middleware": {
                    "budget": {"citations": {}, "native": {}, "evidence": {"envelope": {}}}
                }
            },
        ),
    ],
)
def test_one_tool_message_enters_each_module_once(
    kind: str, expected: dict[str, Any], tmp_path: Path
) -> None:
    """Following one tool message through ``budget_message`` enters each module once: the walk is
    a tree (the middleware; the one pure budget entry, which calls the native budget, the link-safe
    cuts and the shared prune, which reads through the one evidence reader) with no module visited
    from two places."""
    message, middleware = _budget_case(kind, tmp_path)
    assert middleware.needs_budget(message)
    tree = _walk(lambda: middleware.budget_message(message))
    assert tree == expected
    assert _entered_twice(tree) == []


def test_the_walk_counts_a_return_to_a_module_already_left() -> None:
    # The measure above can fail: reading an envelope, then pruning (which reads it again) visits
    # ``envelope`` from two places.
    content, artifact = _formatted()
    from deerflow.knowledge import budget, envelope

    tree = _walk(
        lambda: (
            envelope.read_envelope(content, artifact),
            budget.prune_evidence(content, artifact),
        )
    )
    assert _entered_twice(tree) == ["envelope"]


@pytest.mark.parametrize("kind", ["shared", "shared_externalized", "native", "dual_task"])
def test_the_middleware_hands_a_message_to_the_budget_once(kind: str, tmp_path: Path) -> None:
    """The format decision is the pure budget's: ``budget_message`` makes one call into the rest
    of the package (``budget.budget_output``), whatever the message (counted, not timed)."""
    message, middleware = _budget_case(kind, tmp_path)
    calls: list[str] = []

    def profile(frame: Any, event: str, _: object) -> None:
        caller = frame.f_back
        if event != "call" or caller is None:
            return
        module = frame.f_globals.get("__name__", "")
        if (
            caller.f_globals.get("__name__") == "deerflow.knowledge.middleware"
            and module.startswith(_PACKAGE)
            and module != "deerflow.knowledge.middleware"
        ):
            calls.append(f"{module}.{frame.f_code.co_name}")

    sys.setprofile(profile)
    try:
        budgeted = middleware.budget_message(message)
    finally:
        sys.setprofile(None)
    assert budgeted is not message
    assert calls == ["deerflow.knowledge.budget.budget_output"]


#: The rooms whose own calls a walk follows: the LangChain hooks, the pure budget and the message
#: reader it uses. A call from one of them into any other module is one move there and one back.
_FOLLOWED = frozenset({"middleware", "budget", "messages"})


def _moves(run: Any) -> dict[str, int]:
    """How ``run()`` moves between the package's modules (rooms; a subpackage is one room).

    Only the followed rooms' calls count: a call from one into another room is a move, its return
    a move back; whatever runs beneath a room that is not followed is that room's own work. A
    callback into a room still open below it (a function handed down, called back up) stays in
    its caller's room. Counted with a profiler, not timed.
    """
    stack: list[tuple[str, bool, bool]] = []  # (room, beneath an unfollowed room, moved in)
    rooms: set[str] = set()
    counts = {"calls": 0, "returns": 0, "messages": 0}

    def enter(room: str) -> None:
        if not stack:
            rooms.add(room)
            stack.append((room, False, False))
            return
        current, beneath, _moved = stack[-1]
        if beneath or room == current or any(room == open_[0] for open_ in stack):
            stack.append((current, beneath, False))
            return
        rooms.add(room)
        counts["calls"] += 1
        counts["messages"] += room == "messages"
        stack.append((room, room not in _FOLLOWED, True))

    def leave() -> None:
        if stack.pop()[2]:
            counts["returns"] += 1

    _follow(run, enter, leave)
    return {
        "rooms": len(rooms),
        "moves": counts["calls"] + counts["returns"],
        "returns": counts["returns"],
        "messages": counts["messages"],
    }


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        # Measure, the native budget saying "not mine", the link-safe cut, the evidence read, the
        # relabel (a link to a source the cut made unverifiable), the re-read, back.
        ("shared", {"rooms": 5, "moves": 12, "returns": 6, "messages": 0}),
        ("shared_externalized", {"rooms": 5, "moves": 12, "returns": 6, "messages": 0}),
        # List content needs the message reader twice: its text, and its parts put back.
        ("shared_list", {"rooms": 6, "moves": 16, "returns": 8, "messages": 2}),
        ("native", {"rooms": 3, "moves": 4, "returns": 2, "messages": 0}),
        ("native_task", {"rooms": 4, "moves": 6, "returns": 3, "messages": 0}),
        ("dual_task", {"rooms": 5, "moves": 10, "returns": 5, "messages": 0}),
    ],
)
def test_a_tool_message_walks_the_budget_in_few_returns(
    kind: str, expected: dict[str, int], tmp_path: Path
) -> None:
    """The walk of one tool message through ``budget_message``, pinned per kind (issue figures:
    at most 6 returns for a string content). The budget reads and relabels its one cut text
    directly, so the message reader is not entered for a string content."""
    message, middleware = _budget_case(kind, tmp_path)
    assert _moves(lambda: middleware.budget_message(message)) == expected


def test_the_move_count_keeps_a_callback_in_its_callers_room() -> None:
    # The public prune rewrites content through the message reader, which calls back the
    # budget's relabel: that callback is the reader's, and its call into citations one move.
    from deerflow.knowledge import budget

    message = _message()
    cut = budget.truncate_text(message.content, max_chars=1_500)
    assert _moves(lambda: budget.prune_evidence([cut], message.artifact)) == {
        "rooms": 4,
        "moves": 8,
        # The read, citations back to the reader, the reader back to the budget, the re-read
        # (the relabel hid a link); were the callback the budget's, 5.
        "returns": 4,
        "messages": 1,
    }
