"""Turn a provider's hits into a tool's content and evidence artifact under one budget
(docs/RATIONALE.md#producing-evidence).

Every displayed cited hit shows a ready-to-copy ``[citation:Title](#knowledge-source-ID)`` link,
the locators the provider really supplied, and its excerpt; only displayed excerpts enter the
artifact, so the artifact always verifies against the content (``read_envelope``). A hit whose
entry does not fit the remaining budget is left out whole (``WholeEntries``, the rule the native
budget follows too) and counted in a notice — evidence is never cut into something the reader
would reject. ``ELLIPSIS``, which ends a shortened excerpt, is :mod:`deerflow.knowledge.text`'s,
re-exported here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from deerflow.knowledge.contract import KnowledgeSource, OutputBudget, RetrievalHit, RetrievalResult
from deerflow.knowledge.envelope import build_envelope, handle_for
from deerflow.knowledge.fitting import WholeEntries
from deerflow.knowledge.rules import (
    MAX_SOURCES,
    MAX_TITLE_CHARS,
    is_valid_dataset_name,
    is_valid_page,
    is_valid_title,
    is_valid_url,
)
from deerflow.knowledge.text import (
    ELLIPSIS,
    controls_to_space,
    replace_lone_surrogates,
    visible_text,
)

__all__ = [
    "DEFAULT_MAX_HITS",
    "ELLIPSIS",
    "NO_RESULTS",
    "FormattedResult",
    "citation_link",
    "escape_label",
    "format_result",
]

DEFAULT_MAX_HITS: Final = MAX_SOURCES
NO_RESULTS: Final = "No relevant content found."

_LABEL_ESCAPE_RE = re.compile(r"([\\\[\]`])")


@dataclass(frozen=True, slots=True)
class FormattedResult:
    content: str
    artifact: dict[str, Any] | None
    sources: tuple[KnowledgeSource, ...]
    omitted: int
    """Hits left out because the budget or ``max_hits`` could not hold them."""


def escape_label(title: str) -> str:
    """A title as link text: invisible format characters spelled ``<U+XXXX>`` (contracts §8: a
    bidi override must not reorder the label), controls become spaces; ``\\``, ``[``, ``]`` and
    backticks escaped. The record keeps the exact title; only its display changes."""
    return _LABEL_ESCAPE_RE.sub(r"\\\1", controls_to_space(visible_text(title)))


def citation_link(source: KnowledgeSource) -> str:
    return f"[citation:{escape_label(source.title)}]({handle_for(source.id)})"


def _clean(text: str) -> str:
    return replace_lone_surrogates(text)


def _title(hit: RetrievalHit) -> str | None:
    if hit.title is None:
        return None
    title = controls_to_space(_clean(hit.title)).strip()[:MAX_TITLE_CHARS]
    return title if is_valid_title(title) else None


def _locators(hit: RetrievalHit) -> dict[str, Any]:
    """Only the locators the provider supplied that satisfy the contract; never repaired."""
    locators: dict[str, Any] = {}
    if hit.dataset_name is not None and is_valid_dataset_name(hit.dataset_name):
        locators["dataset_name"] = hit.dataset_name
    if hit.page is not None and is_valid_page(hit.page):
        locators["page"] = hit.page
    if hit.url is not None and is_valid_url(hit.url):
        locators["url"] = hit.url
    return locators


def _locator_line(locators: dict[str, Any]) -> str:
    parts = []
    if "dataset_name" in locators:
        parts.append(f"Dataset: {locators['dataset_name']}")
    if "page" in locators:
        parts.append(f"Page: {locators['page']}")
    if "url" in locators:
        parts.append(f"URL: {locators['url']}")
    return " · ".join(parts)


def _notice(omitted: int) -> str:
    noun = "result was" if omitted == 1 else "results were"
    return f"\n\n[{omitted} more {noun} omitted to stay within the output budget.]"


def format_result(
    result: RetrievalResult,
    budget: OutputBudget = OutputBudget(),
    *,
    max_hits: int = DEFAULT_MAX_HITS,
) -> FormattedResult:
    """Content plus evidence artifact for ``result``; content length is at most
    ``budget.max_chars``, each excerpt at most ``budget.max_chars_per_hit``."""
    if not 1 <= max_hits <= MAX_SOURCES:
        raise ValueError(f"max_hits must be between 1 and {MAX_SOURCES}")
    hits = [hit for hit in result.hits if _clean(hit.text).strip()]
    if not hits:
        return FormattedResult(NO_RESULTS, None, (), 0)

    header = f"Knowledge search results from {result.provider}. Cite a source by copying its citation link exactly."
    # Reserve room for the largest notice this call could need, so adding it never overflows.
    room = WholeEntries(budget.max_chars - len(_notice(len(hits))), used=len(header))
    content = header  # entries carry their own separator
    sources: list[KnowledgeSource] = []
    seen: set[str] = set()
    shown = 0
    omitted = max(0, len(hits) - max_hits)
    for hit in hits[:max_hits]:
        text = _clean(hit.text).strip()
        excerpt = text[: budget.max_chars_per_hit].rstrip()
        tail = ELLIPSIS if len(excerpt) < len(text) else ""
        title = _title(hit)
        source = None
        if title is not None:
            source = KnowledgeSource.create(
                provider=result.provider, title=title, excerpt=excerpt, **_locators(hit)
            )
            if source.id in seen:
                continue
            line = f"Source {shown + 1}: {citation_link(source)}"
            locator_line = _locator_line(_locators(hit))
        else:
            line = f"Source {shown + 1} (unattributed: the provider gave no document title, so it cannot be cited)"
            locator_line = ""
        entry = (
            "\n\n" + line + ("\n" + locator_line if locator_line else "") + "\n" + excerpt + tail
        )
        if not room.take(entry):
            omitted += 1
            continue
        content += entry
        shown += 1
        if source is not None:
            seen.add(source.id)
            sources.append(source)
    if omitted:
        content += _notice(omitted)
    artifact = build_envelope(sources) if sources else None
    return FormattedResult(content, artifact, tuple(sources), omitted)
