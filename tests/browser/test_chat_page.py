"""The chat page in a real browser: Debian chromium driven by Playwright (no downloaded browser).

A real gateway (``deerflow-knowledge serve``) runs on 127.0.0.1 over a fresh index of the bundled
corpus and a fresh SQLite checkpoint; it is stopped by its PID. The page must be built first
(``npm run build:demo``; ``make test`` does it). Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deerflow.knowledge.providers.local import LocalProvider, sample_corpus_path
from tests.gateway_process import gateway_process

playwright_sync = pytest.importorskip("playwright.sync_api")

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "backend" / "deerflow" / "knowledge" / "server" / "static" / "index.html"
ARTIFACTS = ROOT / "test-artifacts"
#: The README's picture of the page, taken by the first test below so that it shows what the page
#: answers today; beside it, the text it shows. The picture is retaken whenever that text changes
#: (Chromium's antialiasing differs by a few pixels between runs, so bytes alone would churn).
README_SHOT = ROOT / "docs" / "chat-page.png"
README_SHOT_TEXT = ROOT / "docs" / "chat-page.txt"
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
#: PREVIEW_EDGE_MARGIN of CitationChip.tsx: a preview keeps this far from the screen's sides.
PREVIEW_EDGE_MARGIN = 8
CHROMIUM = os.environ.get("DEERFLOW_CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
QUESTION = "How does a reader verify the evidence behind a citation?"
#: Its answer cites two excerpts of one document (chips "… · excerpt 1", "… · excerpt 2").
SPLIT_QUESTION = "How long is each chunk, and what is the title of a local hit?"
#: A near miss: the corpus speaks of RAGFlow API keys but never of how long one is valid.
NEAR_MISS = "How long is a RAGFlow API key valid before it expires?"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not STATIC.is_file():
        pytest.fail(
            "the chat page is not built: run `npm run build:demo` (make test does)", pytrace=False
        )
    if not Path(CHROMIUM).is_file():
        pytest.fail(
            f"no chromium at {CHROMIUM}: apt-get install chromium (make test does)", pytrace=False
        )
    work = tmp_path_factory.mktemp("gateway")
    index = work / "index.sqlite"
    LocalProvider(index).index(sample_corpus_path())
    with gateway_process(index, str(work / "threads.sqlite"), work) as base:
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with playwright_sync.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser: object, gateway: str) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})  # type: ignore[attr-defined]
    page = context.new_page()
    page.dialogs = []  # type: ignore[attr-defined]
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))  # type: ignore[attr-defined]
    page.goto(gateway)
    yield page
    context.close()


def _ask(page: object, question: str) -> object:
    page.get_by_label("Your question").fill(question)  # type: ignore[attr-defined]
    page.get_by_label("Your question").press("Enter")  # type: ignore[attr-defined]
    return _wait_for_answer(page)


def _wait_for_answer(page: object) -> object:
    # The run has finished when the last answer is complete and the input is idle again.
    page.wait_for_function(  # type: ignore[attr-defined]
        """() => {
          const answers = document.querySelectorAll('.demo-msg--ai');
          const last = answers[answers.length - 1];
          const idle = !document.querySelector('.demo-input button[type=submit]')?.textContent?.includes('Answering');
          const said = last && (last.textContent.includes('From the knowledge base')
            || last.textContent.includes('I found no sentence in the knowledge base'));
          return idle && said && last.querySelector('.dk-sources');
        }""",
        timeout=30_000,
    )
    return page.locator(".demo-msg--ai").last  # type: ignore[attr-defined]


def _shot(page: object, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)  # type: ignore[attr-defined]


def _readme_shot(page: object) -> None:
    """Retake the README's picture of the page if the text the page shows has changed."""
    shown = page.locator("#root").inner_text() + "\n"  # type: ignore[attr-defined]
    recorded = README_SHOT_TEXT.read_text(encoding="utf-8") if README_SHOT_TEXT.is_file() else None
    if shown != recorded or not README_SHOT.is_file():
        page.screenshot(path=str(README_SHOT), animations="disabled")  # type: ignore[attr-defined]
        README_SHOT_TEXT.write_text(shown, encoding="utf-8")


