"""The request edge: bodies read under a byte limit, parsed once, every failure a 4xx in one shape.

A body is refused by its ``Content-Length`` before a byte is read, and a chunked body is cut as soon
as it passes the limit, so memory stays bounded whatever the caller sends. A body must say it is
JSON (``Content-Type: application/json``): a page on another site can send ``text/plain`` or a
form without a CORS preflight, never JSON. A body that does not arrive within a time limit is a
408 and the connection is closed, so a client sending a byte a second holds nothing for long.
JSON is parsed in one call that also refuses what the checkpointer cannot store (integers outside
64 bits, ``NaN`` and infinities); nesting past Python's recursion limit is a 400 and the trust
boundary refuses anything deeper than it walks, so a malformed body answers 4xx with
``{"error", "detail"}`` and never reaches a code path that would fail with a 500.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any, Final, NoReturn, TypeVar

from fastapi import HTTPException, Request
from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect

from deerflow.knowledge.server.engine._values import (
    OptionsConflict,
    RequestRefused,
    RequestTooLarge,
)
from deerflow.knowledge.server.errors import (
    GatewayError,
    RunInAnotherProcess,
    ThreadBusy,
    ThreadNotFound,
)

__all__ = [
    "BODY_TIMEOUT_SECONDS",
    "DOMAIN_STATUS",
    "JSON_MEDIA_TYPE",
    "MAX_EVENT_ID_DIGITS",
    "MAX_REQUEST_BYTES",
    "REFUSAL_STATUS",
    "ApiError",
    "api_error",
    "error_body",
    "is_json_media_type",
    "last_event_id",
    "parse_json",
    "read_json",
    "refusal_error",
    "validate",
]

MAX_REQUEST_BYTES: Final = 1_000_000
#: How long a request's body may take to arrive once its headers have (33 kB/s at the size limit).
BODY_TIMEOUT_SECONDS: Final = 30.0
JSON_MEDIA_TYPE: Final = "application/json"
#: Event ids are positions in one run's events; longer digit strings name no event (and
#: ``int`` refuses strings past 4,300 digits, which would be a 500).
MAX_EVENT_ID_DIGITS: Final = 19
_INT_MIN: Final = -(2**63)
_INT_MAX: Final = 2**64 - 1
_ModelT = TypeVar("_ModelT", bound=BaseModel)


class ApiError(HTTPException):
    """A request the gateway refuses, with the status code that says whose fault it is."""

    def __init__(
        self, status_code: int, detail: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(status_code, detail, headers=dict(headers) if headers else None)


#: The status of each refusal of the run engine (``errors``): the one place they meet HTTP.
DOMAIN_STATUS: Final[Mapping[type[GatewayError], int]] = {
    ThreadNotFound: 404,
    ThreadBusy: 409,
    RunInAnotherProcess: 409,
}


def api_error(error: GatewayError) -> ApiError:
    """The HTTP answer to a refusal of the run engine (409 for a kind this table does not name:
    a conflict with the thread's state, never the server's fault)."""
    for kind in type(error).__mro__:
        if kind in DOMAIN_STATUS:
            return ApiError(DOMAIN_STATUS[kind], str(error))
    return ApiError(409, str(error))


#: The status of each refusal of a caller-written value (``engine/_values.py``).
REFUSAL_STATUS: Final[Mapping[type[RequestRefused], int]] = {
    RequestRefused: 422,
    OptionsConflict: 400,
    RequestTooLarge: 413,
}


def refusal_error(error: RequestRefused) -> ApiError:
    """The HTTP answer to a refused caller-written value: its kind's status, its message."""
    status = next(REFUSAL_STATUS[kind] for kind in type(error).__mro__ if kind in REFUSAL_STATUS)
    return ApiError(status, str(error))


def error_body(detail: str) -> dict[str, str]:
    """The JSON error shape: ``error`` (this project) and ``detail`` (LangGraph Server)."""
    return {"error": detail, "detail": detail}


