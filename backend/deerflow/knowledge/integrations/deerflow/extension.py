"""The ``deerflow.extensions`` entry point: what ``deerflow extensions install`` enables.

DeerFlow's extension manager adds a package to its locked ``extensions`` dependency group — the
one install route that survives DeerFlow's own ``uv sync --locked`` — and requires exactly one
entry point in that group. The tools themselves are not contributed here (DeerFlow loads tools
from ``config.yaml``'s ``tools:`` list); :func:`install` registers one gateway service that
checks every ``knowledge_search`` entry pointing at this package when the gateway starts, so a
misspelt key or an unusable budget is reported in the gateway's log before the first question,
and the middlewares of ``subagents`` that let DeerFlow's ``task`` forward the evidence its
subagent cited. ``tests/test_integrations_deerflow_tools.py`` covers :func:`install`;
``tests/integration/deerflow/test_install.py`` installs the package with DeerFlow's extension
manager.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["API_VERSION", "ConfigCheck", "check_config", "install"]

#: The extension-api version this entry point is written against (DeerFlow checks it at load).
API_VERSION: Final = "0.1"

_log = logging.getLogger(__name__)


def check_config(app_config: Any) -> list[str]:
    """Warnings for each ``tools:`` entry whose ``use`` is one of this package's tools."""
    from deerflow.knowledge.integrations.deerflow import lightrag, local, ragflow
    from deerflow.knowledge.integrations.deerflow._host import HOST_KEYS, deerflow_trigger
    from deerflow.knowledge.integrations.deerflow._tool import check_entry
    from deerflow.knowledge.rules import MIN_MAX_CHARS

    flavors = {flavor.use: flavor for flavor in (local.FLAVOR, lightrag.FLAVOR, ragflow.FLAVOR)}
    warnings: list[str] = []
    for entry in getattr(app_config, "tools", None) or ():
        flavor = flavors.get(str(getattr(entry, "use", "")))
        if flavor is None:
            continue
        extras = {
            k: v for k, v in (getattr(entry, "model_extra", None) or {}).items()
            if k not in HOST_KEYS
        }  # fmt: skip
        warnings += check_entry(flavor, extras)
        name = getattr(entry, "name", None)
        if name != "knowledge_search":
            warnings.append(
                f"tools entry {name!r} uses {flavor.use}, whose tool is named knowledge_search; "
                "name the entry knowledge_search, or the tool cannot find its settings."
            )
        limit = deerflow_trigger("knowledge_search", getattr(app_config, "tool_output", None))
        if limit is not None and limit < MIN_MAX_CHARS:
            warnings.append(
                f"tool_output lets knowledge_search return only {limit} characters, fewer than "
                f"the {MIN_MAX_CHARS} a cited result needs: every search will answer with an "
                "error until it is raised."
            )
    return warnings


class ConfigCheck:
    """A DeerFlow gateway service that logs :func:`check_config`'s warnings once at start."""

    async def start(self, deps: Any) -> None:
        try:
            from deerflow.config import get_app_config

            app_config = get_app_config()
        except Exception as exc:  # DeerFlow reports its own config errors; never block start-up
            _log.warning("deerflow-knowledge: config check skipped (%s)", type(exc).__name__)
            return
        for warning in check_config(app_config):
            _log.warning("deerflow-knowledge: %s", warning)

    async def stop(self) -> None:
        return None


def install(registry: Any, config: Mapping[str, Any]) -> None:
    """DeerFlow's ``install(registry, config)``: register the start-up check, and the middlewares
    that carry a subagent's cited evidence through DeerFlow's ``task`` (see ``subagents``)."""
    from deerflow.knowledge.integrations.deerflow.subagents import SubagentEvidence

    registry.service(ConfigCheck())
    evidence = SubagentEvidence()
    registry.middlewares(evidence)
    registry.task_lifecycle(evidence)


install.__deerflow_api__ = API_VERSION  # type: ignore[attr-defined]
install.__deerflow_name__ = "deerflow-knowledge"  # type: ignore[attr-defined]
