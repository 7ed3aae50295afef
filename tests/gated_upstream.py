"""A LightRAG-shaped server on 127.0.0.1 that answers only when the test opens its gate.

Runs on a real gateway finish in milliseconds, so a test that needs a run *in progress* (a 409 for
a second run, ``interrupt``, cancelling a queued run) cannot rely on timing. Pointing the gateway's
LightRAG provider at this server, a test calls ``hold()`` and every knowledge search then waits at
the upstream until the test calls ``release()`` (the gate starts open); ``wait_for_queries(n)``
blocks until ``n`` searches have arrived, which proves the run that sent the last of them is
running. Answers are SYNTHETIC ``POST /query/data`` bodies shaped like lightrag-server 1.5.7's (as
in tests/test_providers_lightrag.py) whose chunks are the local provider's hits for the query over
the bundled sample corpus, so the offline responder answers and cites as usual. Run as a script (``python -m tests.gated_upstream``, for the
JavaScript gateway tests) it prints ``listening <url>`` and serves until terminated; the test drives
the gate over HTTP: ``POST /gate/hold``, ``POST /gate/release`` and ``GET /gate/queries?count=N``
(answers the queries received once ``N`` have arrived).
"""

from __future__ import annotations

import json
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from deerflow.knowledge.contract import RetrievalHit
from deerflow.knowledge.providers.local import LocalProvider, sample_corpus_path

__all__ = ["GatedLightRAG", "gated_lightrag"]

WAIT_TIMEOUT_SECONDS = 60.0


def query_data_body(hits: Sequence[RetrievalHit]) -> dict[str, Any]:
    """A SYNTHETIC 1.5.7 ``/query/data`` success: one chunk per hit, its title as file_path."""
    titles = list(dict.fromkeys(hit.title or "unknown_source" for hit in hits))
    references = [{"reference_id": str(n), "file_path": t} for n, t in enumerate(titles, 1)]
    chunks = [
        {
            "reference_id": str(titles.index(hit.title or "unknown_source") + 1),
            "content": hit.text,
            "file_path": hit.title or "unknown_source",
            "chunk_id": f"chunk-{n:032x}",
        }
        for n, hit in enumerate(hits)
    ]
    return {
        "status": "success",
        "message": "Query processed successfully",
        "data": {"entities": [], "relationships": [], "chunks": chunks, "references": references},
        "metadata": {"query_mode": "naive", "keywords": {"high_level": [], "low_level": []}},
    }


class GatedLightRAG:
    """The server's state: the gate, and the queries received in arrival order."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.gate.set()  # open until a test holds it
        self.queries: list[str] = []
        self._arrived = threading.Condition()
        self.url = ""

    def hold(self) -> None:
        """Close the gate and forget the queries received so far."""
        with self._arrived:
            self.gate.clear()
            self.queries.clear()

    def release(self) -> None:
        """Answer every held search and every later one at once."""
        self.gate.set()

    def wait_for_queries(self, count: int, *, timeout: float = WAIT_TIMEOUT_SECONDS) -> list[str]:
        """Block until at least ``count`` searches have arrived; their queries in order."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: len(self.queries) >= count, timeout=timeout):
                raise TimeoutError(f"{len(self.queries)} of {count} searches reached the upstream")
            return list(self.queries)

    def _arrive(self, query: str) -> None:
        with self._arrived:
            self.queries.append(query)
            self._arrived.notify_all()


def _handler(state: GatedLightRAG, index: Path) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

        def _send(self, status: int, body: object) -> None:
            raw = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
            except OSError:  # the gateway gave up on this search (an interrupted run)
                pass

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path == "/health":
                self._send(200, {"status": "healthy"})
            elif url.path == "/gate/queries":
                count = int(parse_qs(url.query).get("count", ["0"])[0])
                try:
                    self._send(200, state.wait_for_queries(count))
                except TimeoutError as exc:
                    self._send(504, {"detail": str(exc)})
            else:
                self._send(404, {"detail": "Not Found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            payload = json.loads(self.rfile.read(length) or b"{}")
            if self.path in ("/gate/hold", "/gate/release"):
                if self.path == "/gate/hold":
                    state.hold()
                else:
                    state.release()
                self._send(200, {"gate": self.path.rsplit("/", 1)[1]})
                return
            if self.path != "/query/data":
                self._send(404, {"detail": "Not Found"})
                return
            query = str(payload.get("query", ""))
            state._arrive(query)
            state.gate.wait()
            hits = LocalProvider(index).search_sync(query).hits
            self._send(200, query_data_body(hits))

    return Handler


@contextmanager
def gated_lightrag() -> Iterator[GatedLightRAG]:
    """Serve on a free loopback port; on exit open the gate (no handler stays blocked) and stop."""
    state = GatedLightRAG()
    index = Path(tempfile.mkdtemp(prefix="gated-lightrag-")) / "index.sqlite"
    LocalProvider(index).index(sample_corpus_path())
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state, index))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="gated-lightrag", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release()
        server.shutdown()
        server.server_close()
        thread.join()
        shutil.rmtree(index.parent, ignore_errors=True)


def main() -> None:
    """Script mode: serve until SIGTERM (or SIGINT), the gate driven over HTTP."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with gated_lightrag() as upstream:
        print("listening " + upstream.url, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
