"""The contract's types: the verified record, a provider's hits, capabilities, the tool budget and
the provider protocol with its optional hooks (docs/RATIONALE.md#producing-evidence).

The rules the types enforce live in :mod:`deerflow.knowledge.rules`, as plain functions that the
readers apply without building a model per record; the models here apply the very same
functions, so a ``KnowledgeSource`` can never hold a record a reader would reject.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from deerflow.knowledge.ids import source_id
from deerflow.knowledge.rules import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_CHARS_PER_HIT,
    KNOWN_OPERATIONS,
    MAX_EXCERPT_CHARS,
    MAX_MAX_CHARS,
    MIN_MAX_CHARS,
    OPTIONAL_FIELDS,
    PROVIDER_PATTERN,
    is_valid_provider,
    normalized_record,
)

__all__ = [
    "DescribesTool",
    "FormatsOwnOutput",
    "KnowledgeCapabilities",
    "KnowledgeSource",
    "OutputBudget",
    "RetrievalHit",
    "RetrievalProvider",
    "RetrievalResult",
]


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
