"""What the gateway uses when it is not told otherwise, read by the wiring and the CLI alike.

Importing it costs nothing (no FastAPI, no LangGraph): ``cli/_serve.py`` reads
``GATEWAY_DEFAULTS`` for its ``serve`` options at import time, while ``--help`` must stay light. It also holds the two
questions the gateway and the CLI both ask of a storage target or an installation: is this a
PostgreSQL URL, and where is the bundled chat page.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Final

__all__ = [
    "GATEWAY_DEFAULTS",
    "POSTGRES_SCHEMES",
    "GatewayDefaults",
    "bundled_page_dir",
    "is_postgres_url",
]

#: URL schemes naming a PostgreSQL database (anything else is a SQLite file path).
POSTGRES_SCHEMES: Final = ("postgres://", "postgresql://")


@dataclass(frozen=True)
class GatewayDefaults:
    """The gateway's defaults: where it listens, where it keeps threads, a run's time budget."""

    host: str = "127.0.0.1"
    port: int = 8000
    #: Thread storage: a SQLite file path or a PostgreSQL URL.
    checkpoint: str = ".deerflow-knowledge/threads.sqlite"
    #: Seconds one run may take before it is stopped.
    run_timeout: float = 300.0


GATEWAY_DEFAULTS: Final = GatewayDefaults()


def is_postgres_url(target: str) -> bool:
    """Whether a storage target names a PostgreSQL database (else it is a SQLite file path)."""
    return target.startswith(POSTGRES_SCHEMES)


def bundled_page_dir() -> Path | None:
    """The chat page the package ships (``static/``), or None in an installation without it."""
    folder = Path(str(resources.files("deerflow.knowledge.server") / "static"))
    return folder if folder.is_dir() else None
