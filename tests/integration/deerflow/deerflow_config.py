"""DeerFlow's ``config.yaml`` for the suite: the scripted model, the package's local tool, and
DeerFlow's ``tool_output`` budget; everything that would call a model on its own (titles,
suggestions, memory, summarization) or reach the network is off.

DeerFlow re-reads the file when its content changes, so one gateway serves several budgets.
The ``plugins:`` block written by ``deerflow extensions install`` is kept on every rewrite.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.integration.deerflow.stub_model import MODEL_NAME

TOOL_NAME = "knowledge_search"
THINKING_MODEL_NAME = f"{MODEL_NAME}-thinking"
LOCAL_TOOL = "deerflow.knowledge.integrations.deerflow.local:knowledge_search_tool"
TOP_K = 8


@dataclass
class DeerFlowConfig:
    path: Path
    home: Path
    model_base_url: str
    index: Path
    tool_output: dict[str, Any] = field(default_factory=dict)
    knowledge_extras: dict[str, Any] = field(default_factory=dict)
    middlewares: list[str] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        tool = {
            "name": TOOL_NAME,
            "group": "knowledge",
            "use": LOCAL_TOOL,
            "index": str(self.index),
            "top_k": TOP_K,
            **self.knowledge_extras,
        }
        document: dict[str, Any] = {
            "config_version": 34,
            "log_level": "info",
            "models": [
                _model(MODEL_NAME, "Scripted stub", self.model_base_url),
                # DeerFlow's UI offers its Ultra mode (subagents) only for a model that supports
                # thinking: the same scripted model under a second name.
                _model(
                    THINKING_MODEL_NAME,
                    "Scripted stub (thinking)",
                    self.model_base_url,
                    supports_thinking=True,
                ),
            ],
            "tool_groups": [{"name": "knowledge"}, {"name": "file:read"}],
            "tools": [
                tool,
                {"name": "ls", "group": "file:read", "use": "deerflow.sandbox.tools:ls_tool"},
                {
                    "name": "read_file",
                    "group": "file:read",
                    "use": "deerflow.sandbox.tools:read_file_tool",
                },
            ],
            "sandbox": {
                "use": "deerflow.sandbox.local:LocalSandboxProvider",
                "allow_host_bash": False,
            },
            "title": {"enabled": False},
            "suggestions": {"enabled": False},
            "summarization": {"enabled": False},
            "memory": {"enabled": False},
            "database": {"backend": "sqlite", "sqlite_dir": str(self.home / "data")},
            "run_events": {"backend": "memory"},
        }
        if self.tool_output:
            document["tool_output"] = dict(self.tool_output)
        if self.middlewares:
            document["extensions"] = {"middlewares": list(self.middlewares)}
        return document

    def write(self) -> None:
        """Write the file (atomically: the gateway may read it at any moment), keeping the
        ``plugins:`` block DeerFlow's extension manager maintains."""
        document = self.document()
        if self.path.is_file():
            current = yaml.safe_load(self.path.read_text(encoding="utf-8")) or {}
            if "plugins" in current:
                document["plugins"] = current["plugins"]
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        os.replace(temporary, self.path)


def _model(name: str, display_name: str, base_url: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "display_name": display_name,
        "use": "langchain_openai:ChatOpenAI",
        "model": MODEL_NAME,
        "base_url": base_url,
        "api_key": "$OPENAI_API_KEY",
        "max_retries": 0,
        "request_timeout": 60.0,
        "context_window": 128000,
        **extra,
    }
