"""DeerFlow's backend from the snapshot tarball, synced the way DeerFlow installs itself.

``uv sync --locked`` of DeerFlow's backend is the expensive step (hundreds of packages), so the
unpacked tree and its ``.venv`` live in a cache keyed by the tarball's SHA-256. Only the venv
is reused: every session deletes everything else in the tree, unpacks the tarball again and
re-runs ``uv sync --locked``, which returns the venv to exactly DeerFlow's lock (removing what a
previous session installed). State never lives in the tree: config, DEER_FLOW_HOME and the
index are in the session's temp dir.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SNAPSHOT_ENV = "DEERFLOW_SNAPSHOT"
SKIP_HINT = (
    f"set {SNAPSHOT_ENV} to DeerFlow's backend snapshot tarball "
    "(e.g. deer-flow-f1f4af99-backend.tar.gz) to run the DeerFlow integration suite"
)
CACHE_ROOT = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "deerflow-knowledge"
    / "deerflow-venv"
)
SYNC_TIMEOUT_SECONDS = 1800
MISSING_FROM_INDEX = re.compile(r"Because ([A-Za-z0-9._-]+) was not found in the package registry")
# Variables a `uv run pytest` session sets for this project that must not leak into commands
# run for DeerFlow's own project.
_PROJECT_ENV = (
    "VIRTUAL_ENV",
    "UV_PROJECT_ENVIRONMENT",
    "UV_PROJECT",
    "PYTHONPATH",
    "UV_RUN_RECURSION_DEPTH",
)


def snapshot() -> Path | None:
    """The tarball named by DEERFLOW_SNAPSHOT, or None when unset or not a file."""
    value = os.environ.get(SNAPSHOT_ENV, "").strip()
    if not value:
        return None
    path = Path(value).expanduser().resolve()
    return path if path.is_file() else None


def python312() -> str | None:
    """A Python 3.12 interpreter for DeerFlow: UV_PYTHON, pyenv's 3.12, or python3.12 on PATH.

    ``uv python find 3.12`` is not used: behind pyenv shims it reports none."""
    configured = os.environ.get("UV_PYTHON", "").strip()
    if configured:
        return configured
    for candidate in sorted(glob.glob("/root/.pyenv/versions/3.12*/bin/python3.12"), reverse=True):
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("python3.12")
    if found is None:
        return None
    # A pyenv shim answers even when no 3.12 is installed; ask it.
    probe = subprocess.run(
        [found, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True
    )
    return probe.stdout.strip() or None if probe.returncode == 0 else None


def uv_binary() -> str:
    """The uv executable: the one running this session (``uv run`` sets UV), else uv on PATH.

    The real binary is preferred to a wrapper or a pyenv shim, which costs a second per call
    on a loaded machine (and DeerFlow's extension manager calls ``uv`` several times)."""
    running = os.environ.get("UV", "")
    if running and os.access(running, os.X_OK):
        return running
    found = shutil.which("uv")
    if found is None:
        raise RuntimeError("uv is not on PATH (the Makefile puts scripts/bin first)")
    return found


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without the project's venv markers, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in _PROJECT_ENV}
    env["PATH"] = os.pathsep.join([str(Path(uv_binary()).parent), env.get("PATH", "")])
    env.update(extra)
    return env


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def run(
    command: list[str],
    cwd: Path,
    env: dict[str, str],
    log: Path,
    timeout: float = SYNC_TIMEOUT_SECONDS,
) -> None:
    """Run ``command``, appending its output to ``log``; raise with the log's tail on failure."""
    with log.open("ab") as stream:
        stream.write(f"\n$ {' '.join(command)}  (in {cwd})\n".encode())
        stream.flush()
        completed = subprocess.run(
            command, cwd=cwd, env=env, stdout=stream, stderr=subprocess.STDOUT, timeout=timeout
        )
    if completed.returncode != 0:
        tail = log.read_text(errors="replace")[-4000:]
        raise RuntimeError(f"{' '.join(command)} failed ({completed.returncode}) in {cwd}:\n{tail}")


@contextmanager
def deerflow_checkout(tarball: Path, python: str, log: Path) -> Iterator[Path]:
    """DeerFlow's project root (``…/deer-flow``), freshly unpacked over the cached venv and
    synced with ``uv sync --locked``; held under an exclusive lock for the caller's lifetime."""
    key = sha256(tarball)[:16]
    home = CACHE_ROOT / key
    home.mkdir(parents=True, exist_ok=True)
    with (home / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        root = home / "deer-flow"
        backend = root / "backend"
        venv = backend / ".venv"
        if root.exists():
            for entry in root.iterdir():
                if entry.name != "backend":
                    _remove(entry)
            if backend.exists():
                for entry in backend.iterdir():
                    if entry.name != ".venv":
                        _remove(entry)
        with tarfile.open(tarball) as archive:
            archive.extractall(home, filter="data")
        if not (backend / "pyproject.toml").is_file():
            raise RuntimeError(f"{tarball} has no deer-flow/backend/pyproject.toml")
        env = clean_env(UV_PYTHON=python)
        run([uv_binary(), "sync", "--locked", "--python", python], backend, env, log)
        if not (venv / "bin" / "python").exists():
            raise RuntimeError(f"uv sync --locked left no venv at {venv}")
        yield root


def missing_from_index(output: str) -> str | None:
    """The package uv says the index lacks, from a failed resolution's output."""
    found = MISSING_FROM_INDEX.search(output)
    return found.group(1) if found else None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


if __name__ == "__main__":  # warm the cache: python -m tests.integration.deerflow.deerflow_env
    import sys
    import time

    found = snapshot()
    if found is None:
        sys.exit(SKIP_HINT)
    interpreter = python312()
    if interpreter is None:
        sys.exit("no Python 3.12 found")
    started = time.monotonic()
    with deerflow_checkout(found, interpreter, Path("/tmp/deerflow-env.log")) as project:
        print(project, f"{time.monotonic() - started:.1f}s")
