"""Write contracts/vectors/{source_ids,envelopes,citations}.json from hand-declared cases.

Expected verdicts are declared here by hand from contracts/README.md; ids are computed with the
independent ``rfc8785`` package (not the project's ``ids.py``), so the vectors test the
implementations instead of echoing them. Case ids are stable: append new cases, never renumber.

Run: uv run python scripts/generate_vectors.py
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import rfc8785

VECTORS = Path(__file__).resolve().parent.parent / "contracts" / "vectors"
TAG = b"deerflow.knowledge_source.v1\n"


def oracle_id(record: dict[str, Any]) -> str:
    identity = {k: v for k, v in record.items() if k != "id"}
    return hashlib.sha256(TAG + rfc8785.dumps(identity)).hexdigest()[:32]


def rec(**fields: Any) -> dict[str, Any]:
    fields.setdefault("provider", "lightrag")
    fields.setdefault("title", "guide.md")
    fields.setdefault("excerpt", "Retrieved text about deer.")
    return {"id": oracle_id(fields), **fields}


def content_for(*records: dict[str, Any]) -> str:
    lines = []
    for i, r in enumerate(records, 1):
        lines.append(f"[{i}] [citation:{r['title']}](#knowledge-source-{r['id']})")
        lines.append(str(r["excerpt"]))
    return "\n".join(lines)


def env(*records: Any, version: Any = 1) -> dict[str, Any]:
    return {"knowledge_sources_version": version, "knowledge_sources": list(records)}


# ---------------------------------------------------------------- source ids
def source_id_cases() -> list[dict[str, Any]]:
    base = {"provider": "lightrag", "title": "guide.md", "excerpt": "Deer eat acorns."}
    records: list[tuple[str, str, dict[str, Any]]] = [
        ("ascii", "plain ASCII record", base),
        (
            "cjk",
            "CJK title and excerpt",
            {**base, "title": "鹿の生態.md", "excerpt": "鹿はどんぐりを食べる。"},
        ),
        (
            "emoji-astral",
            "astral emoji in title and excerpt",
            {**base, "title": "🦌 notes", "excerpt": "Deer 🦌🌰 facts \U0001d518"},
        ),
        (
            "combining",
            "combining marks stay unnormalized (e + U+0301)",
            {**base, "title": "cafe\u0301.md"},
        ),
        (
            "precomposed",
            "precomposed é differs from the combining form",
            {**base, "title": "caf\u00e9.md"},
        ),
        (
            "u2028-u2029",
            "line and paragraph separators are literal",
            {**base, "excerpt": "a\u2028b\u2029c"},
        ),
        ("quotes", "double quotes are escaped", {**base, "excerpt": 'He said "deer".'}),
        ("backslash", "backslashes are escaped", {**base, "title": "C:\\docs\\deer.md"}),
        (
            "control-escapes",
            "short escapes \\b \\f \\n \\r \\t",
            {**base, "excerpt": "a\bb\fc\nd\re\tf"},
        ),
        (
            "control-u-escapes",
            "other C0 controls as lowercase \\u00xx",
            {**base, "excerpt": "x\x00y\x01z\x1fw\x0b"},
        ),
        (
            "del-c1-literal",
            "DEL and C1 controls are literal in JCS",
            {**base, "excerpt": "x\x7fy\x85z\x9f"},
        ),
        ("slash-literal", "forward slash is not escaped", {**base, "excerpt": "a/b</script>"}),
        ("html", "HTML-ish characters are literal", {**base, "excerpt": "<b>&amp;</b> 'x'"}),
        (
            "bom-zwsp",
            "BOM and zero-width space are literal",
            {**base, "excerpt": "\ufeffdeer\u200b"},
        ),
        ("nbsp", "no-break space kept", {**base, "title": "deer\u00a0guide"}),
        ("rtl", "right-to-left text", {**base, "title": "غزال.md", "excerpt": "الغزال يأكل"}),
        ("long-excerpt", "20,000 code point excerpt", {**base, "excerpt": "d" * 20_000}),
        ("long-astral-title", "512 astral code points", {**base, "title": "🦌" * 512}),
        (
            "provider-dots",
            "provider with dot, dash and underscore",
            {**base, "provider": "my.rag_v2-x"},
        ),
        ("max-page", "page 1000000", {**base, "page": 1_000_000}),
        ("min-page", "page 1", {**base, "page": 1}),
        (
            "url-query",
            "URL with query and fragment",
            {**base, "url": "https://example.com/a?b=1&c=ü#frag"},
        ),
        ("id-ignored", "an id key in the input is ignored", {**base, "id": "0" * 32}),
        (
            "key-order",
            "input key order does not matter",
            {"excerpt": base["excerpt"], "title": base["title"], "provider": base["provider"]},
        ),
    ]
    optional = {"dataset_name": "Deer dataset", "url": "https://example.com/deer", "page": 7}
    names = list(optional)
    for mask in range(1, 8):
        chosen = {names[b]: optional[names[b]] for b in range(3) if mask >> b & 1}
        label = "+".join(chosen)
        records.append((f"optional-{label}", f"optional fields: {label}", {**base, **chosen}))
    cases = []
    for n, (slug, description, record) in enumerate(records, 1):
        cases.append(
            {
                "id": f"sid-{n:03d}-{slug}",
                "description": description,
                "record": record,
                "expected_id": oracle_id({k: v for k, v in record.items() if k != "id"}),
            }
        )
    return cases


# ---------------------------------------------------------------- envelopes
def envelope_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []

    def add(
        slug: str,
        description: str,
        content: Any,
        artifact: Any,
        *,
        sources: list[str] | None = None,
        rejected: list[tuple[str, int, str]] | None = None,
        error: str | None = None,
        schema_valid: bool = True,
    ) -> None:
        cases.append(
            {
                "id": f"env-{len(cases) + 1:03d}-{slug}",
                "description": description,
                "content": content,
                "artifact": artifact,
                "schema_valid": schema_valid,
                "expected": {
                    "sources": sources or [],
                    "rejected": [{"key": k, "index": i, "reason": r} for k, i, r in rejected or []],
                    "error": error,
                },
            }
        )

    a = rec()
    b = rec(
        title="field-notes.md", excerpt="Fawns are born in spring.", dataset_name="Wildlife", page=3
    )
    c = rec(
        provider="ragflow",
        title="report.pdf",
        excerpt="Herd size doubled.",
        url="https://example.com/report.pdf",
    )
    ks = "knowledge_sources"
    rs = "retrieval_sources"

    # valid envelopes
    add("valid-one", "one valid record", content_for(a), env(a), sources=[a["id"]])
    add(
        "valid-three",
        "three records with optional fields",
        content_for(a, b, c),
        env(a, b, c),
        sources=[a["id"], b["id"], c["id"]],
    )
    add(
        "valid-extra-keys",
        "unrelated artifact keys are allowed",
        content_for(a),
        {**env(a), "tool_debug": {"x": 1}},
        sources=[a["id"]],
    )
    add(
        "valid-empty",
        "an empty array is a valid, empty envelope",
        "No relevant content found.",
        env(),
    )
    add(
        "valid-user-content-irrelevant",
        "the reader needs the plain handle in content",
        f"[citation:x](#user-content-knowledge-source-{a['id']})\n{a['excerpt']}",
        env(a),
        rejected=[(ks, 0, "handle_missing")],
    )
    add(
        "valid-list-content",
        "list content: text parts are searched",
        [
            {"type": "text", "text": content_for(a)},
            {"type": "image_url", "image_url": {"url": "x"}},
        ],
        env(a),
        sources=[a["id"]],
    )
    add(
        "valid-list-strings",
        "list content with plain strings",
        ["intro", content_for(a)],
        env(a),
        sources=[a["id"]],
    )
    add(
        "split-across-parts",
        "handle and excerpt in different parts is fine",
        [f"[citation:t](#knowledge-source-{a['id']})", a["excerpt"]],
        env(a),
        sources=[a["id"]],
    )
    add(
        "excerpt-split-across-parts",
        "an excerpt must lie wholly inside one text part",
        [f"[citation:t](#knowledge-source-{a['id']}) Retrieved text ", "about deer."],
        env(a),
        rejected=[(ks, 0, "excerpt_missing")],
    )
    add(
        "list-non-text-part",
        "a non-text part is not searched",
        [{"type": "image", "text": content_for(a)}],
        env(a),
        rejected=[(ks, 0, "handle_missing")],
    )
    add(
        "content-none",
        "null content has no text",
        None,
        env(a),
        rejected=[(ks, 0, "handle_missing")],
    )
    add(
        "excerpt-far-from-handle",
        "the excerpt may appear anywhere in the content",
        a["excerpt"] + "\n" + "x" * 10_000 + f"\n#knowledge-source-{a['id']}",
        env(a),
        sources=[a["id"]],
    )
    add(
        "float-version",
        "version 1.0 equals 1 (JSON cannot tell them apart)",
        content_for(a),
        env(a, version=1.0),
        sources=[a["id"]],
    )

    # dual layout
    native = {
        "version": 1,
        "sources": [{"id": "0123456789abcdef0123456789abcdef-1", "provider": "ragflow"}],
    }
    add(
        "dual-layout",
        "native object in knowledge_sources, shared records in retrieval_sources",
        content_for(a, b),
        {"knowledge_sources": native, "knowledge_sources_version": 1, rs: [a, b]},
        sources=[a["id"], b["id"]],
    )
    add(
        "native-only",
        "a native snapshot alone carries no shared records",
        "[citation:1](#knowledge-x)",
        {"knowledge_sources": native},
    )
    add(
        "both-arrays",
        "knowledge_sources array first, then retrieval_sources",
        content_for(a, b),
        {"knowledge_sources": [a], "knowledge_sources_version": 1, rs: [b]},
        sources=[a["id"], b["id"]],
    )
    add(
        "dual-duplicate",
        "a duplicate across both arrays keeps the first",
        content_for(a),
        {"knowledge_sources": [a], "knowledge_sources_version": 1, rs: [a]},
        sources=[a["id"]],
        rejected=[(rs, 0, "duplicate")],
    )
    add(
        "retrieval-not-array",
        "retrieval_sources must be an array",
        content_for(a),
        {"knowledge_sources_version": 1, rs: {"0": a}},
        error="not_an_array",
        schema_valid=False,
    )
    add(
        "dual-bad-record",
        "a bad record in retrieval_sources is reported under that key",
        content_for(a),
        {"knowledge_sources": native, "knowledge_sources_version": 1, rs: [a, {"id": "x"}]},
        sources=[a["id"]],
        rejected=[(rs, 1, "bad_field")],
        schema_valid=False,
    )

    # no envelope
    add("no-artifact", "null artifact", content_for(a), None, schema_valid=False)
    add(
        "artifact-list",
        "an artifact that is not an object carries no envelope",
        content_for(a),
        [a],
        schema_valid=False,
    )
    add(
        "artifact-string",
        "a string artifact carries no envelope",
        content_for(a),
        "knowledge_sources",
        schema_valid=False,
    )
    add("unrelated-artifact", "an object without reserved keys", content_for(a), {"rows": [1, 2]})
    add(
        "version-only",
        "a version key alone carries nothing",
        content_for(a),
        {"knowledge_sources_version": 2},
        schema_valid=False,
    )

    # envelope-level faults
    add(
        "version-2",
        "version 2 rejects the envelope",
        content_for(a),
        env(a, version=2),
        error="bad_version",
        schema_valid=False,
    )
    add(
        "version-string",
        'version "1" rejects the envelope',
        content_for(a),
        env(a, version="1"),
        error="bad_version",
        schema_valid=False,
    )
    add(
        "version-true",
        "version true rejects the envelope",
        content_for(a),
        env(a, version=True),
        error="bad_version",
        schema_valid=False,
    )
    add(
        "version-missing",
        "a missing version rejects the envelope",
        content_for(a),
        {"knowledge_sources": [a]},
        error="bad_version",
        schema_valid=False,
    )
    add(
        "version-null",
        "a null version rejects the envelope",
        content_for(a),
        env(a, version=None),
        error="bad_version",
        schema_valid=False,
    )
    add(
        "not-an-array-string",
        "knowledge_sources as a string",
        content_for(a),
        {"knowledge_sources_version": 1, "knowledge_sources": "x"},
        error="not_an_array",
        schema_valid=False,
    )
    add(
        "not-an-array-null",
        "knowledge_sources as null",
        content_for(a),
        {"knowledge_sources_version": 1, "knowledge_sources": None},
        error="not_an_array",
        schema_valid=False,
    )
    many = [rec(excerpt=f"Deer fact number {i}.") for i in range(101)]
    add(
        "records-100",
        "exactly 100 records is allowed",
        content_for(*many[:100]),
        env(*many[:100]),
        sources=[r["id"] for r in many[:100]],
    )
    add(
        "records-101",
        "101 records reject the envelope",
        content_for(*many),
        env(*many),
        error="too_many_records",
        schema_valid=False,
    )
    add(
        "records-101-dual",
        "more than 100 across both arrays rejects the envelope",
        content_for(*many),
        {"knowledge_sources_version": 1, "knowledge_sources": many[:60], rs: many[60:]},
        error="too_many_records",
        schema_valid=True,
    )

    # record-level: forgery and verification
    forged = {**a, "title": "Official policy.md"}
    add(
        "forged-id",
        "a changed title no longer matches the id",
        content_for(forged),
        env(forged),
        rejected=[(ks, 0, "id_mismatch")],
    )
    upper = {**a, "id": a["id"].upper()}
    add(
        "uppercase-hex",
        "uppercase hex ids are invalid",
        content_for(upper),
        env(upper),
        rejected=[(ks, 0, "bad_field")],
        schema_valid=False,
    )
    zw = {**a, "id": a["id"][:16] + "\u200b" + a["id"][17:]}
    add(
        "zero-width-in-id",
        "a zero-width space in an id",
        content_for(zw),
        env(zw),
        rejected=[(ks, 0, "bad_field")],
        schema_valid=False,
    )
    homoglyph = {**a, "id": a["id"][:5] + "\u0430" + a["id"][6:]}  # U+0430 CYRILLIC SMALL LETTER A
    add(
        "homoglyph-in-id",
        "a Cyrillic homoglyph in an id",
        content_for(homoglyph),
        env(homoglyph),
        rejected=[(ks, 0, "bad_field")],
        schema_valid=False,
    )
    short = {**a, "id": a["id"][:31]}
    add(
        "short-id",
        "31 hex digits",
        content_for(short),
        env(short),
        rejected=[(ks, 0, "bad_field")],
        schema_valid=False,
    )
    add(
        "excerpt-not-in-content",
        "the excerpt must be verbatim in content",
        f"[citation:guide.md](#knowledge-source-{a['id']})\nsomething else",
        env(a),
        rejected=[(ks, 0, "excerpt_missing")],
    )
    add(
        "excerpt-case-differs",
        "verbatim means case-sensitive",
        f"[citation:guide.md](#knowledge-source-{a['id']})\n{a['excerpt'].upper()}",
        env(a),
        rejected=[(ks, 0, "excerpt_missing")],
    )
    add(
        "handle-missing",
        "the handle must be in content",
        a["excerpt"],
        env(a),
        rejected=[(ks, 0, "handle_missing")],
    )
    add(
        "handle-of-other-id",
        "another record's handle does not count",
        content_for(b) + "\n" + a["excerpt"],
        env(a, b),
        sources=[b["id"]],
        rejected=[(ks, 0, "handle_missing")],
    )
    add(
        "duplicate-ids",
        "duplicates: the first is kept",
        content_for(a),
        env(a, a),
        sources=[a["id"]],
        rejected=[(ks, 1, "duplicate")],
    )
    add(
        "mixed-good-bad",
        "good records survive bad neighbours",
        content_for(a, b, forged),
        env(a, forged, b),
        sources=[a["id"], b["id"]],
        rejected=[(ks, 1, "id_mismatch")],
    )

    # record-level: field rules
    def bad(slug: str, description: str, record: Any, *, schema_valid: bool = False) -> None:
        add(
            slug,
            description,
            content_for(record)
            if isinstance(record, dict)
            and "title" in record
            and isinstance(record.get("excerpt"), str)
            and isinstance(record.get("id"), str)
            else "x",
            env(record),
            rejected=[(ks, 0, "bad_field")],
            schema_valid=schema_valid,
        )

    bad("unknown-field", "an unknown field", rec(score=0.9))
    bad("record-not-object", "a record that is a string", "abc")
    bad("record-null", "a null record", None)
    bad("missing-title", "title is required", {"id": "0" * 32, "provider": "x", "excerpt": "e"})
    bad("missing-provider", "provider is required", {"id": "0" * 32, "title": "t", "excerpt": "e"})
    bad("missing-id", "id is required", {"provider": "x", "title": "t", "excerpt": "e"})
    for slug, url in [
        ("url-javascript", "javascript:alert(1)"),
        ("url-data", "data:text/html,<script>alert(1)</script>"),
        ("url-userinfo", "https://user:pass@example.com/"),
        ("url-relative", "/docs/guide.md"),
        ("url-whitespace", "https://example.com/a b"),
        ("url-vbscript", "vbscript:msgbox(1)"),
        ("url-file", "file:///etc/passwd"),
        ("url-uppercase-scheme", "HTTPS://example.com/"),
        ("url-backslash", "https://evil.example\\@good.example/"),
        ("url-no-host", "https:///path"),
        ("url-protocol-relative", "//example.com/x"),
        ("url-newline", "https://example.com/\nx"),
    ]:
        bad(slug, f"invalid url: {url!r}", rec(url=url))
    add(
        "url-ipv6-port",
        "an IPv6 host with a port is valid",
        content_for(r := rec(url="http://[::1]:8080/x")),
        env(r),
        sources=[r["id"]],
    )
    long_url = "https://example.com/" + "a" * (2048 - len("https://example.com/"))
    add(
        "url-2048",
        "a 2,048 character URL is allowed",
        content_for(r := rec(url=long_url)),
        env(r),
        sources=[r["id"]],
    )
    bad("url-2049", "a 2,049 character URL is too long", rec(url=long_url + "a"))
    for slug, page, valid_schema in [
        ("page-0", 0, False),
        ("page-minus-1", -1, False),
        ("page-true", True, False),
        ("page-1.5", 1.5, False),
        ("page-1000001", 1_000_001, False),
        ("page-string", "3", False),
    ]:
        bad(slug, f"invalid page {page!r}", {**rec(), "page": page}, schema_valid=valid_schema)
    add(
        "page-1000000",
        "page 1,000,000 is allowed",
        content_for(r := rec(page=1_000_000)),
        env(r),
        sources=[r["id"]],
    )
    add(
        "page-float-integral",
        "page 2.0 is the integer 2",
        content_for(r := rec(page=2)),
        env({**r, "page": 2.0}),
        sources=[r["id"]],
    )
    bad(
        "lone-surrogate-title",
        "a lone surrogate in the title",
        {**rec(), "title": "deer\ud800.md"},
        schema_valid=False,
    )
    bad(
        "lone-surrogate-excerpt",
        "a lone trailing surrogate in the excerpt",
        {**rec(), "excerpt": "deer \udc00 text"},
        schema_valid=False,
    )
    bad("blank-title", "a blank title", {**rec(), "title": " \u3000\t"}, schema_valid=False)
    bad("empty-title", "an empty title", {**rec(), "title": ""}, schema_valid=False)
    bad("control-title", "a control character in the title", rec(title="guide\n.md"))
    bad("c1-title", "a C1 control character in the title", rec(title="guide\x85.md"))
    bad("blank-excerpt", "a blank excerpt", {**rec(), "excerpt": "\n\n  "}, schema_valid=False)
    bad("control-dataset", "a control character in dataset_name", rec(dataset_name="a\tb"))
    bad("blank-dataset", "a blank dataset_name", rec(dataset_name="  "))
    bad("provider-uppercase", "provider must be lowercase", rec(provider="LightRAG"))
    bad("provider-65", "provider longer than 64", rec(provider="p" * 65))
    add(
        "provider-64",
        "provider of 64 characters",
        content_for(r := rec(provider="p" * 64)),
        env(r),
        sources=[r["id"]],
    )
    add(
        "zwsp-title",
        "a zero-width space title is not blank",
        content_for(r := rec(title="\u200b")),
        env(r),
        sources=[r["id"]],
    )
    add(
        "title-512",
        "a 512 code point title",
        content_for(r := rec(title="t" * 512)),
        env(r),
        sources=[r["id"]],
    )
    bad("title-513", "a 513 code point title", rec(title="t" * 513))
    add(
        "title-512-astral",
        "512 astral code points (1,024 UTF-16 units) is allowed",
        content_for(r := rec(title="🦌" * 512)),
        env(r),
        sources=[r["id"]],
    )
    bad("title-513-astral", "513 astral code points", rec(title="🦌" * 513))
    add(
        "excerpt-20000",
        "a 20,000 code point excerpt",
        content_for(r := rec(excerpt="e" * 20_000)),
        env(r),
        sources=[r["id"]],
    )
    bad("excerpt-20001", "a 20,001 code point excerpt", rec(excerpt="e" * 20_001))
    add(
        "excerpt-20000-astral",
        "20,000 astral code points",
        content_for(r := rec(excerpt="🌰" * 20_000)),
        env(r),
        sources=[r["id"]],
    )
    bad("excerpt-20001-astral", "20,001 astral code points", rec(excerpt="🌰" * 20_001))
    add(
        "dataset-512",
        "a 512 code point dataset name",
        content_for(r := rec(dataset_name="d" * 512)),
        env(r),
        sources=[r["id"]],
    )
    bad("dataset-513", "a 513 code point dataset name", rec(dataset_name="d" * 513))
    bad("title-number", "a title that is a number", {**rec(), "title": 5})
    bad("excerpt-list", "an excerpt that is a list", {**rec(), "excerpt": ["a"]})
    bad(
        "dataset-null",
        "null is not allowed for an optional field (omit it)",
        {**rec(), "dataset_name": None},
    )
    native_record = {
        "id": "0123456789abcdef0123456789abcdef-1",
        "provider": "ragflow",
        "dataset_id": "d",
        "document_id": "doc",
        "chunk_id": "c",
        "dataset_name": "D",
        "document_name": "n.pdf",
        "text": "t",
        "truncated": False,
        "pages": [],
    }
    add(
        "native-record-in-shared",
        "a native record where shared records were expected",
        "x",
        env(native_record),
        rejected=[(ks, 0, "bad_field")],
        schema_valid=False,
    )
    add(
        "native-object-as-retrieval",
        "a native object in retrieval_sources",
        "x",
        {"knowledge_sources_version": 1, rs: native},
        error="not_an_array",
        schema_valid=False,
    )
    add(
        "html-title",
        "HTML in a title is just text (renderers escape it)",
        content_for(r := rec(title="<img src=x onerror=alert(1)>")),
        env(r),
        sources=[r["id"]],
    )
    add(
        "proto-key",
        "a __proto__ field is an unknown field",
        "x",
        env(
            json.loads(
                '{"__proto__": {"polluted": true}, "id": "'
                + a["id"]
                + '", "provider": "lightrag", "title": "guide.md", "excerpt": "Retrieved text about deer."}'
            )
        ),
        rejected=[(ks, 0, "bad_field")],
        schema_valid=False,
    )
    return cases


# ---------------------------------------------------------------- citations
def citation_cases() -> list[dict[str, Any]]:
    h1 = "0123456789abcdef0123456789abcdef"
    h2 = "fedcba9876543210fedcba9876543210"
    cases: list[dict[str, Any]] = []

    def c(
        kind: str,
        link: str,
        label: str,
        href: str,
        source_id: str | None = None,
        reason: str | None = None,
        occurrence: int = 0,
        raw_label: str | None = None,
    ) -> dict[str, Any]:
        return {
            "kind": kind,
            "link": link,
            "label": label,
            "raw_label": raw_label,
            "href": href,
            "source_id": source_id,
            "reason": reason,
            "occurrence": occurrence,
        }

    def add(
        slug: str,
        description: str,
        markdown: str,
        expected: list[dict[str, Any]],
        keep_ids: list[str] | None = None,
        relabeled: str | None = None,
    ) -> None:
        out = []
        for e in expected:
            start = -1
            for _ in range(e["occurrence"] + 1):
                start = markdown.index(e["link"], start + 1)
            raw = (
                e["raw_label"]
                if e["raw_label"] is not None
                else e["link"][1 : e["link"].index("](")]
            )
            out.append(
                {
                    "kind": e["kind"],
                    "label": e["label"],
                    "raw_label": raw,
                    "href": e["href"],
                    "source_id": e["source_id"],
                    "reason": e["reason"],
                    "start": start,
                    "end": start + len(e["link"]),
                }
            )
        case: dict[str, Any] = {
            "id": f"cit-{len(cases) + 1:03d}-{slug}",
            "description": description,
            "markdown": markdown,
            "expected": out,
        }
        if keep_ids is not None:
            case["keep_ids"] = keep_ids
            case["relabeled"] = relabeled
        cases.append(case)

    s1 = f"[citation:Guide](#knowledge-source-{h1})"
    s2 = f"[citation:Notes](#knowledge-source-{h2})"
    add(
        "shared",
        "the shared form",
        f"Deer eat acorns {s1}.",
        [c("shared", s1, "Guide", f"#knowledge-source-{h1}", h1)],
    )
    uc = f"[citation:Guide](#user-content-knowledge-source-{h1})"
    add(
        "user-content",
        "the sanitizer-prefixed form",
        f"See {uc}",
        [c("shared", uc, "Guide", f"#user-content-knowledge-source-{h1}", h1)],
    )
    add(
        "back-to-back",
        "two citations with nothing between",
        f"Fact.{s1}{s2}",
        [
            c("shared", s1, "Guide", f"#knowledge-source-{h1}", h1),
            c("shared", s2, "Notes", f"#knowledge-source-{h2}", h2),
        ],
    )
    for slug, bad_id in [
        ("uppercase", h1.upper()),
        ("short", h1[:31]),
        ("long", h1 + "0"),
        ("empty", ""),
        ("zwsp", h1[:10] + "\u200b" + h1[11:]),
        ("non-hex", "g" * 32),
    ]:
        link = f"[citation:X](#knowledge-source-{bad_id})"
        add(
            f"malformed-{slug}",
            f"malformed shared id ({slug})",
            f"Claim {link} end",
            [c("malformed", link, "X", f"#knowledge-source-{bad_id}", reason="bad_source_id")],
        )
    link = f"[citation:X](#user-content-knowledge-source-{h1}extra)"
    add(
        "malformed-user-content-suffix",
        "extra characters after the id",
        link,
        [
            c(
                "malformed",
                link,
                "X",
                f"#user-content-knowledge-source-{h1}extra",
                reason="bad_source_id",
            )
        ],
    )
    add(
        "code-span", "a citation inside a code span is not a citation", f"Use `{s1}` like this.", []
    )
    add(
        "double-backtick-span",
        "a citation inside a double-backtick span",
        f"``a ` {s1}`` and {s2}",
        [c("shared", s2, "Notes", f"#knowledge-source-{h2}", h2)],
    )
    add(
        "unmatched-backtick",
        "an unmatched backtick is literal",
        f"a ` b {s1}",
        [c("shared", s1, "Guide", f"#knowledge-source-{h1}", h1)],
    )
    add(
        "fence",
        "a citation inside a fenced block",
        f"```md\n{s1}\n```\nAfter {s2}",
        [c("shared", s2, "Notes", f"#knowledge-source-{h2}", h2)],
    )
    add("tilde-fence", "a tilde fence", f"~~~~\n{s1}\n~~~~\n", [])
    add(
        "unclosed-fence",
        "an unclosed fence runs to the end",
        f"{s2}\n```\n{s1}\n",
        [c("shared", s2, "Notes", f"#knowledge-source-{h2}", h2)],
    )
    add(
        "fence-indented-4",
        "a 4-space indented fence marker is indented code, which ends at the next unindented line",
        f"    ```\n{s1}\n",
        [c("shared", s1, "Guide", f"#knowledge-source-{h1}", h1)],
    )
    add(
        "fence-shorter-close",
        "a shorter closing run does not close the fence",
        f"````\n```\n{s1}\n````\n{s2}",
        [c("shared", s2, "Notes", f"#knowledge-source-{h2}", h2)],
    )
    img = f"![citation:Guide](#knowledge-source-{h1})"
    add("image", "image syntax is not a citation", f"Look {img}", [])
    img2 = f"![alt {s1}](https://example.com/x.png)"
    add(
        "link-in-image-alt",
        "a citation inside image alt text is not a citation",
        f"x {img2} {s2}",
        [c("shared", s2, "Notes", f"#knowledge-source-{h2}", h2)],
    )
    esc_img = f"\\![citation:Guide](#knowledge-source-{h1})"
    add(
        "escaped-bang",
        "an escaped ! makes the link a link again",
        esc_img,
        [c("shared", esc_img[2:], "Guide", f"#knowledge-source-{h1}", h1)],
    )
    web = "[citation:Deer Org](https://deer.example/facts)"
    add(
        "web",
        "a web citation",
        f"See {web}",
        [c("web", web, "Deer Org", "https://deer.example/facts")],
    )
    webh = "[citation:Old](http://deer.example/)"
    add(
        "web-http",
        "plain http is a web citation",
        webh,
        [c("web", webh, "Old", "http://deer.example/")],
    )
    js = "[citation:Click](javascript:alert(1))"
    add(
        "javascript-href-parens",
        "balanced parentheses belong to the destination (CommonMark); the label makes it malformed",
        js,
        [c("malformed", js, "Click", "javascript:alert(1)", reason="unsupported_destination")],
    )
    js2 = "[citation:Click](javascript:void)"
    add(
        "javascript-href",
        "javascript: with a citation label is malformed, never navigable",
        js2,
        [c("malformed", js2, "Click", "javascript:void", reason="unsupported_destination")],
    )
    add(
        "ordinary-link",
        "an ordinary link is not a citation",
        "[docs](https://example.com) and [x](#anchor)",
        [],
    )
    nat = f"[citation:1](#knowledge-{h1}-1)"
    add(
        "native",
        "a native RAGFlow citation",
        f"RAG {nat}",
        [c("native", nat, "1", f"#knowledge-{h1}-1", f"{h1}-1")],
    )
    nat2 = f"[citation:12](#user-content-knowledge-{h1}-999)"
    add(
        "native-user-content",
        "a prefixed native citation with n=999",
        nat2,
        [c("native", nat2, "12", f"#user-content-knowledge-{h1}-999", f"{h1}-999")],
    )
    for slug, suffix in [("zero", "0"), ("leading-zero", "01"), ("1000", "1000")]:
        bad_nat = f"[citation:1](#knowledge-{h1}-{suffix})"
        add(
            f"native-bad-{slug}",
            f"native n={suffix} is not native; a citation label makes it malformed",
            bad_nat,
            [
                c(
                    "malformed",
                    bad_nat,
                    "1",
                    f"#knowledge-{h1}-{suffix}",
                    reason="unsupported_destination",
                )
            ],
        )
    plain_nat = f"[1](#knowledge-{h1}-2)"
    add(
        "native-plain-label",
        "native destinations count whatever the label",
        plain_nat,
        [c("native", plain_nat, "1", f"#knowledge-{h1}-2", f"{h1}-2")],
    )
    plain_shared = f"[Guide](#knowledge-source-{h1})"
    add(
        "shared-plain-label",
        "shared destinations count whatever the label",
        plain_shared,
        [c("shared", plain_shared, "Guide", f"#knowledge-source-{h1}", h1)],
    )
    heading = "[citation:Setup](#knowledge-base-setup)"
    add(
        "citation-other-anchor",
        "a citation label with another anchor is malformed",
        heading,
        [
            c(
                "malformed",
                heading,
                "Setup",
                "#knowledge-base-setup",
                reason="unsupported_destination",
            )
        ],
    )
    esc = f"[citation:A \\[draft\\] guide](#knowledge-source-{h1})"
    add(
        "escaped-brackets",
        "escaped brackets in the label",
        esc,
        [c("shared", esc, "A [draft] guide", f"#knowledge-source-{h1}", h1)],
    )
    nested = f"[citation:A [v2] guide](#knowledge-source-{h1})"
    add(
        "balanced-brackets",
        "balanced brackets in the label",
        nested,
        [c("shared", nested, "A [v2] guide", f"#knowledge-source-{h1}", h1)],
    )
    bs = f"[citation:C:\\\\docs](#knowledge-source-{h1})"
    add(
        "escaped-backslash",
        "an escaped backslash in the label",
        bs,
        [c("shared", bs, "C:\\docs", f"#knowledge-source-{h1}", h1)],
    )
    add(
        "escaped-open-bracket",
        "an escaped [ does not start a link",
        f"\\[citation:Guide](#knowledge-source-{h1})",
        [],
    )
    add(
        "unterminated-dest",
        "an unterminated destination at the end of a stream",
        f"Fact [citation:Guide](#knowledge-source-{h1[:20]}",
        [],
    )
    add(
        "unterminated-label",
        "an unterminated label at the end of a stream",
        "Fact [citation:Gui",
        [],
    )
    add(
        "unterminated-after-complete",
        "a complete citation then a partial one",
        f"{s1} and [citation:N](#knowledge-so",
        [c("shared", s1, "Guide", f"#knowledge-source-{h1}", h1)],
    )
    outer = f"[citation:Outer {s2}](#knowledge-source-{h1})"
    add(
        "nested-links",
        "links do not nest: the inner link wins",
        outer,
        [c("shared", s2, "Notes", f"#knowledge-source-{h2}", h2)],
    )
    add(
        "space-in-dest",
        "a destination with a space is not a link",
        f"[citation:X](#knowledge-source-{h1} x)",
        [],
    )
    add(
        "space-before-dest",
        "no space allowed between ] and (",
        f"[citation:X] (#knowledge-source-{h1})",
        [],
    )
    add(
        "blank-line-in-label",
        "a blank line ends the paragraph",
        f"[citation:X\n\ny](#knowledge-source-{h1})",
        [],
    )
    ml = f"[citation:X\ny](#knowledge-source-{h1})"
    add(
        "newline-in-label",
        "a single newline inside a label is fine",
        ml,
        [c("shared", ml, "X\ny", f"#knowledge-source-{h1}", h1)],
    )
    cj = f"[citation:鹿🦌](#knowledge-source-{h1})"
    add(
        "astral-offsets",
        "offsets count code points, not UTF-16 units",
        f"🦌🦌 {cj} 🦌 {s2}",
        [
            c("shared", cj, "鹿🦌", f"#knowledge-source-{h1}", h1),
            c("shared", s2, "Notes", f"#knowledge-source-{h2}", h2),
        ],
    )
    long_label = "a" * (2048 - len("citation:"))
    ll = f"[citation:{long_label}](#knowledge-source-{h1})"
    add(
        "label-2048",
        "a label of exactly 2,048 code points",
        ll,
        [c("shared", ll, long_label, f"#knowledge-source-{h1}", h1)],
    )
    ll2 = f"[citation:{long_label}a](#knowledge-source-{h1})"
    add(
        "label-2049",
        "a label of 2,049 code points is still a link: CommonMark sets no limit on link text",
        ll2,
        [c("shared", ll2, long_label + "a", f"#knowledge-source-{h1}", h1)],
    )
    long_dest = "https://example.com/" + "d" * (2048 - len("https://example.com/"))
    ld = f"[citation:W]({long_dest})"
    add(
        "destination-2048",
        "a destination of exactly 2,048 code points",
        ld,
        [c("web", ld, "W", long_dest)],
    )
    ld2 = f"[citation:W]({long_dest}d)"
    add(
        "destination-2049",
        "a destination of 2,049 code points is still a link: CommonMark sets no limit",
        ld2,
        [c("web", ld2, "W", long_dest + "d")],
    )
    add(
        "relabel-orphans",
        "orphaned shared citations become their labels",
        f"A {s1} B {s2} C {nat}",
        [
            c("shared", s1, "Guide", f"#knowledge-source-{h1}", h1),
            c("shared", s2, "Notes", f"#knowledge-source-{h2}", h2),
            c("native", nat, "1", f"#knowledge-{h1}-1", f"{h1}-1"),
        ],
        keep_ids=[h2],
        relabeled=f"A Guide B {s2} C {nat}",
    )
    add(
        "relabel-keeps-escapes",
        "relabel keeps the label as written (escapes intact)",
        f"{esc} and `{s1}`",
        [c("shared", esc, "A [draft] guide", f"#knowledge-source-{h1}", h1)],
        keep_ids=[],
        relabeled=f"A \\[draft\\] guide and `{s1}`",
    )
    add(
        "relabel-plain-label",
        "a label without citation: is kept whole",
        plain_shared,
        [c("shared", plain_shared, "Guide", f"#knowledge-source-{h1}", h1)],
        keep_ids=[],
        relabeled="Guide",
    )
    add(
        "relabel-nothing",
        "nothing to relabel leaves the text identical",
        f"{s1}",
        [c("shared", s1, "Guide", f"#knowledge-source-{h1}", h1)],
        keep_ids=[h1],
        relabeled=s1,
    )
    crlf = f"[citation:X\r\n\r\ny](#knowledge-source-{h1})"
    add("crlf-blank-line", "CRLF blank lines end the paragraph too", crlf, [])
    add(
        "html-in-label",
        "HTML in labels is just text",
        f"[citation:<b>x</b>](#knowledge-source-{h1})",
        [
            c(
                "shared",
                f"[citation:<b>x</b>](#knowledge-source-{h1})",
                "<b>x</b>",
                f"#knowledge-source-{h1}",
                h1,
            )
        ],
    )
    add(
        "code-span-in-label",
        "a ] inside a code span in the label does not close it",
        f"[citation:a `]` b](#knowledge-source-{h1})",
        [
            c(
                "shared",
                f"[citation:a `]` b](#knowledge-source-{h1})",
                "a `]` b",
                f"#knowledge-source-{h1}",
                h1,
            )
        ],
    )
    ladder = f"[citation:[see]](#knowledge-source-{h1})(#knowledge-source-{h2})"
    add(
        "relabel-forms-new-link",
        "relabeling can form a new link; it repeats until none is left",
        ladder,
        [
            c(
                "shared",
                f"[citation:[see]](#knowledge-source-{h1})",
                "[see]",
                f"#knowledge-source-{h1}",
                h1,
            )
        ],
        keep_ids=[],
        relabeled="see",
    )
    add(
        "relabel-forms-kept-link",
        "a link formed by relabeling to a kept id stays",
        ladder,
        [
            c(
                "shared",
                f"[citation:[see]](#knowledge-source-{h1})",
                "[see]",
                f"#knowledge-source-{h1}",
                h1,
            )
        ],
        keep_ids=[h2],
        relabeled=f"[see](#knowledge-source-{h2})",
    )
    outer2 = f"[citation:A [citation:B](#knowledge-source-{h2})](#knowledge-source-{h1})"
    add(
        "relabel-unnests",
        "relabeling an inner link lets the outer one parse; it is relabeled too",
        outer2,
        [c("shared", f"[citation:B](#knowledge-source-{h2})", "B", f"#knowledge-source-{h2}", h2)],
        keep_ids=[],
        relabeled="A B",
    )
    commonmark_cases(add, c, h1, h2)
    return cases


# ------------------------------------------------ citations: CommonMark links (issue 11)
def commonmark_cases(add: Any, c: Any, h1: str, h2: str) -> None:
    """Cases where only a real CommonMark parser gets it right: reference links, titles,
    destination decoding, and every construct that is not a link (contracts/README.md §4)."""
    d1 = f"#knowledge-source-{h1}"
    d2 = f"#knowledge-source-{h2}"
    s1 = f"[citation:Guide]({d1})"

    def shared(link: str, label: str, raw: str | None = None, *, h: str = h1, occ: int = 0) -> Any:
        return c("shared", link, label, f"#knowledge-source-{h}", h, occurrence=occ, raw_label=raw)

    # Reference links: full, collapsed, shortcut; definitions anywhere in the document.
    md = f"Deer eat acorns [citation:Guide][1].\n\n[1]: {d1}"
    add(
        "ref-full",
        "a full reference link to a shared handle",
        md,
        [shared("[citation:Guide][1]", "Guide", "citation:Guide")],
    )
    md = f"[citation:Guide][]\n\n[citation:Guide]: {d1}"
    add(
        "ref-collapsed",
        "a collapsed reference link: the whole `[…][]` is the link",
        md,
        [shared("[citation:Guide][]", "Guide", "citation:Guide")],
    )
    md = f"See [citation:Guide].\n\n[citation:Guide]: {d1}"
    add(
        "ref-shortcut",
        "a shortcut reference link",
        md,
        [shared("[citation:Guide]", "Guide", "citation:Guide")],
    )
    md = f"[citation:A][Deer]\n\n[DEER]: {d1}"
    add(
        "ref-case-fold",
        "reference labels match case-insensitively",
        md,
        [shared("[citation:A][Deer]", "A", "citation:A")],
    )
    md = f"[citation:A][x   y]\n\n[X Y]: {d1}"
    add(
        "ref-whitespace-fold",
        "reference labels match with inner white space collapsed",
        md,
        [shared("[citation:A][x   y]", "A", "citation:A")],
    )
    md = f"[citation:A][nope]\n\n[1]: {d1}"
    add("ref-undefined", "a reference to an undefined label is text", md, [])
    md = f"[citation:A][1]\n\n[1]: {d1}\n[1]: {d2}"
    add(
        "ref-first-definition-wins",
        "the first of two definitions with one label wins",
        md,
        [shared("[citation:A][1]", "A", "citation:A")],
    )
    md = f"[1]: {d2}\n\nBefore the use: [citation:B][1]"
    add(
        "ref-definition-before",
        "a definition may come before its use",
        md,
        [shared("[citation:B][1]", "B", "citation:B", h=h2)],
    )
    md = f'[citation:A][1]\n\n[1]: {d1} "Deer guide"'
    add(
        "ref-definition-title",
        "a definition with a title",
        md,
        [shared("[citation:A][1]", "A", "citation:A")],
    )
    md = f"[citation:A][1]\n\n[1]:\n  <{d1}>\n  'title'"
    add(
        "ref-definition-pointy-multiline",
        "a definition spread over lines, <…> destination",
        md,
        [shared("[citation:A][1]", "A", "citation:A")],
    )
    md = f"[citation:A][1]\n\n    [1]: {d1}"
    add(
        "ref-definition-in-code", "an indented definition is code, so the reference is text", md, []
    )
    md = f"[citation:A][1]\n\n> [1]: {d1}"
    add(
        "ref-definition-in-quote",
        "a definition inside a block quote still defines",
        md,
        [shared("[citation:A][1]", "A", "citation:A")],
    )
    md = f"[citation:A][1]\n\n```\n[1]: {d1}\n```"
    add("ref-definition-in-fence", "a definition inside a fence is code", md, [])
    md = f"[citation:A] [1]\n\n[1]: {d1}"
    add(
        "ref-space-before-label",
        "no space between the text and the reference label: "
        "`[citation:A]` is an undefined shortcut and `[1]` a shortcut of its own",
        md,
        [shared("[1]", "1", "1")],
    )
    md = "[citation:Web][w]\n\n[w]: https://deer.example/facts"
    add(
        "ref-web",
        "a reference-style web citation",
        md,
        [
            c(
                "web",
                "[citation:Web][w]",
                "Web",
                "https://deer.example/facts",
                raw_label="citation:Web",
            )
        ],
    )
    md = f"[citation:1][n]\n\n[n]: #knowledge-{h1}-3"
    add(
        "ref-native",
        "a reference-style native citation",
        md,
        [
            c(
                "native",
                "[citation:1][n]",
                "1",
                f"#knowledge-{h1}-3",
                f"{h1}-3",
                raw_label="citation:1",
            )
        ],
    )
    md = f"[citation:A][1]\n\n[1]: #knowledge-source-{h1[:8]}"
    add(
        "ref-malformed",
        "a reference to a bad shared id is malformed",
        md,
        [
            c(
                "malformed",
                "[citation:A][1]",
                "A",
                f"#knowledge-source-{h1[:8]}",
                reason="bad_source_id",
                raw_label="citation:A",
            )
        ],
    )
    md = f"![citation:A][1]\n\n[1]: {d1}"
    add("ref-image", "a reference-style image is not a citation", md, [])
    md = f"[citation:A][1] and [citation:B][1]\n\n[1]: {d1}"
    add(
        "ref-used-twice",
        "one definition cited twice",
        md,
        [
            shared("[citation:A][1]", "A", "citation:A"),
            shared("[citation:B][1]", "B", "citation:B"),
        ],
    )
    md = f"[1]: {d1}"
    add("ref-definition-only", "a definition alone renders nothing and cites nothing", md, [])

    # Inline destinations as CommonMark decodes them.
    link = f'[citation:Guide]({d1} "The guide")'
    add("title-double", "a double-quoted title", link, [shared(link, "Guide")])
    link = f"[citation:Guide]({d1} 'The guide')"
    add("title-single", "a single-quoted title", link, [shared(link, "Guide")])
    link = f"[citation:Guide]({d1} (The guide))"
    add("title-parens", "a parenthesized title", link, [shared(link, "Guide")])
    link = f'[citation:Guide]({d1}\n"The guide")'
    add("title-next-line", "the title may follow on the next line", link, [shared(link, "Guide")])
    add(
        "title-unquoted",
        "an unquoted word after the destination is not a title: no link",
        f"[citation:Guide]({d1} guide)",
        [],
    )
    link = f'[citation:Guide]({d1} "a ) b")'
    add(
        "title-with-paren",
        "a ) inside a quoted title does not end the link",
        link,
        [shared(link, "Guide")],
    )
    link = f"[citation:Guide](   {d1}   )"
    add("spaces-around-destination", "spaces around the destination", link, [shared(link, "Guide")])
    link = f"[citation:Guide](\n{d1}\n)"
    add(
        "newlines-around-destination",
        "line breaks around the destination",
        link,
        [shared(link, "Guide")],
    )
    link = f"[citation:Guide](<{d1}>)"
    add("pointy-destination", "a <…> destination", link, [shared(link, "Guide")])
    link = f"[citation:Guide](<{d1} x>)"
    add(
        "pointy-destination-space",
        "a <…> destination may hold a space (then the id is bad)",
        link,
        [c("malformed", link, "Guide", f"{d1} x", reason="bad_source_id")],
    )
    add(
        "pointy-unclosed", "an unclosed < destination is not a link", f"[citation:Guide](<{d1})", []
    )
    link = f"[citation:Guide](#knowledge\\-source\\-{h1})"
    add(
        "escaped-destination",
        "backslash escapes in the destination are resolved",
        link,
        [shared(link, "Guide")],
    )
    link = f"[citation:Guide](#knowledge-source-&#48;{h1[1:]})"
    add(
        "entity-decimal-destination",
        "a decimal entity in the destination is decoded",
        link,
        [shared(link, "Guide")],
    )
    link = f"[citation:Guide](#knowledge-source-&#x30;{h1[1:]})"
    add(
        "entity-hex-destination",
        "a hex entity in the destination is decoded",
        link,
        [shared(link, "Guide")],
    )
    link = f"[citation:Guide](&num;knowledge-source-{h1})"
    add(
        "entity-named-destination",
        "a named entity in the destination is decoded",
        link,
        [shared(link, "Guide")],
    )
    link = f"[citation:Guide](#knowledge-source-{h1}&amp;)"
    add(
        "entity-amp-destination",
        "an entity decoding to extra text makes the id bad",
        link,
        [c("malformed", link, "Guide", f"{d1}&", reason="bad_source_id")],
    )
    link = f"[citation:Guide](#knowledge-source-{h1[:8]}%20x)"
    add(
        "percent-not-decoded",
        "percent-encoding is not decoded: the id is bad",
        link,
        [c("malformed", link, "Guide", f"#knowledge-source-{h1[:8]}%20x", reason="bad_source_id")],
    )
    link = "[citation:X](https://deer.example/a_(b))"
    add(
        "web-balanced-parens",
        "balanced parentheses in a web destination",
        link,
        [c("web", link, "X", "https://deer.example/a_(b)")],
    )
    add(
        "unbalanced-paren",
        "an unbalanced ( in the destination is not a link",
        f"[citation:X](#knowledge-source-{h1}(x)",
        [],
    )
    link = "[citation:Empty]()"
    add(
        "empty-destination",
        "an empty destination is a link; the label makes it malformed",
        link,
        [c("malformed", link, "Empty", "", reason="unsupported_destination")],
    )
    link = f"[]({d1})"
    add("empty-label", "an empty label is still a link", link, [shared(link, "")])

    # Not links: code, HTML, autolinks.
    add("indented-code", "an indented citation is code", f"    {s1}\n", [])
    add("indented-code-tab", "a tab-indented citation is code", f"\t{s1}\n", [])
    md = f"Para\n    {s1}"
    add(
        "lazy-continuation",
        "four spaces after a paragraph line continue it: a link",
        md,
        [shared(s1, "Guide")],
    )
    add("html-block", "a citation inside an HTML block is raw HTML", f"<div>\n{s1}\n</div>", [])
    md = f"<div>\n\n{s1}\n\n</div>"
    add(
        "html-block-blank-lines",
        "blank lines end an HTML block: the citation is Markdown",
        md,
        [shared(s1, "Guide")],
    )
    add("html-comment-block", "a citation inside an HTML comment", f"<!-- {s1} -->", [])
    add(
        "inline-html-attribute",
        "a citation inside an HTML attribute is inline HTML",
        f'Text <a title="{s1}">x</a>',
        [],
    )
    add(
        "inline-html-comment",
        "a citation inside an inline HTML comment",
        f"Text <!-- {s1} --> end",
        [],
    )
    add("autolink", "an autolink is not a citation", "See <https://deer.example/facts>.", [])
    add(
        "autolink-swallows-link",
        "an autolink binds tighter than the brackets",
        f"<https://deer.example/[citation:x]({d1})>",
        [],
    )
    link = f"[citation:A <b>x</b> B]({d1})"
    add(
        "inline-html-in-label",
        "inline HTML inside a label keeps the link",
        link,
        [shared(link, "A <b>x</b> B")],
    )
    link = f"[citation:A `](x)` B]({d1})"
    add(
        "code-span-hides-bracket",
        "a `](x)` inside a code span in the label is code",
        link,
        [shared(link, "A `](x)` B", "citation:A `](x)` B")],
    )
    add(
        "escaped-close-bracket",
        "an escaped ] does not close the label",
        f"[citation:A\\]({d1})",
        [],
    )
    link = f"[citation:A\\]]({d1})"
    add("escaped-close-then-close", "an escaped ] then a real one", link, [shared(link, "A]")])

    # Blocks that contain links.
    link = f"[citation:G]({d1})"
    add("heading", "a citation in an ATX heading", f"# Facts {link} #", [shared(link, "G")])
    add(
        "setext-heading",
        "a citation in a setext heading",
        f"Facts {link}\n===",
        [shared(link, "G")],
    )
    add("list-item", "a citation in a list item", f"- one\n- two {link}", [shared(link, "G")])
    add("block-quote", "a citation in a block quote", f"> quoted {link}", [shared(link, "G")])
    add(
        "block-quote-lazy",
        "a lazy block-quote continuation",
        f"> quoted\n{link}",
        [shared(link, "G")],
    )
    link2 = f"[citation:*Deer* **guide**]({d1})"
    add("emphasis-in-label", "emphasis inside a label", link2, [shared(link2, "*Deer* **guide**")])
    link3 = f"*[citation:G]({d1})*"
    add("emphasis-around", "emphasis around a citation", link3, [shared(link3[1:-1], "G")])
    add(
        "label-prefix-case",
        "`Citation:` is not the citation prefix: a web link is ordinary",
        "[Citation:Web](https://deer.example/)",
        [],
    )
    link = f"[citation: Spaced]({d1})"
    add(
        "label-prefix-space",
        "the label after `citation:` keeps its leading space",
        link,
        [shared(link, " Spaced")],
    )
    link = f"[citation:A &amp; B]({d1})"
    add(
        "entity-in-label",
        "an entity in the label stays as written in raw_label and label",
        link,
        [shared(link, "A &amp; B")],
    )
    md = f"[citation:A]({d1})[citation:B]({d2})"
    add(
        "adjacent-links",
        "adjacent links",
        md,
        [shared(f"[citation:A]({d1})", "A"), shared(f"[citation:B]({d2})", "B", h=h2)],
    )
    md = f"[[citation:A]({d1})]"
    add(
        "link-in-brackets",
        "literal brackets around a link",
        md,
        [shared(f"[citation:A]({d1})", "A")],
    )
    add("bang-before-escaped", "`!\\[` is not an image opener", f"!\\[citation:A]({d1})", [])

    # Streaming: an unterminated link at the end of a message is not a citation yet.
    add(
        "stream-pointy-unclosed",
        "a stream cut inside a <…> destination",
        f"Fact [citation:Guide](<{d1}",
        [],
    )
    add(
        "stream-title-unclosed",
        "a stream cut inside a title",
        f'Fact [citation:Guide]({d1} "The gu',
        [],
    )
    add("stream-before-paren", "a stream cut right after the label", "Fact [citation:Guide]", [])

    # Relabeling reference-style and titled links; the definition stays (it renders nothing).
    md = f"A [citation:Guide][1] B\n\n[1]: {d1}"
    add(
        "relabel-reference",
        "a reference-style orphan becomes its label",
        md,
        [shared("[citation:Guide][1]", "Guide", "citation:Guide")],
        keep_ids=[],
        relabeled=f"A Guide B\n\n[1]: {d1}",
    )
    md = f'A [citation:Guide]({d1} "t") B'
    add(
        "relabel-title",
        "a titled orphan is replaced whole",
        md,
        [shared(f'[citation:Guide]({d1} "t")', "Guide")],
        keep_ids=[],
        relabeled="A Guide B",
    )
    md = f"`{s1}` {s1}"
    add(
        "relabel-skips-code",
        "relabeling leaves code spans alone",
        md,
        [shared(s1, "Guide", occ=1)],
        keep_ids=[],
        relabeled=f"`{s1}` Guide",
    )
    deep = "[" * 6 + "a" + f"]({d1})" * 6
    escaped = "\\[" + "a" + f"\\]({d1})"
    add(
        "relabel-deep-nesting",
        "nesting deeper than the plain passes: the last pass escapes the block's brackets",
        deep,
        [shared("[a" + f"]({d1})", "a")],
        keep_ids=[],
        relabeled=escaped,
    )

    # The pass limit (MAX_PLAIN_RELABEL_PASSES = 4): at it, one past it, and what escaping does.
    def nest(depth: int) -> str:
        return "[" * depth + "a" + f"]({d1})" * depth

    add(
        "relabel-nesting-at-limit",
        "links nested 4 deep: 4 plain passes reach the fixpoint",
        nest(4),
        [shared("[a" + f"]({d1})", "a")],
        keep_ids=[],
        relabeled="a",
    )
    add(
        "relabel-nesting-past-limit",
        "nested 5 deep: the fifth pass escapes, but no literal bracket is left to escape",
        nest(5),
        [shared("[a" + f"]({d1})", "a")],
        keep_ids=[],
        relabeled="a",
    )
    md = f"{nest(6)} [b] and [k]({d2})\n\nNext [c] paragraph"
    add(
        "relabel-escapes-only-the-changed-block",
        "the escaping pass escapes literal brackets of the changed paragraph only, never a kept "
        "link's or another paragraph's",
        md,
        [shared("[a" + f"]({d1})", "a"), shared(f"[k]({d2})", "k", h=h2)],
        keep_ids=[h2],
        relabeled=f"\\[a\\]({d1}) \\[b\\] and [k]({d2})\n\nNext [c] paragraph",
    )

    md = f"{nest(6)} <https://deer.example/[x]> [ref] ![i [c]](j)\n\n[ref]: /u"
    add(
        "relabel-escaping-spares-links-images-autolinks",
        "the escaping pass leaves the brackets of autolinks, other links and images alone",
        md,
        [shared("[a" + f"]({d1})", "a")],
        keep_ids=[],
        relabeled=f"\\[a\\]({d1}) <https://deer.example/[x]> [ref] ![i [c]](j)\n\n[ref]: /u",
    )

    # Past MAX_NESTING_DEPTH (32) block-quote and list markers on a line are text, as the
    # renderer parses it (its guard escapes them): what follows is a paragraph, whatever it would
    # be deeper down, so a link there is a chip and a citation alike.
    md = ">" * 32 + f"     {s1}"
    add(
        "nesting-at-limit-indented-code",
        "32 nested quotes: the indented line is code, no citation",
        md,
        [],
    )
    md = ">" * 33 + f"     {s1}"
    add(
        "nesting-past-limit-indented-code",
        "33 nested quotes: the 33rd marker is text, so the indented line is a paragraph and its "
        "link a citation",
        md,
        [shared(s1, "Guide", "citation:Guide")],
        keep_ids=[],
        relabeled=">" * 33 + "     Guide",
    )
    md = "\n".join(["> " * 33 + "~~~", "> " * 33 + s1, "> " * 33 + "~~~"])
    add(
        "nesting-past-limit-fence",
        "a fence 33 quotes deep is text: the link between its fences is a citation (with backticks "
        "the fences would make a code span of the paragraph instead)",
        md,
        [shared(s1, "Guide", "citation:Guide")],
    )
    md = "\n".join(["- " * 33 + "<div>", "  " * 33 + s1, "", "1. " * 34 + f"    {s1}"])
    add(
        "nesting-past-limit-html-and-lists",
        "an HTML block 33 list items deep and indented code 34 deep are paragraphs",
        md,
        [shared(s1, "Guide", "citation:Guide"), shared(s1, "Guide", "citation:Guide", occ=1)],
    )


def main() -> None:
    VECTORS.mkdir(parents=True, exist_ok=True)
    files = {
        "source_ids": (
            "Source ids: record -> expected_id (contracts/README.md §2).",
            source_id_cases(),
        ),
        "envelopes": (
            "read_envelope(content, artifact) -> sources/rejected/error, plus the schema verdict (§1, §3).",
            envelope_cases(),
        ),
        "citations": (
            "find_citations(markdown) and relabel_orphans (§4). Offsets are code points.",
            citation_cases(),
        ),
    }
    for name, (description, cases) in files.items():
        ids = [case["id"] for case in cases]
        assert len(ids) == len(set(ids)), name
        path = VECTORS / f"{name}.json"
        path.write_text(
            json.dumps(
                {"file": name, "description": description, "cases": cases},
                ensure_ascii=True,
                indent=1,
            )
            + "\n"
        )
        print(f"{path.relative_to(VECTORS.parent.parent)}: {len(cases)} cases")


if __name__ == "__main__":
    main()
