"""The gateway's request edge (server/_http.py): ``Last-Event-ID``, JSON bodies, body reading."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.requests import Request

from deerflow.knowledge.server.api._http import (
    JSON_MEDIA_TYPE,
    MAX_EVENT_ID_DIGITS,
    ApiError,
    last_event_id,
    read_json,
)


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


# --------------------------------------------------------------------------- read_json


def _request(headers: dict[str, str], chunks: list[bytes], *, then_wait: bool = False) -> Request:
    """A request whose body arrives as ``chunks``; ``then_wait``: the rest never comes."""
    pending = list(chunks)

    async def receive() -> dict[str, Any]:
        if pending:
            return {
                "type": "http.request",
                "body": pending.pop(0),
                "more_body": bool(pending) or then_wait,
            }
        if then_wait:
            await asyncio.Event().wait()  # a client that stopped sending
        return {"type": "http.disconnect"}

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    return Request(scope, receive)


def _read(request: Request, **options: Any) -> Any:
    return asyncio.run(read_json(request, **options))


def _refusal(request: Request, **options: Any) -> ApiError:
    with pytest.raises(ApiError) as caught:
        _read(request, **options)
    return caught.value


JSON = {"Content-Type": "application/json"}


def test_json_bodies_need_the_json_media_type() -> None:
    for media in ("application/json", "application/json; charset=utf-8", "Application/JSON "):
        assert _read(_request({"Content-Type": media}, [b'{"a": 1}'])) == {"a": 1}, media
    for media in (
        "text/plain",
        "text/plain; charset=application/json",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonx",
        "",
    ):
        refusal = _refusal(_request({"Content-Type": media, "Content-Length": "8"}, [b'{"a": 1}']))
        assert refusal.status_code == 415 and JSON_MEDIA_TYPE in refusal.detail, media


def test_a_body_without_a_content_type_is_refused_an_empty_request_is_not() -> None:
    assert _refusal(_request({"Content-Length": "2"}, [b"{}"])).status_code == 415
    assert _refusal(_request({"Transfer-Encoding": "chunked"}, [b"{}"])).status_code == 415
    assert _read(_request({}, [b""])) == {}
    assert _refusal(_request({}, [b"{}"])).status_code == 415  # a body no header announced
    assert _read(_request({"Content-Length": "0"}, [b""])) == {}


def test_a_body_that_stops_arriving_is_a_408_that_closes_the_connection() -> None:
    refusal = _refusal(_request(JSON, [b'{"a":'], then_wait=True), timeout=0.05)
    assert refusal.status_code == 408 and refusal.headers == {"Connection": "close"}
    assert "0.05 s" in refusal.detail


def test_content_length_at_the_limit_and_past_it_and_absurdly_long() -> None:
    body = b'"' + b"x" * 8 + b'"'
    assert _read(_request({**JSON, "Content-Length": "10"}, [body]), max_bytes=10) == "x" * 8
    assert (
        _refusal(
            _request({**JSON, "Content-Length": "11"}, [body + b" "]), max_bytes=10
        ).status_code
        == 413
    )
    # int() raises on thousands of digits: refused by length (413), not a 500.
    huge = {**JSON, "Content-Length": "9" * 100_000}
    assert _refusal(_request(huge, [b"{}"])).status_code == 413


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
