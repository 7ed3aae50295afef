"""The ``server`` package's face: short and lazy, so importing one of its modules stays cheap.

Importing the package, its errors or its defaults (or ``deerflow.knowledge.responder``, which
the README uses outside the gateway and the gateway wires in) must not load the web stack or LangGraph (counted in a fresh
interpreter: which modules are loaded, not how long it takes). Each public name still resolves,
loading its own module on first use.
"""

from __future__ import annotations

import pytest

import deerflow.knowledge.server as server
from tests.test_public_api import _imported_after as _loaded_after

#: The gateway's stack: the web framework and server, LangGraph (its checkpointers and stores
#: among it) and the PostgreSQL driver.
_GATEWAY_STACK = ("fastapi", "starlette", "uvicorn", "langgraph", "psycopg", "psycopg_pool")


def _stack(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in _GATEWAY_STACK)


@pytest.mark.parametrize(
    "module",
    [
        "deerflow.knowledge.server",
        "deerflow.knowledge.responder",
        "deerflow.knowledge.server.errors",
        "deerflow.knowledge.server._defaults",
    ],
)
def test_importing_a_server_module_loads_no_gateway_stack(module: str) -> None:
    assert _stack(_loaded_after(f"import {module}")) == []


def test_the_face_and_its_defaults_load_no_agent_stack_either() -> None:
    loaded = _loaded_after("import deerflow.knowledge.server._defaults")
    assert sorted(m for m in loaded if m.split(".")[0] in ("langchain", "langchain_core")) == []


def test_the_gateway_stack_loads_with_the_first_gateway_name() -> None:
    loaded = _loaded_after("from deerflow.knowledge.server import create_app")
    assert {"fastapi", "langgraph.store.base"} <= loaded
    assert "uvicorn" not in loaded  # only serve needs it, when it runs


def test_every_public_name_resolves_on_first_use() -> None:
    for name in server.__all__:
        assert getattr(server, name) is not None
    assert set(server.__all__) <= set(dir(server))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = server.nope  # type: ignore[attr-defined]
