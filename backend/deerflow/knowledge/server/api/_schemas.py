"""Request bodies of the LangGraph Platform API subset, as the SDKs send them.

Field names and defaults follow LangGraph Server's API reference and the two SDKs. Options the
gateway does not implement are declared too, so that setting one answers 422 naming it instead of
being silently ignored; fields nobody defined are ignored, as LangGraph Server does.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from deerflow.knowledge.server.engine._values import nul_free_nodes

__all__ = [
    "MAX_THREAD_METADATA_BYTES",
    "AssistantSearch",
    "CheckpointRequest",
    "CommandBody",
    "HistoryRequest",
    "RunCreate",
    "StateUpdate",
    "ThreadCreate",
    "ThreadId",
    "ThreadPatch",
    "ThreadSearch",
    "canonical_thread_id",
    "metadata_bytes",
    "unsupported_options",
]


#: The most a thread's metadata may weigh (its JSON), however many requests built it.
MAX_THREAD_METADATA_BYTES: Final = 256 * 1024


def _storable(value: Any) -> Any:
    nul_free_nodes(value)
    return value


def metadata_bytes(metadata: dict[str, Any]) -> int:
    """The size of ``metadata`` as stored (compact JSON, UTF-8)."""
    import orjson

    return len(orjson.dumps(metadata))


def canonical_thread_id(value: str) -> str:
    """A thread id in the one spelling the gateway stores (lowercase, hyphenated): every spelling
    of one UUID (uppercase, braces, ``urn:uuid:``, no hyphens) names the same thread. Anything
    else is returned as given (and found nowhere)."""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return value


#: A thread id in a path, canonical (:func:`canonical_thread_id`).
ThreadId = Annotated[str, AfterValidator(canonical_thread_id)]
_Metadata = Annotated[dict[str, Any], AfterValidator(_storable)]
_Ids = Annotated[list[str], AfterValidator(_storable)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class SuperstepUpdate(_Body):
    values: Any = None
    command: dict[str, Any] | None = None
    as_node: str


class Superstep(_Body):
    updates: list[SuperstepUpdate]


class ThreadCreate(_Body):
    thread_id: str | None = None
    metadata: _Metadata = Field(default_factory=dict)
    if_exists: Literal["raise", "do_nothing"] = "raise"
    supersteps: list[Superstep] | None = None
    graph_id: str | None = None
    ttl: Any = None


class ThreadPatch(_Body):
    metadata: _Metadata = Field(default_factory=dict)
    ttl: Any = None


class ThreadSearch(_Body):
    metadata: _Metadata | None = None
    values: dict[str, Any] | None = None
    status: Literal["idle", "busy", "interrupted", "error"] | None = None
    ids: _Ids | None = None
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0)
    sort_by: (
        Literal["thread_id", "status", "created_at", "updated_at", "state_updated_at"] | None
    ) = None
    sort_order: Literal["asc", "desc"] | None = None
    select: list[str] | None = None
    extract: dict[str, str] | None = None


class StateUpdate(_Body):
    values: dict[str, Any] | None = None
    as_node: str | None = None
    checkpoint: dict[str, Any] | None = None
    checkpoint_id: str | None = None


class CheckpointRequest(_Body):
    checkpoint: dict[str, Any]
    subgraphs: bool = False


class HistoryRequest(_Body):
    limit: int = Field(10, ge=1, le=1000)
    before: dict[str, Any] | str | None = None
    metadata: _Metadata | None = None
    checkpoint: dict[str, Any] | None = None


class CommandBody(_Body):
    update: Any = None
    resume: Any = None
    goto: Any = None


class RunCreate(_Body):
    assistant_id: str | None = None
    input: dict[str, Any] | None = None
    command: CommandBody | None = None
    stream_mode: str | list[str] = "values"
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    metadata: _Metadata = Field(default_factory=dict)
    config: dict[str, Any] | None = None
    #: Checked by ``_runcontext.check_context``, which says why a context is refused.
    context: Any = None
    checkpoint: dict[str, Any] | None = None
    checkpoint_id: str | None = None
    checkpoint_during: bool | None = None
    durability: Literal["sync", "async", "exit"] | None = None
    interrupt_before: Literal["*"] | list[str] | None = None
    interrupt_after: Literal["*"] | list[str] | None = None
    multitask_strategy: Literal["reject", "interrupt", "rollback", "enqueue"] = "reject"
    if_not_exists: Literal["create", "reject"] = "reject"
    on_disconnect: Literal["cancel", "continue"] = "continue"
    on_completion: Literal["delete", "keep"] | None = None
    # Declared only so that using them is a clear 422 (see unsupported_options).
    webhook: Any = None
    feedback_keys: Any = None
    after_seconds: Any = None
    langsmith_tracer: Any = None
    strict_resume: Any = None


class AssistantSearch(_Body):
    metadata: _Metadata | None = None
    graph_id: str | None = None
    name: str | None = None
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0)
    sort_by: str | None = None
    sort_order: Literal["asc", "desc"] | None = None
    select: list[str] | None = None


def unsupported_options(body: RunCreate) -> list[str]:
    """The options set in ``body`` that this gateway does not implement."""
    names = []
    for name in ("webhook", "feedback_keys", "after_seconds", "langsmith_tracer", "strict_resume"):
        if getattr(body, name) not in (None, [], {}, 0, False):
            names.append(name)
    if body.multitask_strategy == "rollback":
        names.append("multitask_strategy 'rollback'")
    return names