def _preview_of(page: object, chip: object) -> object:
    # Closed, a chip is described by a hidden description that chips alike share; open, by its
    # preview, which names the same source.
    source = chip.get_attribute("data-dk-source-id")  # type: ignore[attr-defined]
    return page.locator(f".dk-preview[data-dk-source-id='{source}']")  # type: ignore[attr-defined]


def _api(gateway: str, path: str, body: object | None = None, method: str = "POST") -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        gateway + "api/" + path,
        data=data,
        method=method,
        headers={"Content-Type": "application/json"},
    )
    raw = urllib.request.urlopen(request).read()
    return json.loads(raw) if raw else None


def _new_thread(gateway: str) -> str:
    return str(_api(gateway, "threads", {})["thread_id"])


def _box(page: object, selector_or_locator: object) -> dict[str, float]:
    locator = (
        page.locator(selector_or_locator)  # type: ignore[attr-defined]
        if isinstance(selector_or_locator, str)
        else selector_or_locator
    )
    box = locator.bounding_box()  # type: ignore[attr-defined]
    assert box is not None
    return box  # type: ignore[no-any-return]


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def _quote_items(answer: object) -> list[object]:
    return [li for li in answer.locator("li").all() if li.inner_text().startswith("“")]  # type: ignore[attr-defined]


def test_a_declined_question_shows_its_closest_passages_not_an_answer(page: object) -> None:
    _ask(page, QUESTION)
    declined = _ask(page, NEAR_MISS)
    said = declined.inner_text()  # type: ignore[attr-defined]
    assert "From the knowledge base" not in said, said
    assert said.startswith("I found no sentence in the knowledge base that answers this."), said
    # The passages sit under their own heading, after the plain statement; each is a quote
    # with its own verified chip and nothing else that is a link.
    heading = declined.get_by_role("heading", name="Closest passages")  # type: ignore[attr-defined]
    heading.wait_for()
    passages = _quote_items(declined)
    assert passages
    for passage in passages:
        assert passage.locator("button.dk-chip").count() == 1  # type: ignore[attr-defined]
        assert passage.locator("a[href]").count() == 0  # type: ignore[attr-defined]
    assert declined.locator(".dk-unresolved, .dk-malformed").count() == 0  # type: ignore[attr-defined]
    # The README's picture: an answer, then a declined question with its closest passages.
    _readme_shot(page)
    chip = passages[0].locator("button.dk-chip")  # type: ignore[attr-defined]
    chip.hover()
    _preview_of(page, chip).wait_for(state="visible")
    _shot(page, "chat-declined.png")


def test_question_yields_chips_with_previews_that_survive_reload(page: object) -> None:
    answer = _ask(page, QUESTION)
    chips = answer.locator("button.dk-chip")  # type: ignore[attr-defined]
    chips.first.wait_for()
    assert chips.count() >= 1
    # Lean: no preview is mounted before any interaction.
    assert page.locator(".dk-preview, .dk-excerpt").count() == 0  # type: ignore[attr-defined]
    first = chips.first
    # The title is the button's text, isolated by the button as a <bdi> would (contract §8).
    assert first.evaluate("e => getComputedStyle(e).unicodeBidi") == "isolate"
    preview = _preview_of(page, first)
    # Closed, the chip is described by a hidden short description (provider and locators).
    described = first.get_attribute("aria-describedby")  # type: ignore[attr-defined]
    assert page.evaluate(f"document.getElementById({described!r}).hidden") is True  # type: ignore[attr-defined]
    first.hover()
    preview.wait_for(state="visible")
    assert first.get_attribute("aria-describedby") == preview.get_attribute("id")  # type: ignore[attr-defined]
    assert preview.locator(".dk-excerpt").inner_text().strip()
    assert preview.locator(".dk-provider").text_content() == "local"
    page.mouse.move(0, 0)  # type: ignore[attr-defined]
    preview.wait_for(state="detached")
    first.focus()
    preview.wait_for(state="visible")
    page.keyboard.press("Escape")  # type: ignore[attr-defined]
    preview.wait_for(state="detached")
    _shot(page, "chat-answer.png")
    first.hover()
    preview.wait_for(state="visible")
    _shot(page, "chat-chip-preview.png")
    resolved = chips.count()
    page.reload()  # type: ignore[attr-defined]
    reloaded = page.locator(".demo-msg--ai").last.locator("button.dk-chip")  # type: ignore[attr-defined]
    reloaded.first.wait_for()
    assert reloaded.count() == resolved
    assert page.locator(".dk-unresolved").count() == 0  # type: ignore[attr-defined]


