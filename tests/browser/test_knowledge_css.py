"""The stylesheet's theming promise in a real browser (Debian chromium via Playwright): a
``--dk-*`` custom property set on an ancestor or on ``.dk-markdown`` itself wins over the
sheet's default, light and dark follow the color scheme, and ``data-dk-theme`` forces one.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

playwright_sync = pytest.importorskip("playwright.sync_api")

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
CSS = ROOT / "frontend" / "src" / "components" / "knowledge.css"
CHROMIUM = os.environ.get("DEERFLOW_CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")

LIGHT_CHIP_BG = "rgb(238, 242, 255)"  # #eef2ff, the sheet's light default
DARK_CHIP_BG = "rgb(30, 27, 75)"  # #1e1b4b, its dark default
PAGE_CHIP_BG = "rgb(1, 2, 3)"


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).is_file():
        pytest.fail(
            f"no chromium at {CHROMIUM}: apt-get install chromium (make test does)", pytrace=False
        )
    with playwright_sync.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        yield browser
        browser.close()


def _chip_background(browser: object, body: str, *, scheme: str = "light") -> str:
    context = browser.new_context(color_scheme=scheme)  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        page.set_content(f"<style>{CSS.read_text(encoding='utf-8')}</style>{body}")
        return str(page.eval_on_selector(".dk-chip", "e => getComputedStyle(e).backgroundColor"))
    finally:
        context.close()


CHIP = '<div class="dk-markdown"><p>Text <button class="dk-chip">A source</button></p></div>'


def test_defaults_follow_the_color_scheme(browser: object) -> None:
    assert _chip_background(browser, CHIP) == LIGHT_CHIP_BG
    assert _chip_background(browser, CHIP, scheme="dark") == DARK_CHIP_BG


def test_data_dk_theme_forces_a_scheme(browser: object) -> None:
    assert _chip_background(browser, f'<div data-dk-theme="dark">{CHIP}</div>') == DARK_CHIP_BG
    forced_light = f'<div data-dk-theme="light">{CHIP}</div>'
    assert _chip_background(browser, forced_light, scheme="dark") == LIGHT_CHIP_BG


@pytest.mark.parametrize(
    "body",
    [
        f"<style>:root {{ --dk-chip-bg: {PAGE_CHIP_BG}; }}</style>{CHIP}",
        f'<section style="--dk-chip-bg: {PAGE_CHIP_BG}">{CHIP}</section>',
        f"<style>.dk-markdown {{ --dk-chip-bg: {PAGE_CHIP_BG}; }}</style>{CHIP}",
    ],
    ids=["root", "container", "dk-markdown"],
)
def test_a_property_set_by_the_page_wins(browser: object, body: str) -> None:
    assert _chip_background(browser, body) == PAGE_CHIP_BG
    assert _chip_background(browser, body, scheme="dark") == PAGE_CHIP_BG


def test_a_page_value_may_itself_use_light_dark(browser: object) -> None:
    body = f'<div style="--dk-chip-bg: light-dark({PAGE_CHIP_BG}, rgb(4, 5, 6))">{CHIP}</div>'
    assert _chip_background(browser, body) == PAGE_CHIP_BG
    assert _chip_background(browser, body, scheme="dark") == "rgb(4, 5, 6)"


def _chip_number(browser: object, button: str) -> tuple[str, float]:
    """The chip's drawn number (its ``::before`` content) and the badge's width in pixels."""
    context = browser.new_context()  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        page.set_content(
            f'<style>{CSS.read_text(encoding="utf-8")}</style><div class="dk-markdown"><p>{button}</p></div>'
        )
        content, width = page.eval_on_selector(
            ".dk-chip",
            "e => { const s = getComputedStyle(e, '::before'); return [s.content, parseFloat(s.width)]; }",
        )
        return str(content), float(width)
    finally:
        context.close()


@pytest.mark.parametrize("number", [1, 7, 99])
def test_a_numbered_class_draws_its_number_without_attr(browser: object, number: int) -> None:
    # Numbers 1-99 come from a rule per number (Chromium shares no style that reads attr()):
    # the class wins over the attribute (made to differ here, so the check can fail).
    button = f'<button class="dk-citation dk-chip dk-n{number}" data-dk-number="0">A</button>'
    assert _chip_number(browser, button)[0] == f'"{number}"'


def test_a_number_past_the_classes_is_drawn_from_its_attribute(browser: object) -> None:
    by_attribute = _chip_number(
        browser, '<button class="dk-citation dk-chip" data-dk-number="100">A</button>'
    )
    by_class = _chip_number(
        browser, '<button class="dk-citation dk-chip dk-n99" data-dk-number="99">A</button>'
    )
    assert by_attribute[0] == '"100"'
    # The same badge either way: only the digits differ.
    assert by_attribute[1] >= by_class[1] > 0
