"""Finds ``deerflow.knowledge`` when another distribution's ``deerflow`` is a regular package.

This distribution installs ``deerflow/knowledge/`` as a *portion* of the ``deerflow`` namespace
(there is no ``deerflow/__init__.py`` of ours). DeerFlow's own harness ships
``deerflow/__init__.py``, which makes ``deerflow`` a regular package whose ``__path__`` is only
DeerFlow's folder, so Python never looks for ``knowledge`` anywhere else. DeerFlow installs its
harness editable (a path entry, not a folder in site-packages), so the two never share a
directory either.

The installed ``deerflow_knowledge_finder.pth`` imports this module at interpreter start-up and
appends :class:`KnowledgeFinder` to the *end* of ``sys.meta_path``: it is asked only after every normal
finder has failed, it answers for exactly one name, ``deerflow.knowledge``, and only with a
``deerflow/knowledge/__init__.py`` found on ``sys.path``. Everything else — ``deerflow`` itself
and every DeerFlow subpackage — resolves exactly as before. The same mechanism serves editable
installs (setuptools' and hatchling's editable finders are also ``.pth`` imports). Standard
library only, because it runs in every interpreter of the environment.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType

NAME = "deerflow.knowledge"
_PARTS = ("deerflow", "knowledge", "__init__.py")


class KnowledgeFinder:
    """A meta-path finder for the one name the import system cannot find on its own."""

    @classmethod
    def find_spec(
        cls,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != NAME:
            return None
        for entry in sys.path:
            if not isinstance(entry, str):
                continue
            init = os.path.join(entry or os.curdir, *_PARTS)
            if os.path.isfile(init):
                return importlib.util.spec_from_file_location(
                    fullname, init, submodule_search_locations=[os.path.dirname(init)]
                )
        return None


def install() -> None:
    """Append the finder once (idempotent: a second ``.pth`` or a re-import adds nothing)."""
    if not any(getattr(finder, "__name__", None) == "KnowledgeFinder" for finder in sys.meta_path):
        sys.meta_path.append(KnowledgeFinder)  # type: ignore[arg-type]


install()
