"""deerflow.knowledge: retrieval evidence that every reader re-verifies.

The public API is re-exported here; see README.md and contracts/README.md.
"""

from deerflow.knowledge.citations import (
    CITATION_LABEL_PREFIX,
    MAX_DESTINATION_CHARS,
    MAX_LABEL_CHARS,
    Citation,
    CitationKind,
    find_citations,
    relabel_orphans,
)
from deerflow.knowledge.contract import (
    ENVELOPE_VERSION,
    MAX_DATASET_NAME_CHARS,
    MAX_EXCERPT_CHARS,
    MAX_PAGE,
    MAX_SOURCES,
    MAX_TITLE_CHARS,
    MAX_URL_CHARS,
    MIN_PAGE,
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
    text_parts,
)
from deerflow.knowledge.ids import source_id

__all__ = [
    "CITATION_LABEL_PREFIX",
    "ENVELOPE_VERSION",
    "KNOWLEDGE_SOURCES_KEY",
    "MAX_DATASET_NAME_CHARS",
    "MAX_DESTINATION_CHARS",
    "MAX_EXCERPT_CHARS",
    "MAX_LABEL_CHARS",
    "MAX_PAGE",
    "MAX_SOURCES",
    "MAX_TITLE_CHARS",
    "MAX_URL_CHARS",
    "MIN_PAGE",
    "RESERVED_KEYS",
    "RETRIEVAL_SOURCES_KEY",
    "VERSION_KEY",
    "Citation",
    "CitationKind",
    "KnowledgeCapabilities",
    "KnowledgeSource",
    "ReadResult",
    "Rejection",
    "RetrievalHit",
    "RetrievalProvider",
    "RetrievalResult",
    "build_envelope",
    "find_citations",
    "handle_for",
    "read_envelope",
    "relabel_orphans",
    "source_id",
    "text_parts",
]
