"""The project's documents hold what the code cites: every cited section anchor exists, and the
design's table of limits is the code's.

Code and documents point at sections as ``docs/RATIONALE.md#<anchor>`` (and the documents link each
other's sections); a renamed heading would leave those pointers dangling without this test.
"""

from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RATIONALE = ROOT / "docs/RATIONALE.md"

# ``docs/RATIONALE.md#limits`` in code and prose; ``ARCHITECTURE.md#layers`` from beside it.
_CITED = re.compile(r"(?:docs/)?((?:RATIONALE|ARCHITECTURE)\.md)#([\w-]+)")
_LINK = re.compile(r"\]\(([^)\s#]*)#([\w-]+)\)")
_FENCE = re.compile(r"^(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces made hyphens, repeats
    numbered; headings inside fenced code are not headings."""
    anchors: set[str] = set()
    fenced = False
    for line in markdown.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        heading = None if fenced else _HEADING.match(line)
        if heading is None:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(2).strip().lower()).replace(" ", "-")
        candidate, n = slug, 0
        while candidate in anchors:
            n += 1
            candidate = f"{slug}-{n}"
        anchors.add(candidate)
    return anchors


def _tracked() -> list[Path]:
    names = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / name for name in names if name.endswith((".py", ".md", ".ts", ".tsx", ".mjs"))]


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, FileNotFoundError):
        return None


def test_the_anchor_rule_is_githubs() -> None:
    text = "# Design\n## Budgets and fitting\n```sh\n# not a heading\n```\n## 1. The envelope\n## Design"
    assert _anchors(text) == {"design", "budgets-and-fitting", "1-the-envelope", "design-1"}


def test_every_cited_design_section_exists() -> None:
    docs = {Path(path).name: _anchors((ROOT / path).read_text(encoding="utf-8"))
            for path in ("docs/RATIONALE.md", "docs/ARCHITECTURE.md")}  # fmt: skip
    missing, cited = [], 0
    for path in _tracked():
        text = _text(path)
        if text is None or path.name == "test_docs.py":
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for name, anchor in _CITED.findall(line):
                cited += 1
                if anchor not in docs[name]:
                    missing.append(f"{path.relative_to(ROOT)}:{n}: {name}#{anchor}")
    assert cited >= 10 and missing == []


def test_every_link_between_the_documents_lands_on_a_heading() -> None:
    missing, links = [], 0
    for source in [ROOT / "README.md", ROOT / "contracts" / "README.md", *ROOT.glob("docs/*.md")]:
        for n, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
            for target, anchor in _LINK.findall(line):
                path = (source.parent / target).resolve() if target else source
                if path.suffix != ".md" or anchor.startswith(("knowledge-", "user-content-")):
                    continue
                links += 1
                if not path.is_file() or anchor not in _anchors(path.read_text(encoding="utf-8")):
                    missing.append(f"{source.relative_to(ROOT)}:{n}: {target}#{anchor}")
    assert links >= 10 and missing == []


def _limits() -> list[tuple[str, int, str]]:
    section = (
        RATIONALE.read_text(encoding="utf-8").split("\n## Limits\n", 1)[1].split("\n## ", 1)[0]
    )
    row = re.compile(r"^\| `([A-Z_]+)` \| ([\d,]+) \| [^|]+ \| `([\w/.]+)` \|$", re.MULTILINE)
    return [(name, int(value.replace(",", "")), home) for name, value, home in row.findall(section)]


def _value_in(home: str, name: str) -> object:
    if home.endswith(".ts"):
        found = re.search(rf"^export const {name} = ([\d_]+);", (ROOT / home).read_text(), re.M)
        return None if found is None else int(found.group(1).replace("_", ""))
    module = importlib.import_module(
        "deerflow.knowledge." + home.removesuffix(".py").removesuffix("/").replace("/", ".")
    )
    return getattr(module, name, None)


def test_the_limits_table_is_read_whole() -> None:
    rows = _limits()
    assert len(rows) >= 30 and len({name for name, _, _ in rows}) == len(rows)


@pytest.mark.parametrize(("name", "value", "home"), _limits())
def test_each_documented_limit_is_the_codes(name: str, value: int, home: str) -> None:
    assert _value_in(home, name) == value, f"docs/RATIONALE.md#limits: {name} in {home}"
