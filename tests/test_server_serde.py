"""The caching checkpoint serializer writes and reads what LangGraph's own does, once per message."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from deerflow.knowledge.server.wire import _serde as serde_module
from deerflow.knowledge.server.wire._serde import MessageCachingSerializer


def _history(turns: int) -> list[BaseMessage]:
    messages: list[BaseMessage] = []
    for turn in range(turns):
        call = {"name": "knowledge_search", "args": {"query": f"q{turn}"}, "id": f"call_{turn}"}
        messages += [
            HumanMessage(f"question {turn}", id=f"h{turn}"),
            AIMessage("", id=f"a{turn}", tool_calls=[call]),
            ToolMessage(
                f"result {turn}",
                id=f"t{turn}",
                tool_call_id=f"call_{turn}",
                name="knowledge_search",
                artifact={"knowledge_sources_version": 1, "knowledge_sources": [{"n": turn}]},
            ),
            AIMessage(f"answer {turn}", id=f"r{turn}", response_metadata={"turn": turn}),
        ]
    return messages


def _checkpoint(messages: list[BaseMessage]) -> dict[str, Any]:
    return {"v": 4, "id": "x", "channel_values": {"messages": messages, "step": 3}}


def test_writes_the_bytes_langgraph_writes_every_time() -> None:
    stock, cached = JsonPlusSerializer(), MessageCachingSerializer()
    value = _checkpoint(_history(5))
    expected = stock.dumps_typed(value)
    assert cached.dumps_typed(value) == expected
    assert cached.dumps_typed(value) == expected  # from the cache
    loaded = cached.loads_typed(expected)
    assert loaded == stock.loads_typed(expected)
    assert cached.dumps_typed(loaded) == expected  # a loaded history saved again


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["human", "ai"]), st.text(), st.text(min_size=1, max_size=8)),
        max_size=8,
    )
)
def test_same_bytes_and_values_as_langgraph_for_any_messages(
    specs: list[tuple[str, str, str]],
) -> None:
    messages: list[BaseMessage] = [
        HumanMessage(text, id=key) if kind == "human" else AIMessage(text, id=key)
        for kind, text, key in specs
    ]
    stock, cached = JsonPlusSerializer(), MessageCachingSerializer()
    for _ in range(2):
        data = cached.dumps_typed(messages)
        assert data == stock.dumps_typed(messages)
        assert cached.loads_typed(data) == stock.loads_typed(data)


def test_a_field_reassigned_after_encoding_is_encoded_anew() -> None:
    stock, cached = JsonPlusSerializer(), MessageCachingSerializer()
    message = AIMessage("draft", id="m1")
    cached.dumps_typed([message])
    message.content = "final"
    assert cached.dumps_typed([message]) == stock.dumps_typed([message])
    replaced = AIMessage("other", id="m1")  # another message under the same id
    assert cached.dumps_typed([replaced]) == stock.dumps_typed([replaced])


def test_an_id_given_after_encoding_is_written() -> None:
    # ``add_messages`` gives an id-less message its id in place, after the task's write was saved.
    stock, cached = JsonPlusSerializer(), MessageCachingSerializer()
    message = HumanMessage("hi")
    cached.dumps_typed([message])
    message.id = "given"
    assert cached.dumps_typed([message]) == stock.dumps_typed([message])


def test_each_load_hands_out_its_own_message() -> None:
    cached = MessageCachingSerializer()
    data = cached.dumps_typed(_history(1))
    first, second = cached.loads_typed(data), cached.loads_typed(data)
    assert first == second
    assert all(a is not b for a, b in zip(first, second, strict=True))
    first[0].content = "changed by a node"
    assert cached.loads_typed(data)[0].content == "question 0"
    assert cached.dumps_typed(first) == JsonPlusSerializer().dumps_typed(first)


def test_each_message_is_encoded_and_decoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[Any] = []
    original = serde_module._msgpack_default

    def counting(value: Any) -> Any:
        encoded.append(value)
        return original(value)

    monkeypatch.setattr(serde_module, "_msgpack_default", counting)
    cached = MessageCachingSerializer()
    history = _history(30)
    decoded: list[bytes] = []
    inner = cached._decode_ext

    def counting_decode(code: int, data: bytes) -> Any:
        decoded.append(data)
        return inner(code, data)

    cached._decode_ext = counting_decode
    for _ in range(5):  # a run: a checkpoint per step, each holding the whole history
        data = cached.dumps_typed(_checkpoint(history))
    encoded_messages = [v for v in encoded if isinstance(v, BaseMessage)]
    assert len(encoded_messages) == len(history)
    for _ in range(5):
        loaded = cached.loads_typed(data)
        cached.dumps_typed(loaded)
    assert len(decoded) == len(history)
    assert len([v for v in encoded if isinstance(v, BaseMessage)]) == len(history)


def test_caches_keep_at_most_cached_bytes() -> None:
    history = _history(4)
    sizes = [len(JsonPlusSerializer().dumps_typed(m)[1]) for m in history]
    limit = sum(sizes[-3:])  # exactly the last three messages' encoded forms
    cached = MessageCachingSerializer(cached_bytes=limit)
    data = cached.dumps_typed(history)
    assert list(cached._encoded) == [m.id for m in history[-3:]]
    cached.loads_typed(data)
    assert len(cached._decoded) == 3
    assert sum(len(key) for key in cached._decoded) <= limit
    one_less = MessageCachingSerializer(cached_bytes=limit - 1)
    one_less.dumps_typed(history)
    assert list(one_less._encoded) == [m.id for m in history[-2:]]
    assert cached.loads_typed(data) == JsonPlusSerializer().loads_typed(data)


def test_another_allowlist_gets_caches_of_its_own() -> None:
    cached = MessageCachingSerializer(allowed_msgpack_modules=None)
    data = cached.dumps_typed(_history(1))
    cached.loads_typed(data)
    clone = cached.with_msgpack_allowlist([("tests.test_server_serde", "Nothing")])
    assert isinstance(clone, MessageCachingSerializer)
    assert clone._decoded is not cached._decoded and not clone._decoded
    assert clone.loads_typed(data) == JsonPlusSerializer().loads_typed(data)
