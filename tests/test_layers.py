"""The layer table of docs/ARCHITECTURE.md holds over the import graph, read statically.

Every module of ``deerflow.knowledge`` is parsed with :mod:`ast` (nothing is imported), and every
import it can make is an edge: ``import a.b``, ``from a import b`` (to the module ``a.b`` when
there is one, else to ``a``), relative forms (``from . import x``, ``from ..server import app``),
imports inside functions (lazy ones) and under ``TYPE_CHECKING``, and
``importlib.import_module("…")`` with a literal name. A module may import its own layer and the
layers of lower rank; two layers of the same rank may not import each other. The pure layers
import no I/O library. The implicit import of parent packages (importing ``a.b.c`` runs
``a/__init__.py``) is not an edge: it is what Python does, not what a module asks for.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "deerflow.knowledge"
SOURCE = ROOT / "backend" / "deerflow" / "knowledge"
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"


@dataclass(frozen=True)
class Layer:
    rank: int
    name: str
    modules: tuple[str, ...]
    """Module names relative to the package; ``""`` is the package's face (its ``__init__``),
    ``"x."`` is the package ``x`` and everything under it."""
    pure: bool


#: The table of docs/ARCHITECTURE.md ("Layers"), bottom first: one row per folder. A module is in
#: the row that names it, else in the row of the deepest folder that holds it.
LAYERS: tuple[Layer, ...] = (
    Layer(
        0,
        "rules",
        (
            "_nesting",
            "_provider_errors",
            "_provider_settings",
            "_redaction",
            "contract",
            "fitting",
            "handles",
            "ids",
            "messages",
            "rules",
            "text",
        ),
        pure=True,
    ),
    Layer(
        1,
        "evidence",
        (
            "audit",
            "budget",
            "citations",
            "envelope",
            "evidence",
            "formatting",
            "grammar",
            "native.",
            "saved_evidence",
            "trust",
        ),
        pure=True,
    ),
    Layer(
        2,
        "agents",
        ("", "constrain", "forwarding", "middleware", "responder.", "tools"),
        pure=False,
    ),
    Layer(2, "parsers", ("providers.parse.",), pure=True),
    Layer(3, "settings", ("settings",), pure=False),
    Layer(4, "providers", ("providers.",), pure=False),
    Layer(5, "gateway", ("server.",), pure=False),
    Layer(5, "integrations", ("integrations.",), pure=False),
    Layer(6, "cli", ("cli",), pure=False),
)

#: What a pure module never imports: clients, servers, databases, processes, files.
IO_LIBRARIES = frozenset(
    {
        "asyncpg",
        "fastapi",
        "http.client",
        "httpx",
        "pathspec",
        "psycopg",
        "psycopg_pool",
        "pypdf",
        "shutil",
        "socket",
        "sqlite3",
        "starlette",
        "subprocess",
        "tempfile",
        "tomllib",
        "urllib.request",
        "uvicorn",
    }
)


# --------------------------------------------------------------------------- the checker


def package_sources(source: Path = SOURCE) -> dict[str, str]:
    """Every module of the package: its name relative to the package -> its source text."""
    modules: dict[str, str] = {}
    for path in sorted(source.rglob("*.py")):
        parts = list(path.relative_to(source).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = [*parts[:-1], "__init__"]
        modules[".".join(parts)] = path.read_text(encoding="utf-8")
    return modules


def _name(module: str) -> str:
    """``providers.__init__`` -> ``providers``; ``__init__`` -> ``""`` (the face)."""
    if module == "__init__":
        return ""
    return module.removesuffix(".__init__")


def _absolute(relative: str) -> str:
    return f"{PACKAGE}.{relative}" if relative else PACKAGE


def imports(module: str, source: str, known: set[str]) -> Iterator[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in ``source`` (see the docstring)."""
    me = _absolute(_name(module))
    package = me if module == "__init__" or module.endswith(".__init__") else me.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                yield node.lineno, submodule if submodule in known else target
        elif (
            isinstance(node, ast.Call)
            and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                or (isinstance(node.func, ast.Name) and node.func.id == "import_module")
            )
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.lineno, node.args[0].value


def layer_of(relative: str, layers: tuple[Layer, ...] = LAYERS) -> Layer | None:
    for layer in layers:
        if relative in layer.modules:
            return layer
    best: tuple[int, Layer] | None = None
    for layer in layers:
        for entry in layer.modules:
            held = entry.endswith(".") and (relative + ".").startswith(entry)
            if held and (best is None or len(entry) > best[0]):
                best = (len(entry), layer)
    return None if best is None else best[1]


def violations(
    sources: Mapping[str, str],
    *,
    layers: tuple[Layer, ...] = LAYERS,
) -> list[str]:
    """Every import that breaks the table, as ``module:line: why`` (empty when it holds)."""
    names = {_name(module) for module in sources}
    known = {_absolute(name) for name in names}
    found: list[str] = []
    for module, source in sorted(sources.items()):
        relative = _name(module)
        shown = _absolute(relative)
        mine = layer_of(relative, layers)
        if mine is None:
            found.append(
                f"{shown}: in no layer; add it to the table of tests/test_layers.py and "
                "docs/ARCHITECTURE.md"
            )
            continue
        for line, target in imports(module, source, known):
            if target == PACKAGE and relative != "":
                found.append(f"{shown}:{line}: imports the package's face ({PACKAGE})")
                continue
            if target.startswith(PACKAGE + "."):
                theirs = layer_of(target.removeprefix(PACKAGE + "."), layers)
                if theirs is None or theirs is mine:
                    continue
                if theirs.rank >= mine.rank:
                    found.append(
                        f"{shown}:{line}: {mine.name} (rank {mine.rank}) imports {target}, "
                        f"{theirs.name} (rank {theirs.rank})"
                    )
            elif mine.pure and any(
                target == library or target.startswith(library + ".") for library in IO_LIBRARIES
            ):
                found.append(f"{shown}:{line}: a pure module imports {target}")
    return found


