#!/usr/bin/env python3
"""Offline OpenAI-compatible shim that lets a REAL lightrag-server 1.5.7 run on loopback.

Stdlib only, so any Python 3.11 can run it. It binds 127.0.0.1 only and serves:

  GET  /v1/models, /health
  POST /v1/embeddings        deterministic embeddings: a feature-hashed bag of words plus word
                             bigrams (lexical, L2-normalised, stable across runs and machines)
  POST /v1/chat/completions  a rule-based responder recognising LightRAG 1.5.7's prompts:
       * entity extraction -> capitalised phrases become entities; neighbouring entities in one
                              sentence become relations
       * gleaning          -> only the completion marker
       * keyword query     -> JSON {"high_level_keywords", "low_level_keywords"}
       * summaries         -> the descriptions joined
       * anything else     -> a fixed deterministic answer
  "stream": true is answered with one SSE chunk followed by [DONE].

The prompt markers below are those of lightrag-hku 1.5.7: pin the server together with this shim.
If an upgrade changes them, extraction silently yields no entities (naive/mix chunks still work).

Adapted from the project's LightRAG kit; changes: ``--port 0`` picks a free port and
``--port-file`` reports it (no race between choosing and binding a port), MiniLM support dropped.

Usage: python openai_shim.py [--port 0] [--port-file FILE] [--dim 384] [--log FILE]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import itertools
import json
import math
import os
import re
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TUPLE = "<|#|>"
COMPLETE = "<|COMPLETE|>"

# Prompt markers of lightrag-hku 1.5.7.
EXTRACTION_SYSTEM_MARKER = "Knowledge Graph Specialist"
INPUT_TEXT_MARKER = "---Input Text---"
GLEANING_MARKER = "Based on the last extraction task"
KEYWORDS_MARKER = "high_level_keywords"
QUERY_MARKER = "User Query:"
SUMMARY_MARKER = "Description List:"

_STOP_WORDS = """a an the and or but if then else of to in on at by for with from into onto over under
    is are was were be been being am do does did done has have had having it its this that these
    those there here what which who whom whose when where why how i you he she we they me him her
    us them my your his our their as not no yes so than too very can could should would may might
    must shall will just also about after before between during through up down out off again
    further once all any both each few more most other some such only own same s t don now
    tell me please describe explain give show list"""
STOP = frozenset(_STOP_WORDS.split())

LOG_LOCK = threading.Lock()
STATS = {"chat": 0, "embeddings": 0, "embedded_texts": 0}


class HashEmbedder:
    """Feature-hashed bag of words + word bigrams, L2-normalised. Never returns a zero vector."""

    def __init__(self, dim: int) -> None:
        self.dim = dim

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        n = int.from_bytes(digest, "little")
        return n % self.dim, (1.0 if (n >> 63) & 1 else -1.0)

    def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            words = [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP]
            vec = [0.0] * self.dim
            features = [(w, 1.0) for w in words] + [
                (words[i] + "_" + words[i + 1], 0.5) for i in range(len(words) - 1)
            ]
            for feature, weight in features:
                idx, sign = self._bucket(feature)
                vec[idx] += sign * weight
            norm = math.sqrt(sum(v * v for v in vec))
            if norm == 0.0:  # NanoVectorDB would divide by zero
                vec[0], norm = 1.0, 1.0
            out.append([v / norm for v in vec])
        return out


CAP_PHRASE = re.compile(
    r"\b([A-Z][A-Za-z0-9&'\-]*(?:\s+(?:of\s+|the\s+|de\s+)?[A-Z][A-Za-z0-9&'\-]*)*)"
)
SENT_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


def _clean(s: str) -> str:
    return " ".join(s.replace(TUPLE, " ").split())


def _entities_in(sentence: str) -> list[str]:
    found: list[str] = []
    for m in CAP_PHRASE.finditer(sentence):
        words = m.group(1).strip().split()
        while words and words[0].lower() in STOP:  # drop a sentence-initial "The", "In", ...
            words = words[1:]
        phrase = " ".join(words)
        if len(phrase) < 2 or phrase.lower() in STOP:
            continue
        if phrase not in found:
            found.append(phrase)
    return found


def extract_entities(input_text: str, max_entities: int, max_total: int) -> str:
    sentences = [s.strip() for s in SENT_SPLIT.split(input_text) if s.strip()]
    entities: dict[str, str] = {}
    relations: list[tuple[str, str, str]] = []
    seen_pairs: set[tuple[str, ...]] = set()
    for sentence in sentences:
        names = _entities_in(sentence)
        for name in names:
            if name not in entities and len(entities) < max_entities:
                entities[name] = _clean(sentence)[:300]
        names = [n for n in names if n in entities]
        for a, b in itertools.pairwise(names):
            key = tuple(sorted((a, b)))
            if a != b and key not in seen_pairs:
                seen_pairs.add(key)
                relations.append((a, b, _clean(sentence)[:300]))
    rows = [f"entity{TUPLE}{n}{TUPLE}Other{TUPLE}{d}" for n, d in entities.items()]
    for a, b, d in relations:
        if len(rows) >= max_total:
            break
        rows.append(f"relation{TUPLE}{a}{TUPLE}{b}{TUPLE}co-occurrence{TUPLE}{d}")
    rows = rows[:max_total]
    rows.append(COMPLETE)
    return "\n".join(rows)


def extract_keywords(query: str) -> str:
    low = _entities_in(query)
    words = [w for w in re.findall(r"[A-Za-z0-9]+", query) if w.lower() not in STOP]
    high: list[str] = []
    for w in words:
        if w.lower() not in high:
            high.append(w.lower())
    for w in words:
        if w.lower() not in [x.lower() for x in low]:
            low.append(w)
    return json.dumps({"high_level_keywords": high[:8], "low_level_keywords": low[:8]})


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content", "")
    if isinstance(content, list):  # multimodal parts
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content or "")


def respond(messages: list[dict[str, Any]]) -> str:
    system = "\n".join(_text_of(m) for m in messages if m.get("role") == "system")
    user_messages = [_text_of(m) for m in messages if m.get("role") == "user"]
    last_user = user_messages[-1] if user_messages else ""
    everything = system + "\n" + last_user

    if GLEANING_MARKER in last_user:
        return COMPLETE
    if INPUT_TEXT_MARKER in last_user and EXTRACTION_SYSTEM_MARKER in everything:
        if os.environ.get("SHIM_EMPTY_EXTRACTION") == "1":  # chunks-only index
            return COMPLETE
        m = re.search(r"---Input Text---\s*```\n(.*?)\n```", last_user, re.S)
        text = m.group(1) if m else last_user
        max_entities = re.search(r"at most (\d+) entity rows", everything)
        max_total = re.search(r"at most (\d+) total rows", everything)
        return extract_entities(
            text,
            int(max_entities.group(1)) if max_entities else 20,
            int(max_total.group(1)) if max_total else 40,
        )
    if KEYWORDS_MARKER in everything and QUERY_MARKER in everything:
        m = re.search(r"User Query:\s*(.*?)\n\s*\n?---Output---", everything, re.S)
        return extract_keywords(m.group(1).strip() if m else last_user)
    if SUMMARY_MARKER in everything:
        m = re.search(r"Description List:\s*```\n(.*?)\n```", everything, re.S)
        descriptions = []
        for line in m.group(1).splitlines() if m else []:
            try:
                descriptions.append(str(json.loads(line).get("description", line)))
            except (ValueError, AttributeError):
                descriptions.append(line)
        return " ".join(d for d in descriptions if d) or "Summary."
    return "Deterministic shim answer: the retrieved context was received."


class Handler(BaseHTTPRequestHandler):
    server_version = "openai-shim/1.1"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet default logging
        pass

    def _log(self, kind: str, payload: dict[str, Any]) -> None:
        path = getattr(self.server, "log_path", "")
        if not path:
            return
        with LOG_LOCK, open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"t": time.time(), "kind": kind, **payload}) + "\n")

    def _send(self, code: int, obj: Any, content_type: str = "application/json") -> None:
        body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            models = [
                {"id": "shim-chat", "object": "model", "owned_by": "shim"},
                {"id": "shim-embed", "object": "model", "owned_by": "shim"},
            ]
            return self._send(200, {"object": "list", "data": models})
        if self.path in ("/health", "/"):
            return self._send(200, {"status": "ok", **STATS})
        self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            req = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return self._send(400, {"error": {"message": "bad json"}})
        path = self.path.rstrip("/")
        if path.endswith("/embeddings"):
            return self._embeddings(req)
        if path.endswith("/chat/completions"):
            return self._chat(req)
        self._send(404, {"error": {"message": "not found"}})

    def _embeddings(self, req: dict[str, Any]) -> None:
        raw = req.get("input", [])
        texts = [raw] if isinstance(raw, str) else list(raw)
        texts = [t if isinstance(t, str) else " ".join(map(str, t)) for t in texts]
        vectors = self.server.embedder.embed(texts)  # type: ignore[attr-defined]
        as_base64 = req.get("encoding_format") == "base64"  # LightRAG asks for float32 LE base64
        data = []
        for i, v in enumerate(vectors):
            emb = base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode() if as_base64 else v
            data.append({"object": "embedding", "index": i, "embedding": emb})
        STATS["embeddings"] += 1
        STATS["embedded_texts"] += len(texts)
        ntok = sum(len(t.split()) for t in texts)
        self._log("embeddings", {"n": len(texts)})
        usage = {"prompt_tokens": ntok, "total_tokens": ntok}
        model = req.get("model", "shim-embed")
        self._send(200, {"object": "list", "data": data, "model": model, "usage": usage})

    def _chat(self, req: dict[str, Any]) -> None:
        messages = req.get("messages", [])
        content = respond(messages)
        STATS["chat"] += 1
        head = _text_of(messages[-1])[:80] if messages else ""
        self._log("chat", {"last_user_head": head, "reply_head": content[:120]})
        now = int(time.time())
        cid = "chatcmpl-shim-" + hashlib.sha256(content.encode()).hexdigest()[:12]
        model = req.get("model", "shim-chat")
        ntok = max(1, len(content.split()))
        usage = {"prompt_tokens": 1, "completion_tokens": ntok, "total_tokens": 1 + ntok}
        if req.get("stream"):
            delta = {"role": "assistant", "content": content}
            chunks = [
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": now,
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                },
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": now,
                    "model": model,
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    "usage": usage,
                },
            ]
            body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            return self._send(200, body.encode(), "text/event-stream")
        message = {"role": "assistant", "content": content}
        choice = {"index": 0, "finish_reason": "stop", "message": message}
        self._send(
            200,
            {
                "id": cid,
                "object": "chat.completion",
                "created": now,
                "model": model,
                "choices": [choice],
                "usage": usage,
            },
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    parser.add_argument("--port-file", default="", help="write the bound port here when ready")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--log", default=os.environ.get("SHIM_LOG", ""))
    args = parser.parse_args()
    if args.host not in ("127.0.0.1", "::1", "localhost"):
        parser.error("the shim only binds loopback")
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    server.embedder = HashEmbedder(args.dim)  # type: ignore[attr-defined]
    server.log_path = args.log  # type: ignore[attr-defined]
    port = server.server_address[1]
    if args.port_file:  # write atomically: readers poll for the file
        tmp = args.port_file + ".tmp"
        with open(tmp, "w", encoding="ascii") as f:
            f.write(str(port))
        os.replace(tmp, args.port_file)
    print(f"openai-shim listening on http://{args.host}:{port}/v1 dim={args.dim}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
