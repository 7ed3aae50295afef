"""A tool-output budget for ``create_agent`` that keeps evidence verifiable: LangChain's hooks.

Large tool outputs crowd the context window, so agents cap them. DeerFlow does it with a
middleware that externalizes an oversized output to a file (the model gets a preview and the path,
and can read the rest) or, without storage, keeps the head and the tail. Either way the content
shrinks while the artifact still claims every source, and a native RAGFlow message must not be cut
at all. What a message becomes is decided by the pure :func:`~deerflow.knowledge.budget.budget_output`
(the generic cut, the native re-rendering, a ``task``'s synopsis, then the evidence pruned); this
module holds what needs LangChain or the disk: the per-tool limits, the hooks, and writing the
file the budget planned.

The same budget applies to the ``ToolMessage`` history of every model request (``wrap_model_call``)
— messages that arrived from run input, an old checkpoint or a subagent never went through the tool
hook — so the model never sees evidence the budget cut. That pass changes only the request, not the
stored state. Output written to disk is named by tool, call id and a hash of the content, so
budgeting the same message again reuses the same file.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import tempfile
from collections.abc import Awaitable, Callable, Collection, Mapping
from pathlib import Path
from typing import Any, Final

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from deerflow.knowledge.budget import (
    MAX_NAME_CHARS,
    BudgetedOutput,
    budget_output,
    output_chars,
)
from deerflow.knowledge.rules import (
    DEFAULT_OUTPUT_MAX_CHARS,
    DEFAULT_OUTPUT_PREVIEW_CHARS,
    MAX_OUTPUT_MAX_CHARS,
    MIN_OUTPUT_MAX_CHARS,
)

__all__ = [
    "BUDGET_METADATA_KEY",
    "MAX_NAME_CHARS",
    "ToolOutputBudgetMiddleware",
]

#: ``response_metadata`` key recording what the budget did (kind, original size, file path).
BUDGET_METADATA_KEY: Final = "tool_output_budget"

_log = logging.getLogger(__name__)


class ToolOutputBudgetMiddleware(AgentMiddleware[Any, Any, Any]):
    """Cap every tool's content at ``max_chars`` and prune the evidence the cut made invisible.

    * ``output_dir``: where oversized outputs are written in full; the content becomes a preview
      (at most ``preview_chars``) plus the file path. Without it, or when writing fails, the
      content keeps its head and tail around an omission marker.
    * ``tool_overrides``: per-tool ``max_chars``; ``exempt_tools``: tools left untouched.
    * ``budget_model_requests``: also budget the ``ToolMessage`` history of each model request.
    """

    def __init__(
        self,
        *,
        max_chars: int = DEFAULT_OUTPUT_MAX_CHARS,
        output_dir: str | os.PathLike[str] | None = None,
        preview_chars: int = DEFAULT_OUTPUT_PREVIEW_CHARS,
        tool_overrides: Mapping[str, int] | None = None,
        exempt_tools: Collection[str] = (),
        budget_model_requests: bool = True,
    ) -> None:
        super().__init__()
        overrides = dict(tool_overrides or {})
        for limit in (max_chars, *overrides.values()):
            if not MIN_OUTPUT_MAX_CHARS <= limit <= MAX_OUTPUT_MAX_CHARS:
                raise ValueError(
                    f"max_chars must be between {MIN_OUTPUT_MAX_CHARS} and {MAX_OUTPUT_MAX_CHARS}"
                )
        if not 0 <= preview_chars <= MAX_OUTPUT_MAX_CHARS:
            raise ValueError(f"preview_chars must be between 0 and {MAX_OUTPUT_MAX_CHARS}")
        self.max_chars = max_chars
        self.output_dir = Path(output_dir) if output_dir is not None else None
        self.preview_chars = preview_chars
        self.tool_overrides: Mapping[str, int] = overrides
        self.exempt_tools = frozenset(exempt_tools)
        self.budget_model_requests = budget_model_requests

    # ------------------------------------------------------------------ the budget itself

    def limit_for(self, tool_name: str | None) -> int | None:
        """The character budget of ``tool_name``; ``None`` when the tool is exempt."""
        if tool_name is not None and tool_name in self.exempt_tools:
            return None
        if tool_name is not None and tool_name in self.tool_overrides:
            return self.tool_overrides[tool_name]
        return self.max_chars

    def needs_budget(self, message: object) -> bool:
        if not isinstance(message, ToolMessage):
            return False
        limit = self.limit_for(message.name)
        return limit is not None and output_chars(message.content) > limit

    def budget_message(self, message: ToolMessage) -> ToolMessage:
        """``message`` within its budget with its evidence pruned; the same object if it fits.

        What the content becomes is :func:`~deerflow.knowledge.budget.budget_output`'s choice;
        this writes the file it plans (when ``output_dir`` is set), so the async hooks call it in
        a thread. A file that cannot be written falls back to truncation.
        """
        limit = self.limit_for(message.name)
        if limit is None:
            return message
        budgeted = self._budget(message, limit, self.output_dir)
        if budgeted is not None and budgeted.write is not None:
            path, text = budgeted.write
            try:
                _write_once(Path(path), text)
            except OSError as exc:
                _log.warning(
                    "could not externalize a tool output (%s); truncating", type(exc).__name__
                )
                budgeted = self._budget(message, limit, None)
        if budgeted is None:
            return message
        metadata = {**message.response_metadata, BUDGET_METADATA_KEY: budgeted.record}
        return message.model_copy(
            update={
                "content": budgeted.content,
                "artifact": budgeted.artifact,
                "response_metadata": metadata,
            }
        )

    def _budget(
        self, message: ToolMessage, limit: int, output_dir: Path | None
    ) -> BudgetedOutput | None:
        return budget_output(
            message.content,
            message.artifact,
            tool_name=message.name,
            max_chars=limit,
            call_id=message.tool_call_id,
            output_dir=output_dir,
            preview_chars=self.preview_chars,
        )

    def _budget_result(self, result: ToolMessage | Command[Any]) -> ToolMessage | Command[Any]:
        if isinstance(result, ToolMessage):
            return self.budget_message(result)
        update = result.update
        if isinstance(update, Mapping) and isinstance(update.get("messages"), list):
            messages = [
                self.budget_message(m) if isinstance(m, ToolMessage) else m
                for m in update["messages"]
            ]
            if any(new is not old for new, old in zip(messages, update["messages"], strict=True)):
                return dataclasses.replace(result, update={**update, "messages": messages})
        return result

    def _needs_any(self, result: ToolMessage | Command[Any]) -> bool:
        if isinstance(result, ToolMessage):
            return self.needs_budget(result)
        update = result.update
        messages = update.get("messages") if isinstance(update, Mapping) else None
        return isinstance(messages, list) and any(self.needs_budget(m) for m in messages)

    def _budget_history(self, messages: list[AnyMessage]) -> list[AnyMessage] | None:
        budgeted: list[AnyMessage] = [
            self.budget_message(m) if isinstance(m, ToolMessage) else m for m in messages
        ]
        return (
            budgeted if any(a is not b for a, b in zip(budgeted, messages, strict=True)) else None
        )

    # ------------------------------------------------------------------ LangChain hooks

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        return self._budget_result(handler(request))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        result = await handler(request)
        if not self._needs_any(result):
            return result
        return await asyncio.to_thread(self._budget_result, result)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage:
        if self.budget_model_requests:
            budgeted = self._budget_history(request.messages)
            if budgeted is not None:
                request = request.override(messages=budgeted)
        return handler(request)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage:
        if self.budget_model_requests and any(self.needs_budget(m) for m in request.messages):
            budgeted = await asyncio.to_thread(self._budget_history, request.messages)
            if budgeted is not None:
                request = request.override(messages=budgeted)
        return await handler(request)


def _write_once(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically unless the same content is already there."""
    if path.exists():
        return  # the name carries the content hash: an existing file holds this very output
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".txt")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
