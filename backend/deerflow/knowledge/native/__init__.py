"""DeerFlow's native RAGFlow snapshots: the one home of the native format.

DeerFlow's RAGFlow tool writes its evidence as a native snapshot (``knowledge_sources`` as an
object, contracts/README.md §7) rather than the shared envelope. Everything about that format lives
here: the record rules and the reader (``_records``), the writer that lays retrieved chunks out as
native entries (``_writer``), and the tool-output budget that re-renders a native message from its
records (``_budget``). Pure: plain values in, plain values out.
"""

from deerflow.knowledge.handles import NATIVE_HANDLE_PREFIX, NATIVE_ID_PATTERN
from deerflow.knowledge.native._budget import (
    MAX_SYNOPSIS_CHARS,
    MIN_SYNOPSIS_BUDGET,
    NATIVE_OMISSION_NOTICE,
    SYNOPSIS_TOOL_NAMES,
    NativeBudget,
    budget_native,
)
from deerflow.knowledge.native._records import (
    MAX_NATIVE_LOCATOR_CHARS,
    MAX_NATIVE_NAME_CHARS,
    MAX_NATIVE_ORDINAL,
    MAX_NATIVE_PAGES,
    MAX_NATIVE_SOURCES,
    MAX_NATIVE_TEXT_CHARS,
    NATIVE_PROVIDER,
    NATIVE_TOOL_NAMES,
    NATIVE_VERSION,
    NativeErrorCode,
    NativeReadResult,
    NativeRejection,
    NativeRejectionReason,
    NativeSource,
    build_native_snapshot,
    native_entry,
    native_handle,
    native_link,
    native_snapshot_of,
    read_native,
)
from deerflow.knowledge.native._writer import (
    UNKNOWN_DOCUMENT,
    NativeEvidence,
    format_native,
    has_native_locators,
)

__all__ = [
    "MAX_NATIVE_LOCATOR_CHARS",
    "MAX_NATIVE_NAME_CHARS",
    "MAX_NATIVE_ORDINAL",
    "MAX_NATIVE_PAGES",
    "MAX_NATIVE_SOURCES",
    "MAX_NATIVE_TEXT_CHARS",
    "MAX_SYNOPSIS_CHARS",
    "MIN_SYNOPSIS_BUDGET",
    "NATIVE_HANDLE_PREFIX",
    "NATIVE_ID_PATTERN",
    "NATIVE_OMISSION_NOTICE",
    "NATIVE_PROVIDER",
    "NATIVE_TOOL_NAMES",
    "NATIVE_VERSION",
    "SYNOPSIS_TOOL_NAMES",
    "UNKNOWN_DOCUMENT",
    "NativeBudget",
    "NativeErrorCode",
    "NativeEvidence",
    "NativeReadResult",
    "NativeRejection",
    "NativeRejectionReason",
    "NativeSource",
    "budget_native",
    "build_native_snapshot",
    "format_native",
    "has_native_locators",
    "native_entry",
    "native_handle",
    "native_link",
    "native_snapshot_of",
    "read_native",
]
