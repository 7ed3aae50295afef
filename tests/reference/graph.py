"""The project's agent as ``langgraph dev`` loads it: ``build_agent`` over the LightRAG provider
at ``DEERFLOW_REFERENCE_LIGHTRAG_URL`` with the offline responder, the checkpointer left to the
server — the same graph the gateway serves in the differential test."""

from __future__ import annotations

import os

from deerflow.knowledge.providers.lightrag import LightRAGProvider
from deerflow.knowledge.responder import ExtractiveResponder
from deerflow.knowledge.server import build_agent

graph = build_agent(
    LightRAGProvider(os.environ["DEERFLOW_REFERENCE_LIGHTRAG_URL"]), ExtractiveResponder(), None
)
