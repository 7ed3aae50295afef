"""assistant-ui as a second real client: its LangGraph runtime against a real gateway process.

The app (tests/browser/assistant_ui/) is built once with ``vite build`` from the workspace's
``@assistant-ui/react`` and ``@assistant-ui/react-langgraph`` and served from its own origin,
which the gateway allows with ``--cors-origin`` (as a Vite dev server would be). The gateway's
LightRAG provider searches the gated upstream (tests/gated_upstream.py): its answers are the
bundled corpus's, so the offline responder cites as usual, and a test that holds the gate has a
run provably in progress to cancel. One Debian chromium (no downloaded browser) drives the app.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gated_upstream import GatedLightRAG, gated_lightrag
from tests.gateway_process import gateway_process

playwright_sync = pytest.importorskip("playwright.sync_api")

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
APP = Path(__file__).resolve().parent / "assistant_ui"
CHROMIUM = os.environ.get("DEERFLOW_CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
QUESTION = "How does a reader verify the evidence behind a citation?"
SECOND_QUESTION = "What is a native RAGFlow id?"
ANSWER_TIMEOUT_MS = 30_000
README_END = "// --- README assistant-ui example: end ---"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not (ROOT / "node_modules" / "@assistant-ui" / "react-langgraph").is_dir():
        pytest.fail("node_modules is not installed: run `npm ci`", pytrace=False)
    out = tmp_path_factory.mktemp("assistant-ui")
    build = ["npx", "--no-install", "vite", "build", "-c", str(APP / "vite.config.ts")]
    result = subprocess.run(
        [*build, "--outDir", str(out), "--logLevel", "error"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"vite build failed:\n{result.stdout}\n{result.stderr}"
    handler = functools.partial(_QuietHandler, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def upstream() -> Iterator[GatedLightRAG]:
    with gated_lightrag() as gated:
        yield gated


@pytest.fixture(scope="module")
def gateway(
    app_url: str, upstream: GatedLightRAG, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    work = tmp_path_factory.mktemp("gateway")
    provider = ("--provider", "lightrag", "--base-url", upstream.url)
    with gateway_process(
        None, str(work / "threads.sqlite"), work, *provider, "--cors-origin", app_url
    ) as base:
        yield base + "api"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"no chromium at {CHROMIUM}: apt-get install chromium", pytrace=False)
    with playwright_sync.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any, app_url: str, gateway: str) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    # Every call the runtime makes is one the gateway serves: no 4xx/5xx along the way.
    page.on(
        "response",
        lambda response: (
            response.status >= 400
            and page.errors.append(f"{response.status} {response.request.method} {response.url}")
        ),
    )
    page.goto(f"{app_url}/?api={gateway}")
    page.get_by_label("Your question").wait_for()
    yield page
    context.close()


def _get(gateway: str, path: str) -> Any:
    with urllib.request.urlopen(f"{gateway}/{path}", timeout=30) as response:
        return json.loads(response.read())


def _ask(page: Any, question: str) -> None:
    page.get_by_label("Your question").fill(question)
    page.get_by_role("button", name="Send").click()


def _wait_for_answers(page: Any, count: int) -> Any:
    """The ``count``-th answer, once it is complete (its sources panel shown, the run over)."""
    page.wait_for_function(
        """(count) => {
          const answers = document.querySelectorAll('.msg--ai');
          return answers.length === count && answers[count - 1].querySelector('.dk-sources')
            && !document.querySelector('.msg--ai[data-status=running]')
            && [...document.querySelectorAll('button')].some((b) => b.textContent === 'Send');
        }""",
        arg=count,
        timeout=ANSWER_TIMEOUT_MS,
    )
    return page.locator(".msg--ai").nth(count - 1)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def _thread_id(page: Any) -> str:
    page.wait_for_function("() => new URL(location.href).searchParams.get('thread')")
    return str(page.evaluate("new URL(location.href).searchParams.get('thread')"))


def _verified_chips(answer: Any) -> list[str]:
    chips = answer.locator(".dk-chip")
    assert chips.count() > 0, answer.inner_text()
    labels = [str(chips.nth(n).get_attribute("aria-label")) for n in range(chips.count())]
    # A verified chip names its source; an unverified citation is an inert label, never a chip.
    assert all(label.startswith("Source ") for label in labels), labels
    assert answer.locator(".dk-inert").count() == 0
    return labels


def test_the_readme_shows_the_example_verbatim() -> None:
    source = (APP / "KnowledgeChat.tsx").read_text(encoding="utf-8")
    begin = "// --- README assistant-ui example: begin ---\n"
    example = source[source.index(begin) + len(begin) : source.index(README_END)]
    assert "```tsx\n" + example + "```" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_a_streamed_answer_carries_verified_chips(page: Any, gateway: str) -> None:
    _ask(page, QUESTION)
    answer = _wait_for_answers(page, 1)
    labels = _verified_chips(answer)
    assert "[citation:" not in answer.inner_text()
    chip = answer.locator(".dk-chip").first
    chip.click()
    assert chip.get_attribute("aria-expanded") == "true"
    source = str(chip.get_attribute("data-dk-source-id"))
    assert page.locator(f".dk-preview[data-dk-source-id='{source}']").is_visible()
    # The evidence the chip verified is the gateway's: the thread's tool message carries it.
    state = _get(gateway, f"threads/{_thread_id(page)}/state")
    artifacts = [m.get("artifact") for m in state["values"]["messages"] if m["type"] == "tool"]
    assert source in json.dumps(artifacts)
    assert len(set(labels)) == len(labels)
    assert page.errors == []


def test_reopening_a_thread_and_the_thread_list(page: Any, app_url: str, gateway: str) -> None:
    _ask(page, QUESTION)
    first = _verified_chips(_wait_for_answers(page, 1))
    thread_id = _thread_id(page)

    # A new chat, then the first thread again from the list (titled by its question).
    page.get_by_text("New chat", exact=True).first.click()
    page.wait_for_function("() => !document.querySelector('.msg--ai')")
    item = page.locator(".thread-trigger", has_text=QUESTION[:30]).first
    item.wait_for(timeout=ANSWER_TIMEOUT_MS)
    item.click()
    assert _verified_chips(_wait_for_answers(page, 1)) == first

    # A fresh page on ?thread= loads the thread from the gateway (threads.getState).
    page.goto(f"{app_url}/?api={gateway}&thread={thread_id}")
    assert _verified_chips(_wait_for_answers(page, 1)) == first
    # The list is the gateway's threads.search: both threads, the reopened one among them.
    page.locator(".thread-trigger").nth(1).wait_for(timeout=ANSWER_TIMEOUT_MS)
    assert page.locator(".thread-trigger", has_text=QUESTION[:30]).count() >= 1
    assert page.errors == []


def test_a_second_message_in_the_same_thread(page: Any, gateway: str) -> None:
    _ask(page, QUESTION)
    _wait_for_answers(page, 1)
    thread_id = _thread_id(page)
    _ask(page, SECOND_QUESTION)
    second = _wait_for_answers(page, 2)
    _verified_chips(second)
    assert _thread_id(page) == thread_id
    state = _get(gateway, f"threads/{thread_id}/state")
    humans = [_text(m["content"]) for m in state["values"]["messages"] if m["type"] == "human"]
    assert humans == [QUESTION, SECOND_QUESTION]
    assert page.errors == []


def test_cancel_stops_the_run_on_the_gateway(
    page: Any, gateway: str, upstream: GatedLightRAG
) -> None:
    upstream.hold()
    try:
        _ask(page, QUESTION)
        upstream.wait_for_queries(1)  # the run is in progress, held at its knowledge search
        thread_id = _thread_id(page)
        page.get_by_role("button", name="Stop").click()
        page.get_by_role("button", name="Send").wait_for(timeout=ANSWER_TIMEOUT_MS)
    finally:
        upstream.release()
    page.wait_for_function(
        """async ([api, id]) => {
          const runs = await (await fetch(`${api}/threads/${id}/runs`)).json();
          return runs.length === 1 && runs[0].status === 'interrupted';
        }""",
        arg=[gateway, thread_id],
        timeout=ANSWER_TIMEOUT_MS,
    )
    assert _get(gateway, f"threads/{thread_id}")["status"] == "idle"
    # The thread still answers: the cancelled run left nothing stuck.
    before = page.locator(".msg--ai").count()
    _ask(page, SECOND_QUESTION)
    _verified_chips(_wait_for_answers(page, before + 1))
    assert page.errors == []
