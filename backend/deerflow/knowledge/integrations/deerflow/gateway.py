"""DeerFlow's gateway behind the trust boundary, for uvicorn.

Run it where DeerFlow runs its own gateway (``backend/``, ``PYTHONPATH=.``), with this module in
place of ``app.gateway.app:app``::

    uvicorn deerflow.knowledge.integrations.deerflow.gateway:app --host 127.0.0.1 --port 8001

``app`` is DeerFlow's own application object, created by DeerFlow on first access and wrapped in
:class:`~deerflow.knowledge.integrations.deerflow.boundary.KnowledgeTrustBoundary`; everything
else — routes, lifespan, authentication, streaming — is DeerFlow's, unchanged. The tests under
``tests/integration/deerflow/`` serve DeerFlow through it (``tests/integration/deerflow/gateway.py``
starts it); ``tests/test_integrations_deerflow_boundary.py`` covers the wrapper itself.
"""

from __future__ import annotations

from typing import Any

from deerflow.knowledge.integrations.deerflow.boundary import KnowledgeTrustBoundary

__all__ = ["wrap"]


def wrap(app: Any) -> KnowledgeTrustBoundary:
    """``app`` (DeerFlow's, or any ASGI app) behind the trust boundary."""
    return KnowledgeTrustBoundary(app)


def __getattr__(name: str) -> Any:
    if name != "app":
        raise AttributeError(name)
    try:
        from app.gateway.app import app as deerflow_app
    except ModuleNotFoundError as exc:
        if exc.name not in ("app", "app.gateway", "app.gateway.app"):
            raise
        raise ImportError(
            "DeerFlow's gateway (app.gateway.app) is not importable: start uvicorn from "
            "DeerFlow's backend/ folder with PYTHONPATH=. (as DeerFlow's `make gateway` does)"
        ) from None
    wrapped = wrap(deerflow_app)
    globals()["app"] = wrapped
    return wrapped
