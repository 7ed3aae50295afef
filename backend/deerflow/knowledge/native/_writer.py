"""DeerFlow's native RAGFlow content and snapshot, written from retrieved chunks.

The RAGFlow provider answers exactly as DeerFlow's own RAGFlow tool does when every chunk it shows
carries complete provider locators: :func:`format_native` lays the chunks out as native entries
within the tool's budget and builds the snapshot beside them. :func:`has_native_locators` is the
rule for "complete": a native record must never invent a locator. Pure: plain values in, plain
values out.

Tested in tests/test_providers_ragflow.py (RAGFlow writes its results with it) and
tests/test_grammar.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Final, Protocol

from deerflow.knowledge.contract import OutputBudget
from deerflow.knowledge.envelope import KNOWLEDGE_SOURCES_KEY
from deerflow.knowledge.native._records import (
    MAX_NATIVE_NAME_CHARS,
    MAX_NATIVE_PAGES,
    MAX_NATIVE_SOURCES,
    NativeSource,
    build_native_snapshot,
    is_locator,
    native_entry,
    native_link,
)
from deerflow.knowledge.text import ELLIPSIS, controls_to_space, replace_lone_surrogates

#: DeerFlow's native document name for a chunk whose document has no name (native records only;
#: the shared envelope leaves such a chunk unattributed instead of inventing a title).
UNKNOWN_DOCUMENT: Final = "Unknown document"


def has_native_locators(
    *, dataset_name: str | None, dataset_id: object, document_id: object, chunk_id: object
) -> bool:
    """True when a native record can describe a chunk without inventing anything: a known
    dataset name and three locators that each pass the native record's locator rule."""
    return dataset_name is not None and all(
        is_locator(value) for value in (dataset_id, document_id, chunk_id)
    )


class NativeEvidence(Protocol):
    """What :func:`format_native` needs of one retrieved chunk (a RAGFlow chunk provides it)."""

    @property
    def text(self) -> str: ...
    @property
    def dataset_id(self) -> str | None: ...
    @property
    def document_id(self) -> str | None: ...
    @property
    def chunk_id(self) -> str | None: ...
    @property
    def dataset_name(self) -> str | None: ...
    @property
    def document_name(self) -> str | None: ...
    @property
    def pages(self) -> tuple[int, ...]: ...
    @property
    def has_locators(self) -> bool:
        """True when a native record can describe the chunk without inventing anything."""
        ...


def format_native(
    chunks: Sequence[NativeEvidence],
    budget: OutputBudget = OutputBudget(),
    *,
    call_id: str | None = None,
) -> tuple[str, dict[str, Any]] | None:
    """DeerFlow's native content and ``knowledge_sources`` snapshot for ``chunks``, or None.

    Entries ``[citation:N](#knowledge-<call>-<N>) dataset / document`` + newline + excerpt, joined
    by a blank line; at most 100, within ``budget.max_chars``. Per entry the excerpt may use
    ``min(budget.max_chars_per_hit, remaining - header - separators)`` characters; a longer text
    is cut (right-stripped, ``…`` appended outside the record's ``text``) and marked
    ``truncated``; when nothing fits, the remaining chunks are not shown. None when a chunk lacks locators or nothing fits.
    """
    if not chunks or not all(chunk.has_locators for chunk in chunks):
        return None
    call = call_id if call_id is not None else uuid.uuid4().hex
    remaining = budget.max_chars
    entries: list[str] = []
    sources: list[NativeSource] = []
    for chunk in chunks[:MAX_NATIVE_SOURCES]:
        ordinal = len(sources) + 1
        source_id = f"{call}-{ordinal}"
        dataset = _native_name(chunk.dataset_name or "")
        document = _native_name(chunk.document_name or UNKNOWN_DOCUMENT)
        header = f"{native_link(source_id, ordinal)} {dataset} / {document}\n"
        separator = 2 if entries else 0
        allowance = min(budget.max_chars_per_hit, remaining - len(header) - separator)
        if allowance < 1:
            break
        text, ellipsis = chunk.text, ""
        if len(text) > allowance:
            text, ellipsis = text[: allowance - 1].rstrip(), ELLIPSIS
            if not text:
                break
        assert chunk.dataset_id and chunk.document_id and chunk.chunk_id  # has_locators
        source = NativeSource(
            id=source_id,
            dataset_id=chunk.dataset_id,
            document_id=chunk.document_id,
            chunk_id=chunk.chunk_id,
            dataset_name=dataset,
            document_name=document,
            text=text,
            truncated=bool(ellipsis),
            pages=chunk.pages[:MAX_NATIVE_PAGES],
        )
        entry = native_entry(source, ordinal, ellipsis=ellipsis)
        entries.append(entry)
        sources.append(source)
        remaining -= len(entry) + separator
    if not sources:
        return None
    return "\n\n".join(entries), {KNOWLEDGE_SOURCES_KEY: build_native_snapshot(sources)}


def _native_name(name: str) -> str:
    """A name as DeerFlow's native header shows it: one line, at most 512 code points."""
    name = replace_lone_surrogates(controls_to_space(name))
    return name.strip()[:MAX_NATIVE_NAME_CHARS]
