"""DeerFlow's own UI with the package's chips vs without: what the patch adds to DeerFlow's chat
route (JS and CSS, gzip) and the first render of one long thread (our chips / DeerFlow's own
citation badges, Chromium CPU time, medians).

Both copies of DeerFlow's frontend come from the snapshot (``DEERFLOW_FRONTEND_SNAPSHOT``) and are
built with ``next build`` the way the DeerFlow UI test builds them (tests/integration/deerflow/
frontend_env.py; the patched copy is the test's own build when it is cached under ``build/``).
Both are served with ``next start`` in front of one DeerFlow gateway (``DEERFLOW_SNAPSHOT``, the
package installed, the trust-boundary wrapper, the scripted model), which holds one thread of
TURNS runs: each a question, a ``knowledge_search`` call, its result and an answer citing
CITATIONS_PER_ANSWER times (4 * TURNS messages, TURNS * CITATIONS_PER_ANSWER citations).

Bundle: the JS and CSS files the chat route's HTML names (DeerFlow's own
scripts/measure-route-assets.mjs reads the same), each gzip-compressed (level 9), summed per build;
the patch's cost is the difference (and the chunk that holds the package is named).

First render: one Chromium process; ROUNDS rounds, each opening the thread in a fresh page of
each build in turn (alternating which goes first) and reading the main thread's CPU time
(``Performance.getMetrics`` TaskDuration) once the last answer's citations are drawn and the
page is quiet, and how many citations the page then holds; the same for an empty thread.

Equal work: DeerFlow's message list is virtual (it draws the groups in view, plus a few), and a
chip, its panel and a badge differ in height, and the list settles on how many to draw as it
measures them, so the two builds may draw different numbers of the same answers (measured in a
30,000 px window: 525 badges vs 336 chips while our sources panel started open; 525 or 1,050
badges vs 525 or 945 chips with it closed, as DeerFlow's own panel is). Every answer is the same
text with the same CITATIONS_PER_ANSWER citations, so the work each build does for the thread is
normalised per drawn citation: (thread - empty thread) / citations drawn, in the same round, and
the ratio of the medians of that, patched / unpatched, is the last line (target <= 1.0). The
unnormalised ratio is printed too.
"""

from __future__ import annotations

import gzip
import re
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.integration.deerflow import deerflow_env, frontend_env
from tests.integration.deerflow.browser import chromium
from tests.integration.deerflow.gateway import Gateway
from tests.integration.deerflow.runs import run_body, user
from tests.integration.deerflow.stack import backend_stack
from tests.integration.deerflow.stub_model import CITATION_LINK, Script

TURNS = 50
CITATIONS_PER_ANSWER = 21
ROUNDS = 7
TRIGGER = "Tide survey"
GZIP_LEVEL = 9
QUIET_MS = 1000
#: DeerFlow's message list is virtual: it draws what fits. A tall window draws many answers in
#: both builds (hundreds of citations), and the work is normalised per drawn citation.
VIEWPORT_HEIGHT = 30_000
RENDER_TIMEOUT_MS = 120_000
ASSET = re.compile(r"""(?:src|href)=["'](/_next/static/[^"'?]+\.(?:js|css))""")


def long_answer(tool_text: str) -> str:
    """An answer citing every source of the result, round-robin, CITATIONS_PER_ANSWER times."""
    links = [m.group(0) for m in CITATION_LINK.finditer(tool_text)]
    assert links, f"knowledge_search returned no citation link: {tool_text[:300]}"
    sentences = [
        f"Finding {n + 1} of the survey is recorded {links[n % len(links)]}."
        for n in range(CITATIONS_PER_ANSWER)
    ]
    return " ".join(sentences) + " End of survey."


def seed_thread(gateway: Gateway, turns: int) -> str:
    thread_id = gateway.new_thread()
    for n in range(turns):
        body = run_body([user(f"{TRIGGER} {n + 1}: where does the high water reach the bell?")])
        gateway.post(f"/api/threads/{thread_id}/runs/wait", body)
    return thread_id


