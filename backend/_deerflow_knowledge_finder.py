"""Finds ``deerflow.knowledge`` when another distribution's ``deerflow`` is a regular package.

This distribution installs ``deerflow/knowledge/`` as a *portion* of the ``deerflow`` namespace
(there is no ``deerflow/__init__.py`` of ours). DeerFlow's own harness ships
``deerflow/__init__.py``, which makes ``deerflow`` a regular package whose ``__path__`` is only
DeerFlow's folder, so Python never looks for ``knowledge`` anywhere else. DeerFlow installs its
harness editable (a path entry, not a folder in site-packages), so the two never share a
directory either.

The installed ``deerflow_knowledge_finder.pth`` imports this module at interpreter start-up and
appends :class:`KnowledgeFinder` to the *end* of ``sys.meta_path``: it is asked only after every
normal finder has failed, it answers for exactly one name, ``deerflow.knowledge``, and only with
this distribution's own copy, the ``deerflow/knowledge/`` beside this file (in site-packages for
a wheel; in ``backend/`` for a source tree and an editable install, whose build leaves this file
out of site-packages so that the ``backend/`` copy is the one imported). It never walks
``sys.path``: an entry such as ``''`` (the working directory, which ``python -c`` and uvicorn put
there) would let a ``deerflow/knowledge/__init__.py`` planted in any directory run. Everything
else — ``deerflow`` itself and every DeerFlow subpackage — resolves exactly as before.

It runs in every interpreter of the environment, so it costs nothing there: it imports only
``os`` and ``sys``, which site has loaded already (no ``from __future__``, no typing at run time),
and ``importlib.util`` only when ``deerflow.knowledge`` is being imported.
"""

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; type checkers read it
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

NAME = "deerflow.knowledge"
#: The folder holding this distribution's ``deerflow/knowledge/``, fixed at start-up.
HOME = os.path.dirname(os.path.abspath(__file__))


class KnowledgeFinder:
    """A meta-path finder for the one name the import system cannot find on its own."""

    @classmethod
    def find_spec(
        cls,
        fullname: "str",
        path: "Sequence[str] | None" = None,
        target: "ModuleType | None" = None,
    ) -> "ModuleSpec | None":
        if fullname != NAME:
            return None
        package = os.path.join(HOME, "deerflow", "knowledge")
        init = os.path.join(package, "__init__.py")
        if not os.path.isfile(init):
            return None
        from importlib.util import spec_from_file_location

        return spec_from_file_location(fullname, init, submodule_search_locations=[package])


def install() -> None:
    """Append the finder once (idempotent: a second ``.pth`` or a re-import adds nothing)."""
    if not any(getattr(finder, "__name__", None) == "KnowledgeFinder" for finder in sys.meta_path):
        sys.meta_path.append(KnowledgeFinder)  # type: ignore[arg-type]


install()
