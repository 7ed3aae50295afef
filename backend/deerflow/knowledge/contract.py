"""The shared evidence contract: record rules, bounds and the provider protocol.

Everything here mirrors ``contracts/README.md`` §1 and DESIGN §3/§8. The field rules are plain
functions so that the envelope reader can apply them without building a model per record, and the
models apply the very same functions, so a ``KnowledgeSource`` can never hold a record a reader
would reject.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from deerflow.knowledge.ids import source_id

__all__ = [
    "CONTROL_CHARACTERS",
    "ENVELOPE_VERSION",
    "ID_HEX_CHARS",
    "ID_PATTERN",
    "KNOWN_OPERATIONS",
    "MAX_DATASET_NAME_CHARS",
    "MAX_EXCERPT_CHARS",
    "MAX_PAGE",
    "MAX_PROVIDER_CHARS",
    "MAX_SOURCES",
    "MAX_TITLE_CHARS",
    "MAX_URL_CHARS",
    "MIN_PAGE",
    "OPTIONAL_FIELDS",
    "PROVIDER_PATTERN",
    "RECORD_FIELDS",
    "REQUIRED_FIELDS",
    "URL_PATTERN",
    "WHITE_SPACE",
    "KnowledgeCapabilities",
    "KnowledgeSource",
    "RetrievalHit",
    "RetrievalProvider",
    "RetrievalResult",
    "check_record",
    "has_control_character",
    "has_lone_surrogate",
    "is_blank",
    "is_valid_dataset_name",
    "is_valid_excerpt",
    "is_valid_page",
    "is_valid_provider",
    "is_valid_title",
    "is_valid_url",
]

ENVELOPE_VERSION: Final = 1
MAX_SOURCES: Final = 100
ID_HEX_CHARS: Final = 32
MAX_PROVIDER_CHARS: Final = 64
MAX_TITLE_CHARS: Final = 512
MAX_EXCERPT_CHARS: Final = 20_000
MAX_DATASET_NAME_CHARS: Final = 512
MAX_URL_CHARS: Final = 2_048
MIN_PAGE: Final = 1
MAX_PAGE: Final = 1_000_000

REQUIRED_FIELDS: Final = ("id", "provider", "title", "excerpt")
OPTIONAL_FIELDS: Final = ("dataset_name", "url", "page")
RECORD_FIELDS: Final = frozenset(REQUIRED_FIELDS + OPTIONAL_FIELDS)

#: Unicode ``White_Space``: a string made only of these is blank.
WHITE_SPACE: Final = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000"
)
#: C0 and C1 controls plus DEL.
CONTROL_CHARACTERS: Final = frozenset(
    [chr(c) for c in range(0x00, 0x20)] + [chr(c) for c in range(0x7F, 0xA0)]
)

ID_PATTERN: Final = re.compile(r"[0-9a-f]{32}")
PROVIDER_PATTERN: Final = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_URL_SPACE = "\\t-\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\x00-\\x1f\\x7f-\\x9f"
URL_PATTERN: Final = re.compile(
    rf"https?://(?:[^{_URL_SPACE}/?#@\\\[\]:]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{{1,5}})?"
    rf"(?:[/?#][^{_URL_SPACE}\\]*)?"
)
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_LONE_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")
_NOT_WHITE_SPACE_RE = re.compile(
    r"[^\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
)


def has_lone_surrogate(text: str) -> bool:
    """Python strings hold surrogates only unpaired, so any surrogate code point is lone."""
    return _LONE_SURROGATE_RE.search(text) is not None


def has_control_character(text: str) -> bool:
    return _CONTROL_RE.search(text) is not None


def is_blank(text: str) -> bool:
    return _NOT_WHITE_SPACE_RE.search(text) is None


def _is_text(value: object, max_chars: int, *, controls_allowed: bool) -> bool:
    return (
        type(value) is str
        and 1 <= len(value) <= max_chars
        and not is_blank(value)
        and (controls_allowed or not has_control_character(value))
        and not has_lone_surrogate(value)
    )


def is_valid_provider(value: object) -> bool:
    return type(value) is str and PROVIDER_PATTERN.fullmatch(value) is not None


def is_valid_title(value: object) -> bool:
    return _is_text(value, MAX_TITLE_CHARS, controls_allowed=False)


def is_valid_excerpt(value: object) -> bool:
    return _is_text(value, MAX_EXCERPT_CHARS, controls_allowed=True)


def is_valid_dataset_name(value: object) -> bool:
    return _is_text(value, MAX_DATASET_NAME_CHARS, controls_allowed=False)


def is_valid_url(value: object) -> bool:
    return (
        type(value) is str
        and len(value) <= MAX_URL_CHARS
        and URL_PATTERN.fullmatch(value) is not None
        and not has_lone_surrogate(value)
    )


def is_valid_page(value: object) -> bool:
    # JSON cannot tell 1.0 from 1 in JavaScript, so an integral float is the integer.
    if type(value) is float and value.is_integer():
        value = int(value)
    return type(value) is int and MIN_PAGE <= value <= MAX_PAGE


_FIELD_CHECKS: Final = {
    "provider": is_valid_provider,
    "title": is_valid_title,
    "excerpt": is_valid_excerpt,
    "dataset_name": is_valid_dataset_name,
    "url": is_valid_url,
    "page": is_valid_page,
}


def check_record(record: object, *, require_id: bool = True) -> bool:
    """True when ``record`` satisfies every field rule of the contract (the id is not recomputed)."""
    if not isinstance(record, Mapping):
        return False
    for key in record:
        if key not in RECORD_FIELDS:
            return False
    if require_id:
        record_id = record.get("id")
        if type(record_id) is not str or ID_PATTERN.fullmatch(record_id) is None:
            return False
    for field, check in _FIELD_CHECKS.items():
        if field in record:
            if not check(record[field]):
                return False
        elif field in REQUIRED_FIELDS:
            return False
    return True


class KnowledgeSource(BaseModel):
    """One verified evidence record. Construct with :meth:`create`; the id always recomputes."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    id: str
    provider: str
    title: str
    excerpt: str
    dataset_name: str | None = None
    url: str | None = None
    page: int | None = None

    @model_validator(mode="before")
    @classmethod
    def _check_rules(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            present = {k: v for k, v in data.items() if v is not None or k not in OPTIONAL_FIELDS}
            if not check_record(present):
                raise ValueError("record breaks the knowledge source field rules")
            if type(present.get("page")) is float:
                present["page"] = int(present["page"])
            if source_id(present) != present["id"]:
                raise ValueError("id does not match the record's content")
            return present
        return data

    @classmethod
    def create(
        cls,
        *,
        provider: str,
        title: str,
        excerpt: str,
        dataset_name: str | None = None,
        url: str | None = None,
        page: int | None = None,
    ) -> KnowledgeSource:
        identity = _identity(
            provider=provider,
            title=title,
            excerpt=excerpt,
            dataset_name=dataset_name,
            url=url,
            page=page,
        )
        return cls(id=source_id(identity), **identity)

    def to_record(self) -> dict[str, Any]:
        """The wire record: absent optional fields are omitted, never ``null``."""
        return self.model_dump(exclude_none=True)


def _identity(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


class RetrievalHit(BaseModel):
    """A provider's hit before formatting. ``title=None`` means unattributed (text, no citation)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = Field(min_length=1)
    title: str | None = None
    dataset_name: str | None = None
    url: str | None = None
    page: int | None = None
    score: float | None = None


class RetrievalResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str
    query: str
    hits: tuple[RetrievalHit, ...] = ()

    @field_validator("provider")
    @classmethod
    def _provider_name(cls, value: str) -> str:
        if not is_valid_provider(value):
            raise ValueError(f"provider must match {PROVIDER_PATTERN.pattern}")
        return value


KNOWN_OPERATIONS: Final = (
    "search",
    "sources",
    "catalog",
    "documents",
    "dataset_filter",
    "document_filter",
)


class KnowledgeCapabilities(BaseModel):
    """What a knowledge tool really implements; advertised as tool metadata."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    operations: tuple[str, ...] = ("search", "sources")

    @field_validator("operations")
    @classmethod
    def _known_operations(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [op for op in value if op not in KNOWN_OPERATIONS]
        if unknown:
            raise ValueError(f"unknown operations: {unknown}")
        if len(set(value)) != len(value):
            raise ValueError("operations must be unique")
        if value[:2] != ("search", "sources"):
            raise ValueError("operations must start with 'search', 'sources'")
        return value

    def to_metadata(self) -> dict[str, list[str]]:
        return {"operations": list(self.operations)}


@runtime_checkable
class RetrievalProvider(Protocol):
    """Search-only retrieval: no catalog, documents or filters are implied."""

    @property
    def name(self) -> str: ...

    @property
    def capabilities(self) -> KnowledgeCapabilities: ...

    async def search(self, query: str, *, limit: int | None = None) -> RetrievalResult: ...
