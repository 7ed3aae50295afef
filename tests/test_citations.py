"""The citation finder against CommonMark itself (contracts/README.md §4).

A citation must be exactly a link CommonMark renders. The spec's own examples (the
``commonmark-spec`` npm package, 0.31.2, installed by ``npm ci``: no network at test time) are
turned into citation cases and compared with an independent CommonMark parser, markdown-it-py in
``commonmark`` mode, for every example; hypothesis compares the two on generated Markdown too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pyromark
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from deerflow.knowledge import citations, find_citations, relabel_orphans
from deerflow.knowledge._nesting import cap_nesting
from deerflow.knowledge.budget import truncate_text
from deerflow.knowledge.citations import MAX_PLAIN_RELABEL_PASSES, relabel_citations
from tests.vectors import ROOT, cases

H1 = "0123456789abcdef0123456789abcdef"
H2 = "fedcba9876543210fedcba9876543210"
D1 = f"#knowledge-source-{H1}"
SPEC = ROOT / "node_modules" / "commonmark-spec" / "spec.txt"
_FENCE = "`" * 32


# ------------------------------------------------------------------------------ the oracle

_ORACLE = MarkdownIt("commonmark")
# markdown-it refuses javascript: and friends as hrefs; the question here is only what is a link.
_ORACLE.validateLink = lambda url: True  # type: ignore[method-assign]


def oracle_links(markdown: str) -> list[tuple[str, str]]:
    """(href as markdown-it normalizes it, rendered text) of every link markdown-it renders from
    link syntax, in document order: no autolinks, nothing inside an image."""
    found: list[tuple[str, str]] = []

    def walk(tokens: list[Token]) -> None:
        depth, text = 0, ""
        for token in tokens:
            if token.type == "link_open" and token.info != "auto":
                found.append((str(token.attrGet("href")), ""))
                depth, text = 1, ""
                continue
            if token.type == "link_close" and depth:
                found[-1] = (found[-1][0], text)
                depth = 0
            elif depth:
                # The link text with its markup, so that it starts as the source does.
                if token.type == "code_inline":
                    text += token.markup + token.content + token.markup
                elif token.type in ("text", "text_special", "html_inline"):
                    text += token.content
                elif token.type == "softbreak":
                    text += "\n"
                else:
                    text += token.markup
            if token.children and token.type != "image":
                walk(token.children)

    walk(_ORACLE.parse(markdown))
    return found


def ours(markdown: str) -> list[str]:
    return [_ORACLE.normalizeLink(c.href) for c in find_citations(markdown)]


def spec_examples() -> list[tuple[int, str, str]]:
    if not SPEC.is_file():
        pytest.fail(f"{SPEC} is missing: run `npm ci` (the commonmark-spec package ships it)")
    lines = SPEC.read_text(encoding="utf-8").splitlines(keepends=True)
    examples: list[tuple[int, str, str]] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith(f"{_FENCE} example"):
            i += 1
            markdown: list[str] = []
            while lines[i] != ".\n":
                markdown.append(lines[i])
                i += 1
            i += 1
            html: list[str] = []
            while not lines[i].startswith(_FENCE):
                html.append(lines[i])
                i += 1
            number = len(examples) + 1
            examples.append(
                (number, "".join(markdown).replace("→", "\t"), "".join(html).replace("→", "\t"))
            )
        i += 1
    return examples


EXAMPLES = spec_examples()


def as_citations(markdown: str) -> str:
    """Every link of a spec example made a citation: each ``[`` opens a ``citation:`` label (so
    every destination is classified), and the spec's usual destinations become handles."""
    text = markdown.replace("[", "[citation:")
    return text.replace("/url", D1).replace("/uri", f"#knowledge-{H1}-1")


def test_the_spec_file_is_0_31_2_with_every_example() -> None:
    assert "version: '0.31.2'" in SPEC.read_text(encoding="utf-8")[:200]
    assert len(EXAMPLES) == 652


def _normalized_html(html: str) -> str:
    # pyromark's HTML writer leaves `"` unescaped in text; white space between tags is not
    # structure. Everything else must match the spec's HTML exactly.
    return re.sub(r">\s+<", "><", html.replace("&quot;", '"'))


@pytest.mark.parametrize(("number", "markdown", "html"), EXAMPLES, ids=lambda v: str(v))
def test_the_parser_renders_every_spec_example_as_the_spec(
    number: int, markdown: str, html: str
) -> None:
    assert _normalized_html(pyromark.html(markdown)) == _normalized_html(html)


@pytest.mark.parametrize(("number", "markdown", "html"), EXAMPLES, ids=lambda v: str(v))
def test_citations_are_the_links_commonmark_renders(number: int, markdown: str, html: str) -> None:
    for text in (markdown.replace("[", "[citation:"), as_citations(markdown)):
        expected = [href for href, _ in oracle_links(text)]
        assert ours(text) == expected
        for citation in find_citations(text):
            assert text[citation.start] == "["
            # The label ends where the destination or the reference label begins.
            label_end = citation.start + 1 + len(citation.raw_label)
            assert text[label_end] == "]"
            rest = text[label_end + 1 : citation.end]
            assert rest in ("", "[]") or (rest[0], rest[-1]) in (("(", ")"), ("[", "]"))


@pytest.mark.parametrize(("number", "markdown", "html"), EXAMPLES, ids=lambda v: str(v))
def test_relabeling_a_spec_example_leaves_no_orphan(number: int, markdown: str, html: str) -> None:
    text = as_citations(markdown)
    relabeled = relabel_orphans(text, [])
    assert [c for c in find_citations(relabeled) if c.kind == "shared"] == []
    assert relabel_orphans(text, [H1]) == text


def test_every_citation_vector_agrees_with_the_oracle() -> None:
    for case in cases("citations"):
        markdown, edits = cap_nesting(case["markdown"])
        if edits or case["id"].endswith("-nesting-at-limit-indented-code"):
            # Nested past markdown-it's own maxNesting (20): the vector tests of both
            # implementations pin these.
            continue
        expected = [_ORACLE.normalizeLink(e["href"]) for e in case["expected"]]
        rendered = [
            href
            for href, text in oracle_links(markdown)
            if text.startswith("citation:") or re.match(r"#(user-content-)?knowledge-", href)
        ]
        assert expected == rendered, case["id"]


# ------------------------------------------------------------------------------ properties

markdown_alphabet = st.sampled_from(
    [
        *list("[]()<>!`~\\\n #:-abc*_&;\"'"),
        D1,
        f"#knowledge-{H1}-2",
        "citation:",
        "```\n",
        "    ",
        "\n\n",
        "[1]: ",
        "[1]",
        "<div>",
        "&#48;",
        "🦌",
        "\ud800",
    ]
)
markdown = st.lists(markdown_alphabet, max_size=60).map("".join)


@settings(max_examples=500, deadline=None)
@given(markdown)
def test_the_finder_agrees_with_markdown_it(text: str) -> None:
    # The finder parses lone surrogates as U+FFFD (pulldown-cmark takes UTF-8).
    clean = text.replace("\ud800", "\ufffd")
    expected = [
        href
        for href, label in oracle_links(clean)
        if label.startswith("citation:") or re.match(r"#(user-content-)?knowledge-", href)
    ]
    assert ours(text) == expected
    assert ours(text) == ours(clean)


@settings(max_examples=500, deadline=None)
@given(markdown)
def test_spans_are_ordered_and_within_bounds(text: str) -> None:
    previous_end = 0
    for citation in find_citations(text):
        assert previous_end <= citation.start < citation.end <= len(text)
        assert text[citation.start] == "[" and text[citation.end - 1] in ")]"
        previous_end = citation.end


@settings(max_examples=300, deadline=None)
@given(markdown)
def test_relabel_keeping_everything_is_identity(text: str) -> None:
    ids = [c.source_id for c in find_citations(text) if c.source_id]
    assert relabel_orphans(text, ids) is text


@settings(max_examples=300, deadline=None)
@given(markdown)
def test_relabel_removes_every_orphan(text: str) -> None:
    relabeled = relabel_orphans(text, [])
    assert [c for c in find_citations(relabeled) if c.kind == "shared"] == []


@settings(max_examples=300, deadline=None)
@given(markdown)
def test_one_escaping_pass_reaches_the_fixpoint(text: str) -> None:
    # With no plain pass at all, the first (escaping) pass must leave nothing to relabel: the
    # pass after it only confirms. This is what bounds the passes whatever the nesting.
    scans: list[None] = []
    original = citations._scan

    def counted(*args: Any, **kwargs: Any) -> Any:
        scans.append(None)
        return original(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(citations, "_scan", counted)
        relabeled = relabel_orphans(text, [], max_plain_passes=0)
    assert len(scans) <= 2
    assert [c for c in find_citations(relabeled) if c.kind == "shared"] == []


# ------------------------------------------------------------------------------ behaviour


def test_non_string_input() -> None:
    assert find_citations(None) == []  # type: ignore[arg-type]


def test_offsets_count_code_points_around_astral_and_lone_surrogates() -> None:
    text = f"🦌\ud800 é [citation:鹿]({D1}) 🦌 [x][1]\n\n[1]: {D1}"
    found = find_citations(text)
    assert [text[c.start : c.end] for c in found] == [f"[citation:鹿]({D1})", "[x][1]"]


def test_the_streaming_rule() -> None:
    full = f"Deer eat acorns [citation:Guide]({D1}) and [citation:N](#knowledge-source-{H2})."
    final = find_citations(full)
    for cut in range(len(full) + 1):
        for citation in find_citations(full[:cut]):
            assert citation in final
            assert citation.end <= cut
    # Still unterminated: no citation before the `)` arrives.
    assert find_citations(full[: full.index(")")]) == []


def test_deep_nesting_reaches_the_fixpoint_in_bounded_passes(monkeypatch: Any) -> None:
    scans = _count_calls(monkeypatch, citations, "_scan")
    for depth in (1, MAX_PLAIN_RELABEL_PASSES, MAX_PLAIN_RELABEL_PASSES + 1, 500):
        scans.clear()
        text = "[" * depth + "a" + f"]({D1})" * depth
        relabeled = relabel_orphans(text, [])
        assert len(scans) <= MAX_PLAIN_RELABEL_PASSES + 2
        assert find_citations(relabeled) == []
        if depth <= MAX_PLAIN_RELABEL_PASSES:
            assert relabeled == "a"  # shallow nesting: exactly the labels, no escapes
        else:
            assert relabeled.replace("\\", "") == "[" * (depth - 5) + "a" + f"]({D1})" * (depth - 5)


def test_relabel_keeps_everything_outside_the_links_byte_identical() -> None:
    text = f"`[citation:A]({D1})` *x* [citation:B]({D1}) <b>[c]</b>\n\n    [citation:C]({D1})"
    assert (
        relabel_orphans(text, [])
        == f"`[citation:A]({D1})` *x* B <b>[c]</b>\n\n    [citation:C]({D1})"
    )


def test_native_relabel_uses_the_same_finder() -> None:
    text = f"[citation:1](#knowledge-{H1}-1) and `[citation:2](#knowledge-{H1}-2)`"
    assert relabel_citations(text, lambda _: True) == f"1 and `[citation:2](#knowledge-{H1}-2)`"


# ---------------------------------------------------------------------- counted work (linear)


class _Counter:
    """Counts what the finder does: the events pulldown-cmark hands to the Python loop (each is
    one loop step) and the bytes the offset converter decodes."""

    def __init__(self, monkeypatch: Any) -> None:
        self.events = 0
        self.decoded = 0
        counter = self
        parser = citations._PARSER

        class CountingParser:
            def events_with_range(self, text: str) -> Iterator[Any]:
                for item in parser.events_with_range(text):
                    counter.events += 1
                    yield item

        class CountingOffsets(citations._Offsets):
            def __call__(self, offset: int) -> int:
                if self._data is not None:  # ASCII text needs no decoding at all
                    counter.decoded += abs(offset - self._byte)
                return super().__call__(offset)

        monkeypatch.setattr(citations, "_PARSER", CountingParser())
        monkeypatch.setattr(citations, "_Offsets", CountingOffsets)


def _count_calls(monkeypatch: Any, module: Any, name: str) -> list[None]:
    calls: list[None] = []
    original: Callable[..., Any] = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(None)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


LINK = f"[x]({D1})"
HOSTILE: dict[str, Callable[[int], str]] = {
    "opens then links": lambda n: "[" * (n // 2) + LINK * (n // 2 // len(LINK)),
    "issue 12: opens then short links": lambda n: "[" * (n // 2) + "[x](#a)" * (n // 14),
    "images then links": lambda n: "![x](y)" * (n // 14) + "[x](y)" * (n // 12),
    "citation openers": lambda n: "[citation:" * (n // 10),
    "backtick runs": lambda n: "".join("`" * k + "a" for k in range(1, int((2 * n) ** 0.5))),
    "backticks": lambda n: "`" * n,
    "close-open pairs": lambda n: "](" * (n // 2),
    "image openers": lambda n: "![" * (n // 2),
    "nested brackets": lambda n: "[" * (n // 60) + "a" + f"]({D1})" * (n // 60),
    "backslashes": lambda n: "\\" * n,
    "unclosed pointy destinations": lambda n: "[a](<b" * (n // 6),
    "reference expansion": lambda n: "[x]: " + "x" * (n // 2) + "\n[x]" * (n // 8),
    "non-ASCII links": lambda n: f"🦌[citation:鹿]({D1})" * (n // 70),
    # cmark's pathological inputs (its test/pathological_tests.py), at every size.
    "emphasis closers": lambda n: "a***" * (n // 4),
    "list markers": lambda n: "* " * (n // 2) + "a",
    "block quote markers": lambda n: ">" * n,
    "brackets and emphasis": lambda n: "[*_a" * (n // 4),
    "backtick escapes": lambda n: "``\\" * (n // 3),
    "CDATA openers": lambda n: "a <![CDATA[" * (n // 11),
    "link closers and openers": lambda n: "]([\n" * (n // 4),
    "bracket paren pairs": lambda n: "[ (](" * (n // 5),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_the_finder_is_linear_on_hostile_input(name: str, monkeypatch: Any) -> None:
    """Counted, not timed: the Python loop takes at most a few steps per input character and the
    offset converter decodes each byte at most twice, at 10^4 and 10^6 characters alike.
    pulldown-cmark's own work cannot be counted from Python. What can be observed of it — the
    events it emits, all of its output — stays within a constant per character here, and
    ``benchmarks/bench_citations.py`` times its growth t(10n)/t(n) (about 10) on several of them."""
    for n in (10_000, 1_000_000):
        text = HOSTILE[name](n)
        counter = _Counter(monkeypatch)
        find_citations(text)
        assert counter.events <= 3 * len(text) + 10, (n, counter.events)
        assert counter.decoded <= 2 * len(text.encode("utf-8", "surrogatepass")), n


@pytest.mark.parametrize(
    "name", ["opens then links", "nested brackets", "non-ASCII links", "citation openers"]
)
def test_relabeling_is_linear_on_hostile_input(name: str, monkeypatch: Any) -> None:
    n = 1_000_000
    text = HOSTILE[name](n)
    counter = _Counter(monkeypatch)
    scans = _count_calls(monkeypatch, citations, "_scan")
    relabeled = relabel_orphans(text, [])
    # Each pass is one scan of a text no longer than the input.
    assert len(scans) <= MAX_PLAIN_RELABEL_PASSES + 2
    assert counter.events <= len(scans) * (3 * len(text) + 10)
    assert [c for c in find_citations(relabeled) if c.kind == "shared"] == []


def test_truncate_text_is_linear_on_the_issue_12_message(monkeypatch: Any) -> None:
    """``"[" * 50000 + "[x](#a)" * 7142`` burned 52 s of gateway CPU per model call; the budget
    cut now costs one finder scan."""
    counter = _Counter(monkeypatch)
    scans = _count_calls(monkeypatch, citations, "_scan")
    for k in (1, 10):
        text = "[" * 50_000 * k + "[x](#a)" * 7142 * k + LINK * 100
        cut = truncate_text(text, max_chars=len(text) // 2)
        assert len(cut) <= len(text) // 2
    assert len(scans) == 2
    assert counter.events <= 3 * 11 * (50_000 + 7 * 7142 + len(LINK) * 100)


def test_the_pass_limit_is_a_keyword_and_zero_escapes_at_once() -> None:
    text = f"[b] [citation:A]({D1})"
    assert relabel_orphans(text, []) == "[b] A"
    assert relabel_orphans(text, [], max_plain_passes=0) == "\\[b\\] A"
    with pytest.raises(ValueError, match="max_plain_passes"):
        relabel_orphans(text, [], max_plain_passes=-1)
    assert relabel_citations(None, lambda _: True) is None  # type: ignore[arg-type]
