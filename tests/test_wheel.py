"""The Python package as pip users get it: ``uv build``, a fresh venv, the CLI from an empty folder.

``uv build`` (no flags: sdist first, then the wheel from the sdist) must produce a wheel that
carries the chat page, the sample corpus and the LICENSE. It is installed into a new venv with
the locked versions of its dependencies (from uv's cache when warm), and run where no checkout is
near: ``index`` builds the bundled corpus, ``search`` finds verified evidence, ``serve`` answers
``GET /`` with the page. The venv has no ``postgres`` extra, so a Postgres checkpoint is refused
with one message and exit code 2.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.live.lightrag_server import free_port

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True)
class Installed:
    wheel: Path
    cli: Path
    home: Path  # an empty folder, far from the checkout


def _run(command: list[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command], capture_output=True, text=True, check=False, **kwargs
    )  # type: ignore[call-overload, no-any-return]


def _ok(command: list[str | Path], **kwargs: object) -> str:
    result = _run(command, **kwargs)
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    work = tmp_path_factory.mktemp("wheel")
    _ok(["uv", "build", "--out-dir", work / "dist"], cwd=ROOT)
    (wheel,) = (work / "dist").glob("*.whl")
    requirements = work / "requirements.txt"
    _ok(
        ["uv", "export", "--frozen", "--no-dev", "--no-emit-project", "--no-hashes", "-o",
         requirements],
        cwd=ROOT,
    )  # fmt: skip
    venv = work / "venv"
    _ok(["uv", "venv", "--quiet", "--python", sys.executable, venv])
    install = ["uv", "pip", "install", "--quiet", "--python", venv / "bin" / "python", wheel]
    install += ["-r", requirements]
    if _run([*install, "--offline"]).returncode != 0:  # a cold cache: ask the index
        _ok(install)
    home = work / "home"
    home.mkdir()
    return Installed(wheel=wheel, cli=venv / "bin" / "deerflow-knowledge", home=home)


def test_the_wheel_carries_the_page_the_corpus_and_the_license(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    assert "deerflow/knowledge/server/static/index.html" in names
    assert any(n.startswith("deerflow/knowledge/server/static/assets/") for n in names)
    assert "deerflow/knowledge/sample_corpus/overview.md" in names
    assert "_deerflow_knowledge_reader.py" in names  # the reader child's entry, top level
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert b"License-Expression: MIT" in metadata
    assert b"License-File: LICENSE" in metadata


def test_index_search_and_serve_from_an_empty_folder(installed: Installed) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEERFLOW_", "VIRTUAL_ENV"))}
    index = _ok([installed.cli, "index", "--json"], cwd=installed.home, env=env)
    assert '"documents": 10' in index
    assert (installed.home / ".deerflow-knowledge" / "index.sqlite").is_file()
    found = _ok(
        [installed.cli, "search", "How is a citation verified?"], cwd=installed.home, env=env
    )
    assert "every source verified" in found

    port = free_port()
    with _serving(installed, port, env) as base:
        with urllib.request.urlopen(base, timeout=10) as response:
            page = response.read().decode()
        assert response.status == 200
        assert '<div id="root">' in page
        assert "<script" in page


def test_a_postgres_checkpoint_without_the_extra_is_one_message(installed: Installed) -> None:
    result = _run(
        [installed.cli, "serve", "--checkpoint", "postgresql://user:pw-SECRET@127.0.0.1:9/db"],
        cwd=installed.home,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    assert "deerflow-knowledge[postgres]" in lines[0]
    assert "pw-SECRET" not in result.stderr


def test_the_installed_reader_child_starts_and_reads(installed: Installed) -> None:
    """The local index's reader child starts from the wheel's top-level entry module, outside
    the package, and reads a file as the parent's thread would."""
    (installed.home / "heron.md").write_text("Herons wade at dawn.", encoding="utf-8")
    probe = (
        "from deerflow.knowledge.providers.local._files import ReaderProcess, Settings\n"
        "child = ReaderProcess.start()\n"
        "(result,) = child.prepare([('heron.md', None, 20)], Settings(1000, 100, 10), "
        "budget=1000)\n"
        "child.close()\n"
        "print(result.parts)\n"
    )
    venv = installed.cli.parent.parent
    out = _ok([venv / "bin" / "python", "-c", probe], cwd=installed.home)
    assert out.strip() == "[(None, 'Herons wade at dawn.')]"


