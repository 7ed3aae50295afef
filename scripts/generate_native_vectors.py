"""Write contracts/vectors/native_ragflow.json, native_budgets.json and saved_evidence.json.

Every expected verdict below is declared by hand from contracts/README.md ("Native RAGFlow
snapshots"); nothing is computed with the project's own reader, so the vectors test both
implementations instead of echoing one. The snapshots are SYNTHETIC: shaped like DeerFlow's native
``knowledge_sources`` object, with made-up ids and texts. Case ids are stable: append new cases,
never renumber.

The budget vectors' expected outputs come from the small reference below (DeerFlow's
``budget_source_artifact`` rule written out plainly, plus this project's generic cuts for the
fixtures' well-formed reports); it imports nothing from the project, so the vectors check the
middleware instead of echoing it.

Run: uv run python scripts/generate_native_vectors.py
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path
from typing import Any

VECTORS = Path(__file__).resolve().parent.parent / "contracts" / "vectors"
OUT = VECTORS / "native_ragflow.json"

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


# --------------------------------------------------------------------------- budget reference

NOTICE = "Knowledge sources omitted to fit output budget; request smaller excerpts."
CALL_ID = "call_1"
OUTPUT_DIR = "out"  # relative: the runners work in a temporary directory
PREVIEW_CHARS = 4_000  # the middleware's default preview
_LINK = re.compile(r"\[[^\[\]\n]*\]\(#(?:user-content-)?knowledge-[a-f0-9]{32}-[0-9]+\)")


def _strip_links(text: str) -> str:
    text = re.sub(r"\[([^\[\]\n]*)\]\(#(?:user-content-)?knowledge-[^()\[\]\s]*\)", r"\1", text)
    return re.sub(r"#(?:user-content-)?knowledge-[\w-]*", "", text)


def _spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _LINK.finditer(text)]


def _back(cut: int, spans: list[tuple[int, int]]) -> int:
    for start, end in sorted(spans, reverse=True):
        if start < cut < end:
            cut = start
    return cut


def _forward(cut: int, spans: list[tuple[int, int]]) -> int:
    for start, end in sorted(spans):
        if start < cut < end:
            cut = end
    return cut


def _marker(omitted: int) -> str:
    return f"\n\n[... {omitted} characters omitted ...]\n\n"


def _preview(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: _back(limit, _spans(text))]


def _truncate(text: str, limit: int) -> str:
    """The project's head+tail cut (75% head) for a report whose links are well formed."""
    if len(text) <= limit:
        return text
    available = limit - len(_marker(len(text)))
    if available < 16:
        return _preview(text, limit)
    spans = _spans(text)
    head = _back(int(available * 0.75), spans)
    tail = max(_forward(len(text) - (available - int(available * 0.75)), spans), head)
    return text[:head] + _marker(tail - head) + text[tail:]


def _saved_notice(shown: int, total: int, path: str) -> str:
    return (
        f"\n\n[Output too long: showing the first {shown} of {total} characters. "
        f"The full output was saved to {path}; read that file for the rest.]"
    )


def _externalized(text: str, tool: str, limit: int) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    path = f"{OUTPUT_DIR}/{tool}-{CALL_ID}-{digest}.txt"
    room = min(PREVIEW_CHARS, limit - len(_saved_notice(len(text), len(text), path)))
    if room < 0:
        return _truncate(text, limit)
    preview = _preview(text, room)
    return preview + _saved_notice(len(preview), len(text), path)