def test_focus_returns_to_the_input_and_each_chip_is_one_tab_stop(page: object) -> None:
    _ask(page, "What is the trust boundary?")
    assert page.evaluate("document.activeElement?.id") == "demo-question"  # type: ignore[attr-defined]
    chips = page.locator(".demo-msg--ai").last.locator("button.dk-chip")  # type: ignore[attr-defined]
    chips.first.wait_for()
    chips.first.focus()
    described = page.evaluate(  # type: ignore[attr-defined]
        "document.getElementById(document.activeElement.getAttribute('aria-describedby')).className"
    )
    assert described == "dk-preview"
    for index in range(1, chips.count()):
        page.keyboard.press("Tab")  # type: ignore[attr-defined]
        assert page.evaluate("document.activeElement.classList.contains('dk-chip')")  # type: ignore[attr-defined]
        assert page.evaluate("document.activeElement") == chips.nth(index).evaluate("e => e")  # type: ignore[attr-defined]


def test_preview_stays_in_the_message_list_and_clear_of_the_input(page: object) -> None:
    _ask(page, QUESTION)
    _ask(page, "What is the trust boundary?")
    messages = _box(page, ".demo-messages")
    form = _box(page, ".demo-input")
    chips = page.locator("button.dk-chip")  # type: ignore[attr-defined]
    # The chip nearest the input box (the list is scrolled to the end): no room below it.
    chip = chips.last
    chip.scroll_into_view_if_needed()
    page.evaluate("document.querySelector('.demo-messages').scrollTop = 1e9")  # type: ignore[attr-defined]
    chip.hover()
    preview = _preview_of(page, chip)
    preview.wait_for(state="visible")
    box = _box(page, preview)
    chip_box = _box(page, chip)
    assert not _overlap(box, form)
    assert box["y"] >= messages["y"] - 0.5
    assert box["y"] + box["height"] <= messages["y"] + messages["height"] + 0.5
    for toggle in page.locator(".dk-sources-summary").all():  # type: ignore[attr-defined]
        toggle_box = toggle.bounding_box()
        if toggle_box is not None:
            assert not _overlap(box, toggle_box)
    placement = preview.get_attribute("data-dk-placement")
    if chip_box["y"] + chip_box["height"] + box["height"] > messages["y"] + messages["height"]:
        assert placement in ("above", "right", "left")
    _shot(page, "chat-preview-flipped.png")


def test_reopening_a_thread_from_the_list_brings_back_answer_and_chips(page: object) -> None:
    _ask(page, QUESTION)
    chips = page.locator(".demo-msg--ai button.dk-chip").count()  # type: ignore[attr-defined]
    assert chips >= 1
    thread_id = page.evaluate("new URLSearchParams(location.search).get('thread')")  # type: ignore[attr-defined]
    page.get_by_role("button", name="New conversation").click()  # type: ignore[attr-defined]
    page.locator(".demo-empty").wait_for()  # type: ignore[attr-defined]
    # Other tests ask the same question on the same gateway: open this thread's own entry.
    entry = page.locator(f'.demo-thread[data-thread-id="{thread_id}"]')  # type: ignore[attr-defined]
    assert entry.get_attribute("title") == QUESTION
    entry.click()
    page.locator(".demo-msg--ai button.dk-chip").first.wait_for()  # type: ignore[attr-defined]
    assert page.locator(".demo-msg--ai button.dk-chip").count() == chips  # type: ignore[attr-defined]
    assert page.locator(".dk-unresolved").count() == 0  # type: ignore[attr-defined]


