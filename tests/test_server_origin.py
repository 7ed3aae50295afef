"""Which requests the gateway answers (server/_origin.py): hosts it serves, writes from its origin.

The attacks are a page on another site posting to the gateway without a preflight (``text/plain``
or empty bodies) and a DNS-rebinding page reading it under its own name; both must be refused with
a reason while the gateway's own page, allowed origins and the SDK clients keep working.
"""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from deerflow.knowledge.providers.local import LocalProvider, sample_corpus_path
from deerflow.knowledge.server import build_config, create_app
from deerflow.knowledge.server.api._origin import (
    host_allowed,
    host_name,
    origin_allowed,
    served_hosts,
)
from tests.gateway_process import gateway_process

PORT = 8123
OWN = f"127.0.0.1:{PORT}"
EVIL = "http://attacker.example"


def test_host_names_are_read_without_the_port() -> None:
    assert host_name("127.0.0.1:8000") == "127.0.0.1"
    assert host_name("LocalHost") == "localhost"
    assert host_name("[::1]:8000") == "[::1]"
    assert host_name("gw.example:65535") == "gw.example"
    for bad in ("", ":8000", "a:b", "a:80:90", "[::1", "[::1]x", "a b", "a/b", "u@a", "a:123456"):
        assert host_name(bad) is None, bad


def test_a_port_at_the_digit_limit_and_one_past() -> None:
    assert host_name("a:" + "9" * 5) == "a"
    assert host_name("a:" + "9" * 6) is None


@given(st.text(max_size=60))
def test_any_header_gives_a_name_without_port_or_none(header: str) -> None:
    name = host_name(header)
    assert name is None or (name and name == name.lower() and name in header.lower())


def test_a_huge_header_is_read_in_one_pass() -> None:
    assert host_name("a" * 1_000_000 + ":80") == "a" * 1_000_000
    assert host_name("[" + ":" * 1_000_000) is None


def test_a_loopback_gateway_serves_its_address_and_localhost_only() -> None:
    hosts = served_hosts("127.0.0.1")
    assert hosts == {"127.0.0.1", "localhost"}
    assert host_allowed(OWN, hosts) and host_allowed(f"localhost:{PORT}", hosts)
    # DNS rebinding sends the attacker's own name; other spellings of the address are no address.
    for header in (f"attacker.example:{PORT}", f"0x7f.0.0.1:{PORT}", "127.1", "2130706433", None):
        assert not host_allowed(header, hosts), header
    assert served_hosts("::1") == {"[::1]", "localhost"}
    assert served_hosts("10.0.0.5", requested="gw.lan") == {"10.0.0.5", "gw.lan"}


def test_a_wildcard_gateway_serves_canonical_addresses_and_named_hosts() -> None:
    hosts = served_hosts("0.0.0.0") | {"gw.example"}
    for header in ("10.1.2.3:80", "[fe80::1]:80", "localhost", "GW.example:443"):
        assert host_allowed(header, hosts), header
    for header in ("0x0a.1.2.3", "010.1.2.3", "[FE80:0:0:0:0:0:0:1]", "attacker.example"):
        assert not host_allowed(header, hosts), header


def test_writes_come_from_the_gateways_own_origin_or_an_allowed_one() -> None:
    assert origin_allowed(f"http://{OWN}", OWN, ())
    assert origin_allowed("https://gw.example", "GW.example", ())
    assert origin_allowed("http://localhost:5173", OWN, ("http://localhost:5173",))
    for origin in (EVIL, "null", f"http://{OWN}.attacker.example", f"ftp://{OWN}", OWN):
        assert not origin_allowed(origin, OWN, ()), origin
    assert not origin_allowed(f"http://{OWN}", None, ())


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> LocalProvider:
    path = tmp_path_factory.mktemp("origin-index") / "index.sqlite"
    local = LocalProvider(path)
    local.index(sample_corpus_path())
    return local


@pytest.fixture
def guarded(provider: LocalProvider, tmp_path: Path) -> Iterator[TestClient]:
    """The app as ``serve`` configures it for 127.0.0.1:PORT, with one CORS origin."""
    config = build_config(
        provider,
        checkpoint=str(tmp_path / "t.sqlite"),
        cors_origins=("http://localhost:5173",),
        allowed_hosts=served_hosts("127.0.0.1"),
    )
    with TestClient(create_app(config), base_url=f"http://{OWN}") as client:
        yield client


def _thread_count(client: TestClient) -> int:
    count: int = client.post("/api/threads/count", json={}).json()
    return count