def _synopsis(cut: str, limit: int) -> str:
    bound = min(1_000, limit // 4) if limit >= 160 else 0
    if not bound:
        return ""
    plain = _strip_links(cut)
    if len(plain) > bound:
        head = (bound - 3) // 2
        plain = plain[:head] + "\n…\n" + plain[-(bound - head - 3) :]
    return plain.rstrip()


def _native_entry(record: dict[str, Any], ordinal: int) -> str:
    return (
        f"[citation:{ordinal}](#knowledge-{record['id']}) "
        f"{record['dataset_name']} / {record['document_name']}\n{record['text']}"
    )


def _reference_budget(
    tool: str, mode: str, content: str, artifact: dict[str, Any], limit: int
) -> dict[str, Any]:
    """What the middleware must produce: DeerFlow's whole-entry rule, newest notice reservation."""
    records = artifact["knowledge_sources"]["sources"]
    head = ""
    if tool == "task":
        cut = (
            _externalized(content, tool, limit)
            if mode == "externalize"
            else _truncate(content, limit)
        )
        head = _synopsis(cut, limit)

    def lay_out(budget: int) -> list[dict[str, Any]]:
        used, started, kept = len(head), bool(head), []
        for record in records:
            cost = len(_native_entry(record, len(kept) + 1)) + (2 if started else 0)
            if used + cost <= budget:
                kept.append(record)
                used += cost
                started = True
        return kept

    kept = lay_out(limit)
    if len(kept) < len(records):
        kept = lay_out(limit - len(NOTICE) - 2)
    pieces = ([head] if head else []) + [_native_entry(r, k) for k, r in enumerate(kept, 1)]
    if len(kept) < len(records):
        room = limit - len("\n\n".join(pieces)) - (2 if pieces else 0)
        if NOTICE[: max(room, 0)]:
            pieces.append(NOTICE[: max(room, 0)])
    out_artifact = {
        key: ({**value, "sources": kept} if key == "knowledge_sources" else value)
        for key, value in artifact.items()
        if key != "knowledge_sources" or kept
    }
    return {
        "content": "\n\n".join(pieces),
        "artifact": out_artifact or None,
        "kept": [r["id"] for r in kept],
    }


BUDGET_MODES = ("truncate", "externalize", "override", "history")


def _budget_fixture(tool: str, sizes: list[int]) -> tuple[str, dict[str, Any]]:
    records = [
        rec(
            n,
            chunk_id=f"chunk-{n}",
            dataset_name="Engineering",
            document_name="Manual.pdf",
            text=f"Evidence {n}: " + "x" * size,
            pages=[],
        )
        for n, size in enumerate(sizes, 1)
    ]
    if tool == "task":
        links = " ".join(f"[Manual.pdf](#knowledge-{r['id']})" for r in records)
        content = "Task completed. Findings: " + links + "\n" + "report " * 200
    else:
        content = content_for(*records)
    return content, {"knowledge_sources": {"version": 1, "sources": records}, "other": "kept"}


def _smallest_budget(tool: str, content: str, artifact: dict[str, Any], keeps: int) -> int:
    for limit in range(1, len(content)):
        if len(_reference_budget(tool, "truncate", content, artifact, limit)["kept"]) >= keeps:
            return limit
    raise AssertionError("no budget below the content's size keeps that many sources")


def budget_cases() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for tool in ("knowledge_search", "task"):
        for fixture, sizes in (("three", [120, 20, 300]), ("oversized-first", [900, 15])):
            content, artifact = _budget_fixture(tool, sizes)
            one = _smallest_budget(tool, content, artifact, 1)
            budgets: dict[str, int] = {"tiny-1": 1, "tiny-60": 60, "tiny-159": 159, "tiny-160": 160}
            budgets |= {"exact-first": one, "over-first": one - 1}
            if len(sizes) == 3:
                every = _smallest_budget(tool, content, artifact, 3) if tool == "task" else 0
                if every:
                    budgets |= {"exact-all": every, "over-all": every - 1}
                budgets |= {"just-under-content": len(content) - 1}
            for mode in BUDGET_MODES:
                for slug, limit in budgets.items():
                    expected = _reference_budget(tool, mode, content, artifact, limit)
                    out.append(
                        {
                            "slug": f"{tool}-{fixture}-{mode}-{slug}",
                            "description": (
                                f"{tool}, {fixture} ({sizes}), {mode}, budget {limit}: whole "
                                f"entries only, kept {expected['kept'] and len(expected['kept'])}"
                            ),
                            "tool_name": tool,
                            "mode": mode,
                            "max_chars": limit,
                            "content": content,
                            "artifact": artifact,
                            "expected": {"generic": False, **expected},
                        }
                    )
    # Snapshots the reader cannot read get the generic transform only and are left as they are.
    content, artifact = _budget_fixture("knowledge_search", [120, 20, 300])
    unreadable: list[tuple[str, str, Any]] = [
        ("foreign-tool", "web_search", artifact),
        ("tool-name-null", None, artifact),  # type: ignore[list-item]
    ]
    for slug, snapshot in (
        ("version-2", {"version": 2}),
        ("version-string", {"version": "1"}),
        ("sources-object", {"sources": {"0": rec(1)}}),
        ("malformed-records", {"sources": [None, {"id": "invalid", "text": 42}]}),
        ("too-many", {"sources": [rec(n) for n in range(1, 102)]}),
    ):
        changed = copy.deepcopy(artifact)
        changed["knowledge_sources"].update(snapshot)
        unreadable.append((slug, "knowledge_search", changed))
    for slug, tool_name, art in unreadable:
        for mode in ("truncate", "history"):
            out.append(
                {
                    "slug": f"unreadable-{slug}-{mode}",
                    "description": (
                        f"{slug}: not budgeted natively; the generic transform runs and the "
                        "artifact is left exactly as it is"
                    ),
                    "tool_name": tool_name,
                    "mode": mode,
                    "max_chars": 200,
                    "content": content,
                    "artifact": art,
                    "expected": {"generic": True, "artifact": art},
                }
            )
    return [{"id": f"budget-{i:03d}-{case.pop('slug')}", **case} for i, case in enumerate(out, 1)]


# --------------------------------------------------------------------------- saved batch evidence


def _saved(*records: dict[str, Any], omitted: Any = 0, version: Any = 1, **extra: Any) -> Any:
    return {
        "knowledge_sources": {
            "version": version,
            "sources": list(records),
            "omitted_count": omitted,
            **extra,
        }
    }


def _report(*records: dict[str, Any]) -> str:
    links = " ".join(f"[citation:{k}](#knowledge-{r['id']})" for k, r in enumerate(records, 1))
    return f"Findings: {links}."


def _compact(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _payload_of_size(size: int) -> tuple[str, Any]:
    """Five records whose payload's compact JSON is exactly ``size`` code points."""
    records = [rec(n, text="t") for n in range(1, 6)]
    base = _compact(_saved(*records))
    extra = size - base
    per, rest = divmod(extra, 5)
    for i, record in enumerate(records):
        record["text"] = "t" * (1 + per + (1 if i < rest else 0))
    payload = _saved(*records)
    assert _compact(payload) == size
    return _report(*records), payload


def saved_cases() -> list[dict[str, Any]]:
    r1, r2 = rec(1), rec(2)
    out: list[tuple[str, str, Any, Any, dict[str, Any]]] = []

    def good(*records: dict[str, Any], omitted: int = 0) -> dict[str, Any]:
        ids = [r["id"] for r in records]
        return {"sources": ids, "omitted_count": omitted, "error": None, "index": None}

    def bad(error: str, index: int | None = None) -> dict[str, Any]:
        return {"sources": None, "omitted_count": None, "error": error, "index": index}

    def add(slug: str, description: str, report: Any, payload: Any, expected: Any) -> None:
        out.append((slug, description, report, payload, expected))

    add(
        "valid-two",
        "two cited records",
        _report(r1, r2),
        _saved(r1, r2, omitted=1),
        good(r1, r2, omitted=1),
    )
    add(
        "no-evidence",
        "a null result_artifact is no evidence, no error",
        "Report.",
        None,
        {"sources": None, "omitted_count": None, "error": None, "index": None},
    )
    add(
        "empty-sources",
        "an empty export keeps its omission count",
        "Report.",
        _saved(omitted=3),
        good(omitted=3),
    )
    add(
        "user-content-link",
        "the sanitized link form counts as cited",
        f"See [M](#user-content-knowledge-{r1['id']}).",
        _saved(r1),
        good(r1),
    )
    add("not-an-object", "the payload must be an object", _report(r1), [r1], bad("not_an_object"))
    add(
        "snapshot-array",
        "knowledge_sources must be an object",
        _report(r1),
        {"knowledge_sources": [r1]},
        bad("not_an_object"),
    )
    add(
        "version-2",
        "version 2 rejects the whole evidence",
        _report(r1),
        _saved(r1, version=2),
        bad("bad_version"),
    )
    add(
        "version-true",
        "version true is not 1",
        _report(r1),
        _saved(r1, version=True),
        bad("bad_version"),
    )
    add(
        "omitted-string",
        "omitted_count must be an integer",
        _report(r1),
        _saved(r1, omitted="1"),
        bad("bad_omitted_count"),
    )
    add(
        "omitted-bool",
        "omitted_count true is not an integer",
        _report(r1),
        _saved(r1, omitted=True),
        bad("bad_omitted_count"),
    )
    add(
        "omitted-fraction",
        "omitted_count 1.5 is not an integer",
        _report(r1),
        _saved(r1, omitted=1.5),
        bad("bad_omitted_count"),
    )
    add(
        "omitted-negative",
        "omitted_count must not be negative",
        _report(r1),
        _saved(r1, omitted=-1),
        bad("bad_omitted_count"),
    )
    add(
        "omitted-missing",
        "omitted_count is required",
        _report(r1),
        {"knowledge_sources": {"version": 1, "sources": [r1]}},
        bad("bad_omitted_count"),
    )
    add(
        "sources-object",
        "sources must be an array",
        _report(r1),
        _saved(omitted=0, sources={"0": r1}),
        bad("not_an_array"),
    )
    hundred = [rec(n) for n in range(1, 101)]
    add(
        "sources-100",
        "100 cited records are read",
        _report(*hundred),
        _saved(*hundred),
        good(*hundred),
    )
    many = [rec(n) for n in range(1, 102)]
    add(
        "sources-101",
        "101 records reject the whole evidence",
        _report(*many),
        _saved(*many),
        bad("too_many_records"),
    )
    add(
        "not-cited",
        "a record the stored report does not cite rejects the whole evidence (never partially rewritten)",
        _report(r1),
        _saved(r1, r2),
        bad("not_cited", 1),
    )
    add(
        "duplicate",
        "a repeated id rejects the whole evidence",
        _report(r1),
        _saved(r1, r1),
        bad("duplicate", 1),
    )
    for field in ("dataset_name", "document_name", "text"):
        add(
            f"blank-{field}",
            f"a blank {field} rejects the whole evidence",
            _report(r1, r2),
            _saved(r1, rec(2, **{field: "  \n"})),
            bad("blank_field", 1),
        )
    add(
        "text-200000",
        "a 200,000-code-point text is accepted",
        _report(r1),
        _saved(rec(1, text="t" * 200_000)),
        good(r1),
    )
    add(
        "text-200001",
        "a 200,001-code-point text is rejected",
        _report(r1),
        _saved(rec(1, text="t" * 200_001)),
        bad("bad_field", 0),
    )
    add(
        "pages-100",
        "100 pages are accepted",
        _report(r1),
        _saved(rec(1, pages=list(range(1, 101)))),
        good(r1),
    )
    add(
        "pages-101",
        "101 pages are rejected",
        _report(r1),
        _saved(rec(1, pages=list(range(1, 102)))),
        bad("bad_field", 0),
    )
    add(
        "provider-lightrag",
        "provider must be ragflow",
        _report(r1),
        _saved(rec(1, provider="lightrag")),
        bad("bad_field", 0),
    )
    add(
        "locator-missing",
        "a record without its chunk_id is rejected",
        _report(r1),
        _saved(drop(r1, "chunk_id")),
        bad("bad_field", 0),
    )
    report, payload = _payload_of_size(1_000_000)
    add(
        "payload-1000000",
        "a payload of exactly 1,000,000 code points of compact JSON is read",
        report,
        payload,
        good(*payload["knowledge_sources"]["sources"]),
    )
    report, payload = _payload_of_size(1_000_001)
    add(
        "payload-1000001",
        "one code point more rejects the whole evidence",
        report,
        payload,
        bad("too_large"),
    )
    astral = rec(1, text="\U0001f98c" * 10)
    add(
        "astral-text",
        "astral text counts one per code point",
        _report(astral),
        _saved(astral),
        good(astral),
    )
    return [
        {
            "id": f"saved-{i:03d}-{slug}",
            "description": d,
            "report": rep,
            "payload": pay,
            "expected": exp,
        }
        for i, (slug, d, rep, pay, exp) in enumerate(out, 1)
    ]


def main() -> None:
    budgets = {
        "file": "native_budgets",
        "description": (
            "ToolOutputBudgetMiddleware on SYNTHETIC native RAGFlow messages, per mode "
            "(truncate, externalize to the relative directory 'out', per-tool override, "
            "model-request history; sync and async), tool_call_id 'call_1'. expected.generic "
            "false: the exact content and artifact (whole entries, renumbered, DeerFlow's notice); "
            "true: the content equals the same middleware's output for the message without an "
            "artifact, and the artifact is unchanged."
        ),
        "cases": budget_cases(),
    }
    (VECTORS / "native_budgets.json").write_text(
        json.dumps(budgets, ensure_ascii=True, indent=1) + "\n", encoding="utf-8"
    )
    print(f"wrote {len(budgets['cases'])} cases to {VECTORS / 'native_budgets.json'}")
    saved = {
        "file": "saved_evidence",
        "description": (
            "read_saved_evidence(report, payload) over SYNTHETIC DeerFlow durable batch evidence "
            "(deerflow.md §5.3): expected source ids and omitted_count, or the error (and record "
            "index) that rejects the whole evidence."
        ),
        "cases": saved_cases(),
    }
    (VECTORS / "saved_evidence.json").write_text(
        json.dumps(saved, ensure_ascii=True, indent=1) + "\n", encoding="utf-8"
    )
    print(f"wrote {len(saved['cases'])} cases to {VECTORS / 'saved_evidence.json'}")
    data = {
        "file": "native_ragflow",
        "description": (
            "read_native(content, artifact, tool_name) over SYNTHETIC DeerFlow native RAGFlow "
            "snapshots: expected accepted ids, per-record rejections {index, reason} and the "
            "snapshot-level error (contracts/README.md, Native RAGFlow snapshots)."
        ),
        "cases": cases(),
    }
    out = VECTORS / OUT.name
    out.write_text(json.dumps(data, ensure_ascii=True, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(data['cases'])} cases to {out}")


if __name__ == "__main__":
    main()
