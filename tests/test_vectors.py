"""Run every shared vector file against the Python implementation.

The TypeScript suite (frontend/test/vectors.test.ts) runs the same files; a case the two disagree
on is a bug. ``RUNNERS`` must cover every file, so a new vector file cannot go unread.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest

from deerflow.knowledge import find_citations, read_envelope, relabel_orphans, source_id
from deerflow.knowledge.grammar import ANSWER_KEY, citation_grammar
from deerflow.knowledge.native import read_native
from deerflow.knowledge.saved_evidence import read_saved_evidence
from deerflow.knowledge.text import visible_text
from tests.gbnf_oracle import gbnf_accepts
from tests.native_budget_runner import run_native_budget
from tests.vectors import SCHEMA_PATH, cases, vector_files


def run_source_id(case: dict[str, Any]) -> None:
    assert source_id(case["record"]) == case["expected_id"]


def run_envelope(case: dict[str, Any]) -> None:
    result = read_envelope(case["content"], case["artifact"])
    got = {
        "sources": [s.id for s in result.sources],
        "rejected": [dataclasses.asdict(r) for r in result.rejected],
        "error": result.error,
    }
    assert got == case["expected"]


def run_citation(case: dict[str, Any]) -> None:
    got = [dataclasses.asdict(c) for c in find_citations(case["markdown"])]
    assert got == case["expected"]
    if "keep_ids" in case:
        assert relabel_orphans(case["markdown"], case["keep_ids"]) == case["relabeled"]


def run_native(case: dict[str, Any]) -> None:
    result = read_native(case["content"], case["artifact"], tool_name=case["tool_name"])
    got = {
        "sources": [s.id for s in result.sources],
        "rejected": [dataclasses.asdict(r) for r in result.rejected],
        "error": result.error,
    }
    assert got == case["expected"]


def run_saved_evidence(case: dict[str, Any]) -> None:
    result = read_saved_evidence(case["report"], case["payload"])
    evidence = result.evidence
    got = {
        "sources": None if evidence is None else [s.id for s in evidence.sources],
        "omitted_count": None if evidence is None else evidence.omitted_count,
        "error": result.error,
        "index": result.index,
    }
    assert got == case["expected"]


def run_visible_text(case: dict[str, Any]) -> None:
    assert visible_text(case["text"]) == case["expected"]


def run_citation_grammar(case: dict[str, Any]) -> None:
    """Every form of the grammar (the regular expression by ``re`` and ``jsonschema``, the GBNF by
    llama.cpp's rules) accepts and refuses as declared; accepted answers cite only allowed links."""
    grammar = citation_grammar(
        case["messages"], require_citation=case["require_citation"], ids=case["ids"]
    )
    links = [link.link for link in grammar.links]
    assert links == case["expected_links"]
    for text, accepted in [(t, True) for t in case["accept"]] + [
        (t, False) for t in case["reject"]
    ]:
        assert (re.fullmatch(grammar.regex, text) is not None) is accepted, text
        assert (
            jsonschema.Draft202012Validator(grammar.json_schema).is_valid({ANSWER_KEY: text})
            is accepted
        ), text
        assert gbnf_accepts(grammar.gbnf, text) is accepted, text
        if accepted:
            for citation in find_citations(text):
                assert text[citation.start : citation.end] in links, (text, citation)


RUNNERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "source_ids": run_source_id,
    "envelopes": run_envelope,
    "citations": run_citation,
    "native_ragflow": run_native,
    "native_budgets": run_native_budget,
    "saved_evidence": run_saved_evidence,
    "visible_text": run_visible_text,
    "citation_grammar": run_citation_grammar,
}


def test_every_vector_file_has_a_runner() -> None:
    assert set(vector_files()) <= set(RUNNERS), "a vector file has no Python runner"
    assert set(RUNNERS) <= set(vector_files()), "a runner has no vector file"


def _params() -> list[Any]:
    return [
        pytest.param(name, case, id=case["id"])
        for name in sorted(vector_files())
        for case in vector_files()[name]["cases"]
    ]


@pytest.mark.parametrize(("file", "case"), _params())
def test_vector(file: str, case: dict[str, Any]) -> None:
    RUNNERS[file](case)


def test_case_ids_are_unique_and_described() -> None:
    seen: set[str] = set()
    for data in vector_files().values():
        for case in data["cases"]:
            assert case["id"] not in seen
            assert case["description"]
            seen.add(case["id"])
    assert len(seen) >= 120


def test_vector_minimums() -> None:
    assert len(cases("source_ids")) >= 30
    assert len(cases("envelopes")) >= 60
    assert len(cases("citations")) >= 30


SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def test_schema_is_valid_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("case", cases("envelopes"), ids=lambda c: c["id"])
def test_schema_verdict(case: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    assert validator.is_valid(case["artifact"]) is case["schema_valid"]


@pytest.mark.parametrize("case", cases("envelopes"), ids=lambda c: c["id"])
def test_schema_never_accepts_what_the_reader_rejects_at_field_level(case: dict[str, Any]) -> None:
    # The schema is looser than the reader, never stricter: a schema-invalid artifact cannot
    # have produced verified sources unless the fault is one only the schema sees (none today).
    if not case["schema_valid"]:
        result = read_envelope(case["content"], case["artifact"])
        assert result.error or result.rejected or not result.sources
