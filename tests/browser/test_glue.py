"""The renderer-agnostic glue in real Chromium under three real Markdown renderers.

The page (tests/browser/glue/) is built once with ``vite build`` from the workspace's
react-markdown, streamdown 2.5 (DeerFlow's renderer) and ``@assistant-ui/react-markdown``, and
renders one LangChain thread under each, in React StrictMode: ``KnowledgeSources`` over the thread,
``KnowledgeMessage`` around the answer, ``KnowledgeLink`` as the renderer's ``a`` with the host's
own link as fallback, ``KnowledgeSourcesPanel`` after it. A fourth section streams the answer into
streamdown configured as DeerFlow streams (remark-gfm, no sanitizer, word animation,
incomplete-Markdown repair). One Debian chromium (no downloaded browser) drives it.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

playwright_sync = pytest.importorskip("playwright.sync_api")

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
APP = Path(__file__).resolve().parent / "glue"
CHROMIUM = os.environ.get("DEERFLOW_CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run"]
RENDERERS = ("react-markdown", "streamdown", "assistant-ui")
CHIPS = [
    "Source 1: Employee handbook",
    "Source 2: Travel policy",
    "Source 1: Employee handbook",
    "Source 3: Benefits_2026.pdf",
]
INERT = [
    ("evidence_not_loaded", "Old memo"),
    ("bad_source_id", "Broken"),
    ("evidence_not_loaded", "Refund policy"),  # the stripped (forged) evidence
]
HOST = [("host-badge", "Example News"), ("host-link", "the docs")]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not (ROOT / "node_modules" / "streamdown").is_dir():
        pytest.fail("node_modules is not installed: run `npm ci`", pytrace=False)
    out = tmp_path_factory.mktemp("glue")
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
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


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
def page(browser: Any, app_url: str) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.on("console", lambda m: m.type == "error" and page.errors.append(m.text))
    page.goto(app_url)
    for renderer in RENDERERS:
        page.locator(f"section[data-renderer='{renderer}'] .dk-sources").wait_for()
    yield page
    context.close()


def _section(page: Any, renderer: str) -> Any:
    return page.locator(f"section[data-renderer='{renderer}']")


def _chips(section: Any) -> list[str]:
    return list(section.locator(".dk-chip").evaluate_all("e => e.map(c => c.ariaLabel)"))


def _inert(section: Any) -> list[tuple[str, str]]:
    found = section.locator(".dk-inert").evaluate_all(
        "e => e.map(x => [x.dataset.dkReason, x.querySelector('.dk-inert-label').textContent])"
    )
    return [(reason, label) for reason, label in found]


def _alpha(color: str) -> float:
    inner = color[color.index("(") + 1 : color.rindex(")")].replace("/", " ").replace(",", " ")
    parts = inner.split()
    return float(parts[3]) if len(parts) == 4 else 1.0


def test_the_readme_shows_the_streamdown_example_verbatim() -> None:
    source = (APP / "StreamdownThread.tsx").read_text(encoding="utf-8")
    begin = "// --- README streamdown example: begin ---\n"
    end = "// --- README streamdown example: end ---"
    example = source[source.index(begin) + len(begin) : source.index(end)]
    assert "```tsx\n" + example + "```" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("renderer", RENDERERS)
def test_chips_inert_labels_and_the_host_s_own_links(page: Any, renderer: str) -> None:
    section = _section(page, renderer)
    assert _chips(section) == CHIPS
    # A chip shows the verified title, never the model's link text.
    texts = section.locator(".dk-chip").all_inner_texts()
    assert texts[0].endswith("Employee handbook") and "HB label" not in section.inner_text()
    assert _inert(section) == INERT
    host = section.locator(".host-badge, .host-link").evaluate_all(
        "e => e.map(x => [x.className, x.textContent])"
    )
    assert [tuple(pair) for pair in host] == HOST
    assert "[citation:" not in section.inner_text()
    panel = section.get_by_role("region", name="Sources")
    titles = panel.locator(".dk-source .dk-title").all_inner_texts()
    assert titles == ["Employee handbook", "Travel policy", "Benefits_2026.pdf"]
    assert "2 cited sources: evidence not loaded" in panel.inner_text()
    assert "1 malformed citation" in panel.inner_text()
    assert page.errors == []


@pytest.mark.parametrize("renderer", RENDERERS)
def test_a_chip_s_preview_shows_the_verified_evidence_only(page: Any, renderer: str) -> None:
    section = _section(page, renderer)
    expected = {
        0: ("lightrag", "Refunds are paid within 14 days", "Page 12", "Dataset"),
        1: ("lightrag", "Economy class for flights", "Dataset: Policies", "Page"),
        3: ("ragflow", "Dental care is covered", "Page 4", "Open source"),
    }
    for index, (provider, excerpt, locator, absent) in expected.items():
        chip = section.locator(".dk-chip").nth(index)
        chip.click()
        assert chip.get_attribute("aria-expanded") == "true"
        preview = page.locator(f"#{chip.get_attribute('aria-describedby')}")
        assert preview.is_visible()
        text = preview.inner_text()
        assert provider in text.lower() and excerpt in text and locator in text, text
        assert absent not in text, text
        chip.press("Escape")
    policy = section.locator(".dk-chip").nth(1)
    policy.click()
    link = page.locator(f"#{policy.get_attribute('aria-describedby')} a.dk-source-link")
    assert link.get_attribute("href") == "https://intranet.example/travel"
    assert page.errors == []


@pytest.mark.parametrize("renderer", RENDERERS)
def test_the_pieces_are_styled_outside_the_package_containers(page: Any, renderer: str) -> None:
    section = _section(page, renderer)
    chip = section.locator(".dk-chip").first
    assert chip.evaluate("c => c.closest('.dk-markdown') === null")
    style = chip.evaluate(
        "c => { const s = getComputedStyle(c); return [s.backgroundColor, s.borderTopWidth, s.borderTopStyle]; }"
    )
    assert _alpha(style[0]) == 1.0 and style[1] == "1px" and style[2] == "solid", style
    chip.hover()
    preview = page.locator(f"#{chip.get_attribute('aria-describedby')}")
    background = preview.evaluate("p => getComputedStyle(p).backgroundColor")
    assert _alpha(background) == 1.0, background
    # The preview covers the text under it: what is painted at its centre is the preview.
    covered = preview.evaluate(
        """p => { const r = p.getBoundingClientRect();
                  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
                  return p.contains(hit); }"""
    )
    assert covered
    inert = section.locator(".dk-inert").first
    inert_style = inert.evaluate(
        "e => [getComputedStyle(e).backgroundColor, getComputedStyle(e).borderTopStyle]"
    )
    assert _alpha(inert_style[0]) == 1.0 and inert_style[1] == "dashed", inert_style


def test_numbers_hold_while_deerflow_s_streamdown_streams(page: Any) -> None:
    section = _section(page, "streamdown-streaming")
    steps = int(page.evaluate("window.dkGlue.steps"))
    numbers: dict[str, str] = {}
    reasons_seen: set[tuple[str, str]] = set()
    for step in range(1, steps):
        page.evaluate("window.dkGlue.step()")
        page.wait_for_function(
            "(step) => document.querySelector('[data-renderer=streamdown-streaming] output')"
            ".dataset.step === String(step)",
            arg=step,
        )
        for label in _chips(section):
            name, title = label.split(": ", 1)
            # A source keeps its number from the moment its chip appears.
            assert numbers.setdefault(title, name) == name, (step, label, numbers)
        reasons_seen.update(_inert(section))
    page.wait_for_function(
        "() => document.querySelector('[data-renderer=streamdown-streaming] output')"
        ".dataset.done === 'true'"
    )
    section.locator(".dk-sources").wait_for()
    assert _chips(section) == CHIPS
    assert _inert(section) == INERT
    # While streaming, no knowledge link was ever shown as something it is not.
    assert reasons_seen <= set(INERT), reasons_seen
    panel = section.get_by_role("region", name="Sources")
    assert panel.locator(".dk-source .dk-title").all_inner_texts() == [
        "Employee handbook",
        "Travel policy",
        "Benefits_2026.pdf",
    ]
    assert page.errors == []
