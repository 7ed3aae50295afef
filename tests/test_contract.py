"""The contract's models and field rules (contract.py), at their limits and one past them.

The cross-language verdicts live in contracts/vectors (test_vectors.py); these tests pin the
Python API around them: the predicates, the models and their refusals.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from deerflow.knowledge.contract import (
    MAX_DATASET_NAME_CHARS,
    MAX_EXCERPT_CHARS,
    MAX_PAGE,
    MAX_PROVIDER_CHARS,
    MAX_TITLE_CHARS,
    MAX_URL_CHARS,
    MIN_PAGE,
    KnowledgeCapabilities,
    KnowledgeSource,
    RetrievalHit,
    RetrievalResult,
    check_record,
    is_valid_dataset_name,
    is_valid_excerpt,
    is_valid_page,
    is_valid_provider,
    is_valid_title,
    is_valid_url,
)


def test_each_length_limit_holds_exactly_at_the_limit() -> None:
    assert is_valid_title("t" * MAX_TITLE_CHARS) and not is_valid_title("t" * (MAX_TITLE_CHARS + 1))
    assert is_valid_dataset_name("d" * MAX_DATASET_NAME_CHARS)
    assert not is_valid_dataset_name("d" * (MAX_DATASET_NAME_CHARS + 1))
    assert is_valid_excerpt("e" * MAX_EXCERPT_CHARS)
    assert not is_valid_excerpt("e" * (MAX_EXCERPT_CHARS + 1))
    assert is_valid_provider("p" * MAX_PROVIDER_CHARS)
    assert not is_valid_provider("p" * (MAX_PROVIDER_CHARS + 1))
    url = "https://example.org/"
    assert is_valid_url(url + "a" * (MAX_URL_CHARS - len(url)))
    assert not is_valid_url(url + "a" * (MAX_URL_CHARS - len(url) + 1))
    assert is_valid_page(MIN_PAGE) and is_valid_page(MAX_PAGE) and is_valid_page(2.0)
    assert not is_valid_page(MIN_PAGE - 1) and not is_valid_page(MAX_PAGE + 1)
    assert not is_valid_page(True) and not is_valid_page(2.5)


def test_titles_refuse_controls_surrogates_and_blanks_but_keep_text_as_is() -> None:
    assert is_valid_title(" Déjà vu.pdf ")
    for bad in ["", "   ", "a\nb", "a\x7fb", "a\ud800b", None, 3]:
        assert not is_valid_title(bad)


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
