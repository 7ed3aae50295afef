"""One reading of a chat message in every form a thread is saved or streamed in.

LangGraph and LangChain hand the same message around as an object (``BaseMessage``), a plain dict
(``convert_to_messages`` / ``model_dump``: ``{"type": "ai", "content", ...}``), a role dict
(``{"role": "assistant", ...}``), ``messages_to_dict`` form (``{"type", "data": {...}}``) or the
serialized constructor form (``{"lc": 1, "id": [..., "AIMessage"], "kwargs": {...}}``). The
thread audit and the subagent forwarder both need the same four fields of it; this module is the
one place that knows the forms. Pure: plain values in, a :class:`MessageView` out.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, cast

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage, ToolMessage

__all__ = ["ROLES", "MessageRole", "MessageView", "message_fields", "message_view"]

MessageRole = Literal["ai", "tool", "human", "system", "other"]

#: A message's ``type``, ``role`` or LangChain class name (lower-cased) -> its role.
ROLES: Final[Mapping[str, MessageRole]] = {
    "ai": "ai",
    "assistant": "ai",
    "aimessage": "ai",
    "aimessagechunk": "ai",
    "tool": "tool",
    "toolmessage": "tool",
    "toolmessagechunk": "tool",
    "function": "tool",
    "human": "human",
    "user": "human",
    "humanmessage": "human",
    "system": "system",
    "systemmessage": "system",
}


class MessageView(NamedTuple):
    """The parts of a message the audit and the forwarder look at."""

    role: MessageRole
    name: object
    content: object
    artifact: object


def message_fields(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """The field mapping of a message dict: ``kwargs`` of the serialized form, ``data`` of the
    ``messages_to_dict`` form, else the dict itself."""
    if message.get("lc") is not None and isinstance(kwargs := message.get("kwargs"), Mapping):
        return kwargs
    if isinstance(data := message.get("data"), Mapping) and "content" not in message:
        return data
    return message


def message_view(message: object) -> MessageView | None:
    """The :class:`MessageView` of a message object or dict; None for anything else."""
    # A message object can exist only once langchain_core.messages is imported, so reading
    # plain dicts (the CLI's saved threads) never has to import LangChain.
    lc_messages = sys.modules.get("langchain_core.messages")
    if lc_messages is not None and isinstance(message, lc_messages.BaseMessage):
        base = cast("BaseMessage", message)
        # ``getattr`` of a missing pydantic attribute raises inside: slow on the hot path.
        artifact = (
            cast("ToolMessage", base).artifact
            if isinstance(base, lc_messages.ToolMessage)
            else (base.__pydantic_extra__ or {}).get("artifact")
        )
        return MessageView(_role(base.type), base.name, base.content, artifact)
    if not isinstance(message, Mapping):
        return None
    fields = message_fields(message)
    kind: object
    if fields is not message and fields is message.get("kwargs"):
        class_path = message.get("id")  # the serialized form names the class, not the type
        kind = class_path[-1] if isinstance(class_path, list) and class_path else None
    else:
        kind = message.get("type") or message.get("role")
    return MessageView(
        _role(kind), fields.get("name"), fields.get("content"), fields.get("artifact")
    )


def _role(kind: object) -> MessageRole:
    return ROLES.get(kind.lower(), "other") if isinstance(kind, str) else "other"