def route_assets(base: str, route: str, build: frontend_env.FrontendBuild) -> dict[str, int]:
    """Every JS and CSS file the route's HTML names, with its gzip size."""
    with urllib.request.urlopen(base + route, timeout=60) as response:
        html = response.read().decode()
    sizes = {}
    for path in dict.fromkeys(ASSET.findall(html)):
        data = (
            build.frontend / ".next" / "static" / path.removeprefix("/_next/static/")
        ).read_bytes()
        sizes[path] = len(gzip.compress(data, GZIP_LEVEL))
    return sizes


def kind_total(sizes: dict[str, int], suffix: str) -> int:
    return sum(size for path, size in sizes.items() if path.endswith(suffix))


#: The main thread's time split, from the same DevTools metrics (script, style, layout).
PARTS = ("ScriptDuration", "RecalcStyleDuration", "LayoutDuration")


def render_cpu(
    browser: Any, base: str, thread_id: str, selector: str, expected: int
) -> tuple[dict[str, float], int]:
    """Main-thread CPU seconds (``TaskDuration``, and the PARTS of it) from opening the thread
    until ``expected`` elements match ``selector`` (at least) and the page has been quiet for
    QUIET_MS; and how many match then (DeerFlow's list is virtual: it draws the messages in view,
    not the whole thread)."""
    context = browser.new_context(viewport={"width": 1280, "height": VIEWPORT_HEIGHT})
    try:
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable", {"timeDomain": "threadTicks"})
        page.goto(f"{base}/workspace/chats/{thread_id}")
        if expected:
            page.wait_for_function(
                "([s, n]) => document.querySelectorAll(s).length >= n",
                arg=[selector, expected],
                timeout=RENDER_TIMEOUT_MS,
            )
        else:
            page.get_by_placeholder(re.compile("how can i assist", re.I)).wait_for(
                timeout=RENDER_TIMEOUT_MS
            )
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(QUIET_MS)
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        drawn = int(page.evaluate("(s) => document.querySelectorAll(s).length", selector))
        return {name: float(metrics[name]) for name in ("TaskDuration", *PARTS)}, drawn
    finally:
        context.close()


