"""DeerFlow's backend with this package in it, as plain functions: the suite's fixtures
(conftest.py) and the DeerFlow UI benchmark compose the same steps.

``backend_stack`` is the whole chain for a caller outside pytest: DeerFlow's checkout from the
snapshot, the package installed the documented way, the sample documents indexed, the scripted
model, and DeerFlow's gateway behind the trust-boundary wrapper on a chosen port.
"""

from __future__ import annotations

import subprocess
import tarfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.integration.deerflow import deerflow_env
from tests.integration.deerflow.deerflow_config import DeerFlowConfig
from tests.integration.deerflow.gap_index import GapIndex
from tests.integration.deerflow.gateway import Gateway, start_gateway
from tests.integration.deerflow.stub_model import StubModel

REPO = Path(__file__).resolve().parents[3]
MAX_INDEX_GAPS = 5
DOCS = {
    "harbour-tides.md": (
        "# Harbour tides\n\n"
        + "\n\n".join(
            f"The harbour of Velmont sees tide cycle {n}: the high water arrives {n * 7} minutes after "
            f"the lighthouse bell, and the pilots record the depth of channel {n} in the tide ledger."
            for n in range(1, 9)
        )
    ),
    "lighthouse-keepers.md": (
        "# Lighthouse keepers\n\n"
        + "\n\n".join(
            f"Keeper {n} of the Velmont lighthouse trims the lamp at dusk, logs the harbour tide and "
            f"rings the bell {n} times when fog rolls over the channel and the pilots wait."
            for n in range(1, 9)
        )
    ),
    "pilot-handbook.txt": "\n\n".join(
        f"Pilot rule {n}: never enter the Velmont channel against the tide; wait for the bell, "
        f"read the tide ledger and keep {n} cables from the breakwater."
        for n in range(1, 9)
    ),
}


class InstallError(RuntimeError):
    """DeerFlow's extension manager refused the package (its output is the message)."""


def package_source(work: Path) -> Path:
    """This repository as an unpacked sdist: a source tree without symlinks or node_modules,
    carrying the built chat page (what DeerFlow's extension manager snapshots)."""
    dist = work / "dist"
    deerflow_env.run(
        [deerflow_env.uv_binary(), "build", "--sdist", "--out-dir", str(dist)],
        REPO,
        deerflow_env.clean_env(),
        work / "setup.log",
    )
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(work / "sdist", filter="data")
    (source,) = (work / "sdist").iterdir()
    return source


def write_docs(work: Path) -> Path:
    docs = work / "docs"
    docs.mkdir(exist_ok=True)
    for name, text in DOCS.items():
        (docs / name).write_text(text + "\n", encoding="utf-8")
    return docs


def env_vars(root: Path, config: DeerFlowConfig) -> dict[str, str]:
    """What DeerFlow's Makefile and docs set: its project root, config path and home."""
    config.home.mkdir(parents=True, exist_ok=True)
    return deerflow_env.clean_env(
        DEER_FLOW_PROJECT_ROOT=str(root),
        DEER_FLOW_CONFIG_PATH=str(config.path),
        DEER_FLOW_HOME=str(config.home),
        DEER_FLOW_AUTH_DISABLED="1",
        PYTHONIOENCODING="utf-8",
        PYTHONUTF8="1",
        OPENAI_API_KEY="stub-key",
    )


def install(
    root: Path, source: Path, env: dict[str, str], work: Path, gaps: GapIndex
) -> subprocess.CompletedProcess[str]:
    """``uv run deerflow extensions install <unpacked sdist> --yes`` in DeerFlow's backend: the
    route that DeerFlow's own `uv sync --locked` keeps (it records the package in DeerFlow's
    pyproject `extensions` group and uv.lock, and enables it in config.yaml's `plugins:`).
    ``env`` gains ``UV_INDEX`` when a package this machine's index lacks had to be served."""
    backend = root / "backend"
    command = [
        deerflow_env.uv_binary(),
        "run",
        "--locked",
        "deerflow",
        "extensions",
        "install",
        str(source),
        "--yes",
    ]
    for _attempt in range(MAX_INDEX_GAPS + 1):
        completed = subprocess.run(
            command,
            cwd=backend,
            env=env,
            capture_output=True,
            text=True,
            timeout=deerflow_env.SYNC_TIMEOUT_SECONDS,
        )
        output = completed.stdout + completed.stderr
        with (work / "install.log").open("a") as log:
            log.write(output)
        missing = deerflow_env.missing_from_index(output) if completed.returncode else None
        if missing is None or not gaps.add(missing):
            break
        # The manager's `uv add` re-resolves DeerFlow's whole lock: a package this machine's
        # index lacks is served from DeerFlow's own locked URLs (for the later syncs too).
        env["UV_INDEX"] = f"deerflow-lock-gaps={gaps.url}"
    if completed.returncode != 0:
        raise InstallError("`deerflow extensions install` failed:\n" + output[-4000:])
    return completed


def build_index(root: Path, docs: Path, index: Path, env: dict[str, str], work: Path) -> Path:
    """The index, built with the package's own command in DeerFlow's venv."""
    command = root / "backend" / ".venv" / "bin" / "deerflow-knowledge"
    deerflow_env.run(
        [str(command), "index", str(docs), "--index", str(index)],
        work,
        env,
        work / "setup.log",
        timeout=300,
    )
    return index


@dataclass
class BackendStack:
    root: Path
    config: DeerFlowConfig
    env: dict[str, str]
    model: StubModel
    gateway: Gateway


@contextmanager
def backend_stack(snapshot: Path, python: str, work: Path, port: int) -> Iterator[BackendStack]:
    """The whole backend chain (see the module docstring), torn down on exit."""
    with ExitStack() as stack:
        root = stack.enter_context(
            deerflow_env.deerflow_checkout(snapshot, python, work / "setup.log")
        )
        source = package_source(work)
        model = StubModel()
        stack.callback(model.close)
        config = DeerFlowConfig(
            path=work / "config.yaml",
            home=work / "home",
            model_base_url=model.base_url,
            index=work / "index.sqlite",
        )
        config.write()
        env = env_vars(root, config)
        gaps = GapIndex(root / "backend" / "uv.lock")
        stack.callback(gaps.close)
        install(root, source, env, work, gaps)
        build_index(root, write_docs(work), config.index, env, work)
        gateway = stack.enter_context(start_gateway(root, env, work, port))
        yield BackendStack(root, config, env, model, gateway)
