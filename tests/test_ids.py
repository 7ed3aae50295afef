from __future__ import annotations

import hashlib
from typing import Any

import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from deerflow.knowledge import KnowledgeSource, source_id
from deerflow.knowledge.ids import ID_DOMAIN_TAG, canonical_identity
from tests.strategies import knowledge_sources
from tests.vectors import cases


def _rfc8785_id(record: dict[str, Any]) -> str:
    identity = {k: v for k, v in record.items() if k != "id"}
    return hashlib.sha256(ID_DOMAIN_TAG + rfc8785.dumps(identity)).hexdigest()[:32]


def test_stdlib_encoding_equals_rfc8785_on_every_vector_record() -> None:
    for case in cases("source_ids"):
        record = {k: v for k, v in case["record"].items() if k != "id"}
        assert canonical_identity(record) == rfc8785.dumps(record), case["id"]


@given(knowledge_sources())
def test_stdlib_encoding_equals_rfc8785_on_generated_records(source: KnowledgeSource) -> None:
    assert canonical_identity(source) == rfc8785.dumps(
        source.model_dump(exclude_none=True, exclude={"id"})
    )


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1))
def test_any_string_encodes_like_rfc8785(text: str) -> None:
    record = {"provider": "p", "title": text, "excerpt": text}
    assert canonical_identity(record) == rfc8785.dumps(record)


def test_id_ignores_an_id_key_and_accepts_models() -> None:
    record = {"provider": "lightrag", "title": "a.md", "excerpt": "x"}
    assert source_id({**record, "id": "f" * 32}) == source_id(record) == _rfc8785_id(record)
    assert source_id(KnowledgeSource.create(**record)) == source_id(record)


def test_integral_float_page_hashes_as_integer() -> None:
    record = {"provider": "p", "title": "t", "excerpt": "e"}
    assert source_id({**record, "page": 2.0}) == source_id({**record, "page": 2})


def test_changing_any_field_changes_the_id() -> None:
    base = {
        "provider": "p",
        "title": "t",
        "excerpt": "e",
        "dataset_name": "d",
        "url": "https://x.org",
        "page": 1,
    }
    ids = {source_id(base)}
    for key, value in [
        ("provider", "q"),
        ("title", "T"),
        ("excerpt", "E"),
        ("dataset_name", "D"),
        ("url", "https://y.org"),
        ("page", 2),
    ]:
        ids.add(source_id({**base, key: value}))
    ids.add(source_id({k: v for k, v in base.items() if k != "page"}))
    assert len(ids) == 8
