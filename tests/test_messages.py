"""The one message-form adapter: every saved or streamed form reads the same."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, messages_to_dict

from deerflow.knowledge.messages import (
    map_text_parts,
    message_fields,
    message_view,
    replace_text,
    text_parts,
)

ARTIFACT = {"knowledge_sources": []}
MESSAGES = [
    HumanMessage("q", id="h1"),
    AIMessage("a", id="a1"),
    ToolMessage("t", tool_call_id="c1", name="knowledge_search", artifact=ARTIFACT, id="t1"),
]


def _forms() -> list[list[Any]]:
    return [
        list(MESSAGES),
        [m.model_dump(mode="json") for m in MESSAGES],
        messages_to_dict(MESSAGES),
        [
            {
                "lc": 1,
                "type": "constructor",
                "id": ["langchain", "schema", "messages", type(m).__name__],
                "kwargs": m.model_dump(mode="json", exclude={"type"}),
            }
            for m in MESSAGES
        ],
        [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "a"},
            {"role": "tool", "content": "t", "name": "knowledge_search", "artifact": ARTIFACT},
        ],
    ]


def test_every_form_gives_the_same_view() -> None:
    for form in _forms():
        views = [message_view(m) for m in form]
        assert [v.role if v else None for v in views] == ["human", "ai", "tool"], form
        tool = views[2]
        assert tool is not None
        assert (tool.name, tool.content, tool.artifact) == ("knowledge_search", "t", ARTIFACT)


def test_fields_expose_the_message_id_in_every_dict_form() -> None:
    for form in _forms()[1:4]:
        assert [message_fields(m).get("id") for m in form] == ["h1", "a1", "t1"]


def test_anything_else_is_no_message_or_an_other_role() -> None:
    assert message_view("text") is None and message_view(None) is None
    other = message_view({"type": "developer", "content": "x"})
    assert other is not None and other.role == "other"
    assert message_view({"lc": 1, "id": "not-a-list", "kwargs": {}}) == ("other", None, None, None)


# --------------------------------------------------------------------------- content forms

IMAGE = {"type": "image_url", "image_url": "https://example.com/a.png"}


def test_text_parts_reads_strings_and_text_blocks_only() -> None:
    content = ["a", {"type": "text", "text": "b"}, IMAGE, {"type": "text", "text": 3}, 4]
    assert text_parts(content) == ["a", "b"]
    assert text_parts("s") == ["s"] and text_parts(None) == [] and text_parts({"text": "a"}) == []


def test_map_text_parts_rewrites_each_text_part_and_keeps_the_rest() -> None:
    content = ["a", {"type": "text", "text": "b", "cache": 1}, IMAGE]
    assert map_text_parts(content, str.upper) == [
        "A",
        {"type": "text", "text": "B", "cache": 1},
        IMAGE,
    ]
    assert map_text_parts("ab", str.upper) == "AB"


def test_map_text_parts_returns_the_same_object_when_nothing_changed() -> None:
    content = ["a", {"type": "text", "text": "b"}, IMAGE]
    assert map_text_parts(content, lambda text: text) is content
    no_text = [IMAGE]
    assert map_text_parts(no_text, str.upper) is no_text
    assert map_text_parts(None, str.upper) is None


def test_replace_text_keeps_the_content_form() -> None:
    assert replace_text("long text", "cut") == "cut"
    content = ["a", IMAGE, {"type": "text", "text": "b"}, {"type": "audio"}]
    assert replace_text(content, "cut") == [
        {"type": "text", "text": "cut"},
        IMAGE,
        {"type": "audio"},
    ]
