"""A scripted OpenAI-compatible chat server (stdlib, 127.0.0.1, port 0) that honours a GBNF
``grammar`` as llama.cpp's servers do, or refuses it on demand.

The script follows the conversation, not a call counter:

* the last message is not a tool result -> a ``knowledge_search`` call with the last user text;
* the last message is a tool result -> an answer citing a link of that tool text. Unconstrained,
  the script is a sloppy small model: it copies the first link with one hex digit changed (the
  commonest slip measured with a real 135M model). With a ``grammar`` in the body, it decodes
  under it: of its candidate answers in order (that mangled link; any link a document planted in
  its excerpt; each result's own link; a sentence without one) it returns the first the grammar
  accepts, checked by llama.cpp's rules (the ``gbnf`` package).

``refuse_grammar`` answers a body with a grammar by HTTP 400 and OpenAI's error shape, as an
endpoint that takes no grammar does. Every request body is kept in :attr:`requests`.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.gbnf_oracle import gbnf_accepts

MODEL_NAME = "scripted-model"
LINK = re.compile(r"\[citation:[^\]\n]*\]\(#knowledge-[^)\s]+\)")
NO_LINK_ANSWER = "The knowledge base returned nothing citable."
REFUSAL = "Unrecognized request argument supplied: grammar"
# The formatter's own line for each result: ``Source N: <link>``.
RESULT_LINK = re.compile(r"^Source \d+: (\[citation:[^\]\n]*\]\(#knowledge-[^)\s]+\))", re.M)


def mangled(link: str) -> str:
    """``link`` with the last hex digit of its id changed."""
    head, digit = link[:-2], link[-2]
    return head + ("0" if digit != "0" else "1") + ")"


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def reply_for(body: dict[str, Any], call_ids: itertools.count[int]) -> dict[str, Any]:
    messages = body.get("messages") or []
    if messages and messages[-1].get("role") == "tool":
        text = _text(messages[-1].get("content"))
        links = LINK.findall(text)
        shown = set(RESULT_LINK.findall(text))
        ordered = [mangled(link) for link in links[:1]]
        ordered += [link for link in links if link not in shown] + links
        candidates = [f"According to the knowledge base {link}." for link in ordered]
        candidates.append(NO_LINK_ANSWER)
        grammar = body.get("grammar")
        if isinstance(grammar, str):
            candidates = [c for c in candidates if gbnf_accepts(grammar, c)] or [""]
        return {"role": "assistant", "content": candidates[0]}
    query = next(
        (_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "?"
    )
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": f"call_{next(call_ids)}",
                "type": "function",
                "function": {"name": "knowledge_search", "arguments": json.dumps({"query": query})},
            }
        ],
    }


class ScriptedModel:
    """The running server: ``base_url`` for ``ChatOpenAI``; ``close()`` stops it."""

    def __init__(self, *, refuse_grammar: bool = False) -> None:
        self.requests: list[dict[str, Any]] = []
        self.refuse_grammar = refuse_grammar
        self._lock = threading.Lock()
        self._call_ids = itertools.count(1)
        script = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._json(400, {"error": {"message": "body is not JSON"}})
                    return
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                with script._lock:
                    script.requests.append(body)
                    if script.refuse_grammar and "grammar" in body:
                        self._json(400, {"error": {"message": REFUSAL, "type": "invalid_request"}})
                        return
                    message = reply_for(body, script._call_ids)
                if body.get("stream"):
                    self._stream(message)
                else:
                    self._json(200, _completion(message))

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, message: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in _chunks(message):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


def _completion(message: dict[str, Any]) -> dict[str, Any]:
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL_NAME,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _chunks(message: dict[str, Any]) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": MODEL_NAME,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    out = [chunk({"role": "assistant", "content": ""})]
    for index, call in enumerate(message.get("tool_calls") or []):
        out.append(chunk({"tool_calls": [{"index": index, **call}]}))
    content = message.get("content") or ""
    if content:
        out.append(chunk({"content": content}))
    out.append(chunk({}, "tool_calls" if message.get("tool_calls") else "stop"))
    return out