# --------------------------------------------------------------------------- the real package


def test_the_package_keeps_its_layers() -> None:
    sources = package_sources()
    assert len(sources) > 50  # the package's modules were found
    assert violations(sources) == []


def test_the_table_is_the_one_in_architecture_md() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if re.match(r"^\| \d+ \|", line)]
    documented = []
    for row in rows:
        rank, name, modules, _ = (cell.strip() for cell in row.strip("|").split("|"))
        entries = []
        for shown in re.findall(r"`([^`]+)`", modules):
            if shown == "__init__.py":
                entries.append("")
            elif shown.endswith("/"):
                entries.append(shown[:-1].replace("/", ".") + ".")
            else:
                entries.append(shown.removesuffix(".py").replace("/", "."))
        documented.append((int(rank), name, tuple(sorted(entries))))
    assert documented == [
        (layer.rank, layer.name, tuple(sorted(layer.modules))) for layer in LAYERS
    ]


# --------------------------------------------------------------------------- the checker fails


def _clean() -> dict[str, str]:
    return {
        "__init__": "from deerflow.knowledge.tools import make_knowledge_tool\n",
        "contract": "import pydantic\nfrom deerflow.knowledge import text\n",
        "text": "",
        "envelope": "from . import contract\n",
        "tools": "from deerflow.knowledge._provider_errors import ProviderError\n",
        "settings": "import tomllib\nfrom deerflow.knowledge._provider_settings import LOCAL\n",
        "_provider_settings": "",
        "providers.__init__": "def f():\n    from deerflow.knowledge.settings import load\n",
        "_provider_errors": "",
        "providers.local.__init__": "from ._provider import LocalProvider\n",
        "providers.local._provider": "import sqlite3\nfrom ...envelope import read\n",
        "server.__init__": "from deerflow.knowledge.providers import build_provider\n",
        "cli": "import deerflow.knowledge.server\n",
    }


def test_a_clean_synthetic_package_passes() -> None:
    assert violations(_clean()) == []


@pytest.mark.parametrize(
    ("module", "source", "message"),
    [
        # a plain import, upwards from the rules
        (
            "contract",
            "from deerflow.knowledge.providers import ragflow\n",
            "rules (rank 0) imports deerflow.knowledge.providers, providers (rank 4)",
        ),
        # the relative form, one level up
        ("envelope", "from . import tools\n", "evidence (rank 1) imports deerflow.knowledge.tools"),
        # a lazy import inside a function, two levels up
        (
            "providers.local._provider",
            "def f():\n    from ...server import app\n",
            "providers (rank 4) imports deerflow.knowledge.server, gateway (rank 5)",
        ),
        # a lazy import by name
        (
            "providers.local._provider",
            "import importlib\nimportlib.import_module('deerflow.knowledge.cli')\n",
            "providers (rank 4) imports deerflow.knowledge.cli",
        ),
        # settings may not construct providers
        (
            "settings",
            "def build():\n    from deerflow.knowledge.providers.local import LocalProvider\n",
            "settings (rank 3) imports deerflow.knowledge.providers.local",
        ),
        # under TYPE_CHECKING too
        (
            "tools",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import deerflow.knowledge.cli\n",
            "agents (rank 2) imports deerflow.knowledge.cli",
        ),
        # two layers of the same rank
        (
            "server.__init__",
            "from deerflow.knowledge.integrations import deerflow\n",
            "gateway (rank 5) imports deerflow.knowledge.integrations",
        ),
        # a pure module does no I/O
        ("contract", "import httpx\n", "a pure module imports httpx"),
        (
            "envelope",
            "from urllib.request import urlopen\n",
            "a pure module imports urllib.request",
        ),
        # a new module must be placed in the table
        ("reranker", "", "deerflow.knowledge.reranker: in no layer"),
        # nothing inside imports the face
        ("envelope", "import deerflow.knowledge\n", "imports the package's face"),
    ],
)
def test_a_violation_is_found(module: str, source: str, message: str) -> None:
    sources = _clean()
    sources[module] = sources.get(module, "") + source
    found = violations(sources)
    assert any(message in line for line in found), found


def test_a_pure_provider_module_does_no_io() -> None:
    sources = {**_clean(), "providers.parse.lightrag": "import httpx\n"}
    assert violations(sources) == [
        "deerflow.knowledge.providers.parse.lightrag:1: a pure module imports httpx"
    ]


def test_rows_are_per_folder() -> None:
    # A row names top-level modules and folders; no row reaches into another row's folder for one
    # module (a module that belongs elsewhere moves to a folder of its own).
    named = [entry for layer in LAYERS for entry in layer.modules if not entry.endswith(".")]
    assert [entry for entry in named if "." in entry] == []