def _fail(status: int, detail: str, headers: Mapping[str, str] | None = None) -> NoReturn:
    raise ApiError(status, detail, headers)


def is_json_media_type(content_type: str) -> bool:
    """Whether a ``Content-Type`` value is ``application/json`` (any parameters, any case)."""
    return content_type.partition(";")[0].strip().lower() == JSON_MEDIA_TYPE


async def read_json(
    request: Request,
    *,
    max_bytes: int = MAX_REQUEST_BYTES,
    timeout: float = BODY_TIMEOUT_SECONDS,
) -> Any:
    """The body as JSON (``{}`` when empty), read under ``max_bytes`` within ``timeout`` seconds.

    A body needs ``Content-Type: application/json`` (415 otherwise); only a request with no body
    may leave the header out."""
    declared = request.headers.get("content-length")
    content_type = request.headers.get("content-type")
    if declared is not None and not (declared.isascii() and declared.isdigit()):
        _fail(400, "Content-Length is not a number")
    # Past 20 digits a length is over any limit; int() of thousands of digits would raise.
    length = None if declared is None else int(declared) if len(declared) <= 20 else max_bytes + 1
    has_body = (length is not None and length > 0) or (
        length is None and "transfer-encoding" in request.headers
    )
    if (content_type is not None or has_body) and not is_json_media_type(content_type or ""):
        _fail(415, f"request bodies must be JSON sent with Content-Type: {JSON_MEDIA_TYPE}")
    if length is not None and length > max_bytes:
        _fail(413, f"request body larger than {max_bytes} bytes")
    body = bytearray()
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                body += chunk
                if len(body) > max_bytes:
                    _fail(413, f"request body larger than {max_bytes} bytes")
    except TimeoutError:
        # The rest of the body may still trickle in: the connection cannot serve another request.
        _fail(408, f"the request body did not arrive within {timeout:g} s", {"Connection": "close"})
    except ClientDisconnect:
        # A tab closed mid-request (as an answer finishes): the client left, nothing failed. A 4xx
        # no one reads, instead of an unhandled exception and a traceback in the server's log.
        _fail(400, "the client disconnected before sending the whole request body")
    if body and content_type is None:  # a body its headers did not announce
        _fail(415, f"request bodies must be JSON sent with Content-Type: {JSON_MEDIA_TYPE}")
    return parse_json(bytes(body))


def parse_json(body: bytes) -> Any:
    """Parse a request body, refusing values the gateway could not store faithfully."""
    if not body.strip():
        return {}
    try:
        return json.loads(body, parse_int=_parse_int, parse_constant=_refuse_constant)
    except _RefusedNumberError as exc:
        _fail(422, str(exc))
    except (ValueError, RecursionError):
        _fail(400, "request body is not JSON")


class _RefusedNumberError(ValueError):
    pass


def _parse_int(text: str) -> int:
    # Digits past 20 cannot be in range; refusing by length first keeps the conversion linear.
    if len(text.lstrip("-")) > 20 or not _INT_MIN <= (value := int(text)) <= _INT_MAX:
        raise _RefusedNumberError("integers must fit in 64 bits")
    return value


def last_event_id(header: str | None) -> int:
    """The event id a reconnecting client last saw (``Last-Event-ID``), or -1 (replay from the
    start) when the header is absent or names no event: not ASCII digits, or longer than
    ``MAX_EVENT_ID_DIGITS``."""
    text = "" if header is None else header.strip()
    if not text or len(text) > MAX_EVENT_ID_DIGITS or not (text.isascii() and text.isdigit()):
        return -1
    return int(text)


def _refuse_constant(name: str) -> float:
    raise _RefusedNumberError(f"{name} is not a JSON number")


def validate(model: type[_ModelT], data: Any) -> _ModelT:
    """``data`` as ``model``; a 422 naming the offending fields otherwise."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors()[:5]:
            where = ".".join(str(p) for p in error["loc"]) or "body"
            problems.append(f"{where}: {error['msg']}")
        _fail(422, "invalid request: " + "; ".join(problems))
