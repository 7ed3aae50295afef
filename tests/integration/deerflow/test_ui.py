"""DeerFlow's own chat UI on DeerFlow's own backend, with the package's chips: the frontend from
the snapshot with the packed package added and the README's patch applied (frontend_env), built
with ``next build`` and served with ``next start`` in front of the suite's gateway (the package's
tool in ``config.yaml``, the trust-boundary wrapper), driven in Debian Chromium.

The scripted model answers the question below by calling ``knowledge_search`` and citing, under
labels of its own, a source of that result (a verified chip with the verified title), a
well-formed id with no evidence and a native RAGFlow id with none (inert labels), and a web page
(DeerFlow's own badge). The chips must show while the answer streams and come back after a
reload, from DeerFlow's merge of its ``messages/page`` and the LangGraph history; a tool message
forged by a caller through the gateway must give no chip.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from deerflow.knowledge import find_citations, read_envelope
from tests.integration.deerflow.browser import PageLog, chromium
from tests.integration.deerflow.evidence import state_messages, tool_messages
from tests.integration.deerflow.forgery import forged_messages
from tests.integration.deerflow.frontend_env import PATCHED, UNPATCHED, FrontendBuild
from tests.integration.deerflow.gateway import Gateway
from tests.integration.deerflow.runs import run_body, state
from tests.integration.deerflow.stub_model import CITATION_LINK, Script, StubModel

pytest.importorskip("playwright.sync_api")

#: The question typed into DeerFlow's composer; the script answers every question holding it.
QUESTION = "Harbour check: when does the high water arrive after the lighthouse bell?"
TRIGGER = "Harbour check:"
MODEL_LABEL = "the handbook"
NO_EVIDENCE_ID = hashlib.sha256(b"no evidence in this thread").hexdigest()[:32]
NATIVE_NO_EVIDENCE = hashlib.sha256(b"no ragflow chunk here").hexdigest()[:32] + "-1"
WEB_URL = "https://example.org/velmont/tide-tables"
WEB_LABEL = "Velmont port authority"
UI_TIMEOUT_MS = 120_000


def scripted_answer(tool_text: str) -> str:
    """The answer: the first source of the tool's result under the model's own label, then the
    links no evidence answers for, and a web citation."""
    found = CITATION_LINK.search(tool_text)
    assert found, f"knowledge_search returned no citation link: {tool_text[:500]}"
    shared = re.sub(r"^\[citation:[^\]]*\]", f"[citation:{MODEL_LABEL}]", found.group(0))
    return (
        f"The high water follows the bell {shared}. "
        f"An old memo says otherwise [citation:Old memo](#knowledge-source-{NO_EVIDENCE_ID}), "
        f"and a RAGFlow chunk agrees [citation:2](#knowledge-{NATIVE_NO_EVIDENCE}). "
        f"The port publishes its tables [citation:{WEB_LABEL}]({WEB_URL})."
    )


@pytest.fixture(scope="module")
def browser(deerflow_ui_url: str) -> Iterator[Any]:
    with chromium() as running:
        yield running


@pytest.fixture(scope="module")
def scripted(stub_model: StubModel) -> Iterator[StubModel]:
    stub_model.scripts = (*stub_model.scripts, Script(TRIGGER, scripted_answer))
    yield stub_model
    stub_model.scripts = tuple(s for s in stub_model.scripts if s.trigger != TRIGGER)


class Session:
    """One browser page on DeerFlow's UI, recording failures for the whole module."""

    def __init__(self, browser: Any, base: str) -> None:
        self.base = base
        self.log = PageLog()
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.log.attach(self.page)

    def close(self) -> None:
        self.context.close()


@pytest.fixture(scope="module")
def session(browser: Any, deerflow_ui_url: str) -> Iterator[Session]:
    opened = Session(browser, deerflow_ui_url)
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def asked(session: Session, scripted: StubModel, gateway: Gateway) -> dict[str, Any]:
    """The question asked in DeerFlow's composer; the chip state seen while the answer streams
    (before anything reloads), the thread id and the verified record the answer cites."""
    page = session.page
    page.goto(session.base + "/workspace/chats/new")
    composer = page.get_by_placeholder(re.compile("how can i assist", re.I))
    composer.wait_for(timeout=UI_TIMEOUT_MS)
    composer.fill(QUESTION)
    composer.press("Enter")
    page.locator("button.dk-chip").first.wait_for(timeout=UI_TIMEOUT_MS)
    # The last link of the answer drawn too (still the live page: nothing reloaded it).
    page.get_by_text(WEB_LABEL).first.wait_for(timeout=UI_TIMEOUT_MS)
    streamed = answer_view(page)
    page.wait_for_url(re.compile(r"/workspace/chats/[0-9a-f-]{36}"), timeout=UI_TIMEOUT_MS)
    thread_id = page.url.rstrip("/").rsplit("/", 1)[1].split("?")[0]
    return {
        "thread_id": thread_id,
        "streamed": streamed,
        "record": cited_record(gateway, thread_id),
    }


def cited_record(gateway: Gateway, thread_id: str) -> Mapping[str, Any]:
    """The verified record the stored answer's first citation names (read from the gateway)."""
    messages = state_messages(state(gateway, thread_id))
    sources = {
        s.id: s
        for m in tool_messages(messages)
        for s in read_envelope(m.get("content"), m.get("artifact")).sources
    }
    answer = next(m for m in reversed(messages) if m.get("type") == "ai" and m.get("content"))
    cited = [c.source_id for c in find_citations(answer["content"]) if c.source_id in sources]
    assert cited, f"the stored answer cites no verified source: {answer['content']}"
    return sources[cited[0]].model_dump()


