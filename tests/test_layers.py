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
    Layer(6, "cli", ("cli.",), pure=False),
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


# --------------------------------------------------------------------------- the gateway's parts

#: The table of docs/ARCHITECTURE.md ("The gateway's parts"), bottom first: ``server/`` read as
#: parts, with the same rules (a part imports its own rank and below; two parts of one rank never
#: import each other). The engine ranks below the API, so it never imports it.
SERVER_LAYERS: tuple[Layer, ...] = (
    Layer(0, "common", ("server._defaults", "server.errors"), pure=False),
    Layer(0, "wire", ("server.wire.",), pure=False),
    Layer(1, "engine", ("server.engine.",), pure=False),
    Layer(2, "postgres", ("server.postgres.",), pure=False),
    Layer(2, "api", ("server.api.",), pure=False),
    Layer(3, "process", ("server.process.",), pure=False),
    Layer(4, "face", ("server",), pure=False),
)

#: What the engine never imports: the web framework (its refusals are domain errors).
WEB_FRAMEWORKS = ("fastapi", "starlette")


def server_sources(source: Path = SOURCE) -> dict[str, str]:
    return {
        module: text
        for module, text in package_sources(source).items()
        if module == "server.__init__" or module.startswith("server.")
    }


#: A gateway that keeps its table: each module with the one module it imports (or none).
_GATEWAY_IMPORTS: tuple[tuple[str, str | None], ...] = (
    ("server.__init__", "server.process._serve"),
    ("server.errors", None),
    ("server._defaults", None),
    ("server.wire._wire", None),
    ("server.engine._manager", "server.wire._wire"),
    ("server.postgres._pgruns", "server.engine._manager"),
    ("server.api._http", "server.errors"),
    ("server.process._serve", "server.api._http"),
)


def _gateway() -> dict[str, str]:
    return {
        module: f"import {PACKAGE}.{target}\n" if target else ""
        for module, target in _GATEWAY_IMPORTS
    }


def test_a_clean_synthetic_gateway_passes() -> None:
    assert violations(_gateway(), layers=SERVER_LAYERS) == []


def test_the_gateway_keeps_its_parts() -> None:
    sources = server_sources()
    assert len(sources) > 25  # the gateway's modules were found
    assert violations(sources, layers=SERVER_LAYERS) == []


def test_the_engine_imports_no_web_framework() -> None:
    sources = server_sources()
    known = {_absolute(_name(module)) for module in package_sources()}
    engine = {m: s for m, s in sources.items() if m.startswith("server.engine.")}
    assert len(engine) >= 9  # the engine's modules were found
    found = [
        f"{module}:{line}: {target}"
        for module, source in engine.items()
        for line, target in imports(module, source, known)
        if target.split(".")[0] in WEB_FRAMEWORKS
    ]
    assert found == []


def _part(shown: str) -> str:
    """A module cell of the gateway's table as a table entry: ``server/api/`` -> ``server.api.``,
    ``server/errors.py`` -> ``server.errors``, ``server/__init__.py`` -> ``server``."""
    dotted = shown.replace("/", ".")
    return dotted if dotted.endswith(".") else dotted.removesuffix(".py").removesuffix(".__init__")


def test_the_gateway_table_is_the_one_in_architecture_md() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("\n## The gateway's parts\n", 1)[1].split("\n## ", 1)[0]
    cells = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in section.splitlines()
        if re.match(r"^\| \d+ \|", line)
    ]
    documented = [
        (int(rank), part, tuple(sorted(map(_part, re.findall(r"`([^`]+)`", modules)))))
        for rank, part, modules, _ in cells
    ]
    assert documented == [
        (part.rank, part.name, tuple(sorted(part.modules))) for part in SERVER_LAYERS
    ]


