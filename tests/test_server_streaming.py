"""A run's event log (server/_streaming.py) and its readers: bounded batches, slow readers dropped.

A reader that stops reading must not hold a copy of every event since it stopped (one batch at
most), must be dropped by the write timeout, and must then get every event exactly once by
resuming with ``Last-Event-ID``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import uvicorn
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage
from langgraph.config import get_stream_writer
from langgraph.graph import START, MessagesState, StateGraph

from deerflow.knowledge.server import GatewayConfig, create_app, open_checkpointer
from deerflow.knowledge.server.engine._streaming import (
    MAX_BATCH_BYTES,
    WRITE_CHUNK_BYTES,
    Event,
    RunStream,
    sse_chunks,
    sse_frames,
)
from deerflow.knowledge.server.process._connections import ConnectionGuard
from deerflow.knowledge.server.process._listen import open_listener

WAIT = 30.0  # seconds before a missing event fails the test
EVENTS = 400
PAD = "x" * 32768  # 400 events of 32 KiB: more than the kernel's socket buffers hold


def _stream(sizes: list[int]) -> RunStream:
    stream = RunStream("run", "thread", resumable=True)
    for size in sizes:
        stream.emit("custom", b"x" * size)
    return stream


async def _batches(stream: RunStream, **options: Any) -> list[list[int]]:
    return [[e.id for e in batch] async for batch in stream.follow(**options)]


async def test_a_batch_holds_at_most_max_batch_bytes_of_events() -> None:
    stream = _stream([10] * 7)
    stream.finish()
    # At exactly the limit three events fit; one byte less, two.
    assert await _batches(stream, max_batch_bytes=30) == [[0, 1, 2], [3, 4, 5], [6]]
    assert await _batches(stream, max_batch_bytes=29) == [[0, 1], [2, 3], [4, 5], [6]]
    # An event larger than the limit is a batch of its own.
    big = _stream([5, 100, 5])
    big.finish()
    assert await _batches(big, max_batch_bytes=30) == [[0], [1], [2]]


async def test_a_reader_that_fell_behind_gets_the_default_bound() -> None:
    stream = _stream([65536] * 100)  # 6.4 MB waiting when the reader wakes
    stream.finish()
    sizes = [sum(len(e.data) for e in batch) async for batch in stream.follow()]
    assert max(sizes) == MAX_BATCH_BYTES and sum(sizes) == 100 * 65536


async def test_events_emitted_while_a_batch_is_being_sent_are_not_lost() -> None:
    stream = _stream([1])
    reader = stream.follow()
    assert [e.id for e in await anext(reader)] == [0]
    # While the reader is away sending its batch, the run emits its last event and ends.
    stream.emit("values", b"{}")
    stream.finish()
    assert [[e.id for e in batch] async for batch in reader] == [[1]]


def _graph(saver: Any) -> Any:
    async def talk(state: MessagesState) -> dict[str, Any]:
        write = get_stream_writer()
        for i in range(EVENTS):
            write({"i": i, "pad": PAD})
        return {"messages": [AIMessage("done")]}

    builder = StateGraph(MessagesState)
    builder.add_node("talk", talk)
    builder.add_edge(START, "talk")
    return builder.compile(checkpointer=saver)


@asynccontextmanager
async def _gateway(
    guard: ConnectionGuard, protocol: type[asyncio.Protocol] | None = None
) -> AsyncIterator[str]:
    config = GatewayConfig(
        build_agent=_graph,
        open_checkpointer=lambda: open_checkpointer(":memory:"),
        provider_label="test",
        model_label="test",
    )
    sock = open_listener("127.0.0.1", 0)
    server = uvicorn.Server(
        uvicorn.Config(create_app(config), log_level="warning", http=protocol or guard.protocol())
    )
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task


def _frames(raw: bytes) -> list[tuple[int, str, Any]]:
    """Complete SSE frames in ``raw`` as (id, event, data); a cut-off last frame is left out."""
    body = raw.split(b"\r\n\r\n", 1)[1] if raw.startswith(b"HTTP/") else raw
    found = []
    for block in body.split(b"\n\n")[:-1]:
        fields = dict(line.split(b": ", 1) for line in block.split(b"\n") if b": " in line)
        if b"id" in fields and b"event" in fields:
            found.append((int(fields[b"id"]), fields[b"event"].decode(), fields[b"data"]))
    return found


def _dechunk(raw: bytes) -> bytes:
    """The body of a chunked HTTP/1.1 response, as far as it got."""
    head, _, rest = raw.partition(b"\r\n\r\n")
    out = bytearray()
    while rest:
        size_line, sep, rest = rest.partition(b"\r\n")
        if not sep or not size_line:
            break
        size = int(size_line, 16)
        out += rest[:size]
        rest = rest[size + 2 :]
    return head + b"\r\n\r\n" + bytes(out)


async def test_a_stuck_stream_client_is_dropped_and_resumes_with_last_event_id() -> None:
    dropped = asyncio.Event()
    guard = ConnectionGuard(
        max_connections=64,
        write_timeout=0.3,
        on_note=lambda condition: condition == "write_timeout" and dropped.set(),
    )
    async with _gateway(guard) as base, httpx.AsyncClient(base_url=base, timeout=WAIT) as http:
        thread_id = (await http.post("/api/threads", json={})).json()["thread_id"]
        body = json.dumps(
            {
                "input": {"messages": [{"role": "user", "content": "go"}]},
                "stream_mode": ["custom"],
                "stream_resumable": True,
            }
        ).encode()
        loop = asyncio.get_running_loop()
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        await loop.sock_connect(sock, ("127.0.0.1", int(base.rsplit(":", 1)[1])))
        head = (
            f"POST /api/threads/{thread_id}/runs/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        await loop.sock_sendall(sock, head.encode() + body)
        # The client reads nothing until the gateway gives up on it.
        await asyncio.wait_for(dropped.wait(), WAIT)
        raw = bytearray()
        try:
            while chunk := await loop.sock_recv(sock, 1 << 20):
                raw += chunk
        except ConnectionResetError:
            pass
        sock.close()
        first = _frames(_dechunk(bytes(raw)))
        assert len([f for f in first if f[1] == "custom"]) < EVENTS  # it was cut off
        (run,) = (await http.get(f"/api/threads/{thread_id}/runs")).json()
        last_seen = first[-1][0] if first else None
        headers = {} if last_seen is None else {"Last-Event-ID": str(last_seen)}
        url = f"/api/threads/{thread_id}/runs/{run['run_id']}/stream"
        async with http.stream("GET", url, headers=headers) as resumed:
            rest = _frames(b"".join([part async for part in resumed.aiter_raw()]))
    ids = [f[0] for f in first + rest]
    assert ids == sorted(set(ids))  # nothing twice, in order
    custom = [json.loads(data)["i"] for _, event, data in first + rest if event == "custom"]
    assert custom == list(range(EVENTS))
    assert guard.counts["write_timeout"] == 1


#: What asyncio's transport buffers before it pauses its protocol (its default high-water mark).
_TRANSPORT_HIGH_WATER = 64 * 1024
#: An HTTP chunk's size line and CRLFs around one write.
_CHUNK_FRAMING = 16


async def _post_and_stop_reading(base: str, thread_id: str) -> socket.socket:
    body = json.dumps(
        {"input": {"messages": [{"role": "user", "content": "go"}]}, "stream_mode": ["custom"]}
    ).encode()
    loop = asyncio.get_running_loop()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await loop.sock_connect(sock, ("127.0.0.1", int(base.rsplit(":", 1)[1])))
    head = (
        f"POST /api/threads/{thread_id}/runs/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    await loop.sock_sendall(sock, head.encode() + body)
    return sock


async def test_a_stuck_stream_client_holds_one_write_however_far_behind_it_is() -> None:
    """Counted: the bytes the connection's buffer holds when uvicorn stops writing to a client
    that reads nothing. Each later write waits for that buffer to drain, so this (plus the one
    write waiting, at most ``WRITE_CHUNK_BYTES``) is what the reader costs beyond the run's own
    events — 13 MB of them here, 1 MiB per write before writes were cut to the chunk size."""
    guard = ConnectionGuard(max_connections=64, write_timeout=WAIT)
    paused = asyncio.Event()
    held: list[int] = []

    class Watched(guard.protocol()):  # type: ignore[misc]
        def connection_made(self, transport: Any) -> None:
            # Little room in the kernel: what the client does not read stays in the process.
            transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
            super().connection_made(transport)

        def pause_writing(self) -> None:
            super().pause_writing()
            held.append(self.transport.get_write_buffer_size())
            paused.set()

    async with _gateway(guard, Watched) as base, httpx.AsyncClient(base_url=base) as http:
        thread_id = (await http.post("/api/threads", json={})).json()["thread_id"]
        sock = await _post_and_stop_reading(base, thread_id)
        try:
            await asyncio.wait_for(paused.wait(), WAIT)
        finally:
            sock.close()
    assert held and max(held) <= _TRANSPORT_HIGH_WATER + WRITE_CHUNK_BYTES + _CHUNK_FRAMING


_EVENTS = st.lists(
    st.tuples(st.sampled_from(["values", "custom", "messages"]), st.integers(0, 700)),
    max_size=12,
)


@given(_EVENTS, st.integers(1, 300), st.booleans())
def test_sse_chunks_are_the_frames_cut_into_writes_of_at_most_max_chunk(
    shapes: list[tuple[str, int]], max_chunk: int, with_id: bool
) -> None:
    events = [Event(n, name, bytes([65 + n % 26]) * size) for n, (name, size) in enumerate(shapes)]
    chunks = list(sse_chunks(events, with_id=with_id, max_chunk=max_chunk))
    assert b"".join(chunks) == sse_frames(events, with_id=with_id)
    assert all(0 < len(chunk) <= max_chunk for chunk in chunks)
    # Joined while they fit: never two writes in a row that one write could have carried,
    # unless the second is a slice of an event's own data.
    for first, second in itertools.pairwise(chunks):
        assert (
            len(first) + len(second) > max_chunk
            or isinstance(second, memoryview)
            or (isinstance(first, memoryview))
        )


def test_a_large_events_data_is_sent_as_slices_of_it_not_copies() -> None:
    data = b"v" * (3 * WRITE_CHUNK_BYTES + 5)
    chunks = list(sse_chunks([Event(0, "values", data)], with_id=False))
    slices = [c for c in chunks if isinstance(c, memoryview)]
    assert [len(c) for c in slices] == [WRITE_CHUNK_BYTES] * 3 + [5]
    assert all(c.obj is data for c in slices)
    # At exactly the limit a frame is one write; one byte more and its data goes on its own.
    head, tail = len(b"event: values\ndata: "), len(b"\n\n")
    exact = Event(0, "values", b"v" * (WRITE_CHUNK_BYTES - head - tail))
    assert [len(c) for c in sse_chunks([exact], with_id=False)] == [WRITE_CHUNK_BYTES]
    over = Event(0, "values", b"v" * (WRITE_CHUNK_BYTES - head - tail + 1))
    assert len(list(sse_chunks([over], with_id=False))) == 2
