"""The npm package as an app installs it: ``npm pack``, then a minimal vite + React app.

The tarball is linted (publint, @arethetypeswrong/cli), then installed into a fresh app in a
temp dir at both ends of the React peer range. Each app must hold exactly one React (the app's:
the package never brings its own), build with ``vite build``, and render the README's TSX example
verbatim in Debian chromium as a working chip whose preview shows the verified excerpt. It is also
installed into a bare node project, whose import of the ``/core`` entry point must resolve no
React, unified, rehype or Markdown-parser module. npm installs prefer the local cache, so only a
cold cache needs the registry.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

playwright_sync = pytest.importorskip("playwright.sync_api")

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
FRONTEND = ROOT / "frontend"
CHROMIUM = os.environ.get("DEERFLOW_CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
#: Both ends of the peer range ``^18.3.1 || ^19.0.0`` (the newest 19.x is the dev copy).
REACT_VERSIONS = ("18.3.1", "19.0.0", "19.3.1")
NPM = ["npm", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"]

MAIN_TSX = """\
import "@deerflow/knowledge-citations/knowledge.css";
import { version } from "react";
import { createRoot } from "react-dom/client";

import { handleFor } from "@deerflow/knowledge-citations/core";

import { Answer } from "./Answer";

document.body.dataset["react"] = version;
document.body.dataset["handle"] = handleFor("0123456789abcdef0123456789abcdef");
createRoot(document.getElementById("root")!).render(<Answer index={2} />);
"""
INDEX_HTML = """\
<!doctype html>
<html lang="en">
  <head><meta charset="utf-8" /><title>consumer</title></head>
  <body><div id="root"></div><script type="module" src="/src/main.tsx"></script></body>
</html>
"""
#: A node loader hook that appends every module URL the ESM loader resolves to a file.
RECORDING_HOOKS = """\
import { appendFileSync } from "node:fs";

let log;
export function initialize(data) {
  log = data.log;
}
export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  appendFileSync(log, resolved.url + "\\n");
  return resolved;
}
"""
RECORDING_REGISTER = """\
import { register } from "node:module";

register("./hooks.mjs", import.meta.url, { data: { log: process.env.RESOLVED_LOG } });
"""
#: Imports one entry point and reads an envelope through it (both entries export the readers).
READ_ENVELOPE = """\
const api = await import(process.argv[2]);
const record = { provider: "local", title: "Deer field guide", excerpt: "Deer eat acorns." };
const id = api.sourceId(record);
const content = `Deer eat acorns. [citation:guide](${api.handleFor(id)})`;
const artifact = { knowledge_sources_version: api.ENVELOPE_VERSION, knowledge_sources: [{ id, ...record }] };
const result = api.readEnvelope(content, artifact);
console.log(JSON.stringify({ ids: result.sources.map((source) => source.id), error: result.error, id }));
"""
#: Packages a reader must never load (React, the unified pipeline, the Markdown parser, trees).
RENDERER_PACKAGE = re.compile(
    r"/node_modules/(react|react-dom|react-markdown|unified|vfile|remark-[^/]*|rehype-[^/]*"
    r"|hast-[^/]*|mdast-[^/]*|micromark[^/]*)/"
)
VITE_CONFIG = """\
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

