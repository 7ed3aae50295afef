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


# --- Pieces standing alone: rendered by a host's own Markdown renderer, not under .dk-markdown ---

#: The DOM the components render (CitationChip open with its preview, InertCitation, a closed
#: SourcesPanel), in a host's paragraph with no package container around it.
STANDALONE = (
    '<p class="host">Text <button type="button" class="dk-citation dk-chip dk-n1" data-dk-number="1"'
    ' aria-expanded="false">A source</button><span class="dk-preview" id="p"><span class="dk-meta">'
    '<span class="dk-provider">local</span></span><span class="dk-excerpt">Excerpt.</span></span>'
    ' and <span class="dk-inert dk-unresolved"><bdi class="dk-inert-label">Old memo</bdi>'
    '<span class="dk-inert-reason">evidence not loaded</span></span>'
    ' <a class="dk-web-citation" href="https://example.com">Site</a></p>'
    '<section class="dk-sources"><button class="dk-sources-summary">Sources (1)</button></section>'
)

STYLES = """(selector) => {
  const s = getComputedStyle(document.querySelector(selector));
  return { bg: s.backgroundColor, border: s.borderTopWidth, borderColor: s.borderTopColor,
           color: s.color, radius: s.borderTopLeftRadius };
}"""


def _styles(browser: object, body: str, selector: str, *, scheme: str = "light") -> dict[str, str]:
    context = browser.new_context(color_scheme=scheme)  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        page.set_content(f"<style>{CSS.read_text(encoding='utf-8')}</style>{body}")
        return dict(page.evaluate(STYLES, selector))
    finally:
        context.close()


def _alpha(color: str) -> float:
    """The alpha of a computed ``rgb(…)`` / ``rgba(…)`` color."""
    inner = color[color.index("(") + 1 : color.rindex(")")].replace("/", " ").replace(",", " ")
    parts = inner.split()
    return float(parts[3]) if len(parts) == 4 else 1.0


@pytest.mark.parametrize(
    "selector", [".dk-chip", ".dk-preview", ".dk-inert", ".dk-excerpt"], ids=lambda s: s[1:]
)
def test_a_piece_outside_the_package_containers_has_its_defaults(
    browser: object, selector: str
) -> None:
    styles = _styles(browser, STANDALONE, selector)
    # An opaque background (the preview must hide the text under it) and a visible border.
    assert _alpha(styles["bg"]) == 1.0, styles
    if selector != ".dk-excerpt":
        assert float(styles["border"].removesuffix("px")) >= 1.0, styles
        assert _alpha(styles["borderColor"]) > 0, styles
    if selector == ".dk-chip":
        assert styles["bg"] == LIGHT_CHIP_BG


def test_a_standalone_chip_takes_page_values_and_forced_themes(browser: object) -> None:
    on_root = f"<style>:root {{ --dk-chip-bg: {PAGE_CHIP_BG}; }}</style>{STANDALONE}"
    assert _styles(browser, on_root, ".dk-chip")["bg"] == PAGE_CHIP_BG
    forced = f'<div data-dk-theme="dark">{STANDALONE}</div>'
    assert _styles(browser, forced, ".dk-chip")["bg"] == DARK_CHIP_BG
    assert _styles(browser, STANDALONE, ".dk-chip", scheme="dark")["bg"] == DARK_CHIP_BG
    # The `dark` / `light` class of Tailwind, shadcn/ui and next-themes on an ancestor.
    dark_class = f'<div class="dark">{STANDALONE}</div>'
    assert _styles(browser, dark_class, ".dk-chip")["bg"] == DARK_CHIP_BG
    assert _alpha(_styles(browser, dark_class, ".dk-preview")["bg"]) == 1.0
    light_class = f'<div class="light">{STANDALONE}</div>'
    assert _styles(browser, light_class, ".dk-chip", scheme="dark")["bg"] == LIGHT_CHIP_BG
    forced_over_class = f'<div class="dark"><div data-dk-theme="light">{STANDALONE}</div></div>'
    assert _styles(browser, forced_over_class, ".dk-chip")["bg"] == LIGHT_CHIP_BG


README = ROOT / "README.md"
RECIPE_BEGIN = "<!-- badge recipe: begin -->\n```css\n"
RECIPE_END = "```\n<!-- badge recipe: end -->"
#: shadcn/ui's design tokens as a Tailwind v4 theme defines them (DeerFlow's and assistant-ui's).
SHADCN_TOKENS = """:root { --secondary: rgb(240, 240, 235); --secondary-foreground: rgb(23, 23, 23);
  --popover: rgb(255, 255, 255); --popover-foreground: rgb(10, 10, 10); --border: rgb(229, 229, 229);
  --muted-foreground: rgb(115, 115, 115); --primary: rgb(0, 0, 0); --primary-foreground: rgb(250, 250, 250);
  --muted: rgb(245, 245, 245); --radius: 10px; --ring: rgb(163, 163, 163);
  --foreground: rgb(10, 10, 10); }"""


SHADCN_CSS = ROOT / "frontend" / "src" / "components" / "shadcn.css"


def test_the_packaged_badge_stylesheet_is_the_readme_recipe() -> None:
    # The recipe test below checks the README's text; the package ships it as shadcn.css.
    readme = README.read_text(encoding="utf-8")
    recipe = readme[readme.index(RECIPE_BEGIN) + len(RECIPE_BEGIN) : readme.index(RECIPE_END)]
    sheet = SHADCN_CSS.read_text(encoding="utf-8")
    assert sheet.endswith("*/\n\n" + recipe), "shadcn.css should be a comment, then the recipe"


def test_the_readme_badge_recipe_matches_a_shadcn_badge_without_important(browser: object) -> None:
    readme = README.read_text(encoding="utf-8")
    recipe = readme[readme.index(RECIPE_BEGIN) + len(RECIPE_BEGIN) : readme.index(RECIPE_END)]
    assert "!important" not in recipe and "!important" not in CSS.read_text(encoding="utf-8")
    # The recipe after the package sheet and before it: the page's values win either way.
    for order in ("after", "before"):
        context = browser.new_context()  # type: ignore[attr-defined]
        try:
            page = context.new_page()
            sheet = f"<style>{CSS.read_text(encoding='utf-8')}</style>"
            page_css = f"<style>{SHADCN_TOKENS}\n{recipe}</style>"
            styles = sheet + page_css if order == "after" else page_css + sheet
            page.set_content(f'{styles}<div class="prose">{STANDALONE}</div>')
            chip = page.evaluate(STYLES, ".dk-chip")
            preview = page.evaluate(STYLES, ".dk-preview")
        finally:
            context.close()
        # shadcn's <Badge variant="secondary">: bg-secondary text-secondary-foreground, no visible
        # border, rounded-full; the preview is a popover.
        assert chip["bg"] == "rgb(240, 240, 235)", (order, chip)
        assert chip["color"] == "rgb(23, 23, 23)", (order, chip)
        assert _alpha(chip["borderColor"]) == 0, (order, chip)
        assert preview["bg"] == "rgb(255, 255, 255)", (order, preview)
        assert preview["color"] == "rgb(10, 10, 10)", (order, preview)
