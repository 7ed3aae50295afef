"""Write contracts/vectors/native_ragflow.json from hand-declared cases.

Every expected verdict below is declared by hand from contracts/README.md ("Native RAGFlow
snapshots"); nothing is computed with the project's own reader, so the vectors test both
implementations instead of echoing one. The snapshots are SYNTHETIC: shaped like DeerFlow's native
``knowledge_sources`` object, with made-up ids and texts. Case ids are stable: append new cases,
never renumber.

Run: uv run python scripts/generate_native_vectors.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "contracts" / "vectors" / "native_ragflow.json"

CALL = "0123456789abcdef0123456789abcdef"
OTHER_CALL = "fedcba9876543210fedcba9876543210"


def nid(n: int, call: str = CALL) -> str:
    return f"{call}-{n}"


def rec(n: int = 1, *, call: str = CALL, **fields: Any) -> dict[str, Any]:
    """A SYNTHETIC native record in DeerFlow's field order; ``fields`` override or add keys."""
    record: dict[str, Any] = {
        "id": nid(n, call),
        "provider": "ragflow",
        "dataset_id": "5b1e7c2a6f3d11f0b1a40242ac120006",
        "document_id": "a6c3d2e06f3e11f0b1a40242ac120006",
        "chunk_id": f"9f2c41d07be3a5e{n % 10}",
        "dataset_name": "HR Policies",
        "document_name": "Employee_Handbook_2026.pdf",
        "text": f"Full-time employees accrue 25 days of leave (excerpt {n}).",
        "truncated": False,
        "pages": [14],
    }
    record.update(fields)
    return record


def drop(record: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in keys}


def entry(record: dict[str, Any], ordinal: int) -> str:
    return (
        f"[citation:{ordinal}](#knowledge-{record['id']}) "
        f"{record.get('dataset_name')} / {record.get('document_name')}\n{record.get('text')}"
    )


def content_for(*records: dict[str, Any]) -> str:
    return "\n\n".join(entry(r, i) for i, r in enumerate(records, 1))


def snap(*records: Any, version: Any = 1, **extra: Any) -> dict[str, Any]:
    return {"knowledge_sources": {"version": version, "sources": list(records), **extra}}


def ok(*ids: str) -> dict[str, Any]:
    return {"sources": list(ids), "rejected": [], "error": None}


def rejected(accepted: list[str], *rejections: tuple[int, str]) -> dict[str, Any]:
    return {
        "sources": accepted,
        "rejected": [{"index": i, "reason": r} for i, r in rejections],
        "error": None,
    }


def failed(error: str) -> dict[str, Any]:
    return {"sources": [], "rejected": [], "error": error}


EMPTY = {"sources": [], "rejected": [], "error": None}


