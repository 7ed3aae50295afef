"""The Python install routes that work before any release: a git URL and a source tree.

Both start from a ``git clone`` of this repository — no ``node_modules``, no built page — which
is what ``pip install git+…`` and ``uv add git+…`` hand the build hook. With npm on ``PATH`` the
hook installs the locked npm tree and builds the chat page into the wheel; without npm it builds
the package without the page and says so, and ``serve`` then serves the API only. Each route is
installed into a fresh venv (the locked dependency versions come from uv's cache when warm).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from tests.test_wheel import _ok, _run

ROOT = Path(__file__).resolve().parents[1]
PAGE = "deerflow/knowledge/server/static/index.html"


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of the current commit, as a git URL install sees it."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout of this repository")
    target = tmp_path_factory.mktemp("clone") / "deerflow-knowledge"
    _ok(["git", "clone", "--quiet", "--no-hardlinks", f"file://{ROOT}", target])
    assert not (target / "node_modules").exists()
    assert not (target / "backend/deerflow/knowledge/server/static").exists()
    return target


def _requirements(work: Path) -> Path:
    requirements = work / "requirements.txt"
    _ok(["uv", "export", "--frozen", "--no-dev", "--no-emit-project", "--no-hashes", "-o",
         requirements], cwd=ROOT)  # fmt: skip
    return requirements


def _venv(work: Path) -> Path:
    venv = work / "venv"
    _ok(["uv", "venv", "--quiet", "--python", sys.executable, venv])
    return venv


def _uv_executable() -> str:
    """The uv program itself, not a script that runs it: ``scripts/bin/uv`` and pyenv's shim need
    bash and env, which a ``PATH`` of only uv and python3 leaves out. ``uv run`` names it in
    ``UV``; else the ``uv`` package's, else the first ``uv`` on ``PATH`` that is not a script,
    else the one a script on ``PATH`` runs, as it names itself to the programs it runs."""
    candidates = [os.environ.get("UV", "")]
    with contextlib.suppress(ImportError, FileNotFoundError):
        candidates.append(importlib.import_module("uv").find_uv_bin())
    candidates += [os.path.join(d, "uv") for d in os.environ.get("PATH", "").split(os.pathsep)]
    for candidate in filter(None, candidates):
        found = os.path.realpath(candidate)
        if os.path.isfile(found) and os.access(found, os.X_OK) and not _script(found):
            return found
    named = _ok(["uv", "run", "--no-project", "--python", sys.executable, "python", "-c",
                 "import os; print(os.environ['UV'])"])  # fmt: skip
    return os.path.realpath(named.strip())


def _script(path: str) -> bool:
    with open(path, "rb") as file:
        return file.read(2) == b"#!"


def test_git_url_install_builds_the_page_with_npm(clone: Path, tmp_path: Path) -> None:
    if shutil.which("npm") is None:
        pytest.skip("needs npm on PATH")
    venv = _venv(tmp_path)
    install = ["uv", "pip", "install", "--python", venv / "bin" / "python",
               "-r", _requirements(tmp_path), f"git+file://{clone}"]  # fmt: skip
    if _run([*install, "--offline"]).returncode != 0:  # a cold cache: ask the index
        _ok(install)
    (site,) = venv.glob("lib/python*/site-packages")
    assert (site / PAGE).is_file()
    assert (site / "deerflow_knowledge_finder.pth").is_file()
    assert "Usage" in _ok([venv / "bin" / "deerflow-knowledge", "--help"], cwd=tmp_path)


def test_a_source_tree_without_npm_builds_without_the_page(clone: Path, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(clone, tree, ignore=shutil.ignore_patterns(".git", "node_modules"))
    bin_dir = tmp_path / "bin"  # only uv and python: no npm, no node
    bin_dir.mkdir()
    (bin_dir / "uv").symlink_to(_uv_executable())
    (bin_dir / "python3").symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("npm_", "NODE"))}
    env["PATH"] = str(bin_dir)
    built = _run([bin_dir / "uv", "build", "--wheel", "--out-dir", tmp_path / "dist",
                  "--python", sys.executable], cwd=tree, env=env)  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    out = built.stdout + built.stderr
    assert "npm is not on PATH: building without the chat page" in out
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert PAGE not in names
    assert "deerflow/knowledge/integrations/deerflow/local.py" in names
    env["DEERFLOW_KNOWLEDGE_REQUIRE_PAGE"] = "1"
    refused = _run([bin_dir / "uv", "build", "--wheel", "--out-dir", tmp_path / "dist2",
                    "--python", sys.executable], cwd=tree, env=env)  # fmt: skip
    assert refused.returncode != 0
    assert "DEERFLOW_KNOWLEDGE_REQUIRE_PAGE is set" in refused.stdout + refused.stderr