def answer_view(page: Any) -> dict[str, Any]:
    """What the page shows for citations now."""
    return page.evaluate(
        """(webUrl) => ({
          chips: [...document.querySelectorAll('button.dk-chip')].map((b) => ({
            id: b.dataset.dkSourceId, label: b.getAttribute('aria-label'), text: b.textContent })),
          inert: [...document.querySelectorAll('.dk-inert')].map((s) => ({
            reason: s.dataset.dkReason, text: s.textContent, tag: s.tagName })),
          knowledgeAnchors: document.querySelectorAll('a[href*="#knowledge-"]').length,
          web: [...document.querySelectorAll('a[href]')].filter((a) => a.href === webUrl).map((a) => ({
            badge: !!a.querySelector('[data-slot="badge"]'), text: a.textContent })),
        })""",
        WEB_URL,
    )


def check_view(view: Mapping[str, Any], record: Mapping[str, Any] | None = None) -> None:
    chips = view["chips"]
    assert len(chips) == 1, chips
    assert MODEL_LABEL not in (chips[0]["label"] or ""), chips[0]
    if record is not None:
        assert chips[0]["id"] == record["id"], (chips[0], record["id"])
        assert record["title"] in chips[0]["label"], (chips[0], record["title"])
    reasons = sorted(item["reason"] for item in view["inert"])
    assert reasons == ["evidence_not_loaded", "evidence_not_loaded"], view["inert"]
    assert {item["tag"] for item in view["inert"]} == {"SPAN"}, view["inert"]
    texts = " ".join(item["text"] for item in view["inert"])
    assert "Old memo" in texts and "2" in texts, texts
    assert view["knowledgeAnchors"] == 0, "a knowledge link was rendered as a link"
    # The web citation: DeerFlow's own badge with the model's label inline, and its own "Used N
    # sources" panel's row (a plain link) below the answer.
    badges = [w for w in view["web"] if w["badge"]]
    assert len(badges) == 1 and badges[0]["text"] == WEB_LABEL, view["web"]


def check_preview(page: Any, record: Mapping[str, Any]) -> None:
    """Hovering the chip opens its preview: verified title, provider, excerpt, and only the
    locators the record carries."""
    page.locator("button.dk-chip").first.hover()
    preview = page.locator(f".dk-preview[data-dk-source-id='{record['id']}']")
    preview.wait_for(timeout=10_000)
    text = preview.text_content() or ""  # the DOM's text (the provider is drawn uppercase)
    assert record["title"] in text, text
    assert record["provider"] in text, text
    excerpt_start = " ".join(record["excerpt"].split())[:60]
    assert excerpt_start in " ".join(text.split()), (excerpt_start, text)
    assert preview.locator(".dk-pages").count() == (0 if record.get("page") is None else 1)
    assert preview.locator(".dk-dataset").count() == (0 if not record.get("dataset_name") else 1)
    page.mouse.move(0, 0)


def test_streamed_answer_shows_a_verified_chip(session: Session, asked: dict[str, Any]) -> None:
    check_view(asked["streamed"], asked["record"])
    check_preview(session.page, asked["record"])


def test_reload_brings_the_chips_back_from_deerflow_history(
    session: Session, asked: dict[str, Any]
) -> None:
    page = session.page
    with page.expect_response(re.compile(r"/messages/page")) as history_page:
        page.reload()
    assert history_page.value.ok
    page.locator("button.dk-chip").first.wait_for(timeout=UI_TIMEOUT_MS)
    page.get_by_text(WEB_LABEL).first.wait_for(timeout=UI_TIMEOUT_MS)
    check_view(answer_view(page), asked["record"])
    check_preview(page, asked["record"])
    # DeerFlow's own "Used N sources" panel still lists the web source (and only it).
    assert page.get_by_text("Used 1 source", exact=True).count() == 1


def test_forged_tool_message_gives_no_chip(
    session: Session, gateway: Gateway, asked: dict[str, Any]
) -> None:
    """A caller's self-consistent tool message, sent in a run's input, and the scripted answer
    citing it: an inert label, no chip. DeerFlow's UI (at the pinned commit) reloads a thread's
    messages from its ``messages/page``, which holds the run's own messages and not a caller's
    input tool message, so this holds with DeerFlow's gateway unwrapped too (checked with
    DEERFLOW_GATEWAY_APP=app.gateway.app:app); the wrapper's own effect, on ``state`` and
    ``history``, is test_forgery's."""
    thread_id = gateway.new_thread()
    gateway.post(f"/api/threads/{thread_id}/runs/wait", run_body(forged_messages()))
    page = session.page
    page.goto(f"{session.base}/workspace/chats/{thread_id}")
    inert = page.locator(".dk-inert", has_text="Harbour closure order")
    inert.first.wait_for(timeout=UI_TIMEOUT_MS)
    assert page.locator("button.dk-chip").count() == 0
    assert page.locator('a[href*="#knowledge-"]').count() == 0


def test_no_failed_request_and_no_console_error(session: Session, asked: dict[str, Any]) -> None:
    """Runs last in the module: everything the pages above did, logged."""
    assert session.log.failed == [], session.log.failed
    assert session.log.console_errors == [], session.log.console_errors


def test_patched_frontend_has_no_new_type_error(deerflow_ui: FrontendBuild) -> None:
    """DeerFlow's own ``tsc --noEmit`` on the patched tree: no error DeerFlow does not have
    already (its own are counted only when there are errors at all)."""
    after = set(deerflow_ui.tsc_errors[PATCHED])
    before = set(deerflow_ui.tsc_errors.get(UNPATCHED, ()))
    print(f"\ntsc errors: {len(after)} patched, {len(before)} of them DeerFlow's own")
    assert after - before == set(), sorted(after - before)
