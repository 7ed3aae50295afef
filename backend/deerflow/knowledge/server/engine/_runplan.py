"""A run request turned into a ``RunPlan``: what the graph gets, checked before a run starts.

The run routes (``api/_runs.py``) read and validate the request and find its thread; everything
after that is a pure function of the request's fields, the thread's metadata and the graph's
nodes and context schema: the stream modes, the run's config and runtime context (``_runcontext``),
the graph's input or ``Command``, the interrupt nodes, the run's metadata. It lives in the engine
so it is read and tested without FastAPI (``tests/test_server_runplan.py``); a refusal is a
``RequestRefused`` of ``_values`` (the caller's fault), to which ``api/_http.py`` gives a status.
The request is anything with a run request's fields (``RunRequest``): the API's ``RunCreate``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from langgraph.types import Command

from deerflow.knowledge.server.engine._manager import RunPlan
from deerflow.knowledge.server.engine._runcontext import (
    CONTEXT_AND_CONFIGURABLE,
    ContextRefused,
    check_context,
    fit_context,
    mirrored_keys,
)
from deerflow.knowledge.server.engine._streaming import STREAM_MODES
from deerflow.knowledge.server.engine._threadmeta import (
    graph_metadata,
    new_thread_metadata,
    run_metadata,
)
from deerflow.knowledge.server.engine._values import (
    OptionsConflict,
    RequestRefused,
    parse_messages,
    storable_values,
    strip,
    subgraphs_refused,
    trusted_values,
)

__all__ = [
    "MAX_RECURSION_LIMIT",
    "CommandRequest",
    "RequestMetadata",
    "RunRequest",
    "config_metadata",
    "graph_input",
    "interrupt_nodes",
    "request_metadata",
    "run_config",
    "run_context",
    "run_plan",
    "stream_modes",
    "thread_config",
]

#: The most supersteps a caller may allow a run (``config.recursion_limit``).
MAX_RECURSION_LIMIT: Final = 1000


class CommandRequest(Protocol):
    """A run's ``command``, as the caller sent it."""

    @property
    def update(self) -> Any:
        """State values to write before the graph resumes."""

    @property
    def resume(self) -> Any:
        """The value an interrupted node resumes with."""

    @property
    def goto(self) -> Any:
        """The node (or nodes) to go to next."""


class RunRequest(Protocol):
    """The fields of a run request the plan reads (the API's ``RunCreate`` has them all)."""

    @property
    def input(self) -> dict[str, Any] | None:
        """The graph's input (state values), or None with a ``command``."""

    @property
    def command(self) -> CommandRequest | None:
        """``update`` / ``resume`` / ``goto`` instead of an input."""

    @property
    def metadata(self) -> dict[str, Any]:
        """The run's metadata, as the caller wrote it."""

    @property
    def stream_mode(self) -> str | list[str]:
        """The modes to stream (one, or several)."""

    @property
    def stream_subgraphs(self) -> bool:
        """Whether subgraphs' events are streamed too."""

    @property
    def stream_resumable(self) -> bool:
        """Whether the run's events are kept for a reconnecting client."""

    @property
    def config(self) -> dict[str, Any] | None:
        """LangGraph's run config (``configurable``, ``recursion_limit``, ``tags``, ``metadata``)."""

    @property
    def context(self) -> Any:
        """The graph's runtime context (LangGraph 0.6 on), as the caller wrote it."""

    @property
    def checkpoint(self) -> dict[str, Any] | None:
        """The checkpoint to run from."""

    @property
    def checkpoint_id(self) -> str | None:
        """The id of the checkpoint to run from (older clients)."""

    @property
    def checkpoint_during(self) -> bool | None:
        """Whether checkpoints are written during the run (older clients)."""

    @property
    def durability(self) -> str | None:
        """When checkpoints are written: ``sync``, ``async`` or ``exit``."""

    @property
    def interrupt_before(self) -> str | list[str] | None:
        """Nodes to stop before (``*``: all)."""

    @property
    def interrupt_after(self) -> str | list[str] | None:
        """Nodes to stop after (``*``: all)."""

    @property
    def multitask_strategy(self) -> str:
        """What a second run on a busy thread does."""

    @property
    def on_completion(self) -> str | None:
        """Whether a stateless run's thread is kept (``keep``) or deleted."""