def test_closing_the_tab_mid_run_and_reopening_brings_back_answer_and_chips(
    browser: object, gateway: str
) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 900})  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        page.goto(gateway)
        held: list[object] = []
        # The run starts on the server, but its stream never reaches this tab: it closes first.
        page.route("**/runs/stream", lambda route: held.append(route.fetch()))
        page.get_by_label("Your question").fill(QUESTION)
        page.get_by_label("Your question").press("Enter")
        page.wait_for_function("() => new URLSearchParams(location.search).get('thread')")
        thread_id = page.evaluate("new URLSearchParams(location.search).get('thread')")
        deadline = 100
        while not held and deadline:
            page.wait_for_timeout(100)
            deadline -= 1
        assert held, "the run never started"
        assert page.locator(".demo-msg--ai").count() == 0  # the tab saw no answer
        page.unroute_all(behavior="ignoreErrors")
        page.close()

        reopened = context.new_page()
        reopened.goto(f"{gateway}?thread={thread_id}")
        answer = _wait_for_answer(reopened)
        assert answer.locator("button.dk-chip").count() >= 1
        assert reopened.locator(".dk-unresolved").count() == 0
    finally:
        context.close()


def test_reconnect_on_mount_rejoins_a_run_by_its_stored_id(browser: object, gateway: str) -> None:
    thread_id = _new_thread(gateway)
    run = _api(
        gateway,
        f"threads/{thread_id}/runs",
        {
            "assistant_id": "agent",
            "input": {"messages": [{"type": "human", "content": QUESTION}]},
            "stream_mode": ["values", "messages-tuple"],
            "stream_resumable": True,
        },
    )
    context = browser.new_context(viewport={"width": 1200, "height": 900})  # type: ignore[attr-defined]
    try:
        # What useStream stored when the tab that started the run was closed mid-run.
        context.add_init_script(
            f"localStorage.setItem('lg:stream:{thread_id}', {json.dumps(run['run_id'])})"
        )
        page = context.new_page()
        joins: list[str] = []
        page.on("request", lambda r: joins.append(r.url) if "/stream" in r.url else None)
        page.goto(f"{gateway}?thread={thread_id}")
        answer = _wait_for_answer(page)
        assert answer.locator("button.dk-chip").count() >= 1
        assert [u for u in joins if f"/runs/{run['run_id']}/stream" in u], joins
    finally:
        context.close()


def test_narrow_screen_can_start_and_switch_conversations(browser: object, gateway: str) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844})  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        page.goto(gateway)
        answer = _ask(page, QUESTION)
        assert answer.locator("button.dk-chip").count() >= 1
        first_thread = page.evaluate("new URLSearchParams(location.search).get('thread')")
        _shot(page, "chat-narrow.png")
        page.get_by_role("button", name="New", exact=True).click()
        page.locator(".demo-empty").wait_for()
        assert page.evaluate("new URLSearchParams(location.search).get('thread')") is None
        menu = page.get_by_role("button", name="Conversations")
        menu.click()
        assert menu.get_attribute("aria-expanded") == "true"
        _shot(page, "chat-narrow-drawer.png")
        page.get_by_role("button", name=QUESTION).first.click()
        page.locator(".demo-msg--ai button.dk-chip").first.wait_for()
        assert page.evaluate("new URLSearchParams(location.search).get('thread')") == first_thread
        assert not page.locator(".demo-sidebar").is_visible()
        # A chip late in its line (moved there), whose preview is pushed against the right side.
        chip = page.locator("button.dk-chip").first
        chip.evaluate("e => { e.style.marginLeft = '160px'; }")
        chip.scroll_into_view_if_needed()
        chip.hover()
        preview = _preview_of(page, chip)
        preview.wait_for(state="visible")
        box = _box(page, preview)
        # Clear of the screen's edges, not touching them.
        assert box["x"] >= PREVIEW_EDGE_MARGIN - 0.5
        assert box["x"] + box["width"] <= 390 - PREVIEW_EDGE_MARGIN + 0.5
        _shot(page, "chat-narrow-preview.png")
    finally:
        context.close()


