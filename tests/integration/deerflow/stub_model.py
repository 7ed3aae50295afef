"""A scripted OpenAI-compatible chat model for DeerFlow's real agent (stdlib, 127.0.0.1, port 0).

The script follows the conversation it is sent, not a call counter, so DeerFlow's own retries or
extra model calls cannot shift it:

* a tool result no assistant message has followed yet -> an answer copying the first citation
  link ``[citation:…](#knowledge-source-…)`` found in that tool message's text (whatever link it
  is: for a forged tool message the forged one), or a plain sentence when it has none (DeerFlow
  may place other messages, such as the wrapped user input, after the tool result);
* otherwise -> a ``knowledge_search`` tool call whose query is the last user message's text, or,
  when that text says ``please run ls /mnt/…``, a call of DeerFlow's own ``ls`` tool.

A test may add a :class:`Script` for a question of its own (``StubModel.scripts``): when the
last user message contains its trigger, the script picks the tool call and writes the answer from
the tool's text. Scripts never change the default for other questions.

Both ``stream: true`` (SSE chunks, then ``[DONE]``) and plain JSON replies are served. Every
request body is kept in :attr:`StubModel.requests` so tests can check what the model saw.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL_NAME = "stub-model"
CITATION_LINK = re.compile(r"\[citation:[^\]\n]*\]\(#knowledge-source-[^)\s]+\)")
LS_REQUEST = re.compile(r"please run ls (/mnt/\S+)")
NO_LINK_ANSWER = "The knowledge base returned nothing citable."


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return ""


def _default_answer(tool_text: str) -> str:
    found = CITATION_LINK.search(tool_text)
    return f"According to the knowledge base {found.group(0)}." if found else NO_LINK_ANSWER


def _default_call(question: str) -> tuple[str, dict[str, Any]]:
    listed = LS_REQUEST.search(question)
    if listed:  # one of DeerFlow's own tools, to check it keeps DeerFlow's behaviour
        return "ls", {"description": "list the folder", "path": listed.group(1)}
    return "knowledge_search", {"query": question}


@dataclass(frozen=True)
class Script:
    """One scripted question: ``call(question)`` is the first turn's tool call (name, arguments),
    or None to answer at once; ``answer(tool_text)`` the final answer, from the text of the last
    tool message ("" when no tool ran)."""

    trigger: str
    answer: Callable[[str], str]
    call: Callable[[str], tuple[str, dict[str, Any]] | None] = _default_call


def reply_for(
    messages: list[dict[str, Any]], call_ids: itertools.count, scripts: tuple[Script, ...] = ()
) -> dict[str, Any]:
    """The assistant message the script answers ``messages`` with."""
    roles = [m.get("role") for m in messages]
    last_tool = max((i for i, r in enumerate(roles) if r == "tool"), default=-1)
    last_answer = max((i for i, r in enumerate(roles) if r == "assistant"), default=-1)
    question = next(
        (_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "?"
    )
    script = next((s for s in scripts if s.trigger in question), None)
    if last_tool > last_answer:
        write = script.answer if script else _default_answer
        return {"role": "assistant", "content": write(_text(messages[last_tool].get("content")))}
    chosen = (script.call if script else _default_call)(question)
    if chosen is None:
        assert script is not None
        return {"role": "assistant", "content": script.answer("")}
    name, arguments = chosen
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": f"call_stub_{next(call_ids)}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


class StubModel:
    """The running stub: ``base_url`` for DeerFlow's ``models:`` entry; ``close()`` stops it."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.scripts: tuple[Script, ...] = ()
        self._lock = threading.Lock()
        self._call_ids = itertools.count(1)
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._json(
                        200, {"object": "list", "data": [{"id": MODEL_NAME, "object": "model"}]}
                    )
                else:
                    self._json(404, {"error": {"message": f"no route {self.path}"}})

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
                with stub._lock:
                    stub.requests.append(body)
                    message = reply_for(body.get("messages") or [], stub._call_ids, stub.scripts)
                if body.get("stream"):
                    self._stream(body, message)
                else:
                    self._json(200, _completion(message))

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, body: dict[str, Any], message: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in _chunks(
                    message,
                    include_usage=bool((body.get("stream_options") or {}).get("include_usage")),
                ):
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


_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL_NAME,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
            }
        ],
        "usage": _USAGE,
    }


def _chunks(message: dict[str, Any], *, include_usage: bool) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-stub",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": MODEL_NAME,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    out = [chunk({"role": "assistant", "content": ""})]
    calls = message.get("tool_calls") or []
    for index, call in enumerate(calls):
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {
                                "name": call["function"]["name"],
                                "arguments": call["function"]["arguments"],
                            },
                        }
                    ]
                }
            )
        )
    content = message.get("content") or ""
    # A few pieces, so a `messages` stream really carries several chunks of the answer.
    step = max(1, len(content) // 3)
    for start in range(0, len(content), step):
        out.append(chunk({"content": content[start : start + step]}))
    out.append(chunk({}, "tool_calls" if calls else "stop"))
    if include_usage:
        out.append({**chunk({}), "choices": [], "usage": _USAGE})
    return out
