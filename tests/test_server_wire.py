"""The per-thread message memos of the wire encoder (server/_wire.py) are bounded by bytes.

A memo holds a thread's whole history as JSON (and its messages); bounded by a count of threads
alone, 64 long threads held hundreds of megabytes and the gateway's memory grew wave after wave.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage

from deerflow.knowledge.server.wire._wire import (
    THREAD_MEMO_BYTES_KEPT,
    THREAD_MEMOS_KEPT,
    ThreadMemos,
    WireEncoder,
)


def _fill(memo: dict[Any, Any], size: int, tag: str) -> None:
    memo[tag] = (AIMessage(content="", id=tag), b"x" * size)


def test_memos_are_kept_up_to_exactly_most_bytes() -> None:
    memos = ThreadMemos(most=10, most_bytes=300)
    for thread in ("a", "b", "c"):
        _fill(memos.checkout(thread), 100, thread)
    memos.checkout("c")  # 300 bytes: all kept
    assert len(memos) == 3 and memos.held_bytes() == 300
    _fill(memos.checkout("c"), 1, "c2")  # 301 bytes
    memos.checkout("c")
    assert len(memos) == 2 and memos.held_bytes() == 201  # the least recently run ("a") went


def test_memos_are_kept_up_to_most_threads() -> None:
    memos = ThreadMemos(most=2, most_bytes=10**9)
    for thread in ("a", "b", "c"):
        memos.checkout(thread)
    assert len(memos) == 2


def test_the_running_threads_memo_stays_whatever_its_size() -> None:
    memos = ThreadMemos(most=4, most_bytes=10)
    _fill(memos.checkout("a"), 1000, "m")
    memo = memos.checkout("a")
    assert "m" in memo and len(memos) == 1
    memos.checkout("b")
    assert len(memos) == 1 and memos.held_bytes() == 0  # "a" went for "b"


def test_the_gateways_bounds() -> None:
    assert THREAD_MEMOS_KEPT == 64
    assert THREAD_MEMO_BYTES_KEPT == 8 * 1024 * 1024


@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 400)), max_size=60),
    st.integers(1, 5),
    st.integers(1, 1000),
)
def test_after_each_checkout_the_memos_fit_their_bounds(
    steps: list[tuple[int, int]], most: int, most_bytes: int
) -> None:
    memos = ThreadMemos(most=most, most_bytes=most_bytes)
    for n, (thread, grows) in enumerate(steps):
        memo = memos.checkout(str(thread))
        assert len(memos) <= most
        assert memos.held_bytes() <= most_bytes or len(memos) == 1
        _fill(memo, grows, f"m{n}")  # the run encodes new messages into its memo


def test_an_encoder_on_a_checked_out_memo_fills_it() -> None:
    memos = ThreadMemos()
    encoder = WireEncoder(memos.checkout("t"))
    data = encoder.messages([AIMessage(content="hello", id="1")])
    assert memos.held_bytes() == len(data) - 2  # the message's JSON, without the brackets


def test_encoded_json_holds_its_length_not_orjsons_buffer() -> None:
    """Counted with tracemalloc: what 200 encoded messages hold. orjson returns its whole
    output buffer (16 KB for this 2.7 KB message), which a memo or a run's events then keep."""
    import tracemalloc

    from langchain_core.messages import ToolMessage

    from deerflow.knowledge.server.wire._wire import dumps

    message = ToolMessage(
        content="result text " * 120,
        tool_call_id="c",
        id="m",
        artifact={"sources": [{"title": "t", "excerpt": "e" * 300}] * 3},
    )
    tracemalloc.start()
    try:
        kept = [dumps(message) for _ in range(200)]
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    length = len(kept[0])
    assert length > 2000
    assert held <= 200 * (length + 64) + 4096  # each its bytes and a bytes object's header
