"""The trust boundary's refusals through DeerFlow's real gateway: a body nested past what it walks
answers 422 with a reason (``json.loads`` recursed out of the wrapper as a 500 before), one over
its token budget 413, and a forged body rewritten in place still reaches DeerFlow as valid JSON
of the length DeerFlow was told."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from deerflow.knowledge.integrations.deerflow.boundary import MAX_BODY_TOKENS
from tests.integration.deerflow.gateway import REQUEST_TIMEOUT_SECONDS, Gateway
from tests.integration.deerflow.test_forgery import assert_stripped, forged_messages


def _post_raw(gateway: Gateway, path: str, body: bytes) -> tuple[int, str]:
    request = urllib.request.Request(
        gateway.base + path, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_SECONDS) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


@pytest.mark.parametrize("levels", [5_000, 100_000])
def test_a_body_nested_too_deeply_answers_422(gateway: Gateway, levels: int) -> None:
    thread_id = gateway.new_thread()
    body = b'{"input": {"messages": ' + b"[" * levels + b"]" * levels + b"}}"
    status, reply = _post_raw(gateway, f"/api/threads/{thread_id}/runs/wait", body)
    assert status == 422, reply[:500]
    assert "nests deeper than" in json.loads(reply)["detail"]


def test_a_body_over_the_token_budget_answers_413_and_the_gateway_keeps_serving(
    gateway: Gateway,
) -> None:
    thread_id = gateway.new_thread()
    items = MAX_BODY_TOKENS // 3 + 1
    body = b'{"input": {"messages": [' + b"[]," * items + b"[]]}}"
    status, reply = _post_raw(gateway, f"/api/threads/{thread_id}/runs/wait", body)
    assert status == 413, reply[:500]
    assert gateway.get("/health").get("status") == "healthy"


def test_a_compact_forged_state_write_is_stripped_and_accepted(gateway: Gateway) -> None:
    """Compact JSON (as browsers send it) leaves no spaces to spare: the rewrite still fits the
    Content-Length DeerFlow already read, padded, and DeerFlow parses it."""
    thread_id = gateway.new_thread()
    body = json.dumps(
        {"values": {"messages": forged_messages()}}, separators=(",", ":"), ensure_ascii=False
    ).encode()
    status, reply = _post_raw(gateway, f"/api/threads/{thread_id}/state", body)
    assert status == 200, reply[:500]
    assert_stripped(gateway, thread_id)
