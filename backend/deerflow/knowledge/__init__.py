"""deerflow.knowledge: retrieval evidence that every reader re-verifies.

The public API is re-exported here; see README.md, contracts/README.md and docs/RATIONALE.md. The
pure core (rules, ids, contract, envelope, the evidence reader, citations, budget, native
snapshots, formatting, the trust boundary) is imported eagerly; the names built on LangChain (the
tool, the task tool, the middleware) load on first use, so importing the package costs about as
much as importing pydantic.
``tests/test_public_api.py`` pins this face (its sorted ``__all__``, the lazy names).
"""

import importlib
from typing import TYPE_CHECKING, Any

from deerflow.knowledge.budget import prune_evidence
from deerflow.knowledge.citations import (
    CITATION_LABEL_PREFIX,
    MAX_PLAIN_RELABEL_PASSES,
    Citation,
    CitationKind,
    find_citations,
    relabel_orphans,
)
from deerflow.knowledge.contract import (
    KnowledgeCapabilities,
    KnowledgeSource,
    RetrievalHit,
    RetrievalProvider,
    RetrievalResult,
)
from deerflow.knowledge.envelope import (
    KNOWLEDGE_SOURCES_KEY,
    RESERVED_KEYS,
    RETRIEVAL_SOURCES_KEY,
    VERSION_KEY,
    ReadResult,
    Rejection,
    build_envelope,
    handle_for,
    read_envelope,
)
from deerflow.knowledge.evidence import EvidenceRejection, MessageEvidence, read_evidence
from deerflow.knowledge.formatting import FormattedResult, citation_link, format_result
from deerflow.knowledge.grammar import CitationGrammar, citation_grammar
from deerflow.knowledge.ids import source_id
from deerflow.knowledge.messages import text_parts
from deerflow.knowledge.native import (
    NATIVE_TOOL_NAMES,
    NativeReadResult,
    NativeRejection,
    NativeSource,
    build_native_snapshot,
    native_handle,
    read_native,
)
from deerflow.knowledge.rules import (
    ENVELOPE_VERSION,
    MAX_DATASET_NAME_CHARS,
    MAX_EXCERPT_CHARS,
    MAX_PAGE,
    MAX_SOURCES,
    MAX_TITLE_CHARS,
    MAX_URL_CHARS,
    MIN_PAGE,
)
from deerflow.knowledge.trust import (
    StripDepthError,
    Stripped,
    StripRefusedError,
    StripTypeError,
    strip_reserved_keys,
)

if TYPE_CHECKING:
    from deerflow.knowledge.forwarding import (
        SourceAccumulator,
        forward_cited_sources,
        make_task_tool,
    )
    from deerflow.knowledge.middleware import ToolOutputBudgetMiddleware
    from deerflow.knowledge.tools import make_knowledge_tool, search_text

# Public names whose modules import LangChain / LangGraph: resolved by ``__getattr__`` (PEP 562).
_LAZY = {
    "SourceAccumulator": "deerflow.knowledge.forwarding",
    "ToolOutputBudgetMiddleware": "deerflow.knowledge.middleware",
    "forward_cited_sources": "deerflow.knowledge.forwarding",
    "make_knowledge_tool": "deerflow.knowledge.tools",
    "make_task_tool": "deerflow.knowledge.forwarding",
    "search_text": "deerflow.knowledge.tools",
}

__all__ = [
    "CITATION_LABEL_PREFIX",
    "ENVELOPE_VERSION",
    "KNOWLEDGE_SOURCES_KEY",
    "MAX_DATASET_NAME_CHARS",
    "MAX_EXCERPT_CHARS",
    "MAX_PAGE",
    "MAX_PLAIN_RELABEL_PASSES",
    "MAX_SOURCES",
    "MAX_TITLE_CHARS",
    "MAX_URL_CHARS",
    "MIN_PAGE",
    "NATIVE_TOOL_NAMES",
    "RESERVED_KEYS",
    "RETRIEVAL_SOURCES_KEY",
    "VERSION_KEY",
    "Citation",
    "CitationGrammar",
    "CitationKind",
    "EvidenceRejection",
    "FormattedResult",
    "KnowledgeCapabilities",
    "KnowledgeSource",
    "MessageEvidence",
    "NativeReadResult",
    "NativeRejection",
    "NativeSource",
    "ReadResult",
    "Rejection",
    "RetrievalHit",
    "RetrievalProvider",
    "RetrievalResult",
    "SourceAccumulator",
    "StripDepthError",
    "StripRefusedError",
    "StripTypeError",
    "Stripped",
    "ToolOutputBudgetMiddleware",
    "build_envelope",
    "build_native_snapshot",
    "citation_grammar",
    "citation_link",
    "find_citations",
    "format_result",
    "forward_cited_sources",
    "handle_for",
    "make_knowledge_tool",
    "make_task_tool",
    "native_handle",
    "prune_evidence",
    "read_envelope",
    "read_evidence",
    "read_native",
    "relabel_orphans",
    "search_text",
    "source_id",
    "strip_reserved_keys",
    "text_parts",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