@dataclass(frozen=True)
class RequestMetadata:
    """A run request's metadata, past the trust boundary, read before its thread is looked up."""

    #: The request's ``metadata``.
    request: dict[str, Any]
    #: Its ``config.metadata``.
    config: dict[str, Any]
    #: The metadata of a thread the run creates (``if_not_exists="create"``, a stateless run).
    new_thread: dict[str, Any]


def request_metadata(body: RunRequest, *, graph_id: str, assistant_id: str) -> RequestMetadata:
    """The request's metadata and its ``config.metadata``, and what a thread it creates gets."""
    request: dict[str, Any] = strip(body.metadata).value
    config = config_metadata(body)
    new_thread = new_thread_metadata(
        graph_id=graph_id,
        assistant_id=assistant_id,
        config_metadata=config,
        request_metadata=request,
    )
    return RequestMetadata(request=request, config=config, new_thread=new_thread)


def thread_config(thread_id: str, checkpoint: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The LangGraph config naming a thread, at a checkpoint when one is given."""
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if checkpoint:
        for key in ("checkpoint_id", "checkpoint_ns"):
            if checkpoint.get(key):
                configurable[key] = str(checkpoint[key])
    return {"configurable": configurable}


def stream_modes(stream_mode: str | list[str]) -> list[str]:
    """The modes a run streams, each once, in the caller's order (``values`` when none)."""
    modes = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)
    unknown = [m for m in modes if m not in STREAM_MODES]
    if unknown:
        raise RequestRefused(
            f"stream_mode {', '.join(map(repr, unknown))} is not supported "
            f"(supported: {', '.join(sorted(STREAM_MODES))})"
        )
    return list(dict.fromkeys(modes)) or ["values"]


