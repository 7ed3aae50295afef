"""The pure LightRAG parser, fed the bodies a real lightrag-server 1.5.7 returned.

The captures in ``tests/captures/lightrag`` are real answers (see its README); no HTTP client is
involved: status and body go straight into :func:`parse_query_data`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deerflow.knowledge.providers.errors import UpstreamAuthError, UpstreamRejectedError
from deerflow.knowledge.providers.parse.lightrag import parse_query_data

CAPTURES = Path(__file__).parent / "captures" / "lightrag"
BASE = "http://127.0.0.1:9621"


def capture(name: str) -> tuple[int, Any, str]:
    data = json.loads((CAPTURES / f"{name}.json").read_text(encoding="utf-8"))
    request = data["request"]
    query = request["query"] if "query" in request else request["body"]["query"]
    return data["http_status"], data["response"], query


def test_naive_capture_becomes_hits_in_server_order_titled_by_file_path() -> None:
    status, body, query = capture("query_data_naive")
    result = parse_query_data(status, body, query=query, base_url=BASE)
    assert result.provider == "lightrag" and result.query == query
    assert [hit.title for hit in result.hits] == [
        "mira_holm.txt",
        "alpha_corp.md",
        "fjord_services.txt",
    ]
    assert [hit.text for hit in result.hits] == [c["content"] for c in body["data"]["chunks"]]
    assert all(hit.page is None and hit.url is None and hit.score is None for hit in result.hits)


def test_mix_capture_keeps_only_chunks_not_entities_or_relationships() -> None:
    status, body, query = capture("query_data_mix")
    assert body["data"]["entities"] and body["data"]["relationships"]
    result = parse_query_data(status, body, query=query, base_url=BASE)
    assert len(result.hits) == len(body["data"]["chunks"])
    assert [hit.title for hit in result.hits] == [c["file_path"] for c in body["data"]["chunks"]]


def test_unknown_source_capture_keeps_the_text_without_a_title() -> None:
    status, body, query = capture("query_data_naive_unknown_and_known")
    result = parse_query_data(status, body, query=query, base_url=BASE)
    assert [hit.title for hit in result.hits] == [
        "alpha_corp.md",
        None,
        "solstice_battery.md",
        "mira_holm.txt",
    ]
    assert result.hits[1].text.startswith("The Kestrel Drone")


def test_no_match_capture_is_an_empty_result() -> None:
    status, body, query = capture("query_data_naive_no_match")
    assert parse_query_data(status, body, query=query, base_url=BASE).hits == ()


@pytest.mark.parametrize(
    ("name", "error", "message"),
    [
        ("auth_api_key_missing_403", UpstreamAuthError, "requires an API key"),
        ("error_invalid_mode_400", UpstreamRejectedError, "HTTP 400: Validation error"),
    ],
)
def test_error_captures_become_typed_errors(
    name: str, error: type[Exception], message: str
) -> None:
    status, body, query = capture(name)
    with pytest.raises(error, match=message):
        parse_query_data(status, body, query=query, base_url=BASE)


def test_secrets_are_redacted_from_parsed_text_and_titles() -> None:
    status, body, query = capture("query_data_naive")
    secret = "mira_holm"
    result = parse_query_data(status, body, query=query, base_url=BASE, secrets=[secret])
    assert result.hits[0].title == "[REDACTED].txt"
    assert all(secret not in hit.text for hit in result.hits)


def test_the_parsers_do_no_io_and_do_not_import_httpx() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import deerflow.knowledge.providers.parse.lightrag\n"
        "import deerflow.knowledge.providers.parse.ragflow\n"
        "print(sorted(m for m in ('httpx', 'httpcore', 'sqlite3') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