def test_no_request_fails(browser: object, gateway: str) -> None:
    context = browser.new_context()  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        failed: list[str] = []
        page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
        page.on("requestfailed", lambda r: failed.append(r.url))
        page.goto(gateway)
        page.locator(".demo-empty").wait_for()
        page.wait_for_timeout(300)
        assert failed == []
        assert page.evaluate("document.querySelector('link[rel=icon]').href.startsWith('data:')")
    finally:
        context.close()


HOSTILE_MESSAGES = [
    ">" * 2492,
    ">" * 10000,
    "- " * 5000 + "x",
    "*a" * 25000,
    "1. " * 3000 + "x",
    "[" * 50000 + "[x](#a)" * 7142,
]


def test_hostile_messages_do_not_blank_the_page(page: object, gateway: str) -> None:
    thread_id = _new_thread(gateway)
    messages: list[dict[str, object]] = [{"type": "human", "content": "hi"}]
    for index, text in enumerate(HOSTILE_MESSAGES):
        messages += [
            {"type": "ai", "content": text, "id": f"hostile-{index}"},
            {"type": "human", "content": f"next {index}"},
        ]
    messages.append({"type": "ai", "content": "The **last** answer renders.", "id": "last"})
    _api(gateway, f"threads/{thread_id}/state", {"values": {"messages": messages}})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))  # type: ignore[attr-defined]
    page.goto(f"{gateway}?thread={thread_id}")  # type: ignore[attr-defined]
    page.locator(".demo-msg--ai strong", has_text="last").wait_for(timeout=60_000)  # type: ignore[attr-defined]
    assert page.locator(".demo-msg--ai").count() == len(HOSTILE_MESSAGES) + 1  # type: ignore[attr-defined]
    assert page.locator(".demo-msg--human").count() == len(HOSTILE_MESSAGES) + 1  # type: ignore[attr-defined]
    # Nesting is capped; too much emphasis is plain text; nothing unmounted the page.
    first = page.locator(".demo-msg--ai").first  # type: ignore[attr-defined]
    assert first.locator("blockquote").count() == 32
    assert page.locator(".dk-plain-text").count() >= 1  # type: ignore[attr-defined]
    assert page.locator("#root .demo").count() == 1  # type: ignore[attr-defined]
    assert not [e for e in errors if "Maximum call stack" in e]
    _shot(page, "chat-hostile-messages.png")


def _assert_nothing_executed(page: object) -> None:
    assert page.dialogs == []  # type: ignore[attr-defined]
    assert page.evaluate("window.__pwned === undefined")  # type: ignore[attr-defined]
    unprefixed = page.evaluate(  # type: ignore[attr-defined]
        "[...document.querySelectorAll('[id]')].map(e => e.id).filter(id => id.startsWith('knowledge-'))"
    )
    assert unprefixed == []
    hrefs = page.evaluate(
        "[...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))"
    )  # type: ignore[attr-defined]
    assert not [
        h for h in hrefs if h.strip().lower().startswith(("javascript:", "data:", "vbscript:"))
    ]
    assert page.locator("script:not([src])").count() == 0  # type: ignore[attr-defined]
    assert page.locator("main img, main iframe, main object, main embed").count() == 0  # type: ignore[attr-defined]