def main() -> int:
    backend, ui = deerflow_env.snapshot(), frontend_env.frontend_snapshot()
    python = deerflow_env.python312()
    if backend is None or ui is None or python is None:
        print(
            "bench_deerflow_ui: skipped: set DEERFLOW_SNAPSHOT and DEERFLOW_FRONTEND_SNAPSHOT "
            "(and have a Python 3.12) to measure DeerFlow's UI"
        )
        return 0
    work = Path(tempfile.mkdtemp(prefix="bench-deerflow-ui-"))
    # DeerFlow itself (the unpatched build) changes least often: reuse its build first.
    port = frontend_env.gateway_port_for(ui, frontend_env.UNPATCHED, frontend_env.PATCHED)
    url = f"http://127.0.0.1:{port}"
    log = work / "frontend.log"
    started = time.monotonic()
    package = frontend_env.pack_package(work / "npm", log)
    builds = {
        variant: frontend_env.prepare(ui, variant, url, log, package_tarball=package)
        for variant in (frontend_env.UNPATCHED, frontend_env.PATCHED)
    }
    for variant, build in builds.items():
        state = "cached" if build.cached else "built"
        steps = ", ".join(f"{k} {v:.0f} s" for k, v in build.seconds.items())
        print(f"{variant}: {state} ({steps})")
    print(f"frontends ready in {time.monotonic() - started:.0f} s")
    stats = frontend_env.patch_stats(frontend_env.PATCH.read_text(encoding="utf-8"))
    print(f"patch: {stats.changed} lines changed in {len(stats.files)} DeerFlow files")

    with backend_stack(backend, python, work, port) as stack:
        stack.model.scripts = (Script(TRIGGER, long_answer),)
        started = time.monotonic()
        thread_id = seed_thread(stack.gateway, TURNS)
        empty_id = stack.gateway.new_thread()
        print(f"seeded {TURNS} runs ({4 * TURNS} messages) in {time.monotonic() - started:.0f} s")
        with (
            frontend_env.next_start(builds[frontend_env.UNPATCHED], work / "next-u.log") as plain,
            frontend_env.next_start(builds[frontend_env.PATCHED], work / "next-p.log") as ours,
        ):
            route = f"/workspace/chats/{thread_id}"
            before = route_assets(plain, route, builds[frontend_env.UNPATCHED])
            after = route_assets(ours, route, builds[frontend_env.PATCHED])
            for kind in (".js", ".css"):
                b, a = kind_total(before, kind), kind_total(after, kind)
                print(f"chat route {kind[1:]} gzip: {b / 1024:.1f} kB -> {a / 1024:.1f} kB "
                      f"(+{(a - b) / 1024:.1f} kB)")  # fmt: skip
            # Chunk names are content hashes (every one changes), so name only the chunks that
            # hold the package: those with its chip class.
            dot_next = builds[frontend_env.PATCHED].frontend / ".next"
            for path in after:
                if (
                    path.endswith(".js")
                    and b"dk-chip" in (dot_next / path.removeprefix("/_next/")).read_bytes()
                ):
                    print(f"  the package's code is in {path} ({after[path] / 1024:.1f} kB gzip)")
            sides = {
                frontend_env.UNPATCHED: (plain, "a[href] [data-slot='badge']"),
                frontend_env.PATCHED: (ours, "button.dk-chip"),
            }
            times: dict[str, list[float]] = {name: [] for name in sides}
            drawn: dict[str, list[int]] = {name: [] for name in sides}
            empty: dict[str, list[float]] = {name: [] for name in sides}
            per_citation: dict[str, list[float]] = {name: [] for name in sides}
            parts: dict[str, dict[str, list[float]]] = {
                name: {part: [] for part in PARTS} for name in sides
            }
            with chromium() as browser:
                for base, selector in sides.values():  # warm-up: caches, JIT
                    render_cpu(browser, base, thread_id, selector, CITATIONS_PER_ANSWER)
                for n in range(ROUNDS):
                    order = list(sides) if n % 2 == 0 else list(reversed(sides))
                    for name in order:
                        base, selector = sides[name]
                        cpu, count = render_cpu(
                            browser, base, thread_id, selector, CITATIONS_PER_ANSWER
                        )
                        idle = render_cpu(browser, base, empty_id, selector, 0)[0]
                        times[name].append(cpu["TaskDuration"])
                        drawn[name].append(count)
                        empty[name].append(idle["TaskDuration"])
                        per_citation[name].append(
                            (cpu["TaskDuration"] - idle["TaskDuration"]) / max(count, 1)
                        )
                        for part in PARTS:
                            parts[name][part].append((cpu[part] - idle[part]) / max(count, 1))
    med = {name: statistics.median(values) for name, values in times.items()}
    med_empty = {name: statistics.median(values) for name, values in empty.items()}
    med_cite = {name: statistics.median(values) for name, values in per_citation.items()}
    for name in sides:
        print(
            f"{name}: first render of the thread {med[name] * 1000:.0f} ms CPU, "
            f"empty thread {med_empty[name] * 1000:.0f} ms (medians of {ROUNDS}); "
            f"citations drawn: {sorted(set(drawn[name]))}; "
            f"per drawn citation {med_cite[name] * 1000:.2f} ms ("
            + ", ".join(
                f"{part.removesuffix('Duration').lower()} "
                f"{statistics.median(parts[name][part]) * 1000:.2f}"
                for part in PARTS
            )
            + ")"
        )
    ratio = med[frontend_env.PATCHED] / med[frontend_env.UNPATCHED]
    print(f"first render of the thread, not normalised (the builds draw different numbers of "
          f"citations), chips / badges: {ratio:.2f}")  # fmt: skip
    per = med_cite[frontend_env.PATCHED] / med_cite[frontend_env.UNPATCHED]
    print(f"first render of the thread ({4 * TURNS} messages, {TURNS * CITATIONS_PER_ANSWER} "
          f"citations), per drawn citation, chips / DeerFlow badges: {per:.2f} "
          "(target <= 1.0)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
