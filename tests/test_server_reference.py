"""The differential test: the gateway against LangGraph's own server, on the same graph.

``langgraph dev`` (langgraph-api, in-memory runtime; the ``reference`` dependency group) serves
``build_agent`` — the gateway's graph — and both servers search one gated LightRAG upstream, so a
run is held in progress exactly when the sequence needs a busy thread. The same sequence of
requests (:mod:`tests.reference.scenario`: every operation of the README's table, every stream
mode, ``Last-Event-ID``, ``multitask_strategy``, unknown thread, busy thread, bad bodies; raw HTTP
and the official Python client) goes to both; status codes, bodies (ids and timestamps
normalised), the headers clients read and SSE event names in order are compared. Every
difference must be one of ``DIFFERENCES`` — each listed, with its reason, in the README — and each
of those must still occur, so the list stays exact both ways.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest

from tests.gated_upstream import gated_lightrag
from tests.gateway_process import gateway_process
from tests.reference.scenario import diff, play
from tests.reference.server import start_langgraph_dev

README = Path(__file__).resolve().parents[1] / "README.md"

#: (label in the README, step pattern, path pattern): every known difference, as fnmatch patterns
#: over ``diff``'s ``(step, path)`` (paths are ``/status``, ``/headers/…`` or ``/body/…``).
DIFFERENCES: tuple[tuple[str, str, str], ...] = (
    # Errors (first: an error body's ``error`` key is not a thread's).
    ("error bodies", "*", "/body/detail"),
    ("error bodies", "*", "/body/error"),
    # Run records: the gateway keeps no request copy (kwargs) and defaults to reject.
    ("run kwargs", "*", "/body*/kwargs/*"),
    ("run kwargs", "*", "/body*/langsmith_session_name"),
    ("default multitask_strategy", "*", "/body*/multitask_strategy"),
    # Thread objects.
    ("thread config and error", "*", "/body*/config/configurable"),
    ("thread config and error", "*", "/body*/error"),
    ("thread interrupts", "*", "/body/interrupts"),
    ("thread values", "threads.get.busy", "/body/values"),
    # Run metadata the gateway does not claim: it is not langgraph-api.
    ("langgraph-api's own metadata", "*", "/body*/langgraph_api_url"),
    ("langgraph-api's own metadata", "*", "/body*/langgraph_api_version"),
    ("langgraph-api's own metadata", "*", "/body*/langgraph_host"),
    ("langgraph-api's own metadata", "*", "/body*/langgraph_plan"),
    ("langgraph-api's own metadata", "*", "/body*/metadata/langgraph_auth_user_id"),
    ("langgraph-api's own metadata", "*", "/body*/metadata/langgraph_request_id"),
    ("langgraph-api's own metadata", "*", "/body*/metadata/user_id"),
    ("langgraph-api's own metadata", "*", "/body*/metadata/thread_id"),
    # State and history objects.
    ("state shape", "*", "/body*/checkpoint_id"),
    ("state shape", "*", "/body*/parent_checkpoint_id"),
    ("state shape", "*", "/body*/checkpoint/checkpoint_map"),
    ("state shape", "*", "/body*/parent_checkpoint/checkpoint_map"),
    ("state shape", "state.*", "/body/checkpoint/checkpoint_ns"),
    ("state shape", "*", "/body*/tasks/*/path"),
    ("state shape", "state.empty", "/body/checkpoint"),
    ("state shape", "state.empty", "/body/metadata"),
    ("state write answer", "state.update", "/body/configurable"),
    ("state write answer", "state.update", "/body/reserved_keys_removed"),
    ("stateless run location", "stateless*.stream", "/headers/*location"),
    ("stateless run location", "stateless*.create", "/headers/content-location"),
    # Messages.
    ("message ids", "*", "/body*/messages/*/id"),
    ("messages and messages-tuple together", "runs.stream.all-modes", "/body/events"),
    ("messages and messages-tuple together", "runs.stream.all-modes", "/body/data"),
    # Stream modes each server adds.
    ("stream modes", "runs.stream.tools", "*"),
    ("stream modes", "runs.stream.events", "*"),
    ("malformed JSON", "error.bad-json", "/status"),
    ("unknown assistant", "error.assistant-unknown", "/status"),
    ("context limits", "context.error.too-deep", "*"),
    ("assistant by graph id", "assistants.get", "*"),
    ("assistant by graph id", "assistants.schemas", "*"),
    ("assistant by graph id", "assistants.subgraphs", "*"),
    # The gateway's own description of itself.
    ("info and ok", "info", "*"),
    ("info and ok", "ok", "/body/services"),
    ("info and ok", "*assistants.search", "/body/0/description"),
    ("info and ok", "assistants.graph", "/body/nodes/*/data/id"),
)


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    work = tmp_path_factory.mktemp("reference")
    marker = str(uuid.uuid4())
    # One gated upstream per server, so both play the sequence at once.
    with (
        gated_lightrag() as theirs_upstream,
        gated_lightrag() as ours_upstream,
        ThreadPoolExecutor(2) as pool,
    ):
        starting = pool.submit(start_langgraph_dev, theirs_upstream.url, work)
        try:
            with gateway_process(
                None,
                str(work / "threads.sqlite"),
                work,
                "--provider",
                "lightrag",
                "--base-url",
                ours_upstream.url,
            ) as gateway:
                reference = starting.result()
                theirs = pool.submit(asyncio.run, play(reference.url, theirs_upstream, marker))
                ours = pool.submit(asyncio.run, play(gateway + "api", ours_upstream, marker))
                yield theirs.result(), ours.result()
        finally:
            starting.result().stop()


def _known(step: str, path: str) -> str | None:
    for label, step_pattern, path_pattern in DIFFERENCES:
        if fnmatchcase(step, step_pattern) and fnmatchcase(path, path_pattern):
            return label
    return None


def test_every_difference_from_langgraph_server_is_a_documented_one(
    recordings: tuple[Any, Any],
) -> None:
    theirs, ours = recordings
    assert theirs.keys() == ours.keys()
    unknown: list[str] = []
    used: set[int] = set()
    for step in theirs:
        for path, what in diff(theirs[step], ours[step]):
            if _known(step, path) is None:
                unknown.append(f"{step} {path}: {what}")
            for n, (_, step_pattern, path_pattern) in enumerate(DIFFERENCES):
                if fnmatchcase(step, step_pattern) and fnmatchcase(path, path_pattern):
                    used.add(n)
    assert not unknown, "undocumented differences:\n" + "\n".join(unknown)
    stale = [DIFFERENCES[n] for n in range(len(DIFFERENCES)) if n not in used]
    assert not stale, f"documented differences that no longer occur: {stale}"


def test_the_readme_lists_every_documented_difference() -> None:
    section = README.read_text(encoding="utf-8").split("Where it differs from LangGraph Server", 1)
    assert len(section) == 2, "README lacks the differences section"
    listed = set(re.findall(r"^\* \*\*(.+?)\.\*\*", section[1].split("\n## ", 1)[0], flags=re.M))
    assert {label for label, _, _ in DIFFERENCES} == listed


def test_both_servers_keep_thread_metadata_alike(recordings: tuple[Any, Any]) -> None:
    """What Agent Chat UI's thread list needs, pinned on both servers (the README's reason)."""
    for steps in recordings:
        assert steps["threads.search.before-run"]["body"] == []
        [found] = steps["threads.search.graph"]["body"]
        assert found["metadata"]["graph_id"] == "agent"
        assert found["metadata"]["assistant_id"] == "<id>"
        assert found["metadata"]["tag"] == 1
        assert "state_updated_at" in found
        assert len(steps["sdk.threads.search.graph"]["body"]) == 1
        assert steps["busy.reject"]["status"] == 409
        assert (
            steps["runs.stream.default"]["headers"]["location"] == "/threads/<id>/runs/<id>/stream"
        )
