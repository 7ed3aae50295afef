"""Run one contracts/vectors/native_budgets.json case through ToolOutputBudgetMiddleware.

Every case runs on both the sync and the async hook of its mode: ``wrap_tool_call`` /
``awrap_tool_call`` for truncate, externalize and override, ``wrap_model_call`` /
``awrap_model_call`` for model-request history. Externalizing writes to the relative directory
``out``, so the runner works in a fresh temporary directory.
"""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest

from deerflow.knowledge.middleware import ToolOutputBudgetMiddleware
from deerflow.knowledge.native import read_native
from deerflow.knowledge.rules import MAX_OUTPUT_MAX_CHARS

_HANDLE_RE = re.compile(r"#(?:user-content-)?knowledge-")
_LINK_RE = re.compile(r"\]\(#knowledge-([a-f0-9]{32}-[1-9][0-9]{0,2})\)")


def _middleware(mode: str, tool: str | None, limit: int) -> ToolOutputBudgetMiddleware:
    if mode == "externalize":
        return ToolOutputBudgetMiddleware(max_chars=limit, output_dir="out")
    if mode == "override":
        return ToolOutputBudgetMiddleware(
            max_chars=MAX_OUTPUT_MAX_CHARS, tool_overrides={tool: limit}
        )
    return ToolOutputBudgetMiddleware(max_chars=limit)


def _budgeted(case: dict[str, Any], artifact: Any, *, use_async: bool) -> ToolMessage:
    message = ToolMessage(
        content=case["content"], artifact=artifact, name=case["tool_name"], tool_call_id="call_1"
    )
    middleware = _middleware(case["mode"], case["tool_name"], case["max_chars"])
    if case["mode"] == "history":
        return asyncio.run(as_model_sees_it(middleware, message, use_async=use_async))
    call = ToolCallRequest(
        tool_call={"name": case["tool_name"] or "x", "args": {}, "id": "call_1"},
        tool=None,
        state={},
        runtime=None,  # type: ignore[arg-type]
    )
    if use_async:

        async def respond(_: ToolCallRequest) -> ToolMessage:
            return message

        out = asyncio.run(middleware.awrap_tool_call(call, respond))
    else:
        out = middleware.wrap_tool_call(call, lambda _: message)
    assert isinstance(out, ToolMessage)
    return out


async def as_model_sees_it(
    middleware: ToolOutputBudgetMiddleware, message: ToolMessage, *, use_async: bool
) -> ToolMessage:
    """``message`` as the model receives it in its request's history, through the middleware's
    sync (``wrap_model_call``) or async (``awrap_model_call``) hook."""
    seen: list[Any] = []
    request = ModelRequest(model=GenericFakeChatModel(messages=iter([])), messages=[message])

    def handler(req: ModelRequest[Any]) -> ModelResponse[Any]:
        seen.extend(req.messages)
        return ModelResponse(result=[AIMessage("ok")])

    async def ahandler(req: ModelRequest[Any]) -> ModelResponse[Any]:
        return handler(req)

    if use_async:
        await middleware.awrap_model_call(request, ahandler)
    else:
        middleware.wrap_model_call(request, handler)
    (result,) = seen
    assert isinstance(result, ToolMessage)
    return result


def _in_temporary_directory(run: Callable[[], None]) -> None:
    previous = os.getcwd()
    with tempfile.TemporaryDirectory() as directory:
        os.chdir(directory)
        try:
            run()
        finally:
            os.chdir(previous)


def run_native_budget(case: dict[str, Any]) -> None:
    expected = case["expected"]

    def check() -> None:
        for use_async in (False, True):
            result = _budgeted(case, case["artifact"], use_async=use_async)
            assert isinstance(result.content, str)
            if expected["generic"]:
                control = _budgeted(case, None, use_async=use_async)
                assert result.content == control.content
                assert result.artifact == expected["artifact"]
                continue
            assert result.content == expected["content"]
            assert result.artifact == expected["artifact"]
            assert len(result.content) <= case["max_chars"]
            kept = read_native(result.content, result.artifact, tool_name=case["tool_name"])
            assert [s.id for s in kept.sources] == expected["kept"] and kept.rejected == ()
            assert all(s.text in result.content for s in kept.sources)
            handles = [m.start() for m in _HANDLE_RE.finditer(result.content)]
            assert handles == [m.start() + 2 for m in _LINK_RE.finditer(result.content)]
            if "out/task-call_1-" in result.content:  # the synopsis names the saved report
                assert any(Path("out").glob("task-call_1-*.txt"))

    _in_temporary_directory(check)
