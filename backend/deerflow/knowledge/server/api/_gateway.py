"""What every route works with: the graph, its checkpointer, the records and the run manager.

It also holds the parsing every write path shares: caller-supplied values pass
``strip_reserved_keys`` first and messages are parsed in one call, so no route can store evidence a
caller wrote.

Tested through the routes (``tests/test_server.py``, ``tests/test_server_threadmeta.py``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Final

from fastapi import Request
from langgraph.checkpoint.base import BaseCheckpointSaver

from deerflow.knowledge.server.api._http import ApiError
from deerflow.knowledge.server.engine._manager import RunManager
from deerflow.knowledge.server.engine._records import Records
from deerflow.knowledge.server.engine._runplan import thread_config

__all__ = [
    "GRAPH_ID",
    "Gateway",
    "assistant_uuid",
    "gateway",
]

#: The graph id of the one agent (LangGraph's conventional name, the default of Agent Chat UI).
GRAPH_ID: Final = "agent"


#: The UUID v5 namespace of LangGraph Server's default assistants (langgraph-api's, not a
#: standard RFC 4122 one).
_ASSISTANT_NAMESPACE: Final = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")


def assistant_uuid(graph_id: str) -> str:
    """The assistant id LangGraph Server gives a graph's default assistant (UUID v5 of the id)."""
    return str(uuid.uuid5(_ASSISTANT_NAMESPACE, graph_id))


@dataclass
class Gateway:
    graph: Any
    saver: BaseCheckpointSaver[Any]
    records: Records
    runs: RunManager
    provider_label: str
    model_label: str
    #: The longest question the page may send (code points), or None when the model has no
    #: limit of this gateway's own.
    max_question_chars: int | None = None

    def thread_config(self, thread_id: str, checkpoint: dict[str, Any] | None = None) -> Any:
        return thread_config(thread_id, checkpoint)

    async def thread(self, thread_id: str) -> dict[str, Any]:
        """The thread's record; 404 when there is none."""
        if not _is_uuid(thread_id):
            raise ApiError(404, f"Thread {thread_id} not found")
        # A thread is its record: checkpoints without one (a run still unwinding after a delete)
        # never bring a thread back.
        record = await self.records.thread(thread_id)
        if record is None:
            raise ApiError(404, f"Thread {thread_id} not found")
        return record

    def assistant_id(self, requested: str | None) -> str:
        if requested in (None, GRAPH_ID, assistant_uuid(GRAPH_ID)):
            return assistant_uuid(GRAPH_ID)
        raise ApiError(404, f"Assistant {requested} not found (this gateway serves '{GRAPH_ID}')")

    def check_node(self, as_node: str | None) -> None:
        if as_node is not None and as_node not in self.graph.nodes:
            known = ", ".join(sorted(n for n in self.graph.nodes if not n.startswith("__")))
            raise ApiError(422, f"as_node {as_node!r} is not a node of the graph ({known})")


def gateway(request: Request) -> Gateway:
    found: Gateway = request.app.state.gateway
    return found


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
