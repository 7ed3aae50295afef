"""The public surface is a tested artifact: sorted, complete and importable."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys

import pytest

import deerflow.knowledge as knowledge


def _public_modules() -> list[str]:
    names = ["deerflow.knowledge"]
    for info in pkgutil.walk_packages(knowledge.__path__, "deerflow.knowledge."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def _isort_key(name: str) -> tuple[int, str]:
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_all_is_sorted_and_resolves() -> None:
    for name in _public_modules():
        module = importlib.import_module(name)
        exported = getattr(module, "__all__", None)
        assert exported is not None, f"{name} has no __all__"
        # ruff's RUF022 order: CONSTANTS, then Classes, then functions, each sorted.
        assert exported == sorted(exported, key=_isort_key), name
        for attribute in exported:
            assert hasattr(module, attribute), f"{name}.{attribute}"


def test_package_exports_every_public_name_of_the_core() -> None:
    for module_name in ("rules", "contract", "ids", "envelope", "citations"):
        module = importlib.import_module(f"deerflow.knowledge.{module_name}")
        public = {n for n in dir(module) if not n.startswith("_")} & set(module.__all__)
        assert public == set(module.__all__)
    assert len(knowledge.__all__) == len(set(knowledge.__all__))


# Modules the pure core must not pull in: the agent stack, the gateway stack and the HTTP client
# load only where they are used (counted in a fresh interpreter: imports, not time).
_HEAVY = (
    "langchain",
    "langchain_core",
    "langgraph",
    "fastapi",
    "uvicorn",
    "httpx",
    "pypdf",
    "rich",
)


def _imported_after(statement: str) -> set[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    )
    return set(json.loads(result.stdout))


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in _HEAVY)


def test_importing_the_package_loads_only_the_pure_core() -> None:
    assert _heavy(_imported_after("import deerflow.knowledge")) == []


def test_every_lazy_name_resolves_and_loads_its_stack_on_first_use() -> None:
    loaded = _imported_after("from deerflow.knowledge import make_knowledge_tool")
    assert "langchain_core.tools" in loaded
    assert "langchain.agents" not in loaded
    loaded = _imported_after("from deerflow.knowledge import ToolOutputBudgetMiddleware")
    assert "langchain.agents.middleware" in loaded
    assert set(knowledge.__all__) <= set(dir(knowledge))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = knowledge.nope  # type: ignore[attr-defined]


def test_the_trust_boundary_runs_without_importing_langgraph() -> None:
    # The walk recognises a Send through an already-imported langgraph.types (test_trust.py strips
    # real ones); a process that never imported LangGraph cannot hold one.
    loaded = _imported_after(
        "from deerflow.knowledge import strip_reserved_keys\n"
        "strip_reserved_keys({'messages': [{'artifact': {'knowledge_sources': []}}]})"
    )
    assert _heavy(loaded) == []


def test_the_command_line_help_loads_no_langchain_server_or_http_stack() -> None:
    # `deerflow-knowledge --help` needs typer and rich only; the audit reads saved threads as
    # plain dicts, so deerflow.knowledge.messages must not import LangChain to recognise them.
    loaded = _imported_after("import deerflow.knowledge.cli")
    assert sorted(m for m in _heavy(loaded) if m.split(".")[0] != "rich") == []
