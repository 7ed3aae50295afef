"""The gateway's request-edge parsers (server/http.py): ``Last-Event-ID`` and body reading."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.requests import Request

from deerflow.knowledge.server.http import MAX_EVENT_ID_DIGITS, ApiError, last_event_id, read_json


def test_an_event_id_is_read() -> None:
    assert last_event_id("0") == 0
    assert last_event_id(" 41 ") == 41


def test_no_header_or_no_id_replays_from_the_start() -> None:
    for header in (None, "", "  ", "-1", "+3", "3.0", "abc", "1e3", "0x10"):
        assert last_event_id(header) == -1, header


def test_only_ascii_digits_name_an_event() -> None:
    # str.isdigit alone says yes to these, and int() then refuses "²" (a 500 before).
    for header in ("\u00b2", "\u0661\u0662", "\uff11\uff12"):  # ², Arabic-Indic, fullwidth
        assert last_event_id(header) == -1, header


def test_digits_at_exactly_the_limit_and_one_past() -> None:
    assert last_event_id("9" * MAX_EVENT_ID_DIGITS) == int("9" * MAX_EVENT_ID_DIGITS)
    assert last_event_id("9" * (MAX_EVENT_ID_DIGITS + 1)) == -1


def test_a_huge_header_is_refused_by_length_before_any_conversion() -> None:
    # int() raises past 4,300 digits; the length check comes first.
    assert last_event_id("1" * 1_000_000) == -1


@given(st.text(max_size=40))
def test_any_header_gives_an_id_or_minus_one(header: str) -> None:
    value = last_event_id(header)
    assert value == -1 or ((value >= 0 and str(value) == header.strip().lstrip("0")) or value == 0)


def test_a_client_that_leaves_mid_body_is_a_4xx_not_an_unhandled_exception() -> None:
    messages = [
        {"type": "http.request", "body": b'{"limit"', "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> dict[str, object]:
        return messages.pop(0)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": [], "query_string": b""}
    with pytest.raises(ApiError) as refused:
        asyncio.run(read_json(Request(scope, receive)))
    assert refused.value.status_code == 400
    assert "disconnected" in str(refused.value.detail)
