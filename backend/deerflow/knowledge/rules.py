"""The contract's rules and limits, defined once: record fields and bounds, tool capabilities,
output budgets (docs/RATIONALE.md#limits).

Every module that checks a record or bounds an output imports the rule from here; the models in
:mod:`deerflow.knowledge.contract` apply the same functions, so a ``KnowledgeSource`` can never
hold a record a reader would reject. The rules are plain functions over plain values and this
module imports no pydantic: a reader verifies a record without building a model per record, and
code that needs only a rule (the local index's reader process, which reads and chunks files)
does not pay for pydantic's import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from deerflow.knowledge.text import has_forbidden_title_character, has_lone_surrogate, is_blank

__all__ = [
    "DEFAULT_MAX_CHARS",
    "DEFAULT_MAX_CHARS_PER_HIT",
    "DEFAULT_OUTPUT_MAX_CHARS",
    "DEFAULT_OUTPUT_PREVIEW_CHARS",
    "ENVELOPE_VERSION",
    "GATEWAY_OUTPUT_MAX_CHARS",
    "ID_HEX_CHARS",
    "ID_PATTERN",
    "KNOWN_OPERATIONS",
    "MAX_DATASET_NAME_CHARS",
    "MAX_EXCERPT_CHARS",
    "MAX_MAX_CHARS",
    "MAX_OUTPUT_MAX_CHARS",
    "MAX_PAGE",
    "MAX_PROVIDER_CHARS",
    "MAX_SOURCES",
    "MAX_TITLE_CHARS",
    "MAX_URL_CHARS",
    "MIN_MAX_CHARS",
    "MIN_OUTPUT_MAX_CHARS",
    "MIN_PAGE",
    "OPTIONAL_FIELDS",
    "PROVIDER_PATTERN",
    "RECORD_FIELDS",
    "REQUIRED_FIELDS",
    "URL_PATTERN",
    "check_record",
    "is_valid_dataset_name",
    "is_valid_excerpt",
    "is_valid_page",
    "is_valid_provider",
    "is_valid_title",
    "is_valid_url",
    "normalized_record",
]

# The record and the envelope (contracts/README.md §1).
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

ID_PATTERN: Final = re.compile(r"[0-9a-f]{32}")
PROVIDER_PATTERN: Final = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_URL_SPACE = "\\t-\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\x00-\\x1f\\x7f-\\x9f"
URL_PATTERN: Final = re.compile(
    rf"https?://(?:[^{_URL_SPACE}/?#@\\\[\]:]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{{1,5}})?"
    rf"(?:[/?#][^{_URL_SPACE}\\]*)?"
)

# Output budgets, in code points. Three layers bound what a tool message shows, innermost first,
# and their defaults are ordered so that an outer layer never cuts what an inner one wrote at its
# default (tests/test_rules.py):
#: 1. The knowledge tool lays out its own result (``OutputBudget``): the whole content, and each
#: excerpt in it (at most ``MAX_EXCERPT_CHARS``, the record's own bound).
DEFAULT_MAX_CHARS: Final = 8_000
DEFAULT_MAX_CHARS_PER_HIT: Final = 800
MIN_MAX_CHARS: Final = 200
MAX_MAX_CHARS: Final = 1_000_000
#: 2. ``ToolOutputBudgetMiddleware`` caps any tool's content after the tool (``max_chars``), with
#: a preview of at most ``DEFAULT_OUTPUT_PREVIEW_CHARS`` when it writes the output to a file.
DEFAULT_OUTPUT_MAX_CHARS: Final = 20_000
DEFAULT_OUTPUT_PREVIEW_CHARS: Final = 4_000
MIN_OUTPUT_MAX_CHARS: Final = 1
MAX_OUTPUT_MAX_CHARS: Final = 10_000_000
#: 3. The reference gateway's agent runs that middleware at this budget: room for a default
#: knowledge result, less for other tools' outputs in the model's context.
GATEWAY_OUTPUT_MAX_CHARS: Final = 12_000

#: What a knowledge tool may advertise it implements; ``search`` and ``sources`` come first.
KNOWN_OPERATIONS: Final = (
    "search",
    "sources",
    "catalog",
    "documents",
    "dataset_filter",
    "document_filter",
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