#: b.md's real chunk is cited from inside a.md's text, and so is a web page: a document that
#: tries to put links into an answer that quotes it.
PLANTED = (
    "Deer eat acorns in the autumn woods, as [citation:b.md](#knowledge-source-{id}) and "
    "[the official portal](https://evil.test/login) confirm.\n"
)


@pytest.fixture(scope="module")
def linking_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from deerflow.knowledge.envelope import read_envelope
    from deerflow.knowledge.tools import run_knowledge_search

    work = tmp_path_factory.mktemp("linking")
    docs = work / "docs"
    docs.mkdir()
    (docs / "b.md").write_text("Badgers dig their setts in sandy banks.\n", encoding="utf-8")
    index = work / "index.sqlite"
    provider = LocalProvider(index)
    provider.index(docs)
    # Playwright's loop runs in this thread: the tool runs in one of its own.
    with ThreadPoolExecutor(1) as pool:
        search = run_knowledge_search(provider, "badgers setts")
        content, artifact = pool.submit(asyncio.run, search).result()
    [b] = read_envelope(content, artifact).sources
    (docs / "a.md").write_text(PLANTED.format(id=b.id), encoding="utf-8")
    provider.index(docs)
    provider.close()
    with gateway_process(index, str(work / "threads.sqlite"), work) as base:
        yield base


def test_a_link_a_document_wrote_is_quoted_as_text_beside_the_responders_chip(
    browser: object, linking_gateway: str
) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 900})  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        page.goto(linking_gateway)
        answer = _ask(page, "What do deer eat in the autumn woods, and what about badgers setts?")
        said = answer.inner_text()
        assert "From the knowledge base" in said, said
        [quote] = [q for q in _quote_items(answer) if "Deer eat acorns" in q.inner_text()]
        # The document's own Markdown shows as the characters it wrote...
        text = quote.inner_text()
        assert "[citation:b.md](#knowledge-source-" in text, text
        assert "[the official portal](https://evil.test/login)" in text, text
        # ...and the only link the quote carries is the responder's chip for a.md.
        chips = quote.locator("button.dk-chip")
        assert chips.count() == 1 and chips.first.inner_text().strip().startswith("a.md")
        assert quote.locator("a[href]").count() == 0
        hrefs = page.evaluate(
            "[...document.querySelectorAll('.demo-msg--ai a[href]')].map(a => a.href)"
        )
        assert not [h for h in hrefs if "evil.test" in h], hrefs
        assert answer.locator(".dk-unresolved, .dk-malformed").count() == 0
        _shot(page, "chat-document-link.png")
    finally:
        context.close()


def test_hostile_corpus_document_executes_nothing(page: object) -> None:
    answer = _ask(page, "canary-hostile-payload script alert onerror javascript")
    chip = answer.locator("button.dk-chip", has_text="hostile-payloads.md").first  # type: ignore[attr-defined]
    chip.hover()
    preview = _preview_of(page, chip)
    preview.wait_for(state="visible")
    assert (
        "[click](data:text/html" in preview.locator(".dk-excerpt").text_content()
    )  # text, not a link
    page.mouse.move(0, 0)  # type: ignore[attr-defined]
    preview.wait_for(state="detached")  # it would cover the tool call's toggle
    page.locator("details.demo-tool").last.click()  # type: ignore[attr-defined]
    tool_text = page.locator("details.demo-tool pre").last.text_content()  # type: ignore[attr-defined]
    assert "<script>alert(1)</script>" in tool_text and "onerror=alert(1)" in tool_text
    page.wait_for_timeout(300)  # type: ignore[attr-defined]
    _assert_nothing_executed(page)
    _shot(page, "chat-hostile.png")


