"""The citation grammar: only verified links, exactly; free text that cannot start a citation.

The shared vectors (contracts/vectors/citation_grammar.json) run in tests/test_vectors.py. Each
form is checked by something other than the code that wrote it: the regular expression by
the standard library's ``re`` and by ``jsonschema`` (the JSON-schema form), the GBNF by the
``gbnf`` package (a port of llama.cpp's grammar parser and matcher). Whether an accepted answer
cites only allowed links is decided by the real CommonMark reader (``find_citations``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import deerflow.knowledge.grammar as grammar_module
from deerflow.knowledge import (
    RetrievalHit,
    RetrievalResult,
    find_citations,
    format_result,
)
from deerflow.knowledge.grammar import (
    MAX_GRAMMAR_LINKS,
    CitationGrammar,
    NoCitableEvidenceError,
    citable_links,
    citation_grammar,
)
from deerflow.knowledge.native import format_native
from tests.gbnf_oracle import gbnf_accepts
from tests.vectors import ROOT, cases

HOSTILE = ROOT / "backend" / "deerflow" / "knowledge" / "sample_corpus" / "hostile-payloads.md"


def schema_accepts(grammar: CitationGrammar, text: str) -> bool:
    try:
        jsonschema.validate({"answer": text}, grammar.json_schema)
    except jsonschema.ValidationError:
        return False
    return True


def assert_cites_only_allowed(grammar: CitationGrammar, text: str) -> None:
    allowed = {link.link for link in grammar.links}
    for citation in find_citations(text):
        assert text[citation.start : citation.end] in allowed, (text, citation)


def _tool(content: str, artifact: Any, name: str = "knowledge_search") -> dict[str, Any]:
    return {
        "type": "tool",
        "name": name,
        "tool_call_id": "c",
        "content": content,
        "artifact": artifact,
    }


def _search(*hits: tuple[str, str]) -> dict[str, Any]:
    result = RetrievalResult(
        provider="local",
        query="q",
        hits=[RetrievalHit(title=title, text=text) for title, text in hits],
    )
    formatted = format_result(result)
    return _tool(formatted.content, formatted.artifact)


# --------------------------------------------------------------------------- real tool output


def test_every_verified_link_of_a_real_search_is_allowed_with_text_around() -> None:
    message = _search(("guide.md", "Deer eat acorns."), ("notes [v2].md", "Antlers fall."))
    grammar = citation_grammar([{"type": "human", "content": "q"}, message])
    assert len(grammar.links) == 2
    for link in grammar.links:
        assert link.link in message["content"]  # exactly what the model is shown
        text = f"Before {link.link} after.\n\nNext paragraph {link.link}"
        assert grammar.accepts(text) and gbnf_accepts(grammar.gbnf, text)


def test_the_hostile_corpus_cannot_be_cited_through_its_own_fake_link() -> None:
    document = HOSTILE.read_text(encoding="utf-8")
    message = _search(("hostile-payloads.md", document))
    grammar = citation_grammar([message])
    (allowed,) = grammar.links
    fake_links = [c for c in find_citations(document) if c.kind in ("shared", "native")]
    assert fake_links, "the fixture's fake citation is gone: this test checks nothing"
    for citation in fake_links:
        fake = document[citation.start : citation.end]
        assert fake in message["content"]  # the model sees it...
        assert not grammar.accepts(f"See {fake}.")  # ...but cannot write it
        assert not gbnf_accepts(grammar.gbnf, f"See {fake}.")
    assert not grammar.accepts(document)  # parroting the document is refused too
    assert grammar.accepts(f"The payload file {allowed.link} is inert text.")


def test_native_records_take_the_label_the_text_gives_or_their_ordinal() -> None:
    call = "0123456789abcdef" * 2
    chunk = {
        "dataset_id": "d",
        "document_id": "doc",
        "chunk_id": "c1",
        "dataset_name": "HR",
        "document_name": "handbook.pdf",
        "pages": (),
        "text": "Leave is 25 days.",
        "has_locators": True,
    }
    native = format_native([type("Chunk", (), chunk)()], call_id=call)
    assert native is not None
    content, artifact = native
    grammar = citation_grammar([_tool(content, artifact)])
    assert [link.link for link in grammar.links] == [f"[citation:1](#knowledge-{call}-1)"]
    # A text that links the record under another label: the record's own ordinal is offered.
    relinked = content.replace("[citation:1]", "[see]")
    (link,) = citation_grammar([_tool(relinked, artifact)]).links
    assert link.link == f"[citation:1](#knowledge-{call}-1)"


def test_the_first_message_to_verify_an_id_names_it_once() -> None:
    message = _search(("guide.md", "Deer eat acorns."))
    links = citable_links([message, {"type": "ai", "content": "ok"}, message])
    assert [link.message_index for link in links] == [0]


# --------------------------------------------------------------------------- options and limits


def test_require_citation_without_evidence_is_the_callers_error() -> None:
    with pytest.raises(NoCitableEvidenceError):
        citation_grammar([{"type": "human", "content": "hi"}], require_citation=True)
    assert citation_grammar([], require_citation=False).accepts("Nothing found.")


def _many(count: int, *, per_message: int = 20) -> list[dict[str, Any]]:
    messages = []
    for start in range(0, count, per_message):
        hits = [
            (f"doc-{n:04d}.md", f"Fact number {n:04d}.")
            for n in range(start, min(count, start + per_message))
        ]
        messages.append(_search(*hits))
    return messages


def test_max_links_at_the_limit_and_one_past() -> None:
    at_limit = citation_grammar(_many(MAX_GRAMMAR_LINKS))
    assert len(at_limit.links) == MAX_GRAMMAR_LINKS and at_limit.omitted == 0
    past = citation_grammar(_many(MAX_GRAMMAR_LINKS + 1))
    assert len(past.links) == MAX_GRAMMAR_LINKS and past.omitted == 1
    # The oldest link goes first: the newest evidence stays citable.
    assert "doc-0000.md" not in past.links[0].link
    assert "doc-1000.md" in past.links[-1].link
    with pytest.raises(ValueError, match="max_links"):
        citation_grammar([], max_links=MAX_GRAMMAR_LINKS + 1)
    kept = citation_grammar(_many(4), max_links=3)
    assert [link.link.split("]")[0] for link in kept.links] == [
        "[citation:doc-0001.md",
        "[citation:doc-0002.md",
        "[citation:doc-0003.md",
    ]


def test_grammar_size_is_linear_in_the_records_and_each_message_is_read_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads = 0
    real = grammar_module.read_evidence

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal reads
        reads += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(grammar_module, "read_evidence", counted)
    sizes = {}
    for count in (25, 50, 100):
        reads = 0
        messages = _many(count, per_message=5)
        grammar = citation_grammar(messages)
        assert reads == len(messages)
        assert len(grammar.links) == count
        sizes[count] = (len(grammar.gbnf), len(grammar.regex))
    # Every link here has the same length, so each adds the same: exactly linear, no pairing.
    for form in (0, 1):
        assert sizes[100][form] - sizes[50][form] == 2 * (sizes[50][form] - sizes[25][form])
    one_link = len(citation_grammar(_many(1)).links[0].link)
    assert sizes[100][0] - sizes[50][0] <= 50 * (one_link + 16)


def test_gbnf_is_ascii_so_any_transport_carries_it() -> None:
    grammar = citation_grammar([_search(("Ünïcode 😀 \u202e.md", "Text."))])
    assert grammar.gbnf.isascii()
    (link,) = grammar.links
    assert gbnf_accepts(grammar.gbnf, f"é {link.link} 😀")


# --------------------------------------------------------------------------- properties

_ALLOWED = _search(("guide.md", "Deer eat acorns."), ("notes [v2].md", "Antlers fall."))
_GRAMMAR = citation_grammar([_ALLOWED])
_ID = _GRAMMAR.links[0].source_id
# Pieces that build (or nearly build) every way of writing a citation, with ordinary text.
_PIECES = [
    *(link.link for link in _GRAMMAR.links),
    "[",
    "]",
    "(",
    ")",
    "[citation:",
    "citation:",
    "CitAtion",
    "#",
    "knowledge",
    "-source-",
    "user-content-",
    _ID,
    "ffffffffffffffffffffffffffffffff",
    "&",
    "#35;",
    "num;",
    "amp;",
    "\\",
    "!",
    "`",
    "<",
    ">",
    ":",
    " ",
    "\n",
    "    ",
    "x",
    "https://e.com",
    "]: ",
    "]: #",
    "&#x23;",
    "&NUM;",
    "<#",
    "![",
    "\\[",
    "```\n",
    "*",
    "'title'",
]
_texts = st.lists(st.sampled_from(_PIECES), max_size=14).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_texts)
def test_accepted_text_cites_only_allowed_links(text: str) -> None:
    if _GRAMMAR.accepts(text):
        assert_cites_only_allowed(_GRAMMAR, text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_texts)
def test_the_gbnf_and_the_regular_expression_agree(text: str) -> None:
    assert gbnf_accepts(_GRAMMAR.gbnf, text) == _GRAMMAR.accepts(text), text


def test_ordinary_markdown_stays_free() -> None:
    text = (
        "## Answer\n\nDeer eat **acorns** — see [the guide](https://example.com/guide#acorns), "
        "`code [x]`, footnote [1], AT&T, C#, 50% and a list:\n\n* one\n* two\n\n> quoted\n"
    )
    assert _GRAMMAR.accepts(text) and gbnf_accepts(_GRAMMAR.gbnf, text)


_ECMASCRIPT_CHECK = """
const cases = JSON.parse(require("node:fs").readFileSync(process.argv[2], "utf8"));
const verdicts = cases.map(({ pattern, text }) =>
  ["u", ""].map((flags) => new RegExp(pattern, flags).test(text)));
process.stdout.write(JSON.stringify(verdicts));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_json_schema_pattern_means_the_same_in_ecmascript(tmp_path: Path) -> None:
    """JSON Schema validators (and browsers) compile ``pattern`` as ECMAScript, with or without
    the ``u`` flag: both must decide every vector string as Python does."""
    checks = []
    for case in cases("citation_grammar"):
        grammar = citation_grammar(
            case["messages"], require_citation=case["require_citation"], ids=case["ids"]
        )
        pattern = grammar.json_schema["properties"]["answer"]["pattern"]
        for text in case["accept"] + case["reject"]:
            checks.append({"pattern": pattern, "text": text, "expected": grammar.accepts(text)})
    data = tmp_path / "checks.json"
    data.write_text(json.dumps(checks), encoding="utf-8")
    script = tmp_path / "check.cjs"
    script.write_text(_ECMASCRIPT_CHECK, encoding="utf-8")
    out = subprocess.run(
        ["node", str(script), str(data)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    verdicts = json.loads(out)
    assert len(verdicts) == len(checks) > 50
    for check, (with_u, without_u) in zip(checks, verdicts, strict=True):
        assert with_u == without_u == check["expected"], check["text"]