def cases() -> list[dict[str, Any]]:
    r1, r2, r3 = rec(1), rec(2), rec(3)
    out: list[tuple[str, str, str | None, Any, Any, dict[str, Any]]] = []

    def add(
        slug: str,
        description: str,
        tool_name: str | None,
        content: Any,
        artifact: Any,
        expected: dict[str, Any],
    ) -> None:
        out.append((slug, description, tool_name, content, artifact, expected))

    add(
        "valid-one",
        "one well-formed record linked from knowledge_search content",
        "knowledge_search",
        content_for(r1),
        snap(r1),
        ok(r1["id"]),
    )
    add(
        "valid-three",
        "three records, order kept",
        "knowledge_search",
        content_for(r1, r2, r3),
        snap(r1, r2, r3),
        ok(r1["id"], r2["id"], r3["id"]),
    )
    add(
        "task-forwarded",
        "a task message forwards a record its child cited; its text need not be in the content",
        "task",
        f"The policy grants 25 days [citation:1](#knowledge-{r1['id']}).",
        snap(r1),
        ok(r1["id"]),
    )
    add(
        "tool-not-allowed",
        "a native snapshot on another tool's message is not evidence",
        "web_search",
        content_for(r1),
        snap(r1),
        failed("tool_not_allowed"),
    )
    add(
        "tool-name-null",
        "a message without a tool name is not evidence",
        None,
        content_for(r1),
        snap(r1),
        failed("tool_not_allowed"),
    )
    add(
        "tool-name-case",
        "the allowlist is case-sensitive",
        "Knowledge_Search",
        content_for(r1),
        snap(r1),
        failed("tool_not_allowed"),
    )
    add(
        "no-artifact",
        "a null artifact carries no snapshot",
        "knowledge_search",
        content_for(r1),
        None,
        EMPTY,
    )
    add(
        "shared-layout",
        "knowledge_sources as an array is the shared envelope, not a native snapshot",
        "knowledge_search",
        content_for(r1),
        {"knowledge_sources_version": 1, "knowledge_sources": [r1]},
        EMPTY,
    )
    add(
        "knowledge-sources-string",
        "knowledge_sources that is neither array nor object is no native snapshot",
        "knowledge_search",
        content_for(r1),
        {"knowledge_sources": "oops"},
        EMPTY,
    )
    add(
        "dual-layout",
        "the native object stays readable beside shared retrieval_sources",
        "task",
        content_for(r1),
        {
            "knowledge_sources": {"version": 1, "sources": [r1]},
            "knowledge_sources_version": 1,
            "retrieval_sources": [],
        },
        ok(r1["id"]),
    )
    add(
        "version-2",
        "version 2 rejects the snapshot",
        "knowledge_search",
        content_for(r1),
        snap(r1, version=2),
        failed("bad_version"),
    )
    add(
        "version-string",
        'version "1" is not the number 1',
        "knowledge_search",
        content_for(r1),
        snap(r1, version="1"),
        failed("bad_version"),
    )
    add(
        "version-true",
        "version true is not the number 1",
        "knowledge_search",
        content_for(r1),
        snap(r1, version=True),
        failed("bad_version"),
    )
    add(
        "version-missing",
        "a snapshot without version is rejected",
        "knowledge_search",
        content_for(r1),
        {"knowledge_sources": {"sources": [r1]}},
        failed("bad_version"),
    )
    add(
        "version-float",
        "1.0 is the number 1 (JSON cannot tell them apart)",
        "knowledge_search",
        content_for(r1),
        snap(r1, version=1.0),
        ok(r1["id"]),
    )
    add(
        "sources-object",
        "sources must be an array",
        "knowledge_search",
        content_for(r1),
        {"knowledge_sources": {"version": 1, "sources": {"0": r1}}},
        failed("not_an_array"),
    )
    add(
        "sources-missing",
        "a snapshot without sources is rejected",
        "knowledge_search",
        content_for(r1),
        {"knowledge_sources": {"version": 1}},
        failed("not_an_array"),
    )
    add(
        "sources-empty",
        "an empty sources array is valid and yields nothing",
        "knowledge_search",
        "No relevant content found.",
        snap(),
        EMPTY,
    )
    many = [rec(n) for n in range(1, 102)]
    add(
        "too-many",
        "101 records reject the whole snapshot",
        "knowledge_search",
        content_for(*many),
        snap(*many),
        failed("too_many_records"),
    )
    hundred = [rec(n) for n in range(1, 101)]
    add(
        "exactly-100",
        "100 records with ordinals up to 100 are all read",
        "knowledge_search",
        content_for(*hundred),
        snap(*hundred),
        ok(*[r["id"] for r in hundred]),
    )
    add(
        "handle-missing",
        "a record the content does not link is dropped",
        "knowledge_search",
        content_for(r1),
        snap(r1, r2),
        rejected([r1["id"]], (1, "handle_missing")),
    )
    add(
        "handle-user-content",
        "the sanitized #user-content-knowledge- destination counts as a link",
        "task",
        f"See [Manual.pdf](#user-content-knowledge-{r1['id']}).",
        snap(r1),
        ok(r1["id"]),
    )
    r12 = rec(12)
    add(
        "handle-prefix-not-enough",
        "a link to ...-12 is not a link to ...-1",
        "knowledge_search",
        content_for(r12),
        snap(r1, r12),
        rejected([r12["id"]], (0, "handle_missing")),
    )
    add(
        "handle-bare-fragment",
        "a bare #knowledge-<id> outside link syntax is not a link",
        "knowledge_search",
        f"text #knowledge-{r1['id']} text\n{r1['text']}",
        snap(r1),
        rejected([], (0, "handle_missing")),
    )
    add(
        "handle-unclosed",
        "a link cut before its closing parenthesis is not a link",
        "knowledge_search",
        f"[citation:1](#knowledge-{r1['id']}",
        snap(r1),
        rejected([], (0, "handle_missing")),
    )
    add(
        "handle-in-code-span",
        "the native reader does not parse Markdown: a link in a code span still counts (DeerFlow's substring rule)",
        "knowledge_search",
        f"`[citation:1](#knowledge-{r1['id']})`",
        snap(r1),
        ok(r1["id"]),
    )
    add(
        "duplicate",
        "the second record with an accepted id is a duplicate",
        "knowledge_search",
        content_for(r1),
        snap(r1, rec(1, text="Different text under the same id.")),
        rejected([r1["id"]], (1, "duplicate")),
    )
    add(
        "provider-lightrag",
        "provider must be ragflow",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, provider="lightrag")),
        rejected([], (0, "bad_field")),
    )
    add(
        "provider-missing",
        "provider is required",
        "knowledge_search",
        content_for(r1),
        snap(drop(r1, "provider")),
        rejected([], (0, "bad_field")),
    )
    for slug, bad_id in [
        ("id-upper", CALL.upper() + "-1"),
        ("id-ordinal-zero", CALL + "-0"),
        ("id-ordinal-leading-zero", CALL + "-01"),
        ("id-ordinal-1000", CALL + "-1000"),
        ("id-shared-shape", CALL),
        ("id-short-hex", CALL[:31] + "-1"),
    ]:
        add(
            slug,
            f"malformed id {bad_id!r}",
            "knowledge_search",
            f"[citation:1](#knowledge-{bad_id})",
            snap(rec(1, id=bad_id)),
            rejected([], (0, "bad_field")),
        )
    add(
        "id-number",
        "id must be a string",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, id=1)),
        rejected([], (0, "bad_field")),
    )
    r999 = rec(999)
    add(
        "id-ordinal-999",
        "ordinal 999 is the largest",
        "knowledge_search",
        content_for(r999).replace("[citation:1]", "[citation:999]"),
        snap(r999),
        ok(r999["id"]),
    )
    for field in ("dataset_id", "document_id", "chunk_id"):
        add(
            f"{field}-missing",
            f"{field} is a required locator",
            "knowledge_search",
            content_for(r1),
            snap(drop(r1, field)),
            rejected([], (0, "bad_field")),
        )
        add(
            f"{field}-empty",
            f"an empty {field} is not a locator",
            "knowledge_search",
            content_for(r1),
            snap(rec(1, **{field: ""})),
            rejected([], (0, "bad_field")),
        )
    add(
        "dataset-id-list",
        "a list dataset_id (the knowledge-graph chunk) is not a locator",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, dataset_id=["a", "b"])),
        rejected([], (0, "bad_field")),
    )
    add(
        "locator-256",
        "a 256-character locator is accepted",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, chunk_id="c" * 256)),
        ok(r1["id"]),
    )
    add(
        "locator-257",
        "a 257-character locator is rejected",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, chunk_id="c" * 257)),
        rejected([], (0, "bad_field")),
    )
    astral = "\U0001f98c" * 512
    add(
        "name-512-astral",
        "512 astral code points (1024 UTF-16 units) fit the name bound",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, document_name=astral)),
        ok(r1["id"]),
    )
    add(
        "name-513",
        "a 513-code-point dataset name is rejected",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, dataset_name="n" * 513)),
        rejected([], (0, "bad_field")),
    )
    add(
        "name-empty",
        "empty names are kept (DeerFlow's live reader accepts them)",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, dataset_name="", document_name="")),
        ok(r1["id"]),
    )
    add(
        "name-null",
        "names must be strings",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, document_name=None)),
        rejected([], (0, "bad_field")),
    )
    add(
        "text-empty",
        "an empty text is kept (DeerFlow's live reader accepts it)",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, text="")),
        ok(r1["id"]),
    )
    add(
        "text-lone-surrogate",
        "a text with a lone surrogate is rejected",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, text="bad \ud800 text")),
        rejected([], (0, "bad_field")),
    )
    add(
        "text-200001",
        "a text over 200,000 code points is rejected",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, text="t" * 200_001)),
        rejected([], (0, "bad_field")),
    )
    add(
        "text-number",
        "text must be a string",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, text=42)),
        rejected([], (0, "bad_field")),
    )
    add(
        "truncated-true",
        "truncated true is kept",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, truncated=True)),
        ok(r1["id"]),
    )
    add(
        "truncated-string",
        "truncated must be a boolean",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, truncated="false")),
        rejected([], (0, "bad_field")),
    )
    add(
        "truncated-missing",
        "truncated is required",
        "knowledge_search",
        content_for(r1),
        snap(drop(r1, "truncated")),
        rejected([], (0, "bad_field")),
    )
    add(
        "pages-empty",
        "no pages is valid (non-PDF chunks)",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, pages=[])),
        ok(r1["id"]),
    )
    add(
        "pages-float-integral",
        "an integral float page is the integer",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, pages=[2.0, 3])),
        ok(r1["id"]),
    )
    for slug, pages in [
        ("pages-zero", [0]),
        ("pages-too-big", [1_000_001]),
        ("pages-bool", [True]),
        ("pages-string", ["3"]),
        ("pages-fraction", [2.5]),
        ("pages-null", None),
    ]:
        add(
            slug,
            f"pages {pages!r} are rejected",
            "knowledge_search",
            content_for(r1),
            snap(rec(1, pages=pages)),
            rejected([], (0, "bad_field")),
        )
    add(
        "pages-missing",
        "pages is required",
        "knowledge_search",
        content_for(r1),
        snap(drop(r1, "pages")),
        rejected([], (0, "bad_field")),
    )
    add(
        "pages-100",
        "100 pages are accepted",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, pages=list(range(1, 101)))),
        ok(r1["id"]),
    )
    add(
        "pages-101",
        "101 pages are rejected",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, pages=list(range(1, 102)))),
        rejected([], (0, "bad_field")),
    )
    add(
        "unknown-field-ignored",
        "unknown record fields are ignored, the record is read",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, score=0.9)),
        ok(r1["id"]),
    )
    add(
        "proto-key-ignored",
        "a __proto__ key is an ordinary unknown field",
        "knowledge_search",
        content_for(r1),
        snap(rec(1, __proto__={"polluted": True})),
        ok(r1["id"]),
    )
    add(
        "record-string",
        "a record that is not an object",
        "knowledge_search",
        content_for(r1),
        snap("not a record", r1),
        rejected([r1["id"]], (0, "bad_field")),
    )
    add(
        "record-null",
        "a null record",
        "knowledge_search",
        content_for(r1),
        snap(None),
        rejected([], (0, "bad_field")),
    )
    add(
        "list-content",
        "list content: links are found in text parts",
        "task",
        [{"type": "text", "text": content_for(r1)}, "plain " + entry(r2, 2)],
        snap(r1, r2),
        ok(r1["id"], r2["id"]),
    )
    add(
        "list-content-non-text-part",
        "a link inside a non-text part does not count",
        "task",
        [{"type": "image_url", "text": content_for(r1)}],
        snap(r1),
        rejected([], (0, "handle_missing")),
    )
    link = f"[citation:1](#knowledge-{r1['id']})"
    add(
        "list-content-split-link",
        "a link split across two text parts does not count",
        "task",
        [link[:20], link[20:]],
        snap(r1),
        rejected([], (0, "handle_missing")),
    )
    add(
        "content-not-text",
        "content that is neither string nor list has no links",
        "knowledge_search",
        {"text": content_for(r1)},
        snap(r1),
        rejected([], (0, "handle_missing")),
    )
    mixed = [r1, rec(2, provider="x"), r3, rec(4, call=OTHER_CALL), r1]
    add(
        "mixed",
        "accepted, bad_field, accepted, handle_missing and duplicate, in order",
        "knowledge_search",
        content_for(r1, r2, r3),
        snap(*mixed),
        rejected([r1["id"], r3["id"]], (1, "bad_field"), (3, "handle_missing"), (4, "duplicate")),
    )
    add(
        "snapshot-extra-keys",
        "extra snapshot keys such as omitted_count do not matter",
        "task",
        content_for(r1),
        snap(r1, omitted_count=2),
        ok(r1["id"]),
    )
    add(
        "artifact-array",
        "an artifact that is an array carries nothing",
        "knowledge_search",
        content_for(r1),
        [snap(r1)],
        EMPTY,
    )

    return [
        {
            "id": f"native-{i:03d}-{slug}",
            "description": description,
            "tool_name": tool_name,
            "content": content,
            "artifact": artifact,
            "expected": expected,
        }
        for i, (slug, description, tool_name, content, artifact, expected) in enumerate(out, 1)
    ]


def main() -> None:
    data = {
        "file": "native_ragflow",
        "description": (
            "read_native(content, artifact, tool_name) over SYNTHETIC DeerFlow native RAGFlow "
            "snapshots: expected accepted ids, per-record rejections {index, reason} and the "
            "snapshot-level error (contracts/README.md, Native RAGFlow snapshots)."
        ),
        "cases": cases(),
    }
    OUT.write_text(json.dumps(data, ensure_ascii=True, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(data['cases'])} cases to {OUT}")


if __name__ == "__main__":
    main()