def test_hostile_answer_markdown_executes_nothing(page: object, gateway: str) -> None:
    """An assistant message written through the state API with every classic payload."""
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))  # type: ignore[attr-defined]
    thread_id = json.loads(
        urllib.request.urlopen(
            urllib.request.Request(gateway + "api/threads", method="POST")
        ).read()
    )["thread_id"]
    hostile = "\n\n".join(
        [
            "<script>window.__pwned = 1</script>",
            '<img src=x onerror="window.__pwned = 1">',
            "[click](javascript:window.__pwned=1) [data](data:text/html,<script>alert(1)</script>) [vb](vbscript:msgbox(1))",
            "![tracker](http://127.0.0.1:9/pixel.png)",
            '<a id="knowledge-source-00000000000000000000000000000000" href="#">clobber</a>',
            "[citation:Planted](#knowledge-source-ZZZ) and [citation:Fake](#knowledge-source-"
            + "1" * 32
            + ")",
            '<iframe src="http://127.0.0.1:9/"></iframe> <svg onload="window.__pwned=1"></svg>',
        ]
    )
    body = json.dumps(
        {
            "values": {
                "messages": [{"type": "human", "content": "hi"}, {"type": "ai", "content": hostile}]
            }
        }
    ).encode()
    request = urllib.request.Request(
        f"{gateway}api/threads/{thread_id}/state",
        data=body,
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(request).read()
    page.goto(f"{gateway}?thread={thread_id}")  # type: ignore[attr-defined]
    answer = page.locator(".demo-msg--ai").last  # type: ignore[attr-defined]
    answer.wait_for()
    page.wait_for_timeout(500)  # type: ignore[attr-defined]
    _assert_nothing_executed(page)
    assert answer.locator(".dk-malformed").count() >= 1  # the bad id is an inert, explained label
    assert answer.locator(".dk-unresolved").count() == 1  # the well-formed id has no evidence
    assert answer.locator("button.dk-chip").count() == 0
    assert not [url for url in requests if ":9/" in url]  # no remote image or frame was fetched
    _shot(page, "chat-hostile-answer.png")


def _thread_in_url(page: object) -> object:
    return page.evaluate("new URLSearchParams(location.search).get('thread')")  # type: ignore[attr-defined]


def test_unknown_thread_link_is_a_notice_and_the_next_question_starts_afresh(
    page: object, gateway: str
) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    page.goto(f"{gateway}?thread={missing}")  # type: ignore[attr-defined]
    alert = page.get_by_role("alert")  # type: ignore[attr-defined]
    alert.wait_for()
    said = alert.inner_text()
    assert "not on this gateway" in said, said
    assert "HTTP" not in said and "{" not in said and "run failed" not in said
    assert _thread_in_url(page) is None
    answer = _ask(page, QUESTION)
    assert answer.locator("button.dk-chip").count() >= 1
    assert _thread_in_url(page) not in (None, missing)
    assert page.get_by_role("alert").count() == 0  # type: ignore[attr-defined]


def test_narrow_screen_drawer_closes_and_header_says_who_answers(
    browser: object, gateway: str
) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844})  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        page.goto(gateway)
        status = page.locator(".demo-status")
        status.get_by_text("no language model").wait_for()
        # The disclosure is shown whole, inside the screen.
        assert status.evaluate("e => e.scrollWidth <= e.clientWidth")
        box = _box(page, status)
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390
        menu = page.get_by_role("button", name="Conversations")
        drawer = page.locator(".demo-sidebar")
        # Escape, a tap outside and the close button each close it; focus goes back to the toggle.
        for close in (
            lambda: page.keyboard.press("Escape"),
            lambda: page.mouse.click(380, 420),
            lambda: page.get_by_role("button", name="Close").click(),
        ):
            menu.click()
            drawer.wait_for(state="visible")
            assert menu.get_attribute("aria-expanded") == "true"
            close()
            drawer.wait_for(state="hidden")
            assert menu.get_attribute("aria-expanded") == "false"
            assert page.evaluate("document.activeElement?.textContent") == "Conversations"
        assert page.locator(".demo-empty").is_visible()  # closing started no conversation
    finally:
        context.close()