export default defineConfig({ plugins: [react()] });
"""


def _run(command: list[str], cwd: Path) -> str:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _readme_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Rendering citations") :]
    match = re.search(r"```tsx\n(.*?)```", section, re.DOTALL)
    assert match is not None, "the README's Rendering citations section has no tsx example"
    return match.group(1)


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # `npm pack` runs the package's prepack script, which builds dist/ from a clean state.
    shutil.rmtree(FRONTEND / "dist", ignore_errors=True)
    out = tmp_path_factory.mktemp("pack")
    _run([*NPM, "pack", "--pack-destination", str(out)], FRONTEND)
    (packed,) = out.glob("*.tgz")
    return packed


def test_the_tarball_carries_the_build_readme_and_license(tarball: Path) -> None:
    listing = _run(["tar", "tzf", str(tarball)], FRONTEND).split()
    for name in ("index.js", "index.d.ts", "core.js", "core.d.ts", "knowledge.css"):
        assert f"package/dist/{name}" in listing
    assert "package/README.md" in listing
    assert "package/LICENSE" in listing
    assert not [name for name in listing if name.startswith(("package/src/", "package/test/"))]


#: Prints, per module file given, the directive prologue's strings (TypeScript's own parser).
DIRECTIVES_JS = """\
const ts = require("typescript");
const fs = require("node:fs");
const out = {};
for (const file of process.argv.slice(1)) {
  const source = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.ES2022, false);
  const prologue = [];
  for (const statement of source.statements) {
    if (!ts.isExpressionStatement(statement) || !ts.isStringLiteral(statement.expression)) break;
    prologue.push(statement.expression.text);
  }
  out[file] = prologue;
}
console.log(JSON.stringify(out));
"""


def test_the_react_entry_is_a_client_module_and_core_is_not(tarball: Path, tmp_path: Path) -> None:
    # React Server Components hosts (Next.js) import the React entry across a client boundary:
    # "use client" must survive the build as its first statement. /core stays server-callable.
    _run(["tar", "xzf", str(tarball), "-C", str(tmp_path)], FRONTEND)
    dist = tmp_path / "package" / "dist"
    modules = sorted(str(path) for path in dist.rglob("*.js"))
    prologues = {
        str(Path(name).relative_to(dist)): prologue
        for name, prologue in json.loads(
            _run(["node", "-e", DIRECTIVES_JS, *modules], FRONTEND)
        ).items()
    }
    assert prologues.pop("index.js") == ["use client"]
    assert prologues.pop("core.js") == []
    # Every other module (one per source module: the readers /core shares, the components the
    # React entry re-exports) carries no directive: server code, or reached through index.js.
    assert prologues and all(prologue == [] for prologue in prologues.values()), prologues
    core_imports = re.findall(r'from "\./([^"]+)"', (dist / "core.js").read_text(encoding="utf-8"))
    assert core_imports and set(core_imports) <= set(prologues), core_imports


#: What the glue alone must not pull into a host's bundle: the Markdown parser and citation
#: scanner (the host's renderer finds the links), KnowledgeMarkdown, the Markdown-scanning
#: SourcesPanel, and saved batch evidence (not a thread's).
NOT_GLUE = (
    "citations.js",
    "citationMemo.js",
    "guard.js",
    "summary.js",
    "savedEvidence.js",
    "components/KnowledgeMarkdown.js",
    "components/SourcesPanel.js",
    "components/useCitationLookup.js",
)


def test_a_glue_only_bundle_leaves_out_the_parser_and_the_scanner(
    tarball: Path, tmp_path: Path
) -> None:
    # DeerFlow's patch imports only the glue; its bundler must be able to drop whole modules.
    _run(["tar", "xzf", str(tarball), "-C", str(tmp_path)], FRONTEND)
    package = tmp_path / "package"
    (package / "node_modules").symlink_to(ROOT / "node_modules")
    script = FRONTEND / "scripts" / "bundle-glue.mjs"
    report = json.loads(_run(["node", str(script), str(package)], FRONTEND))
    modules = {name.removeprefix("dist/") for name in report["modules"]}
    assert {"components/KnowledgeLink.js", "components/CitationChip.js", "envelope.js"} <= modules
    assert not modules & set(NOT_GLUE), sorted(modules & set(NOT_GLUE))
    # No package of the Markdown pipeline is even imported: only React.
    assert set(report["externals"]) <= {"react", "react/jsx-runtime"}, report["externals"]


def test_the_pure_marks_survive_the_build(tarball: Path, tmp_path: Path) -> None:
    # A top-level memo(...) without the mark is a call a bundler must keep, and with it the
    # whole module it renders (KnowledgeMarkdown's pipeline, the scanner SourcesPanel needs).
    _run(["tar", "xzf", str(tarball), "-C", str(tmp_path)], FRONTEND)
    components = tmp_path / "package" / "dist" / "components"
    for name in ("KnowledgeMarkdown.js", "SourcesPanel.js", "PanelView.js"):
        text = (components / name).read_text(encoding="utf-8")
        assert re.search(r"= /\* @__PURE__ \*/ memo\(", text), name
    for path in components.glob("*.js"):
        text = path.read_text(encoding="utf-8")
        unmarked = re.findall(
            r"^(?:export )?(?:var|const|let) \w+ = (?:memo|forwardRef)\(", text, re.M
        )
        assert not unmarked, (path.name, unmarked)


#: Rule selectors of the sheet's KnowledgeMarkdown / WebCitation part, and of the glue's pieces.
RENDERER_RULES = (".dk-markdown {", ".dk-web-citation {", ".dk-pending {", ".dk-plain-text {")
GLUE_RULES = (".dk-chip {", ".dk-inert {", ".dk-preview {", ".dk-sources {", ".dk-sources a {")


def test_the_glue_stylesheet_is_the_sheet_without_the_renderer_rules(
    tarball: Path, tmp_path: Path
) -> None:
    _run(["tar", "xzf", str(tarball), "-C", str(tmp_path)], FRONTEND)
    dist = tmp_path / "package" / "dist"
    whole = (dist / "knowledge.css").read_text(encoding="utf-8")
    glue = (dist / "citations.css").read_text(encoding="utf-8")
    assert all(rule in whole for rule in RENDERER_RULES + GLUE_RULES)
    assert all(rule in glue for rule in GLUE_RULES)
    assert not [rule for rule in RENDERER_RULES if rule in glue]
    assert len(glue) < len(whole)
    shadcn = (dist / "shadcn.css").read_text(encoding="utf-8")
    assert shadcn == (FRONTEND / "src" / "components" / "shadcn.css").read_text(encoding="utf-8")
    exports = json.loads((tmp_path / "package" / "package.json").read_text(encoding="utf-8"))
    assert exports["exports"]["./citations.css"] == "./dist/citations.css"
    assert exports["exports"]["./shadcn.css"] == "./dist/shadcn.css"


def test_publint_and_are_the_types_wrong_are_clean(tarball: Path) -> None:
    _run(["npx", "--no-install", "publint", "run", str(tarball), "--strict"], FRONTEND)
    # ESM-only on purpose (no CommonJS build); the stylesheet entry point is not a module.
    _run(
        [
            "npx",
            "--no-install",
            "attw",
            str(tarball),
            "--profile",
            "esm-only",
            "--exclude-entrypoints",
            "./knowledge.css",
            "./citations.css",
            "./shadcn.css",
        ],
        FRONTEND,
    )


def _resolved_packages(app: Path, entry: str, log: Path) -> tuple[dict[str, Any], set[str]]:
    """What reading an envelope through ``entry`` printed, and the renderer packages it loaded."""
    log.write_text("", encoding="utf-8")
    result = subprocess.run(
        ["node", "--import", "./register.mjs", "read.mjs", entry],
        cwd=app,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "RESOLVED_LOG": str(log)},
    )
    assert result.returncode == 0, (
        f"node read.mjs {entry} failed:\n{result.stdout}\n{result.stderr}"
    )
    urls = log.read_text(encoding="utf-8").split()
    assert any("/node_modules/@deerflow/knowledge-citations/dist/" in url for url in urls), urls
    loaded = {match.group(1) for url in urls if (match := RENDERER_PACKAGE.search(url))}
    return json.loads(result.stdout), loaded


def test_the_core_entry_point_loads_no_renderer_in_node(tarball: Path, tmp_path: Path) -> None:
    app = {
        "name": "reader",
        "private": True,
        "type": "module",
        "dependencies": {"@deerflow/knowledge-citations": f"file:{tarball}"},
    }
    (tmp_path / "package.json").write_text(json.dumps(app, indent=2), encoding="utf-8")
    (tmp_path / "hooks.mjs").write_text(RECORDING_HOOKS, encoding="utf-8")
    (tmp_path / "register.mjs").write_text(RECORDING_REGISTER, encoding="utf-8")
    (tmp_path / "read.mjs").write_text(READ_ENVELOPE, encoding="utf-8")
    _run([*NPM, "install"], tmp_path)
    # npm installs the React peer too: the core entry point must leave it (and the rest) unloaded.
    assert (tmp_path / "node_modules/react").is_dir()
    log = tmp_path / "resolved.txt"

    read, loaded = _resolved_packages(tmp_path, "@deerflow/knowledge-citations/core", log)
    assert read["ids"] == [read["id"]] and read["error"] is None
    assert loaded == set()

    # The same recording sees the renderer when the main entry point is imported.
    read, loaded = _resolved_packages(tmp_path, "@deerflow/knowledge-citations", log)
    assert read["ids"] == [read["id"]] and read["error"] is None
    assert {"react", "unified", "rehype-sanitize", "mdast-util-from-markdown"} <= loaded


def _react_versions(tree: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    for name, node in (tree.get("dependencies") or {}).items():
        if name == "react" and "version" in node:
            found.add(node["version"])
        found |= _react_versions(node)
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"no chromium at {CHROMIUM}: apt-get install chromium", pytrace=False)
    with playwright_sync.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        yield browser
        browser.close()


@contextmanager
def _serving(folder: Path) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.mark.parametrize("react", REACT_VERSIONS)
def test_a_vite_react_app_renders_the_readme_example(
    react: str, tarball: Path, browser: Any, tmp_path: Path
) -> None:
    dev = json.loads((FRONTEND / "package.json").read_text(encoding="utf-8"))["devDependencies"]
    app = {
        "name": "consumer",
        "private": True,
        "type": "module",
        "dependencies": {
            "@deerflow/knowledge-citations": f"file:{tarball}",
            "react": react,
            "react-dom": react,
        },
        "devDependencies": {name: dev[name] for name in ("vite", "@vitejs/plugin-react")},
    }
    (tmp_path / "package.json").write_text(json.dumps(app, indent=2), encoding="utf-8")
    (tmp_path / "index.html").write_text(INDEX_HTML, encoding="utf-8")
    (tmp_path / "vite.config.js").write_text(VITE_CONFIG, encoding="utf-8")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.tsx").write_text(MAIN_TSX, encoding="utf-8")
    (tmp_path / "src" / "Answer.tsx").write_text(_readme_example(), encoding="utf-8")

    _run([*NPM, "install"], tmp_path)
    tree = json.loads(_run(["npm", "ls", "react", "--all", "--json"], tmp_path))
    assert _react_versions(tree) == {react}  # one React: the app's
    assert not (tmp_path / "node_modules/@deerflow/knowledge-citations/node_modules/react").exists()
    _run(["npx", "--no-install", "vite", "build", "--logLevel", "error"], tmp_path)

    with _serving(tmp_path / "dist") as base:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(base)
        chip = page.get_by_role("button", name="Source 1: Deer field guide")
        chip.wait_for(timeout=15_000)
        assert page.evaluate("document.body.dataset.react") == react
        handle = "#knowledge-source-0123456789abcdef0123456789abcdef"
        assert page.evaluate("document.body.dataset.handle") == handle
        described = "document.getElementById(document.querySelector('.dk-chip')"
        described += ".getAttribute('aria-describedby'))"
        # Closed, the chip is described by a short visually hidden text; the preview (with the
        # excerpt) mounts only once it is opened.
        assert "Deer eat acorns" not in page.evaluate(f"{described}.textContent")
        assert page.locator(".dk-preview").count() == 0
        chip.click()
        assert chip.get_attribute("aria-expanded") == "true"
        assert page.evaluate(f"{described}.hidden") is False
        assert "Deer eat acorns in autumn." in page.evaluate(f"{described}.innerText")
        assert page.get_by_role("region", name="Sources").is_visible()
        assert errors == []
        page.close()
