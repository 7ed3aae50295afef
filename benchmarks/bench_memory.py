"""The gateway's memory under waves of long threads: RSS after each wave, and wave 6 / wave 3.

A real gateway process (local provider, offline responder, SQLite) serves on 127.0.0.1. Each wave
makes 20 new threads, each with a long history (40 turns of a real run's messages — question,
tool call, tool result with its evidence, cited answer — under fresh ids, written as the thread's
first superstep), then 20 clients at once each stream one run on a thread and read everything a
client reads: the whole stream (``values``, ``updates``, ``messages-tuple``), the thread's state
and its history. The gateway's resident memory (``VmRSS``) is read after each wave, once its runs
have ended. What a process keeps per thread must be bounded (caches by bytes, not by a count of
threads), so memory plateaus: the ratio of wave 6 to wave 3 (target <= 1.10) is printed last.
After the waves, 20 clients start a run on threads four times as long and read nothing: RSS
while they are stuck (their runs ended) less RSS once they have gone, per client, is what a
stuck reader holds (the README bounds it by one write of at most 64 KiB, plus the kernel's socket
buffers, which RSS does not count).
``BENCH_MEMORY_WAVES`` / ``BENCH_MEMORY_THREADS`` / ``BENCH_MEMORY_TURNS`` change the load.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any

from deerflow.knowledge.providers.local import LocalProvider, sample_corpus_path

QUESTION = "How does a reader verify the evidence of a citation?"
WAVES = int(os.environ.get("BENCH_MEMORY_WAVES", "6"))
THREADS = int(os.environ.get("BENCH_MEMORY_THREADS", "20"))
TURNS = int(os.environ.get("BENCH_MEMORY_TURNS", "40"))
STREAM_MODES = ["values", "updates", "messages-tuple"]


def _free_port() -> int:
    with closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _request(url: str, body: object | None = None) -> bytes:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return bytes(response.read())


def rss_bytes(pid: int) -> int:
    """The process's resident set (``VmRSS``), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def gateway_command(index: Path, work: Path, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "deerflow.knowledge.cli",
        "serve",
        "--provider",
        "local",
        "--index",
        str(index),
        "--checkpoint",
        str(work / "threads.sqlite"),
        "--port",
        str(port),
    ]


class Gateway:
    def __init__(self, command: Sequence[str], port: int, work: Path) -> None:
        self.base = f"http://127.0.0.1:{port}/api"
        self.process = subprocess.Popen(
            list(command),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            cwd=work,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                _request(self.base + "/info")
                return
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise
                time.sleep(0.2)

    def thread(self, history: list[dict[str, Any]] | None = None) -> str:
        body: dict[str, Any] = {}
        if history:
            body["supersteps"] = [
                {"updates": [{"values": {"messages": history}, "as_node": "model"}]}
            ]
        return str(json.loads(_request(self.base + "/threads", body))["thread_id"])

    def read_everything(self, thread_id: str) -> int:
        """One streamed run read to its end, then the thread's state and history; bytes read."""
        body = {
            "input": {"messages": [{"type": "human", "content": QUESTION}]},
            "stream_mode": STREAM_MODES,
        }
        raw = _request(f"{self.base}/threads/{thread_id}/runs/stream", body)
        assert b"event: error" not in raw and b"event: values" in raw, raw[-300:]
        state = _request(f"{self.base}/threads/{thread_id}/state")
        history = _request(f"{self.base}/threads/{thread_id}/history", {"limit": 10})
        return len(raw) + len(state) + len(history)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=30)


def one_turn(gateway: Gateway) -> list[dict[str, Any]]:
    """The messages of one real run (question, tool call, tool result, answer), as stored."""
    thread_id = gateway.thread()
    gateway.read_everything(thread_id)
    state = json.loads(_request(f"{gateway.base}/threads/{thread_id}/state"))
    messages: list[dict[str, Any]] = state["values"]["messages"]
    return messages


def long_history(turn: list[dict[str, Any]], turns: int) -> list[dict[str, Any]]:
    """``turns`` copies of ``turn`` under fresh message and tool-call ids."""
    history = []
    for _ in range(turns):
        call_ids = {}
        for message in turn:
            copy = dict(message, id=str(uuid.uuid4()))
            if copy.get("tool_calls"):
                calls = []
                for call in copy["tool_calls"]:
                    call_ids[call["id"]] = new_id = f"call_{uuid.uuid4().hex[:24]}"
                    calls.append(dict(call, id=new_id))
                copy["tool_calls"] = calls
            if copy.get("tool_call_id") in call_ids:
                copy["tool_call_id"] = call_ids[copy["tool_call_id"]]
            history.append(copy)
    return history


