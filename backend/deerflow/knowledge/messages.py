"""One reading of a chat message in every form a thread is saved or streamed in.

LangGraph and LangChain hand the same message around as an object (``BaseMessage``), a plain dict
(``convert_to_messages`` / ``model_dump``: ``{"type": "ai", "content", ...}``), a role dict
(``{"role": "assistant", ...}``), ``messages_to_dict`` form (``{"type", "data": {...}}``) or the
serialized constructor form (``{"lc": 1, "id": [..., "AIMessage"], "kwargs": {...}}``). The
thread audit and the subagent forwarder both need the same four fields of it; this module is the
one place that knows the forms. A message's content is a string or a list of parts (strings,
``{"type": "text", "text": ...}`` and other blocks such as images): :func:`text_parts` reads its
text, :func:`map_text_parts` and :func:`replace_text` rewrite it, keeping every other part. Pure:
plain values in, plain values out.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, cast

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage, ToolMessage

__all__ = [
    "ROLES",
    "MessageRole",
    "MessageView",
    "map_text_parts",
    "message_fields",
    "message_view",
    "replace_text",
    "text_parts",
]

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


def text_parts(content: object) -> list[str]:
    """The text a handle or excerpt may be found in: a string, or the text parts of list content."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    parts: list[str] = []
    for item in content:
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, Mapping) and item.get("type") == "text":
            text = item.get("text")
            if isinstance(text, str):
                parts.append(text)
    return parts


def map_text_parts(content: Any, transform: Callable[[str], str]) -> Any:
    """``content`` with ``transform`` applied to each text part (the parts :func:`text_parts`
    reads); the very same object when nothing changed."""
    if isinstance(content, str):
        return transform(content)
    if not isinstance(content, list) or not text_parts(content):
        return content
    changed = False
    mapped: list[Any] = []
    for item in content:
        new = item
        if isinstance(item, str):
            new = transform(item)
        elif isinstance(item, Mapping) and item.get("type") == "text":
            text = item.get("text")
            if isinstance(text, str) and (replaced := transform(text)) != text:
                new = {**item, "text": replaced}
        changed = changed or (new is not item and new != item)
        mapped.append(new)
    return mapped if changed else content


def replace_text(content: object, text: str) -> str | list[Any]:
    """``content`` whose text is now ``text``: a string for string content; for list content one
    text part first, then every other part (images…) in order."""
    if not isinstance(content, list):
        return text
    others = [item for item in content if not _is_text_part(item)]
    return [{"type": "text", "text": text}, *others]


def _is_text_part(item: object) -> bool:
    return isinstance(item, str) or (
        isinstance(item, Mapping)
        and item.get("type") == "text"
        and isinstance(item.get("text"), str)
    )
