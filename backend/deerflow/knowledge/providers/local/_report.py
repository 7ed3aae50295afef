"""What an index run reports: each file's outcome as it goes, and the run's summary at the end.

:class:`IndexProgress` reaches the caller's ``progress`` callback after each file;
:class:`IndexReport` is what :meth:`LocalProvider.index` returns; :class:`FolderChoiceNeeded`
is the one refusal a run makes before changing anything (see :data:`IndexMode`).

Tested in tests/test_providers_local.py (each run's report).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from deerflow.knowledge._provider_settings import LOCAL as PROVIDER_NAME
from deerflow.knowledge.providers.documents import SkippedFile
from deerflow.knowledge.providers.errors import ProviderConfigError

FileOutcome = Literal["added", "updated", "unchanged", "removed", "skipped"]
#: What a run does with documents indexed from other folders: ``"update"`` (the default) refuses
#: to run while there are any (:class:`FolderChoiceNeeded`), ``"add"`` keeps them beside this
#: folder's, ``"replace"`` removes them. The folder's own documents are updated in every mode.
IndexMode = Literal["update", "add", "replace"]
MODES: Final = ("update", "add", "replace")


class FolderChoiceNeeded(ProviderConfigError):
    """The index holds documents indexed from other folders, and the run did not say whether to
    keep them (``mode="add"``) or remove them (``mode="replace"``); nothing was changed."""

    def __init__(self, message: str, *, folders: tuple[str, ...], documents: int) -> None:
        super().__init__(message, provider=PROVIDER_NAME)
        self.folders = folders
        """The other folders, as indexed (real paths)."""
        self.documents = documents
        """How many documents they hold."""


@dataclass(frozen=True, slots=True)
class IndexProgress:
    """Reported to the ``progress`` callback after each file (``done`` of ``total``)."""

    done: int
    total: int
    path: str
    outcome: FileOutcome


@dataclass(frozen=True, slots=True)
class IndexReport:
    root: str
    """The folder indexed (its real path, POSIX separators)."""
    index_path: str
    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    skipped: tuple[SkippedFile, ...] = ()
    chunks: int = 0
    """Chunks in the index after the run."""
    chunks_written: int = 0
    """Chunks written by this run (added and updated files)."""
    documents: int = 0
    """Documents in the index after the run."""
    other_folders: tuple[tuple[str, int], ...] = ()
    """The other folders whose documents the index holds after the run, with their counts."""
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)