def run_config(
    body: RunRequest,
    *,
    thread_id: str,
    context_schema: Mapping[str, Any] | None,
    max_recursion_limit: int = MAX_RECURSION_LIMIT,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's config and its runtime context (``_runcontext``); ``context_schema`` is the
    graph's context schema (JSON schema), or None when it has none."""
    checkpoint = body.checkpoint or (
        {"checkpoint_id": body.checkpoint_id} if body.checkpoint_id else None
    )
    subgraphs_refused(checkpoint)
    config: dict[str, Any] = thread_config(thread_id, checkpoint)
    extra = dict(body.config or {})
    configurable = extra.pop("configurable", None) or {}
    if not isinstance(configurable, dict):
        raise RequestRefused("config.configurable must be an object")
    context = run_context(body.context)
    if context and configurable:
        raise OptionsConflict(CONTEXT_AND_CONFIGURABLE)
    for reserved in ("thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map"):
        if reserved in configurable:
            raise RequestRefused(f"config.configurable.{reserved} is set by the gateway")
    internal = sorted(k for k in configurable if isinstance(k, str) and k.startswith("__"))
    if internal:
        # LangGraph's own run wiring (__pregel_checkpointer, ...): a caller must not replace it.
        raise RequestRefused(f"config.configurable keys {internal} are reserved for LangGraph")
    configurable = strip(configurable).value
    config["configurable"].update(configurable)
    if context:
        # Keys the graph's schema drops are not mirrored either (LangGraph Server removes them).
        context = fit_context(context, context_schema)
        config["configurable"].update(mirrored_keys(context))
    else:  # LangGraph Server: a run without context has its configurable as context
        context = fit_context(dict(configurable), context_schema)
    if "recursion_limit" in extra:
        limit = extra.pop("recursion_limit")
        if not isinstance(limit, int) or not 1 <= limit <= max_recursion_limit:
            raise RequestRefused(f"config.recursion_limit must be 1..{max_recursion_limit}")
        config["recursion_limit"] = limit
    if "tags" in extra:
        tags = extra.pop("tags")
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise RequestRefused("config.tags must be a list of strings")
        config["tags"] = tags
    extra.pop("metadata", None)
    if extra:
        raise RequestRefused(f"config keys {sorted(extra)} are not supported by this gateway")
    return config, context


def run_context(raw: Any) -> dict[str, Any]:
    """The caller's ``context``, checked and past the trust boundary (``{}`` when none)."""
    if raw is None:
        return {}
    try:
        context = check_context(raw)
    except ContextRefused as exc:
        raise RequestRefused(str(exc)) from None
    stripped: dict[str, Any] = strip(context).value
    return stripped


def graph_input(body: RunRequest, *, nodes: Collection[str]) -> Any:
    """What the graph is invoked with: the caller's input (messages parsed), a ``Command``
    (``goto`` only to one of ``nodes``), or None."""
    if body.input is not None and body.command is not None:
        raise RequestRefused("a run takes either input or command, not both")
    storable_values(body.input)
    if body.command is not None:
        storable_values([body.command.update, body.command.resume, body.command.goto])
    if body.command is not None:
        command = body.command
        update = None
        if command.update is not None:
            update, _ = trusted_values(command.update)
        resume = strip(command.resume).value if command.resume is not None else None
        goto = command.goto
        for target in goto if isinstance(goto, list) else [goto] if goto else []:
            node = target.get("node") if isinstance(target, dict) else target
            if not isinstance(node, str) or node not in nodes:
                raise RequestRefused(f"command.goto {node!r} is not a node of the graph")
        goto_nodes = (
            [g["node"] if isinstance(g, dict) else g for g in goto]
            if isinstance(goto, list)
            else ([goto["node"] if isinstance(goto, dict) else goto] if goto else ())
        )
        return Command(update=update, resume=resume, goto=goto_nodes)
    if body.input is None:
        return None
    values, _ = trusted_values(body.input)
    if isinstance(values, dict) and "messages" not in values:
        values = {**values, "messages": parse_messages([])}
    return values


def interrupt_nodes(names: Any, option: str, *, nodes: Collection[str]) -> Any:
    """``interrupt_before`` / ``interrupt_after`` (``option``): ``"*"``, None, or nodes of the
    graph."""
    if names is None or names == "*":
        return names
    for name in names:
        if name not in nodes:
            raise RequestRefused(f"{option} {name!r} is not a node of the graph")
    return names


def config_metadata(body: RunRequest) -> dict[str, Any]:
    """The caller's ``config.metadata``, past the trust boundary (``{}`` when none)."""
    metadata = (body.config or {}).get("metadata")
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise RequestRefused("config.metadata must be an object")
    return dict(strip(metadata).value)


def run_plan(
    body: RunRequest,
    *,
    thread_id: str,
    assistant_id: str,
    graph_id: str,
    thread_metadata: dict[str, Any],
    metadata: RequestMetadata,
    stateless: bool,
    nodes: Collection[str],
    context_schema: Mapping[str, Any] | None,
) -> RunPlan:
    """The plan of a run on ``thread_id`` (a new one when ``stateless``), whose thread carries
    ``thread_metadata``; ``metadata`` is the request's (``request_metadata``)."""
    durability = body.durability
    if durability is None and body.checkpoint_during is not None:
        durability = "async" if body.checkpoint_during else "exit"
    config, context = run_config(body, thread_id=thread_id, context_schema=context_schema)
    plan = RunPlan(
        thread_id=thread_id,
        assistant_id=assistant_id,
        graph_input=graph_input(body, nodes=nodes),
        config=config,
        context=context,
        modes=stream_modes(body.stream_mode),
        subgraphs=body.stream_subgraphs,
        resumable=body.stream_resumable,
        metadata=run_metadata(
            thread_metadata=thread_metadata,
            config_metadata=metadata.config,
            request_metadata=metadata.request,
            assistant_id=assistant_id,
        ),
        multitask_strategy=body.multitask_strategy,
        interrupt_before=interrupt_nodes(body.interrupt_before, "interrupt_before", nodes=nodes),
        interrupt_after=interrupt_nodes(body.interrupt_after, "interrupt_after", nodes=nodes),
        durability=durability,
        delete_thread_after=stateless and body.on_completion != "keep",
    )
    plan.config["metadata"] = graph_metadata(plan.metadata, thread_id=thread_id, graph_id=graph_id)
    return plan