class _serving:
    """``deerflow-knowledge serve`` from the installed venv, stopped by its PID."""

    def __init__(self, installed: Installed, port: int, env: dict[str, str]) -> None:
        self.command = [str(installed.cli), "serve", "--host", "127.0.0.1", "--port", str(port)]
        self.cwd, self.env, self.base = installed.home, env, f"http://127.0.0.1:{port}/"
        self.log = installed.home / f"serve-{port}.log"

    def __enter__(self) -> str:
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                self.command,
                cwd=self.cwd,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            try:
                urllib.request.urlopen(self.base + "api/info", timeout=2).read()
                return self.base
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError(f"serve did not start:\n{self.log.read_text()}") from None
                time.sleep(0.2)

    def __exit__(self, *_: object) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def test_the_package_imports_beside_a_regular_deerflow_package(installed: Installed) -> None:
    """DeerFlow installs its harness editable: a ``.pth`` path entry to a folder whose
    ``deerflow/__init__.py`` makes ``deerflow`` a regular package. The wheel's start-up finder
    still finds ``deerflow.knowledge`` (and its command), and DeerFlow's own subpackages stay
    DeerFlow's."""
    venv = installed.cli.parent.parent
    (site,) = venv.glob("lib/python*/site-packages")
    assert (site / "deerflow_knowledge_finder.pth").is_file()
    harness = installed.home.parent / "harness"
    (harness / "deerflow" / "config").mkdir(parents=True)
    (harness / "deerflow" / "__init__.py").write_text("")
    (harness / "deerflow" / "config" / "__init__.py").write_text("HARNESS = True\n")
    (site / "_deerflow_harness.pth").write_text(f"{harness}\n")
    try:
        probe = (
            "import deerflow, deerflow.config, deerflow.knowledge\n"
            "from deerflow.knowledge.integrations.deerflow.local import knowledge_search_tool\n"
            "print(deerflow.__file__, deerflow.config.HARNESS, knowledge_search_tool.name)\n"
        )
        out = _ok([venv / "bin" / "python", "-c", probe], cwd=installed.home)
        assert out.split() == [
            str(harness / "deerflow" / "__init__.py"),
            "True",
            "knowledge_search",
        ]
        assert "Usage" in _ok([installed.cli, "--help"], cwd=installed.home)
    finally:
        (site / "_deerflow_harness.pth").unlink()


def test_a_deerflow_knowledge_planted_in_the_working_directory_never_runs(
    installed: Installed,
) -> None:
    """Beside DeerFlow's regular ``deerflow`` package, the wheel's start-up finder answers with
    the installed copy only: a ``deerflow/knowledge/__init__.py`` in the working directory (first
    on ``sys.path`` for ``python -c``; uvicorn puts ``''`` there too) is never run, also when the
    process changes into that directory before its first import."""
    venv = installed.cli.parent.parent
    (site,) = venv.glob("lib/python*/site-packages")
    harness = installed.home.parent / "planted-harness"
    (harness / "deerflow").mkdir(parents=True, exist_ok=True)
    (harness / "deerflow" / "__init__.py").write_text("")
    cwd = installed.home.parent / "planted-cwd"
    marker = installed.home.parent / "planted-ran"
    (cwd / "deerflow" / "knowledge").mkdir(parents=True, exist_ok=True)
    (cwd / "deerflow" / "knowledge" / "__init__.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\n"
    )
    (site / "_deerflow_planted_harness.pth").write_text(f"{harness}\n")
    try:
        out = _ok([venv / "bin" / "python", "-c", "import deerflow.knowledge as k; print(k.__file__)"],
                  cwd=cwd)  # fmt: skip
        assert out.strip() == str(site / "deerflow" / "knowledge" / "__init__.py")
        chdir = (
            f"import os, sys; os.chdir({str(cwd)!r}); sys.path.insert(0, '')\n"
            "import deerflow.knowledge as k; print(k.__file__)\n"
        )
        out = _ok([venv / "bin" / "python", "-c", chdir], cwd=installed.home)
        assert out.strip() == str(site / "deerflow" / "knowledge" / "__init__.py")
        assert not marker.exists()
    finally:
        (site / "_deerflow_planted_harness.pth").unlink()
