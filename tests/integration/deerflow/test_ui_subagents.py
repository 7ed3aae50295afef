"""The delegated question in DeerFlow's own chat UI (the stack of test_ui.py): Ultra mode, so
DeerFlow's UI sends ``subagent_enabled``; the lead delegates with DeerFlow's ``task``, the
subagent searches and cites two hits, the lead copies both links. Both must be verified chips
while the answer streams and after a reload (DeerFlow's ``messages/page`` merged with the
LangGraph history), with no failed request and no console error."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from deerflow.knowledge import find_citations
from tests.integration.deerflow.browser import PageLog, chromium
from tests.integration.deerflow.deerflow_config import THINKING_MODEL_NAME
from tests.integration.deerflow.evidence import state_messages
from tests.integration.deerflow.gateway import Gateway
from tests.integration.deerflow.runs import state
from tests.integration.deerflow.stub_model import StubModel
from tests.integration.deerflow.test_subagents import QUERY, SCRIPTS
from tests.integration.deerflow.test_ui import UI_TIMEOUT_MS, answer_view

pytest.importorskip("playwright.sync_api")

QUESTION = f"DELEGATE-CITED {QUERY}"
ANSWER_START = "Per the subagent's research"
#: DeerFlow's UI keeps its model and mode in localStorage; Ultra is the mode that enables
#: subagents, offered for a model that supports thinking.
ULTRA = json.dumps({"context": {"model_name": THINKING_MODEL_NAME, "mode": "ultra"}})


@pytest.fixture(scope="module")
def scripted(stub_model: StubModel) -> Iterator[StubModel]:
    before = stub_model.scripts
    stub_model.scripts = before + SCRIPTS
    yield stub_model
    stub_model.scripts = before


@pytest.fixture(scope="module")
def page(deerflow_ui_url: str) -> Iterator[tuple[Any, PageLog]]:
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.add_init_script(
            f"window.localStorage.getItem('deerflow.local-settings') || "
            f"window.localStorage.setItem('deerflow.local-settings', {json.dumps(ULTRA)});"
        )
        opened = context.new_page()
        log = PageLog()
        log.attach(opened)
        yield opened, log
        context.close()


@pytest.fixture(scope="module")
def asked(
    page: tuple[Any, PageLog], deerflow_ui_url: str, scripted: StubModel, gateway: Gateway
) -> dict[str, Any]:
    """The question asked in Ultra mode; the citations the page shows once the answer is in,
    before anything reloads; the ids the stored answer cites."""
    tab, _ = page
    tab.goto(deerflow_ui_url + "/workspace/chats/new")
    composer = tab.get_by_placeholder(re.compile("how can i assist", re.I))
    composer.wait_for(timeout=UI_TIMEOUT_MS)
    composer.fill(QUESTION)
    composer.press("Enter")
    tab.get_by_text(ANSWER_START).first.wait_for(timeout=UI_TIMEOUT_MS)
    tab.wait_for_url(re.compile(r"/workspace/chats/[0-9a-f-]{36}"), timeout=UI_TIMEOUT_MS)
    thread_id = tab.url.rstrip("/").rsplit("/", 1)[1].split("?")[0]
    messages = state_messages(state(gateway, thread_id))
    answer = next(m for m in reversed(messages) if m.get("type") == "ai" and m.get("content"))
    cited = [c.source_id for c in find_citations(str(answer["content"]))]
    assert len(cited) == 2, answer["content"]
    _chips(tab, 2)
    return {"thread_id": thread_id, "cited": cited, "streamed": answer_view(tab)}


def _chips(tab: Any, count: int) -> None:
    """Wait (bounded) until ``count`` chips show; the view is checked by the caller."""
    with contextlib.suppress(Exception):  # the assertion on the view says what shows instead
        tab.locator("button.dk-chip").nth(count - 1).wait_for(timeout=30_000)


def _check(view: dict[str, Any], cited: list[str]) -> None:
    assert [chip["id"] for chip in view["chips"]] == cited, view
    assert view["inert"] == [], view["inert"]
    assert view["knowledgeAnchors"] == 0, "a knowledge link was rendered as a link"


def test_the_delegated_answer_shows_verified_chips(asked: dict[str, Any]) -> None:
    _check(asked["streamed"], asked["cited"])


def test_reload_brings_the_chips_back(page: tuple[Any, PageLog], asked: dict[str, Any]) -> None:
    tab, _ = page
    with tab.expect_response(re.compile(r"/messages/page")) as history_page:
        tab.reload()
    assert history_page.value.ok
    tab.get_by_text(ANSWER_START).first.wait_for(timeout=UI_TIMEOUT_MS)
    _chips(tab, 2)
    _check(answer_view(tab), asked["cited"])


def test_no_failed_request_and_no_console_error(
    page: tuple[Any, PageLog], asked: dict[str, Any]
) -> None:
    _, log = page
    assert log.failed == [], log.failed
    assert log.console_errors == [], log.console_errors
