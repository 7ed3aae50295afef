"""The shared evidence contract: record rules, bounds, the tool budget and the provider protocol.

Everything here mirrors ``contracts/README.md`` §1 and DESIGN §3/§8. The field rules are plain
functions so that the envelope reader can apply them without building a model per record, and the
models apply the very same functions, so a ``KnowledgeSource`` can never hold a record a reader
would reject.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from deerflow.knowledge.ids import source_id
from deerflow.knowledge.text import (
    CONTROL_CHARACTERS,
    WHITE_SPACE,
    has_forbidden_title_character,
    has_lone_surrogate,
    is_blank,
)

__all__ = [
    "CONTROL_CHARACTERS",
    "DEFAULT_MAX_CHARS",
    "DEFAULT_MAX_CHARS_PER_HIT",
    "ENVELOPE_VERSION",
    "ID_HEX_CHARS",
    "ID_PATTERN",
    "KNOWN_OPERATIONS",
    "MAX_DATASET_NAME_CHARS",
    "MAX_EXCERPT_CHARS",
    "MAX_MAX_CHARS",
    "MAX_PAGE",
    "MAX_PROVIDER_CHARS",
    "MAX_SOURCES",
    "MAX_TITLE_CHARS",
    "MAX_URL_CHARS",
    "MIN_MAX_CHARS",
    "MIN_PAGE",
    "OPTIONAL_FIELDS",
    "PROVIDER_PATTERN",
    "RECORD_FIELDS",
    "REQUIRED_FIELDS",
    "URL_PATTERN",
    "WHITE_SPACE",
    "DescribesTool",
    "FormatsOwnOutput",
    "KnowledgeCapabilities",
    "KnowledgeSource",
    "OutputBudget",
    "RetrievalHit",
    "RetrievalProvider",
    "RetrievalResult",
    "check_record",
    "has_lone_surrogate",
    "is_blank",
    "is_valid_dataset_name",
    "is_valid_excerpt",
    "is_valid_page",
    "is_valid_provider",
    "is_valid_title",
    "is_valid_url",
    "normalized_record",
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
#: The tool budget's defaults and bounds (code points, ``OutputBudget``): a whole tool result, and
#: each excerpt in it (at most ``MAX_EXCERPT_CHARS``, the record's own bound).
DEFAULT_MAX_CHARS: Final = 8_000
DEFAULT_MAX_CHARS_PER_HIT: Final = 800
MIN_MAX_CHARS: Final = 200
MAX_MAX_CHARS: Final = 1_000_000

REQUIRED_FIELDS: Final = ("id", "provider", "title", "excerpt")
OPTIONAL_FIELDS: Final = ("dataset_name", "url", "page")
RECORD_FIELDS: Final = frozenset(REQUIRED_FIELDS + OPTIONAL_FIELDS)

ID_PATTERN: Final = re.compile(r"[0-9a-f]{32}")
PROVIDER_PATTERN: Final = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_URL_SPACE = "\\t-\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\x00-\\x1f\\x7f-\\x9f"
URL_PATTERN: Final = re.compile(
    rf"https?://(?:[^{_URL_SPACE}/?#@\\\[\]:]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{{1,5}})?"
    rf"(?:[/?#][^{_URL_SPACE}\\]*)?"
)


def is_valid_provider(value: object) -> bool:
    return type(value) is str and PROVIDER_PATTERN.fullmatch(value) is not None


def is_valid_title(value: object) -> bool:
    return _is_title_like(value, MAX_TITLE_CHARS)


def is_valid_excerpt(value: object) -> bool:
    return (
        type(value) is str
        and 1 <= len(value) <= MAX_EXCERPT_CHARS
        and not is_blank(value)
        and not has_lone_surrogate(value)
    )


def is_valid_dataset_name(value: object) -> bool:
    return _is_title_like(value, MAX_DATASET_NAME_CHARS)


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


_OPTIONAL_CHECKS: Final = {
    "dataset_name": is_valid_dataset_name,
    "url": is_valid_url,
    "page": is_valid_page,
}


def _is_title_like(value: object, max_chars: int) -> bool:
    return (
        type(value) is str
        and 1 <= len(value) <= max_chars
        and not has_forbidden_title_character(value)
        and not is_blank(value)
    )


def normalized_record(record: object, *, require_id: bool = True) -> dict[str, Any] | None:
    """The record as a plain dict (an integral float page made an int) when every field rule of
    the contract holds, else None. The id is checked for shape only, not recomputed.

    This is the hot path of every reader, so the rules are inlined rather than dispatched.
    """
    if not isinstance(record, Mapping) or not record.keys() <= RECORD_FIELDS:
        return None
    provider = record.get("provider")
    title = record.get("title")
    excerpt = record.get("excerpt")
    if (
        type(provider) is not str
        or PROVIDER_PATTERN.fullmatch(provider) is None
        or not _is_title_like(title, MAX_TITLE_CHARS)
        or type(excerpt) is not str
        or not 1 <= len(excerpt) <= MAX_EXCERPT_CHARS
        or is_blank(excerpt)
        or (not excerpt.isascii() and has_lone_surrogate(excerpt))
    ):
        return None
    if require_id:
        record_id = record.get("id")
        if type(record_id) is not str or ID_PATTERN.fullmatch(record_id) is None:
            return None
    normalized = dict(record)
    if len(normalized) > 4 or (not require_id and len(normalized) > 3):
        for field, check in _OPTIONAL_CHECKS.items():
            if field in normalized and not check(normalized[field]):
                return None
        page = normalized.get("page")
        if type(page) is float:
            normalized["page"] = int(page)
    return normalized


def check_record(record: object, *, require_id: bool = True) -> bool:
    """True when ``record`` satisfies every field rule of the contract (the id is not recomputed)."""
    return normalized_record(record, require_id=require_id) is not None


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
            normalized = normalized_record(present)
            if normalized is None:
                raise ValueError("record breaks the knowledge source field rules")
            if source_id(normalized) != normalized["id"]:
                raise ValueError("id does not match the record's content")
            return normalized
        return data

    @classmethod
    def _trusted(cls, record: dict[str, Any]) -> KnowledgeSource:
        """Wrap a record a reader has just verified, skipping a second validation pass."""
        source = cls.__new__(cls)
        fields = {"dataset_name": None, "url": None, "page": None, **record}
        object.__setattr__(source, "__dict__", fields)
        object.__setattr__(source, "__pydantic_fields_set__", set(record))
        object.__setattr__(source, "__pydantic_extra__", None)
        object.__setattr__(source, "__pydantic_private__", None)
        return source

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


@dataclass(frozen=True, slots=True)
class OutputBudget:
    """How much one tool result may show, checked once when it is made (like ``httpx.Timeout``).

    ``max_chars`` bounds the whole content (code points), ``max_chars_per_hit`` each excerpt. The
    one value travels from the tool through a provider's ``format_for_tool`` to the writers
    (``format_result``, ``format_native``), so no layer re-checks a pair of loose integers.
    Raises ``ValueError`` (the caller's fault) for a value outside the supported bounds, so a
    tool with an impossible budget fails when it is built, not on its first call.
    """

    max_chars: int = DEFAULT_MAX_CHARS
    max_chars_per_hit: int = DEFAULT_MAX_CHARS_PER_HIT

    def __post_init__(self) -> None:
        if not MIN_MAX_CHARS <= self.max_chars <= MAX_MAX_CHARS:
            raise ValueError(f"max_chars must be between {MIN_MAX_CHARS} and {MAX_MAX_CHARS}")
        if not 1 <= self.max_chars_per_hit <= MAX_EXCERPT_CHARS:
            raise ValueError(f"max_chars_per_hit must be between 1 and {MAX_EXCERPT_CHARS}")


@runtime_checkable
class FormatsOwnOutput(Protocol):
    """Optional provider hook: keep an established output of its own (RAGFlow: DeerFlow's native
    snapshots). ``format_for_tool`` returns ``(content, artifact)`` within ``budget``, or None to
    select the shared envelope; the budget was checked when it was made."""

    def format_for_tool(
        self, result: RetrievalResult, budget: OutputBudget
    ) -> tuple[str, dict[str, Any]] | None: ...


@runtime_checkable
class DescribesTool(Protocol):
    """Optional provider hook: its own tool description (its citation links may look
    different from the shared envelope's)."""

    @property
    def tool_description(self) -> str: ...


@runtime_checkable
class RetrievalProvider(Protocol):
    """Search-only retrieval: no catalog, documents or filters are implied."""

    @property
    def name(self) -> str: ...

    @property
    def capabilities(self) -> KnowledgeCapabilities: ...

    async def search(self, query: str, *, limit: int | None = None) -> RetrievalResult: ...