def waves(gateway: Gateway, *, waves: int, threads: int, turns: int) -> list[int]:
    """RSS of the gateway after each wave (bytes)."""
    turn = one_turn(gateway)
    series = []
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(waves):
            ids = [gateway.thread(long_history(turn, turns)) for _ in range(threads)]
            read = sum(pool.map(gateway.read_everything, ids))
            assert read > 0
            series.append(rss_bytes(gateway.process.pid))
    return series


def _stuck_client(gateway: Gateway, thread_id: str) -> socket.socket:
    """A client that starts a streamed run and then reads nothing (a little receive buffer)."""
    body = json.dumps(
        {
            "input": {"messages": [{"type": "human", "content": QUESTION}]},
            "stream_mode": STREAM_MODES,
        }
    ).encode()
    port = int(gateway.base.split(":")[2].split("/")[0])
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    head = (
        f"POST /api/threads/{thread_id}/runs/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body)
    return sock


def _ended(gateway: Gateway, thread_id: str) -> bool:
    runs = json.loads(_request(f"{gateway.base}/threads/{thread_id}/runs"))
    return bool(runs) and all(run["status"] not in ("pending", "running") for run in runs)


def longer_thread(gateway: Gateway, turn: list[dict[str, Any]], turns: int, parts: int) -> str:
    """A thread of ``parts`` times ``turns`` turns (one superstep, then state updates: a request
    carries at most 200 messages)."""
    thread_id = gateway.thread(long_history(turn, turns))
    for _ in range(parts - 1):
        body = {"values": {"messages": long_history(turn, turns)}, "as_node": "model"}
        _request(f"{gateway.base}/threads/{thread_id}/state", body)
    return thread_id


def stuck_readers(gateway: Gateway, *, clients: int, turns: int, parts: int) -> tuple[int, int]:
    """(RSS of the gateway with ``clients`` clients that read nothing, once their runs have
    ended and before the write timeout drops them; RSS once they have gone), in bytes. The
    threads are ``parts`` times longer than the waves': a run's stream must outgrow what the
    kernel buffers for a connection (4 MiB by default), or nothing stays in the process."""
    turn = one_turn(gateway)
    with ThreadPoolExecutor(clients) as pool:  # the same load read, so the caches are full
        list(pool.map(gateway.read_everything, [longer_thread(gateway, turn, turns, parts)]))
    ids = [longer_thread(gateway, turn, turns, parts) for _ in range(clients)]
    started = time.monotonic()
    sockets = [_stuck_client(gateway, thread_id) for thread_id in ids]
    try:
        while not all(_ended(gateway, thread_id) for thread_id in ids):
            time.sleep(0.2)
        stuck = rss_bytes(gateway.process.pid)
        # Read before the gateway's write timeout (30 s) drops them, or the figure means nothing.
        assert time.monotonic() - started < 30, "the stuck clients were dropped before reading"
    finally:
        for sock in sockets:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()  # a reset: the gateway lets go of the connection at once
    time.sleep(2)
    return stuck, rss_bytes(gateway.process.pid)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        index = work / "index.sqlite"
        LocalProvider(index).index(sample_corpus_path())
        port = _free_port()
        gateway = Gateway(gateway_command(index, work, port), port, work)
        try:
            series = waves(gateway, waves=WAVES, threads=THREADS, turns=TURNS)
            # Once the caches are full: what a client that reads nothing costs, over one that
            # reads (the README bounds it by one write).
            stuck, released = stuck_readers(gateway, clients=THREADS, turns=TURNS, parts=4)
        finally:
            gateway.stop()
    per_client = (stuck - released) / THREADS
    print(
        f"RSS with {THREADS} clients reading nothing: {stuck / 2**20:.1f} MiB; once they have "
        f"gone: {released / 2**20:.1f} MiB; per stuck client: {per_client / 2**20:.2f} MiB"
    )
    mib = [round(rss / 2**20, 1) for rss in series]
    print(f"waves of {THREADS} threads x {TURNS} turns; gateway RSS after each wave (MiB): {mib}")
    if len(series) >= 6:
        print(f"RSS after wave 6 / after wave 3 ratio: {series[5] / series[2]:.3f}")


if __name__ == "__main__":
    main()
