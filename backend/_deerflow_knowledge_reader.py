"""Where the local index's reader child process starts: outside ``deerflow.knowledge``.

An index run may read and chunk its files in a child interpreter
(``deerflow/knowledge/providers/local/_files.py`` says when and why). The child's start-up is on
the run's critical path, and the package's ``__init__`` modules import the public API (pydantic
and the models: nine tenths of that start-up) that the child never uses. Importing anything
under ``deerflow.knowledge`` the normal way runs them, so the child's entry point cannot live in
the package: it is this top-level module, which ships beside ``deerflow/`` in the wheel (as
``_deerflow_knowledge_finder.py`` does) and sits beside it in a source tree.

:func:`load` registers each package on the way to the reader (``deerflow.knowledge``, its
``providers`` and ``providers.local``) as a module made from its spec, without running its
``__init__``, then imports the reader, which imports only what it runs. No ``__init__`` of the
package is ever executed in the child. Standard library only; nothing happens on import.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType

#: The packages on the way to :data:`READER`, outermost first.
PACKAGES = (
    "deerflow.knowledge",
    "deerflow.knowledge.providers",
    "deerflow.knowledge.providers.local",
)
READER = "deerflow.knowledge.providers.local._files"


def load() -> ModuleType:
    """The reader module, imported with the packages above it registered but not executed."""
    for name in PACKAGES:
        if name in sys.modules:
            continue
        parent_name, _, child = name.rpartition(".")
        parent = importlib.import_module(parent_name)  # ``deerflow``: a namespace, or DeerFlow's
        spec = importlib.util.find_spec(name)
        if spec is None or spec.submodule_search_locations is None:
            raise ImportError(f"cannot find the package {name}", name=name)
        module = importlib.util.module_from_spec(spec)  # its __init__ is not run
        sys.modules[name] = module
        setattr(parent, child, module)
    return importlib.import_module(READER)


def main() -> None:
    """The child's loop (the parent has set ``sys.path`` and ignores nothing else)."""
    load().serve()
