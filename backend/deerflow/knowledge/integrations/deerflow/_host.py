"""DeerFlow's configuration, read the way DeerFlow reads it, when a tool runs.

DeerFlow resolves ``use: module:attr`` to one tool object shared by every run, and keeps each
tool's settings as extra keys on its ``tools:`` entry (``ToolConfig`` allows unknown keys). Its
own tools look the entry up by name on every call (``get_app_config().get_tool_config(name)``;
the first entry of a name wins), so an edited ``config.yaml`` applies without a restart; these
tools do the same. DeerFlow's ``tool_output`` budget is read here too, because it decides how
long a tool message may be before DeerFlow cuts it.

DeerFlow is imported lazily: outside DeerFlow these modules still import, and a call answers with
a clear error instead. ``tests/test_integrations_deerflow_tools.py`` covers it against a stand-in
``deerflow.config`` with DeerFlow's shapes; ``tests/integration/deerflow/`` against DeerFlow's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = [
    "HOST_KEYS",
    "HostError",
    "ToolEntry",
    "deerflow_trigger",
    "read_tool_entry",
]

#: The keys DeerFlow itself reads from every ``tools:`` entry; all others are the tool's own.
HOST_KEYS: Final = frozenset({"name", "group", "use"})


class HostError(Exception):
    """DeerFlow's configuration cannot be read or has no entry for the tool (the operator's
    fault). The message is safe to show: it never holds a configured value."""


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """One ``tools:`` entry: its own keys, where its ``config.yaml`` lives, and DeerFlow's budget."""

    extras: Mapping[str, Any]
    config_dir: Path | None
    #: The longest content DeerFlow's ``tool_output`` budget leaves untouched; None: it never cuts.
    max_uncut_chars: int | None


def deerflow_trigger(tool_name: str, tool_output: object) -> int | None:
    """The longest tool content DeerFlow's tool-output budget passes unchanged, or None.

    DeerFlow budgets a result whose text is longer than the smaller of the tool's externalize
    threshold (``tool_overrides[name]``, else ``externalize_min_chars``; 0 turns it off) and
    ``fallback_max_chars`` (0 turns it off), unless the budget is disabled or the tool is in
    ``exempt_tools``. Read by attribute, so a DeerFlow without some field keeps its default.
    """
    if tool_output is None or not getattr(tool_output, "enabled", True):
        return None
    if tool_name in (getattr(tool_output, "exempt_tools", None) or ()):
        return None
    overrides = getattr(tool_output, "tool_overrides", None) or {}
    externalize = overrides.get(tool_name, getattr(tool_output, "externalize_min_chars", 0))
    fallback = getattr(tool_output, "fallback_max_chars", 0)
    limits = [v for v in (externalize, fallback) if type(v) is int and v > 0]
    return min(limits) if limits else None


def read_tool_entry(tool_name: str) -> ToolEntry:
    """The first ``tools:`` entry called ``tool_name`` in DeerFlow's current configuration.

    Raises :class:`HostError` outside DeerFlow, when the configuration cannot be loaded, or when
    it has no such entry.
    """
    try:
        from deerflow.config import get_app_config
    except ImportError:
        raise HostError(
            f"{tool_name} is DeerFlow's tool, but DeerFlow's configuration is not importable "
            "here; outside DeerFlow use deerflow.knowledge.tools.make_knowledge_tool."
        ) from None
    try:
        app_config = get_app_config()
    except Exception as exc:  # its text may quote the file, secrets included: report the type
        raise HostError(
            f"DeerFlow's config.yaml could not be loaded ({type(exc).__name__})."
        ) from None
    entry = app_config.get_tool_config(tool_name)
    if entry is None:
        raise HostError(
            f"{tool_name} is not configured; add its entry to the tools list in config.yaml."
        )
    extras = {
        key: value
        for key, value in (getattr(entry, "model_extra", None) or {}).items()
        if key not in HOST_KEYS
    }
    return ToolEntry(
        extras=extras,
        config_dir=_config_dir(app_config),
        max_uncut_chars=deerflow_trigger(tool_name, getattr(app_config, "tool_output", None)),
    )


def _config_dir(app_config: object) -> Path | None:
    resolve = getattr(type(app_config), "resolve_config_path", None)
    if resolve is None:
        return None
    try:
        path = resolve()
    except Exception:  # no config file (a config built in code): relative paths use the cwd
        return None
    return Path(path).resolve().parent if path else None
