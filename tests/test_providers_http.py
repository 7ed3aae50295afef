"""Unit tests of the shared upstream plumbing: redaction, error details, chunk walks, JSON replies.

All traffic goes through ``httpx.MockTransport``; nothing here touches the network.
"""

from __future__ import annotations

import httpx
import pytest

from deerflow.knowledge.providers._http import NOT_JSON, error_detail, redact, send_json
from deerflow.knowledge.providers._service import Service
from deerflow.knowledge.providers.errors import UpstreamResponseError
from deerflow.knowledge.providers.parse._reply import chunk_contents
from deerflow.knowledge.providers.parse.lightrag import parse_query_data
from deerflow.knowledge.providers.parse.ragflow import RAGFlowReply

SERVICE = Service(name="Svc", provider="svc")


def test_redact_replaces_plain_and_url_encoded_secrets() -> None:
    secret = "a b/c+d"
    text = f"x {secret} y a%20b%2Fc%2Bd z a+b%2Fc%2Bd"
    assert redact(text, [secret, None, ""]) == "x [REDACTED] y [REDACTED] z [REDACTED]"
    assert redact("nothing here", [None]) == "nothing here"
    assert redact("abcd abc", ["abc", "abcd"]) == "[REDACTED] [REDACTED]"


def test_error_detail_reads_known_shapes_and_bounds_them() -> None:
    assert error_detail({"message": "m"}, []) == "m"
    assert error_detail({"detail": "d"}, []) == "d"
    assert error_detail({"detail": [{"msg": "Value error, v", "input": "i"}]}, []) == "v"
    assert error_detail({"error": {"message": "e"}}, []) == "e"
    assert error_detail({"detail": "line\nbreak\x00"}, []) == "line break"
    assert error_detail([1], []) is None
    assert error_detail(NOT_JSON, []) is None
    long = error_detail({"detail": "x" * 1000}, [])
    assert long is not None and len(long) == 300 and long.endswith("…")


@pytest.mark.parametrize(
    ("chunk", "what"),
    [("text", "a chunk that is not an object"), ({"content": 1}, "a chunk without text content")],
)
def test_both_parsers_read_chunks_through_one_rule(chunk: object, what: str) -> None:
    seen: list[str] = []

    def shape_error(message: str) -> UpstreamResponseError:
        seen.append(message)
        return UpstreamResponseError(message, provider="svc", status_code=200)

    good = {"content": "Deer eat acorns.", "id": "c1"}
    walk = chunk_contents([good, chunk], shape_error)
    assert next(walk) == (good, "Deer eat acorns.")  # a chunk is checked when the walk reaches it
    with pytest.raises(UpstreamResponseError):
        next(walk)
    assert seen == [f"returned {what}"]
    body = {"status": "success", "data": {"chunks": [good, chunk], "references": []}}
    with pytest.raises(UpstreamResponseError, match=what):
        parse_query_data(200, body, query="q", base_url="http://x")
    with pytest.raises(UpstreamResponseError, match=what):
        RAGFlowReply("http://x", ()).chunks({"chunks": [good, chunk]}, {})


async def test_send_json_refuses_oversized_bodies() -> None:
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, content=b"[" + b"1," * 100 + b"1]")
    )
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(UpstreamResponseError, match="larger than 64 bytes"):
            await send_json(
                client,
                "POST",
                "http://x.test/",
                payload={},
                headers={},
                service=SERVICE,
                secrets=[],
                max_bytes=64,
            )
        ok = await send_json(
            client,
            "POST",
            "http://x.test/",
            payload={},
            headers={},
            service=SERVICE,
            secrets=[],
        )
        assert ok.status_code == 200 and isinstance(ok.body, list)
