"""The gateway's own cost: a streamed run over HTTP vs the same ``knowledge_search`` in-process,
and a run on a thread with 30 earlier runs vs a run on a fresh thread.

A real gateway process (local provider, offline responder, SQLite) serves on 127.0.0.1; runs are
streamed with ``stream_mode=["values", "messages-tuple"]`` (what ``useStream`` asks for). The
baseline of the first ratio is one ``asyncio.run(run_knowledge_search(...))`` on the same index
and question in this process — the search a run makes, called the way a script calls it. All are
timed in one run, interleaved, the median of each (the fastest of N flatters: it keeps the one
round that saw no checkpoint flush or other process); ratios last (targets: run/search <= 5, long/fresh thread <= 1.3). Only the ratios mean anything.
To show where a run's time goes, the same agent graph (same responder, a SQLite saver, the same
stream modes) is also run in this process, on a fresh thread and on one with 30 earlier runs: the
difference to the streamed run is the gateway's own share (HTTP, SSE, thread and run records).
``BENCH_STREAM_MODES`` (comma-separated) overrides the stream modes, e.g. to measure an older
gateway that named them differently.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import closing
from pathlib import Path

from deerflow.knowledge.providers.local import LocalProvider, sample_corpus_path
from deerflow.knowledge.responder import ExtractiveResponder
from deerflow.knowledge.server import build_agent, open_checkpointer
from deerflow.knowledge.tools import run_knowledge_search

QUESTION = "How does a reader verify the evidence of a citation?"
ROUNDS = 15
EARLIER_RUNS = 30


def _free_port() -> int:
    with closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _post(url: str, body: object) -> bytes:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return bytes(response.read())


class Gateway:
    def __init__(self, index: Path, work: Path) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}/api"
        self.process = subprocess.Popen(
            [
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
                str(self.port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            cwd=work,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(self.base + "/info", timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def thread(self) -> str:
        return str(json.loads(_post(self.base + "/threads", {}))["thread_id"])

    def run(self, thread_id: str) -> float:
        body = {
            "input": {"messages": [{"type": "human", "content": QUESTION}]},
            "stream_mode": os.environ.get("BENCH_STREAM_MODES", "values,messages-tuple").split(","),
        }
        start = time.perf_counter()
        raw = _post(f"{self.base}/threads/{thread_id}/runs/stream", body)
        elapsed = time.perf_counter() - start
        assert b"event: error" not in raw and (
            b"event: values" in raw or "values" not in body["stream_mode"]
        )
        return elapsed

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(timeout=30)


class InProcessAgent:
    """The gateway's agent graph run in this process, as the gateway runs it minus the gateway."""

    def __init__(self, provider: LocalProvider, work: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self._stack = contextlib.AsyncExitStack()
        saver = self.loop.run_until_complete(
            self._stack.enter_async_context(open_checkpointer(str(work / "graph.sqlite")))
        )
        self.graph = build_agent(provider, ExtractiveResponder(), saver)

    def run(self, thread_id: str) -> float:
        async def run() -> None:
            async for _ in self.graph.astream(
                {"messages": [{"type": "human", "content": QUESTION}]},
                {"configurable": {"thread_id": thread_id}},
                stream_mode=["messages", "updates", "values"],  # what the gateway asks for
            ):
                pass

        start = time.perf_counter()
        self.loop.run_until_complete(run())
        return time.perf_counter() - start

    def close(self) -> None:
        self.loop.run_until_complete(self._stack.aclose())
        self.loop.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        index = work / "index.sqlite"
        provider = LocalProvider(index)
        provider.index(sample_corpus_path())

        def search() -> float:
            start = time.perf_counter()
            content, artifact = asyncio.run(run_knowledge_search(provider, QUESTION))
            elapsed = time.perf_counter() - start
            assert artifact is not None and content
            return elapsed

        gateway = Gateway(index, work)
        agent = InProcessAgent(provider, work)
        try:
            long_thread = gateway.thread()
            for _ in range(EARLIER_RUNS):
                gateway.run(long_thread)
                agent.run("long")
            gateway.run(gateway.thread())  # warm up
            searches, runs, fresh, long, graph_fresh, graph_long = [], [], [], [], [], []
            for round_ in range(ROUNDS):
                searches.append(search())
                runs.append(gateway.run(gateway.thread()))
                fresh.append(gateway.run(gateway.thread()))
                long.append(gateway.run(long_thread))
                graph_fresh.append(agent.run(f"fresh-{round_}"))
                graph_long.append(agent.run("long"))
        finally:
            gateway.stop()
            agent.close()
    median = statistics.median
    base, run = median(searches), median(runs)
    fresh_m, long_m = median(fresh), median(long)
    graph, graph_long_m = median(graph_fresh), median(graph_long)
    print(f"knowledge_search in-process:                 {base * 1e3:.1f} ms")
    print(f"agent graph in-process (fresh thread):       {graph * 1e3:.1f} ms")
    print(f"agent graph, thread with {EARLIER_RUNS}+ earlier runs:  {graph_long_m * 1e3:.1f} ms")
    print(f"streamed run (fresh thread):                 {run * 1e3:.1f} ms")
    print(f"streamed run, thread with {EARLIER_RUNS}+ earlier runs: {long_m * 1e3:.1f} ms")
    print(f"gateway's own share of a run (fresh thread): {(run - graph) * 1e3:.1f} ms")
    print(f"thread with {EARLIER_RUNS}+ earlier runs / fresh thread ratio: {long_m / fresh_m:.2f}")
    print(f"streamed run / in-process knowledge_search ratio: {run / base:.2f}")


if __name__ == "__main__":
    main()