@pytest.mark.parametrize(
    ("module", "source", "message"),
    [
        # the engine never imports the API: plainly, relatively, lazily
        (
            "server.engine._manager",
            "from deerflow.knowledge.server.api._http import ApiError\n",
            "engine (rank 1) imports deerflow.knowledge.server.api._http, api (rank 2)",
        ),
        (
            "server.engine._manager",
            "from ..api import _http\n",
            "engine (rank 1) imports deerflow.knowledge.server.api._http, api (rank 2)",
        ),
        (
            "server.engine._manager",
            "def f():\n    from deerflow.knowledge.server.api._http import strip\n",
            "engine (rank 1) imports deerflow.knowledge.server.api._http",
        ),
        # nor PostgreSQL's part, nor the process
        (
            "server.engine._manager",
            "from deerflow.knowledge.server.postgres._pgruns import pg_coordination\n",
            "engine (rank 1) imports deerflow.knowledge.server.postgres._pgruns",
        ),
        # two parts of one rank
        (
            "server.api._http",
            "from deerflow.knowledge.server.postgres import _pgruns\n",
            "api (rank 2) imports deerflow.knowledge.server.postgres._pgruns, postgres (rank 2)",
        ),
        # the wire is the bottom
        (
            "server.wire._wire",
            "from deerflow.knowledge.server.engine._manager import RunPlan\n",
            "wire (rank 0) imports deerflow.knowledge.server.engine._manager",
        ),
        # only the face imports the process
        (
            "server.api._http",
            "from deerflow.knowledge.server.process._serve import serve\n",
            "api (rank 2) imports deerflow.knowledge.server.process._serve, process (rank 3)",
        ),
        # a flat module must be placed in a part
        ("server._checkpoint", "", "deerflow.knowledge.server._checkpoint: in no layer"),
    ],
)
def test_a_gateway_violation_is_found(module: str, source: str, message: str) -> None:
    sources = _gateway()
    sources[module] = sources.get(module, "") + source
    found = violations(sources, layers=SERVER_LAYERS)
    assert any(message in line for line in found), found


# --------------------------------------------------------------------------- inside cli/

#: Inside ``cli/`` (docs/ARCHITECTURE.md, "Modules over ~500 lines"): the face (the app, the
#: exit-code table, the output rules) and the shared provider options sit below the commands, one
#: module each; a command imports those two and no other command.
CLI_SHARED = ("cli", "cli._provider_options")


def cli_violations(sources: Mapping[str, str]) -> list[str]:
    """Every import inside ``cli/`` that breaks the rule above, as ``module:line: why``."""
    names = {_name(module) for module in sources}
    known = {_absolute(name) for name in names}
    found: list[str] = []
    for module, source in sorted(sources.items()):
        relative = _name(module)
        if not relative.startswith("cli.") or relative == "cli.__main__":
            continue
        allowed = ("cli",) if relative in CLI_SHARED else CLI_SHARED
        for line, target in imports(module, source, known):
            inside = target.removeprefix(PACKAGE + ".")
            if (inside == "cli" or inside.startswith("cli.")) and inside not in allowed:
                found.append(f"{_absolute(relative)}:{line}: imports {target}")
    return found


def test_the_cli_commands_import_only_what_they_share() -> None:
    sources = package_sources()
    commands = [m for m in sources if m.startswith("cli._") and m not in CLI_SHARED]
    assert len(commands) >= 4  # index, search, verify, serve
    assert cli_violations(sources) == []


def test_a_cli_command_importing_another_is_found() -> None:
    sources = {
        "cli.__init__": "from deerflow.knowledge.cli import _index, _serve\n",
        "cli._provider_options": "from deerflow.knowledge.cli import _fail\n",
        "cli._index": "from deerflow.knowledge.cli._provider_options import IndexOption\n",
        "cli._serve": "from deerflow.knowledge.cli import _fail\nfrom . import _index\n",
    }
    assert cli_violations(sources) == [
        "deerflow.knowledge.cli._serve:2: imports deerflow.knowledge.cli._index"
    ]
    sources["cli._provider_options"] += "from deerflow.knowledge.cli._index import index\n"
    assert cli_violations(sources)[0] == (
        "deerflow.knowledge.cli._provider_options:2: imports deerflow.knowledge.cli._index"
    )


#: Parts of the package where every module has a same-named test file
#: (``cli/_index.py`` -> ``tests/test_cli_index.py``) or names in its docstring a test that covers it.
TESTED_PARTS = ("",)


def _same_named_tests(relative: str) -> list[Path]:
    parts = [part.strip("_") for part in relative.split(".") if part != "__init__"]
    if not parts:  # the package's face: its docstring names its test
        return []
    names = ["_".join(parts)]
    if parts[0] == "server" and len(parts) == 3:  # a gateway part's module: test_server_<module>
        names.append(f"server_{parts[2]}")
    return [ROOT / "tests" / f"test_{name}.py" for name in names]


def _defines_code(source: str) -> bool:
    """A package face that only documents its part and lists no names has nothing to test."""
    return any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.ImportFrom)
        for node in ast.parse(source).body
    )


def test_every_module_has_its_test_or_names_one() -> None:
    missing = []
    for module, source in package_sources().items():
        if not module.startswith(TESTED_PARTS):
            continue
        docstring = ast.get_docstring(ast.parse(source)) or ""
        named = re.findall(r"tests/[\w/]+\.py", docstring)
        if (
            not _defines_code(source)
            or any(path.is_file() for path in _same_named_tests(module))
            or (named and all((ROOT / path).is_file() for path in named))
        ):
            continue
        missing.append(module)
    assert missing == []