def test_question_limit_is_said_before_sending(page: object) -> None:
    from deerflow.knowledge.tools import MAX_QUERY_CHARS

    streams: list[str] = []
    page.on("request", lambda r: streams.append(r.url) if "/runs" in r.url else None)  # type: ignore[attr-defined]
    box = page.get_by_label("Your question")  # type: ignore[attr-defined]
    empty = _box(page, box)["height"]
    box.fill("\n".join(["a line of the question"] * 8))
    grown = _box(page, box)["height"]
    assert grown > empty  # the box grows with its text...
    box.fill("\n".join(["a line of the question"] * 200))
    assert _box(page, box)["height"] <= 900 * 0.35 + 1  # ...up to a share of the window
    long = ("why " * 792).strip()  # 3,167 code points
    box.fill(long)
    count = page.locator("#demo-question-count")  # type: ignore[attr-defined]
    count.wait_for()
    said = count.inner_text()
    assert f"{len(long):,} characters" in said and f"at most {MAX_QUERY_CHARS:,}" in said, said
    assert box.get_attribute("aria-describedby") == "demo-question-count"
    assert page.get_by_role("button", name="Send").is_disabled()  # type: ignore[attr-defined]
    box.press("Enter")
    page.wait_for_timeout(200)  # type: ignore[attr-defined]
    assert streams == []  # nothing was sent
    assert page.locator(".demo-msg--human").count() == 0  # type: ignore[attr-defined]
    box.fill(long[:MAX_QUERY_CHARS])  # exactly at the limit: it may be sent
    assert not page.get_by_role("button", name="Send").is_disabled()  # type: ignore[attr-defined]


def test_thread_titles_cut_in_the_list_keep_the_whole_question_as_tooltip(
    page: object, gateway: str
) -> None:
    question = "Where do the chips come from? " + "Say more about the gateway and its threads. " * 4
    thread_id = _new_thread(gateway)
    messages = [{"type": "human", "content": question}, {"type": "ai", "content": "An answer."}]
    _api(gateway, f"threads/{thread_id}/state", {"values": {"messages": messages}})
    page.reload()  # type: ignore[attr-defined]
    thread = page.locator(".demo-thread", has_text="Where do the chips come from?").first  # type: ignore[attr-defined]
    thread.wait_for()
    assert thread.get_attribute("title") == question.strip()
    assert thread.inner_text().endswith("…")


def _axe(page: object) -> list[dict[str, Any]]:
    page.add_script_tag(path=str(AXE))  # type: ignore[attr-defined]
    result = page.evaluate(  # type: ignore[attr-defined]
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target.join(' '))}))"
    )
    return list(result)


def test_axe_finds_nothing_after_an_answer(browser: object, gateway: str) -> None:
    if not AXE.is_file():
        pytest.fail("axe-core is not installed: npm ci (make test does)", pytrace=False)
    # The page's CSP forbids injected scripts; axe is the test's own.
    context = browser.new_context(viewport={"width": 1200, "height": 900}, bypass_csp=True)  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        page.goto(gateway)
        answer = _ask(page, SPLIT_QUESTION)
        assert answer.locator(".dk-chip-split").count() >= 1  # "· excerpt N" chips are checked
        # A finished search says so: no "…" left after the answer.
        step = page.locator(".demo-step").last
        assert step.inner_text().startswith("Searched the knowledge base"), step.inner_text()
        assert not step.inner_text().endswith("…")
        page.locator("details.demo-tool").last.locator("summary").click()
        toggle = answer.locator(".dk-sources-summary")
        # The disclosure glyph is not part of the button's name.
        name = toggle.evaluate("e => e.computedName ?? null")
        assert name is None or name.startswith("Sources ("), name
        assert toggle.aria_snapshot().strip().startswith('- button "Sources (')
        assert _axe(page) == []
        toggle.click()
        # A preview pinned from the keyboard (its scrolling excerpt is then a tab stop).
        answer.locator("button.dk-chip").first.focus()
        page.keyboard.press("Enter")
        page.locator(".dk-preview .dk-excerpt[tabindex='0']").wait_for()
        assert _axe(page) == []
    finally:
        context.close()
