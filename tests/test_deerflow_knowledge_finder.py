"""The start-up finder that makes ``deerflow.knowledge`` importable beside a regular ``deerflow``.

Most cases run a fresh interpreter with ``-S`` (no site-packages, so no installed ``.pth``) and a
``sys.path`` laid out the way DeerFlow installs itself: its harness folder (a regular ``deerflow``
package with its own subpackages) first, this package's ``backend/`` folder after it. The finder
answers only with its own copy, never with one planted in the working directory; and as a
start-up hook of a fresh venv it loads no module but itself.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BACKEND = ROOT / "backend"

_PROBE = """
import json, sys
sys.path[:0] = [*{first!r}, {harness!r}, {backend!r}]
if {use_finder}:
    import _deerflow_knowledge_finder
    _deerflow_knowledge_finder.install()  # a second install adds nothing
result = {{}}
import deerflow, deerflow.config
result["deerflow"] = deerflow.__file__
result["config"] = deerflow.config.__file__
try:
    import deerflow.knowledge.integrations.deerflow.local as local
    result["knowledge"] = sys.modules["deerflow.knowledge"].__file__
    result["tool"] = local.knowledge_search_tool.name
except ModuleNotFoundError as exc:
    result["error"] = str(exc)
result["finders"] = sum(1 for f in sys.meta_path if getattr(f, "__name__", "") == "KnowledgeFinder")
import importlib.util
result["other"] = importlib.util.find_spec("deerflow.nothing_here") is None
print(json.dumps(result))
"""


def _probe(
    harness: Path, *, use_finder: bool, cwd: Path | None = None, first: tuple[str, ...] = ()
) -> dict[str, object]:
    code = _PROBE.format(
        harness=str(harness), backend=str(BACKEND), use_finder=use_finder, first=list(first)
    )
    site = [p for p in sys.path if p.endswith("site-packages")]
    completed = subprocess.run(
        [sys.executable, "-S", "-c", f"import sys; sys.path += {site!r}\n{code}"],
        capture_output=True, text=True, check=True, cwd=cwd,
    )  # fmt: skip
    return json.loads(completed.stdout)  # type: ignore[no-any-return]


def _harness(tmp_path: Path) -> Path:
    package = tmp_path / "harness" / "deerflow"
    (package / "config").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "config" / "__init__.py").write_text("")
    return package.parent


def test_without_the_finder_a_regular_deerflow_hides_the_package(tmp_path: Path) -> None:
    result = _probe(_harness(tmp_path), use_finder=False)
    assert result["error"] == "No module named 'deerflow.knowledge'"


def test_with_the_finder_both_resolve_to_their_own_folders(tmp_path: Path) -> None:
    harness = _harness(tmp_path)
    result = _probe(harness, use_finder=True)
    assert result["deerflow"] == str(harness / "deerflow" / "__init__.py")
    assert result["config"] == str(harness / "deerflow" / "config" / "__init__.py")
    assert result["knowledge"] == str(BACKEND / "deerflow" / "knowledge" / "__init__.py")
    assert result["tool"] == "knowledge_search"
    assert result["finders"] == 1
    assert result["other"] is True  # it answers for one name only


def test_the_pth_file_imports_the_finder() -> None:
    assert (
        BACKEND / "deerflow_knowledge_finder.pth"
    ).read_text() == "import _deerflow_knowledge_finder\n"


# --------------------------------------------------------------------------- a planted copy

_PLANTED = """
import pathlib
pathlib.Path({marker!r}).write_text("the planted deerflow.knowledge ran")
"""

_FROM_ELSEWHERE = """
import json, os, sys
sys.path[:0] = [{harness!r}, {backend!r}]
sys.path += {site!r}
import _deerflow_knowledge_finder
os.chdir({cwd!r})  # as a server does before its first import of the package
sys.path.insert(0, "")  # as uvicorn does
import deerflow.knowledge
print(json.dumps({{"knowledge": deerflow.knowledge.__file__}}))
"""


def _plant(tmp_path: Path) -> tuple[Path, Path]:
    """A working directory holding ``deerflow/knowledge/__init__.py`` that leaves a mark."""
    cwd = tmp_path / "cwd"
    marker = tmp_path / "planted-ran"
    (cwd / "deerflow" / "knowledge").mkdir(parents=True)
    (cwd / "deerflow" / "knowledge" / "__init__.py").write_text(_PLANTED.format(marker=str(marker)))
    return cwd, marker


def test_a_copy_planted_in_the_working_directory_is_never_run(tmp_path: Path) -> None:
    """``python -c`` puts the working directory (``''``) first on ``sys.path``."""
    harness = _harness(tmp_path)
    cwd, marker = _plant(tmp_path)
    # "" ahead of everything, even of the harness: a planted "deerflow/" without __init__.py
    # is only a namespace portion, so the harness's regular package still wins
    result = _probe(harness, use_finder=True, cwd=cwd, first=("",))
    assert result["deerflow"] == str(harness / "deerflow" / "__init__.py")
    assert result["knowledge"] == str(BACKEND / "deerflow" / "knowledge" / "__init__.py")
    assert not marker.exists()


def test_nor_after_a_change_of_directory_before_the_first_import(tmp_path: Path) -> None:
    harness = _harness(tmp_path)
    cwd, marker = _plant(tmp_path)
    script = tmp_path / "server.py"
    script.write_text(
        _FROM_ELSEWHERE.format(
            harness=str(harness),
            backend=str(BACKEND),
            cwd=str(cwd),
            site=[p for p in sys.path if p.endswith("site-packages")],
        )
    )
    completed = subprocess.run(
        [sys.executable, "-S", str(script)], capture_output=True, text=True, check=True
    )
    result = json.loads(completed.stdout)
    assert result["knowledge"] == str(BACKEND / "deerflow" / "knowledge" / "__init__.py")
    assert not marker.exists()


def test_an_editable_install_imports_the_finder_from_the_checkout() -> None:
    """The finder answers with the copy beside its own file, so an editable install (this
    checkout's ``uv sync``) must import it from ``backend/``, not from a copy in
    site-packages."""
    site = [Path(p) for p in sys.path if p.endswith("site-packages")]
    if not any((p / "_editable_impl_deerflow_knowledge.pth").is_file() for p in site):
        pytest.skip("needs this checkout installed editable (uv sync)")
    probe = "import _deerflow_knowledge_finder as f; print(f.__file__)"
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd="/"
    )
    assert completed.stdout.strip() == str(BACKEND / "_deerflow_knowledge_finder.py")


# --------------------------------------------------------------------------- start-up cost


def _loaded(python: Path) -> set[str]:
    """The modules loaded once the interpreter has started (the probe itself imports nothing)."""
    code = "import sys; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_the_start_up_hook_loads_no_module_but_itself(tmp_path: Path) -> None:
    """A fresh venv with and without the hook (the ``.pth`` and its module, as the wheel
    installs them): the same modules are loaded at start-up, the hook's own aside."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    (site,) = venv.glob("lib/python*/site-packages")
    without = _loaded(python)
    shutil.copy(BACKEND / "_deerflow_knowledge_finder.py", site)
    shutil.copy(BACKEND / "deerflow_knowledge_finder.pth", site)
    with_hook = _loaded(python)
    assert "_deerflow_knowledge_finder" in with_hook  # the hook did run
    assert with_hook - {"_deerflow_knowledge_finder"} == without
    assert os.path.isfile(site / "deerflow_knowledge_finder.pth")