def test_a_cross_site_page_cannot_write(guarded: TestClient) -> None:
    thread_id = guarded.post("/api/threads", json={}).json()["thread_id"]
    before = _thread_count(guarded)
    writes = [
        "/api/threads",
        "/api/runs/wait",
        f"/api/threads/{thread_id}/runs/wait",
        f"/api/threads/{thread_id}/state",
    ]
    body = b'{"input": {"messages": [{"role": "user", "content": "spend credits"}]}}'
    for url in writes:
        # What a page's fetch(..., {mode: "no-cors"}) sends: no preflight, text/plain.
        simple = guarded.post(
            url, content=body, headers={"Content-Type": "text/plain", "Origin": EVIL}
        )
        assert simple.status_code == 403 and "--cors-origin" in simple.json()["detail"], url
        # Without the Origin check, the Content-Type alone refuses a text/plain body ...
        typed = guarded.post(url, content=body, headers={"Content-Type": "text/plain"})
        assert typed.status_code == 415 and "application/json" in typed.json()["detail"], url
        # ... and the Origin check refuses an empty one, which needs no Content-Type.
        assert guarded.post(url, headers={"Origin": EVIL}).status_code == 403, url
        assert guarded.post(url, headers={"Origin": "null"}).status_code == 403, url
    assert (
        guarded.patch(f"/api/threads/{thread_id}", json={}, headers={"Origin": EVIL}).status_code
        == 403
    )
    assert guarded.delete(f"/api/threads/{thread_id}", headers={"Origin": EVIL}).status_code == 403
    assert _thread_count(guarded) == before


def test_a_rebinding_page_cannot_read(guarded: TestClient) -> None:
    thread_id = guarded.post("/api/threads", json={"metadata": {"secret": 1}}).json()["thread_id"]
    for host in (f"attacker.example:{PORT}", f"0x7f.0.0.1:{PORT}", "attacker.example"):
        for method, url, body in (
            ("get", f"/api/threads/{thread_id}", None),
            ("post", "/api/threads/search", {}),
            ("get", "/", None),
        ):
            kwargs: dict[str, Any] = {"headers": {"Host": host}}
            if body is not None:
                kwargs["json"] = body
            response = getattr(guarded, method)(url, **kwargs)
            assert response.status_code == 400, (host, url)
            assert "secret" not in response.text and "--allowed-host" in response.json()["detail"]


def test_the_own_page_allowed_origins_and_clients_without_origin_still_work(
    guarded: TestClient,
) -> None:
    own = {"Origin": f"http://{OWN}"}
    assert guarded.post("/api/threads", json={}, headers=own).status_code == 200
    local = {"Origin": f"http://localhost:{PORT}", "Host": f"localhost:{PORT}"}
    assert guarded.post("/api/threads", json={}, headers=local).status_code == 200
    vite = {"Origin": "http://localhost:5173"}
    created = guarded.post("/api/threads", json={}, headers=vite)
    assert created.status_code == 200
    assert created.headers["access-control-allow-origin"] == "http://localhost:5173"
    # A preflight from elsewhere is a read: CORS answers it (and allows nothing).
    preflight = guarded.options(
        "/api/threads",
        headers={"Origin": EVIL, "Access-Control-Request-Method": "POST"},
    )
    assert "access-control-allow-origin" not in preflight.headers
    # Reads carry no Origin check: the browser keeps a cross-origin answer from its page.
    assert guarded.get("/api/ok", headers={"Origin": EVIL}).status_code == 200
    typed = {"Content-Type": "application/json; charset=UTF-8"}
    assert guarded.post("/api/threads", content=b"{}", headers=typed).status_code == 200
    assert guarded.post("/api/threads").status_code == 200  # no body, no Content-Type


def _status(base: str, path: str, host: str) -> int:
    url = urlsplit(base)
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=30)
    try:
        connection.request("GET", path, headers={"Host": host})
        return connection.getresponse().status
    finally:
        connection.close()


def test_serve_answers_to_its_address_localhost_and_allowed_hosts_only(tmp_path: Path) -> None:
    options = ("--allowed-host", "Gateway.Example")
    index = tmp_path / "no-index.sqlite"  # /api/ok needs none
    with gateway_process(index, str(tmp_path / "t.sqlite"), tmp_path, *options) as base:
        port = urlsplit(base).port
        for host in (
            f"127.0.0.1:{port}",
            f"localhost:{port}",
            "gateway.example",
            "GATEWAY.example:443",
        ):
            assert _status(base, "/api/ok", host) == 200, host
        for host in (f"attacker.example:{port}", f"0x7f.0.0.1:{port}", f"127.1:{port}"):
            assert _status(base, "/api/ok", host) == 400, host
