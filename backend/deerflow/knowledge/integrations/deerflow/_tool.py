"""One module-level ``knowledge_search`` tool per provider, configured by DeerFlow's tool entry.

DeerFlow's tool loader wants a ``BaseTool`` instance at ``use: module:attr`` (a factory is
refused) and builds the agent's tool list without calling anything, so the instance here is made
at import with no I/O. Each call reads the entry (see ``_host``), checks its keys, reuses the
provider built for the same settings, and fits the result under DeerFlow's own tool-output budget
— a message DeerFlow never has to cut keeps every record it carries verifiable, and DeerFlow's
run events and checkpoint hold the same text. Every failure is an ``Error: …`` string for the
model, never an exception. ``tests/test_integrations_deerflow_tools.py`` covers it.
"""

from __future__ import annotations

import difflib
import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from langchain_core.tools import StructuredTool

from deerflow.knowledge.contract import KnowledgeCapabilities, OutputBudget, RetrievalProvider
from deerflow.knowledge.integrations.deerflow._host import HostError, ToolEntry, read_tool_entry
from deerflow.knowledge.providers.errors import ProviderConfigError
from deerflow.knowledge.rules import DEFAULT_MAX_CHARS, DEFAULT_MAX_CHARS_PER_HIT, MIN_MAX_CHARS
from deerflow.knowledge.tools import (
    DEFAULT_TOOL_NAME,
    KnowledgeSearchInput,
    run_knowledge_search,
)

__all__ = ["BUDGET_KEYS", "Flavor", "check_entry", "make_deerflow_tool"]

#: DeerFlow's names for the output budget, the same for every provider.
BUDGET_KEYS: Final = frozenset({"max_chars_per_chunk", "max_total_chars"})
#: Names people carry over from this package's other settings or from other tools.
_ALIASES: Final = {
    "max_chars": "max_total_chars",
    "max_chars_per_hit": "max_chars_per_chunk",
    "limit": "top_k",
    "index_path": "index",
    "dataset_ids": "datasets",
}

_log = logging.getLogger(__name__)

BuildProvider = Callable[[Mapping[str, Any], Path | None], RetrievalProvider]


@dataclass(frozen=True)
class Flavor:
    """A provider as a DeerFlow tool: its display name, its own keys and how to build it."""

    label: str
    use: str
    keys: frozenset[str]
    build: BuildProvider
    description: str

    @property
    def all_keys(self) -> frozenset[str]:
        return self.keys | BUDGET_KEYS


def check_entry(flavor: Flavor, extras: Mapping[str, Any]) -> list[str]:
    """One message per key of ``extras`` that this tool does not read (DeerFlow ignores unknown
    keys silently, so a misspelt one would otherwise go unnoticed)."""
    messages = []
    for key in sorted(set(extras) - flavor.all_keys, key=str):
        hint = _ALIASES.get(str(key)) or next(
            iter(difflib.get_close_matches(str(key), sorted(flavor.all_keys), n=1)), None
        )
        suggestion = f"; did you mean {hint!r}?" if hint in flavor.all_keys else "."
        known = ", ".join(sorted(flavor.all_keys))
        messages.append(
            f"{DEFAULT_TOOL_NAME} ({flavor.label}): config.yaml key {str(key)!r} is not one of "
            f"its settings and is ignored{suggestion} Its settings: {known}."
        )
    return messages


@dataclass
class _State:
    """What one tool remembers between calls: keys already reported and the last provider."""

    reported: set[str] = field(default_factory=set)
    cached: tuple[str, RetrievalProvider] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


def make_deerflow_tool(flavor: Flavor) -> StructuredTool:
    """The ``knowledge_search`` tool for ``flavor`` (no I/O until it is called)."""
    state = _State()

    async def knowledge_search(query: str) -> tuple[str, dict[str, Any] | None]:
        return await _call(flavor, state, query)

    return StructuredTool.from_function(
        coroutine=knowledge_search,
        name=DEFAULT_TOOL_NAME,
        description=flavor.description,
        args_schema=KnowledgeSearchInput,
        response_format="content_and_artifact",
        metadata={"knowledge_capabilities": KnowledgeCapabilities().to_metadata()},
    )


async def _call(flavor: Flavor, state: _State, query: str) -> tuple[str, dict[str, Any] | None]:
    try:
        entry = read_tool_entry(DEFAULT_TOOL_NAME)
    except HostError as exc:
        return f"Error: {exc}", None
    for message in check_entry(flavor, entry.extras):
        if message not in state.reported:
            state.reported.add(message)
            _log.warning("%s", message)
    try:
        budget = _budget(entry)
    except ValueError as exc:
        return f"Error: Invalid {DEFAULT_TOOL_NAME} setting in config.yaml: {exc}.", None
    if budget is None:
        return _budget_too_small(entry), None
    try:
        provider = _provider(flavor, state, entry)
    except ProviderConfigError as exc:
        return f"Error: {exc} Check the {DEFAULT_TOOL_NAME} entry in config.yaml.", None
    return await run_knowledge_search(
        provider, query, max_chars=budget.max_chars, max_chars_per_hit=budget.max_chars_per_hit
    )


def _budget(entry: ToolEntry) -> OutputBudget | None:
    """The configured budget, shrunk to what DeerFlow's own budget leaves uncut; None when that
    is below the smallest result this package can write."""
    total = _int_setting(entry.extras, "max_total_chars", DEFAULT_MAX_CHARS)
    per_chunk = _int_setting(entry.extras, "max_chars_per_chunk", DEFAULT_MAX_CHARS_PER_HIT)
    if entry.max_uncut_chars is not None:
        if entry.max_uncut_chars < MIN_MAX_CHARS:
            OutputBudget(total, per_chunk)  # still report a bad setting of the entry itself
            return None
        total = min(total, entry.max_uncut_chars)
    return OutputBudget(max_chars=total, max_chars_per_hit=per_chunk)


def _int_setting(extras: Mapping[str, Any], key: str, default: int) -> int:
    value = extras.get(key, default)
    if type(value) is not int:
        raise ValueError(f"{key} must be an integer")
    return value


def _budget_too_small(entry: ToolEntry) -> str:
    return (
        f"Error: DeerFlow's tool_output budget lets {DEFAULT_TOOL_NAME} return only "
        f"{entry.max_uncut_chars} characters, fewer than the {MIN_MAX_CHARS} a cited result "
        f"needs; raise tool_output.tool_overrides.{DEFAULT_TOOL_NAME} (or fallback_max_chars), "
        f"or add {DEFAULT_TOOL_NAME} to tool_output.exempt_tools in config.yaml."
    )


def _provider(flavor: Flavor, state: _State, entry: ToolEntry) -> RetrievalProvider:
    own = {k: v for k, v in entry.extras.items() if k in flavor.keys}
    key = json.dumps([str(entry.config_dir), own], sort_keys=True, default=repr)
    with state.lock:
        if state.cached is not None and state.cached[0] == key:
            return state.cached[1]
    provider = flavor.build(own, entry.config_dir)
    with state.lock:
        state.cached = (key, provider)
    return provider
