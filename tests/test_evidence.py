"""The one evidence reader of a message: both formats, rejections that carry their record id."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deerflow.knowledge as knowledge
from deerflow.knowledge import KnowledgeSource, build_envelope, read_envelope, read_native
from deerflow.knowledge.envelope import KNOWLEDGE_SOURCES_KEY, RETRIEVAL_SOURCES_KEY, VERSION_KEY
from deerflow.knowledge.evidence import (
    EVIDENCE_FORMATS,
    EvidenceRejection,
    MessageEvidence,
    read_evidence,
)
from deerflow.knowledge.formatting import citation_link
from deerflow.knowledge.native import NativeSource, build_native_snapshot, native_entry
from tests.steps import line_steps
from tests.strategies import ExplodingMapping, json_values, knowledge_sources

CALL = "0123456789abcdef0123456789abcdef"
PACKAGE = str(Path(knowledge.__file__).parent)
TOOL_NAMES = st.sampled_from(["knowledge_search", "task", "web_search", None, 3, ""])


def _native(n: int, **fields: Any) -> NativeSource:
    values: dict[str, Any] = {
        "id": f"{CALL}-{n}",
        "dataset_id": "kb",
        "document_id": f"doc-{n}",
        "chunk_id": f"chunk-{n}",
        "dataset_name": "Engineering",
        "document_name": f"Manual {n}.pdf",
        "text": f"Evidence {n}: the valve opens at 4 bar.",
        "truncated": False,
        "pages": (n,),
    }
    values.update(fields)
    return NativeSource(**values)


def _shared(n: int) -> KnowledgeSource:
    return KnowledgeSource.create(provider="local", title=f"t{n}.md", excerpt=f"Fact {n}: deer.")


def _dual(shared: list[KnowledgeSource], native: list[NativeSource]) -> tuple[str, dict[str, Any]]:
    """A ``task``'s dual layout: the native snapshot in ``knowledge_sources``, shared records in
    ``retrieval_sources``."""
    entries = [native_entry(s, i) for i, s in enumerate(native, 1)]
    entries += [f"{citation_link(s)}\n{s.excerpt}" for s in shared]
    artifact = {
        KNOWLEDGE_SOURCES_KEY: build_native_snapshot(native),
        VERSION_KEY: 1,
        RETRIEVAL_SOURCES_KEY: build_envelope(shared)[KNOWLEDGE_SOURCES_KEY],
    }
    return "\n\n".join(entries), artifact


# --------------------------------------------------------------------------- the public surface


def test_the_package_exports_the_reader() -> None:
    assert knowledge.read_evidence is read_evidence
    assert knowledge.MessageEvidence is MessageEvidence
    assert knowledge.EvidenceRejection is EvidenceRejection
    assert EVIDENCE_FORMATS == ("shared", "native")


# --------------------------------------------------------------------------- both formats


def test_reads_both_formats_of_one_message() -> None:
    shared, native = [_shared(1), _shared(2)], [_native(1), _native(2)]
    content, artifact = _dual(shared, native)
    evidence = read_evidence(content, artifact, tool_name="task")
    assert evidence.shared == tuple(shared) and evidence.native == tuple(native)
    assert evidence.sources == (*shared, *native)
    assert evidence.rejected == () and evidence.errors == ()


def test_rejections_carry_their_record_id_key_and_reason() -> None:
    kept, forged, unlinked = _shared(1), _shared(2), _native(2)
    content, artifact = _dual([kept, forged], [_native(1), unlinked])
    content = content.replace(f"(#knowledge-{unlinked.id})", "(#elsewhere)")
    artifact[RETRIEVAL_SOURCES_KEY][1] = {**forged.to_record(), "title": "Forged title"}
    evidence = read_evidence(content, artifact, tool_name="task")
    assert evidence.shared == (kept,) and evidence.native == (_native(1),)
    assert evidence.rejected == (
        EvidenceRejection("shared", RETRIEVAL_SOURCES_KEY, 1, forged.id, "id_mismatch"),
        EvidenceRejection("native", KNOWLEDGE_SOURCES_KEY, 1, unlinked.id, "handle_missing"),
    )


def test_a_record_without_a_string_id_is_rejected_without_one() -> None:
    artifact = {VERSION_KEY: 1, KNOWLEDGE_SOURCES_KEY: [{"id": 7}, "junk"]}
    evidence = read_evidence("", artifact)
    assert [(r.index, r.record_id, r.reason) for r in evidence.rejected] == [
        (0, None, "bad_field"),
        (1, None, "bad_field"),
    ]


def test_a_format_refused_whole_names_every_record_in_it() -> None:
    # An unknown shared version, and a native snapshot on a tool outside DeerFlow's allowlist.
    shared, native = [_shared(1), _shared(2)], [_native(1)]
    content, artifact = _dual(shared, native)
    artifact[VERSION_KEY] = 2
    evidence = read_evidence(content, artifact, tool_name="web_search")
    assert evidence.sources == ()
    assert evidence.shared_error == "bad_version" and evidence.native_error == "tool_not_allowed"
    assert evidence.errors == ("bad_version", "tool_not_allowed")
    assert evidence.rejected == (
        EvidenceRejection("shared", RETRIEVAL_SOURCES_KEY, 0, shared[0].id, "bad_version", True),
        EvidenceRejection("shared", RETRIEVAL_SOURCES_KEY, 1, shared[1].id, "bad_version", True),
        EvidenceRejection(
            "native", KNOWLEDGE_SOURCES_KEY, 0, native[0].id, "tool_not_allowed", True
        ),
    )


def test_formats_left_out_read_as_empty() -> None:
    content, artifact = _dual([_shared(1)], [_native(1)])
    only_shared = read_evidence(content, artifact, tool_name="task", formats={"shared"})
    assert only_shared.shared == (_shared(1),) and only_shared.native == ()
    only_native = read_evidence(content, artifact, tool_name="task", formats={"native"})
    assert only_native.shared == () and only_native.native == (_native(1),)
    # Left out, a broken format is not reported either.
    artifact[VERSION_KEY] = 9
    assert read_evidence(content, artifact, tool_name="x", formats=()) == MessageEvidence()


def test_an_internal_fault_has_its_own_code() -> None:
    evidence = read_evidence("x", ExplodingMapping(knowledge_sources=[]), tool_name="task")
    assert evidence.sources == () and evidence.rejected == ()
    assert evidence.errors == ("internal_error", "internal_error")


# --------------------------------------------------------------------------- agreement (property)


@st.composite
def hostile_messages(draw: st.DrawFn) -> tuple[Any, Any, Any]:
    """A message citing some shared and native records, then mutated the way a forger, a buggy
    tool or a replayed checkpoint would: fields, ids, versions, links, arrays, whole values."""
    shared = draw(st.lists(knowledge_sources(), max_size=4))
    native = [_native(n) for n in range(1, draw(st.integers(0, 4)) + 1)]
    content: Any
    content, artifact = _dual(shared, native)
    snapshot = artifact[KNOWLEDGE_SOURCES_KEY]
    arrays = [artifact[RETRIEVAL_SOURCES_KEY], snapshot["sources"]]
    for _ in range(draw(st.integers(0, 5))):
        action = draw(
            st.sampled_from(["field", "id", "dup", "junk", "cut", "version", "shape", "move"])
        )
        records = draw(st.sampled_from(arrays))
        dicts = [r for r in records if isinstance(r, dict)]
        if dicts and action == "field":
            record = draw(st.sampled_from(dicts))
            record[draw(st.sampled_from([*sorted(record), "extra"]))] = draw(json_values)
        elif dicts and action == "id":
            draw(st.sampled_from(dicts))["id"] = draw(st.sampled_from([f"{CALL}-9", "x", 4]))
        elif dicts and action == "dup":
            records.append(dict(draw(st.sampled_from(dicts))))
        elif action == "junk":
            records.append(draw(json_values))
        elif action == "cut":
            content = content[: draw(st.integers(0, len(content)))]
        elif action == "version":
            key, owner = draw(st.sampled_from([(VERSION_KEY, artifact), ("version", snapshot)]))
            owner[key] = draw(st.sampled_from([2, "1", 1.0, None, True]))
        elif action == "shape":
            key = draw(st.sampled_from([KNOWLEDGE_SOURCES_KEY, RETRIEVAL_SOURCES_KEY]))
            artifact[key] = draw(json_values | st.just(list(range(101))))
        else:  # the shared records under the primary key, where a native snapshot usually is
            artifact[KNOWLEDGE_SOURCES_KEY] = artifact.pop(RETRIEVAL_SOURCES_KEY, [])
    if draw(st.booleans()):
        content = [{"type": "text", "text": content}, {"type": "image_url", "image_url": "x"}]
    if draw(st.integers(0, 9)) == 0:
        artifact = draw(json_values)
    return content, artifact, draw(TOOL_NAMES)


def _raw(artifact: Any, rejection: EvidenceRejection) -> Any:
    array = artifact[rejection.key]
    return (array["sources"] if rejection.format == "native" else array)[rejection.index]


def _expected_id(record: Any) -> str | None:
    value = record.get("id") if isinstance(record, dict) else None
    return value if isinstance(value, str) else None


def _assert_agrees(content: Any, artifact: Any, tool_name: Any) -> None:
    evidence = read_evidence(content, artifact, tool_name=tool_name)
    shared = read_envelope(content, artifact)
    native = read_native(content, artifact, tool_name=tool_name)
    # The same verdicts as the two format readers, nothing added, nothing lost.
    assert evidence.shared == shared.sources and evidence.native == native.sources
    assert (evidence.shared_error, evidence.native_error) == (shared.error, native.error)
    own = [r for r in evidence.rejected if not r.whole]
    assert [(r.key, r.index, r.reason) for r in own if r.format == "shared"] == [
        (r.key, r.index, r.reason) for r in shared.rejected
    ]
    assert [(r.index, r.reason) for r in own if r.format == "native"] == [
        (r.index, r.reason) for r in native.rejected
    ]
    assert {r.key for r in own if r.format == "native"} <= {KNOWLEDGE_SOURCES_KEY}
    # Every rejection carries the id its record claims.
    for rejection in evidence.rejected:
        assert rejection.record_id == _expected_id(_raw(artifact, rejection))
    # A refused format names every record of its arrays, with the format's error.
    whole = [r for r in evidence.rejected if r.whole]
    expected_whole: list[tuple[str, str, int, str]] = []
    if shared.error is not None and isinstance(artifact, dict):
        for key in (KNOWLEDGE_SOURCES_KEY, RETRIEVAL_SOURCES_KEY):
            if isinstance(records := artifact.get(key), list):
                expected_whole += [("shared", key, i, shared.error) for i in range(len(records))]
    snapshot = artifact.get(KNOWLEDGE_SOURCES_KEY) if isinstance(artifact, dict) else None
    records = snapshot.get("sources") if isinstance(snapshot, dict) else None
    if native.error is not None and isinstance(records, list):
        expected_whole += [
            ("native", KNOWLEDGE_SOURCES_KEY, i, native.error) for i in range(len(records))
        ]
    assert [(r.format, r.key, r.index, r.reason) for r in whole] == expected_whole


@settings(max_examples=300, deadline=None)
@given(hostile_messages())
def test_agrees_with_both_format_readers_on_hostile_messages(case: tuple[Any, Any, Any]) -> None:
    _assert_agrees(*case)


@settings(max_examples=200, deadline=None)
@given(content=json_values, artifact=json_values, tool_name=json_values | TOOL_NAMES)
def test_agrees_with_both_format_readers_on_arbitrary_json(
    content: Any, artifact: Any, tool_name: Any
) -> None:
    _assert_agrees(content, artifact, tool_name)
    _assert_agrees(content, {VERSION_KEY: 1, KNOWLEDGE_SOURCES_KEY: artifact}, tool_name)
    _assert_agrees(
        content, {KNOWLEDGE_SOURCES_KEY: {"version": 1, "sources": artifact}}, "knowledge_search"
    )


# --------------------------------------------------------------------------- counted work


def _steps(run: Callable[[], object]) -> int:
    """Python line events executed inside the package while ``run()`` reads."""
    return line_steps(run, in_file=lambda name: name.startswith(PACKAGE))


def _hostile(chars: int, kind: str) -> tuple[str, Any, str]:
    """About ``chars`` characters of hostile message: long content, or a long refused array."""
    if kind == "content":
        # Every handle and link the records claim, repeated, next to records that all fail.
        shared = [_shared(n) for n in range(50)]
        native = [_native(n) for n in range(1, 51)]
        content, artifact = _dual(shared, native)
        for record in artifact[RETRIEVAL_SOURCES_KEY]:
            record["excerpt"] = "not in the content"
        for record in artifact[KNOWLEDGE_SOURCES_KEY]["sources"]:
            record["pages"] = ["x"]
        return (content + "\n") * (chars // (len(content) + 1)), artifact, "task"
    record = {"id": "r" * 8}  # 15 characters of JSON each
    records = [record] * (chars // 15)
    if kind == "shared_array":
        return "", {VERSION_KEY: 1, KNOWLEDGE_SOURCES_KEY: records}, "task"
    snapshot = {"version": 1, "sources": records}
    return "", {KNOWLEDGE_SOURCES_KEY: snapshot}, "web_search" if kind == "foreign" else "task"


@pytest.mark.parametrize("kind", ["content", "shared_array", "native_array", "foreign"])
def test_reading_costs_linear_work_up_to_a_million_characters(kind: str) -> None:
    """Counted, not timed: ten times the hostile input costs at most about ten times the steps."""
    small = _hostile(100_000, kind)
    large = _hostile(1_000_000, kind)
    small_evidence = read_evidence(small[0], small[1], tool_name=small[2])
    large_evidence = read_evidence(large[0], large[1], tool_name=large[2])
    assert small_evidence.sources == () == large_evidence.sources
    assert len(large_evidence.rejected) >= len(small_evidence.rejected) > 0
    small_steps = _steps(lambda: read_evidence(small[0], small[1], tool_name=small[2]))
    large_steps = _steps(lambda: read_evidence(large[0], large[1], tool_name=large[2]))
    assert large_steps <= 11 * small_steps + 1_000
