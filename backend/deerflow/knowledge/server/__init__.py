"""The reference gateway (FastAPI + LangGraph) and the bundled chat page.

``build_config`` wires a provider and a chat model into a ``GatewayConfig`` (``_wiring``);
``create_app`` makes the ASGI app (``_app``) and ``serve`` runs it as a process of its own
(``_serve``), the one place that tunes the process. This face and ``errors`` (the domain errors an
embedding application may catch) are the public API; every other module is ``_``-private, as in
httpx. The names below load their modules on first use, so importing the package or
``server.errors`` loads neither FastAPI nor LangGraph's server pieces.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from deerflow.knowledge.server._defaults import GATEWAY_DEFAULTS, GatewayDefaults
    from deerflow.knowledge.server.api._app import GatewayConfig, create_app
    from deerflow.knowledge.server.process._serve import MISSING_PAGE_HINT, serve
    from deerflow.knowledge.server.process._wiring import (
        CHECKPOINT_PAGE_BYTES,
        SYSTEM_PROMPT,
        build_agent,
        build_config,
        open_checkpointer,
        open_store,
    )
    from deerflow.knowledge.server.wire._wire import message_to_wire

__all__ = [
    "CHECKPOINT_PAGE_BYTES",
    "GATEWAY_DEFAULTS",
    "MISSING_PAGE_HINT",
    "SYSTEM_PROMPT",
    "GatewayConfig",
    "GatewayDefaults",
    "build_agent",
    "build_config",
    "create_app",
    "message_to_wire",
    "open_checkpointer",
    "open_store",
    "serve",
]

#: Where each public name lives (loaded on first use).
_HOMES: Final = {
    "CHECKPOINT_PAGE_BYTES": "process._wiring",
    "GATEWAY_DEFAULTS": "_defaults",
    "MISSING_PAGE_HINT": "process._serve",
    "SYSTEM_PROMPT": "process._wiring",
    "GatewayConfig": "api._app",
    "GatewayDefaults": "_defaults",
    "build_agent": "process._wiring",
    "build_config": "process._wiring",
    "create_app": "api._app",
    "message_to_wire": "wire._wire",
    "open_checkpointer": "process._wiring",
    "open_store": "process._wiring",
    "serve": "process._serve",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
