"""The contract's types (contract.py): the models refuse what the rules refuse, and the tool
budget is a value checked when it is made. The rules themselves are tested in test_rules.py.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest
from pydantic import ValidationError

from deerflow.knowledge.contract import (
    KnowledgeCapabilities,
    KnowledgeSource,
    OutputBudget,
    RetrievalHit,
    RetrievalResult,
)
from deerflow.knowledge.rules import MAX_EXCERPT_CHARS, MAX_MAX_CHARS, MIN_MAX_CHARS, check_record


def test_a_created_source_is_a_valid_record_and_its_id_recomputes() -> None:
    source = KnowledgeSource.create(provider="local", title="deer.md", excerpt="Deer eat acorns.")
    record = source.to_record()
    assert check_record(record) and "url" not in record
    with pytest.raises(ValidationError):
        KnowledgeSource(**{**record, "excerpt": "Deer eat grass."})  # the id no longer matches
    with pytest.raises(ValidationError):
        KnowledgeSource.create(provider="local", title="a\nb", excerpt="x")


def test_hits_results_and_capabilities_refuse_what_the_contract_refuses() -> None:
    with pytest.raises(ValidationError):
        RetrievalHit(text="")
    with pytest.raises(ValidationError):
        RetrievalResult(provider="Not A Name", query="q")
    assert KnowledgeCapabilities().to_metadata() == {"operations": ["search", "sources"]}
    with pytest.raises(ValidationError):
        KnowledgeCapabilities(operations=("search",))
    with pytest.raises(ValidationError):
        KnowledgeCapabilities(operations=("search", "sources", "teleport"))


def test_output_budget_is_a_frozen_value_checked_at_its_bounds() -> None:
    assert OutputBudget() == OutputBudget(8_000, 800)
    OutputBudget(MIN_MAX_CHARS, 1)
    OutputBudget(MAX_MAX_CHARS, MAX_EXCERPT_CHARS)
    for bad in [(MIN_MAX_CHARS - 1, 1), (MAX_MAX_CHARS + 1, 1), (MIN_MAX_CHARS, 0)]:
        with pytest.raises(ValueError):
            OutputBudget(*bad)
    with pytest.raises(ValueError):
        OutputBudget(MIN_MAX_CHARS, MAX_EXCERPT_CHARS + 1)
    with pytest.raises(FrozenInstanceError):
        OutputBudget().max_chars = 1  # type: ignore[misc]
