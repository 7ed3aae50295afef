"""Saved batch evidence (docs/RATIONALE.md#saved-evidence): DeerFlow's rules, whole-or-nothing, never
raising."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from deerflow.knowledge.native import NativeSource
from deerflow.knowledge.saved_evidence import (
    SAVED_EVIDENCE_ERRORS,
    read_saved_evidence,
    read_saved_export,
)
from tests.strategies import ExplodingMapping


def _record(n: int, **fields: Any) -> dict[str, Any]:
    return {
        "id": f"{'9' * 32}-{n}",
        "provider": "ragflow",
        "dataset_id": "kb",
        "document_id": f"doc-{n}",
        "chunk_id": f"chunk-{n}",
        "dataset_name": "Engineering",
        "document_name": "Manual.pdf",
        "text": f"Evidence {n}.",
        "pages": [n],
        "truncated": False,
        **fields,
    }


def _item(*records: dict[str, Any], omitted: int = 0) -> dict[str, Any]:
    """A batch export row in the shape DeerFlow's durable writer stores (``result_artifact``)."""
    links = " ".join(f"[citation:{k}](#knowledge-{r['id']})" for k, r in enumerate(records, 1))
    return {
        "id": "item-1",
        "status": "completed",
        "result": f"Report citing {links}.",
        "result_artifact": {
            "knowledge_sources": {"version": 1, "sources": list(records), "omitted_count": omitted}
        },
    }


def test_a_writer_shaped_payload_reads_back_exactly() -> None:
    item = _item(_record(1), _record(2), omitted=4)
    result = read_saved_evidence(item["result"], item["result_artifact"])
    assert result.error is None and result.evidence is not None
    assert result.evidence.omitted_count == 4
    assert [s.to_record() for s in result.evidence.sources] == [
        NativeSource(**{**r, "pages": tuple(r["pages"])}).to_record()
        for r in item["result_artifact"]["knowledge_sources"]["sources"]
    ]


def test_one_broken_record_rejects_the_whole_evidence() -> None:
    item = _item(_record(1), _record(2, text=" "))
    result = read_saved_evidence(item["result"], item["result_artifact"])
    assert result.evidence is None and (result.error, result.index) == ("blank_field", 1)
    # The same payload beside a report that does not cite record 2: rejected, not trimmed.
    report = item["result"].split(" [citation:2]")[0]
    result = read_saved_evidence(report, _item(_record(1), _record(2))["result_artifact"])
    assert (result.evidence, result.error, result.index) == (None, "not_cited", 1)


def test_exports_as_json_a_list_or_json_lines() -> None:
    one, two = _item(_record(1)), _item(_record(2), omitted=1)
    for data in (
        one,
        [one, two],
        json.dumps([one, two]),
        f"{json.dumps(one)}\n\n{json.dumps(two)}\n",
    ):
        reports = read_saved_export(data)
        assert reports is not None and reports[0].report == one["result"]
        assert all(r.result.evidence is not None for r in reports)
    for not_export in ({"messages": []}, [], "not json", [one, {"result": 1}], 42):
        assert read_saved_export(not_export) is None


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(report=_json, sources=_json, version=_json, omitted=_json)
def test_hostile_payloads_never_raise(
    report: Any, sources: Any, version: Any, omitted: Any
) -> None:
    payload = {
        "knowledge_sources": {"version": version, "sources": sources, "omitted_count": omitted}
    }
    result = read_saved_evidence(report, payload)
    assert (result.evidence is None) == (result.error is not None)
    assert result.error is None or result.error in SAVED_EVIDENCE_ERRORS
    assert read_saved_evidence(report, sources).error in (None, *SAVED_EVIDENCE_ERRORS)


def test_a_deeply_nested_or_unserializable_payload_is_rejected_not_raised() -> None:
    nested: Any = []
    for _ in range(100_000):
        nested = [nested]
    payload = {"knowledge_sources": {"version": 1, "sources": [], "omitted_count": 0, "x": nested}}
    assert read_saved_evidence("r", payload).error == "not_an_object"
    odd = {"knowledge_sources": {"version": 1, "sources": [], "omitted_count": 0, "x": {1, 2}}}
    assert read_saved_evidence("r", odd).error == "not_an_object"


def test_an_internal_fault_has_its_own_code() -> None:
    result = read_saved_evidence("r", ExplodingMapping(knowledge_sources={}))
    assert result.evidence is None and result.error == "internal_error"
    assert "internal_error" in SAVED_EVIDENCE_ERRORS
