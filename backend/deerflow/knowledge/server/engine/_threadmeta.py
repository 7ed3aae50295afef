"""Thread and run metadata as LangGraph Server keeps it, so clients that find threads by graph work.

Agent Chat UI's thread list searches ``{"metadata": {"graph_id": "agent"}}`` (or the assistant's
UUID): LangGraph Server writes ``graph_id`` and ``assistant_id`` into a thread's metadata when a run
creates the thread, and merges them into an existing thread's metadata whenever a run starts on it
while it is not busy. A run's own metadata is the assistant's, the thread's, the config's and the
request's, merged in that order, with ``assistant_id`` always the assistant's (a caller cannot
claim another). The graph sees that metadata plus the run's ids, so every ``messages`` event
carries them. ``state_updated_at`` is when a thread's state last changed (created, a run ended, a
state write) — unlike ``updated_at``, a metadata patch leaves it alone. Pure functions of plain
values; the routes and the run manager call them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "ASSISTANT_METADATA",
    "MAX_GRAPH_METADATA_CHARS",
    "graph_metadata",
    "new_thread_metadata",
    "run_metadata",
    "started_thread_metadata",
    "thread_with_state_time",
    "with_run_id",
]

#: The most metadata (code points of its JSON) a run's graph gets: LangGraph copies it into every
#: ``messages`` event, so a run of a few hundred tokens would multiply a large value by hundreds.
MAX_GRAPH_METADATA_CHARS: Final = 4096
#: The metadata of the gateway's one assistant (LangGraph Server's for a graph's default one).
ASSISTANT_METADATA: Final = {"created_by": "system"}


def new_thread_metadata(
    *,
    graph_id: str,
    assistant_id: str,
    config_metadata: Mapping[str, Any],
    request_metadata: Mapping[str, Any],
) -> dict[str, Any]:
    """The metadata of a thread a run creates (``if_not_exists="create"``, a stateless run)."""
    return {
        "graph_id": graph_id,
        "assistant_id": assistant_id,
        **config_metadata,
        **request_metadata,
    }


def started_thread_metadata(
    existing: Mapping[str, Any], *, status: str, graph_id: str, assistant_id: str
) -> dict[str, Any] | None:
    """An existing thread's metadata once a run starts on it; None when it stays as it is (a busy
    thread: the run in progress already set them)."""
    if status == "busy":
        return None
    merged = {**existing, "graph_id": graph_id, "assistant_id": assistant_id}
    return None if merged == dict(existing) else merged


def run_metadata(
    *,
    thread_metadata: Mapping[str, Any],
    config_metadata: Mapping[str, Any],
    request_metadata: Mapping[str, Any],
    assistant_id: str,
) -> dict[str, Any]:
    """A run's metadata (its record's ``metadata``)."""
    return {
        **ASSISTANT_METADATA,
        **thread_metadata,
        **config_metadata,
        **request_metadata,
        "assistant_id": assistant_id,
    }


def graph_metadata(
    metadata: Mapping[str, Any],
    *,
    thread_id: str,
    graph_id: str,
    max_chars: int = MAX_GRAPH_METADATA_CHARS,
) -> dict[str, Any]:
    """The ``config["metadata"]`` a run's graph gets: the run's metadata and ids, which LangGraph
    passes on to every ``messages`` event and checkpoint of the run (``with_run_id`` adds the
    run's id once it has one). Metadata longer than ``max_chars`` as JSON is left out (the ids
    stay): it would be copied into every event of the run."""
    ids = {
        "assistant_id": metadata.get("assistant_id"),
        "graph_id": graph_id,
        "run_attempt": 1,
        "langgraph_version": _langgraph_version(),
        "thread_id": thread_id,
    }
    encoded = json.dumps(metadata, ensure_ascii=False, separators=(",", ":"), default=str)
    return {**metadata, **ids} if len(encoded) <= max_chars else ids


def with_run_id(config: Mapping[str, Any], run_id: str) -> dict[str, Any]:
    """``config`` with the run's id in its metadata."""
    return {**config, "metadata": {**config.get("metadata", {}), "run_id": run_id}}


def thread_with_state_time(record: Mapping[str, Any]) -> dict[str, Any]:
    """A thread record with ``state_updated_at``; a record written before the gateway kept it
    reads its ``updated_at``, as LangGraph Server reads its own older threads."""
    found = dict(record)
    found.setdefault("state_updated_at", found.get("updated_at"))
    return found


def _langgraph_version() -> str:
    from langgraph.version import __version__

    return __version__
