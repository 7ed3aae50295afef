"""Content-addressed source ids (contracts/README.md §2).

The id is the first 32 hex digits of SHA-256 over a domain tag and the RFC 8785 (JCS) form of the
record's identity. For the identity's field types — ASCII keys, strings without lone surrogates
and small integers — stdlib ``json.dumps`` with sorted keys, compact separators and
``ensure_ascii=False`` produces exactly the JCS bytes; ``tests/test_ids.py`` proves it against the
``rfc8785`` package on every vector and on generated records. The C encoder keeps verification
cheap enough to run on every read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "IDENTITY_FIELDS",
    "ID_DOMAIN_TAG",
    "canonical_identity",
    "source_id",
    "verified_record_id",
]

ID_DOMAIN_TAG: Final = b"deerflow.knowledge_source.v1\n"
IDENTITY_FIELDS: Final = ("provider", "title", "excerpt", "dataset_name", "url", "page")

_encode = json.JSONEncoder(
    ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
).encode


def canonical_identity(record: Mapping[str, Any] | Any) -> bytes:
    """JCS bytes of the record's identity: every identity field present, ``id`` ignored."""
    fields: Mapping[str, Any] = record if isinstance(record, Mapping) else record.model_dump()
    identity: dict[str, Any] = {}
    for key in IDENTITY_FIELDS:
        value = fields.get(key)
        if value is None:
            continue
        if type(value) is float and value.is_integer():
            value = int(value)
        identity[key] = value
    return _encode(identity).encode("utf-8")


def source_id(record: Mapping[str, Any] | Any) -> str:
    """The record's id: a mapping or a ``KnowledgeSource``; an ``id`` key in it is ignored."""
    return hashlib.sha256(ID_DOMAIN_TAG + canonical_identity(record)).hexdigest()[:32]


def verified_record_id(record: Mapping[str, Any]) -> str:
    """``source_id`` for a record that already passed the field rules (no float pages, only
    contract keys): the reader's hot path, without re-filtering fields."""
    identity = {k: v for k, v in record.items() if k != "id"}
    return hashlib.sha256(ID_DOMAIN_TAG + _encode(identity).encode("utf-8")).hexdigest()[:32]
