"""Session fixtures: DeerFlow's real backend from the snapshot, this package installed into it the
documented way, a scripted model, a local index and DeerFlow's gateway on 127.0.0.1.

Every test of the suite skips, saying what to set, without DEERFLOW_SNAPSHOT or a Python 3.12.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.deerflow import deerflow_env, frontend_env, stack
from tests.integration.deerflow.deerflow_config import DeerFlowConfig
from tests.integration.deerflow.frontend_env import FrontendBuild
from tests.integration.deerflow.gap_index import GapIndex
from tests.integration.deerflow.gateway import Gateway, start_gateway
from tests.integration.deerflow.stub_model import StubModel


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.deerflow)


@pytest.fixture(scope="session")
def snapshot_tarball() -> Path:
    found = deerflow_env.snapshot()
    if found is None:
        value = os.environ.get(deerflow_env.SNAPSHOT_ENV)
        reason = (
            deerflow_env.SKIP_HINT
            if not value
            else f"{deerflow_env.SNAPSHOT_ENV}={value} is not a file; {deerflow_env.SKIP_HINT}"
        )
        pytest.skip(reason)
    return found


@pytest.fixture(scope="session")
def python312(snapshot_tarball: Path) -> str:
    found = deerflow_env.python312()
    if found is None:
        pytest.skip("DeerFlow needs Python >= 3.12: set UV_PYTHON to a python3.12 (none found)")
    return found


@pytest.fixture(scope="session")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("deerflow")


@pytest.fixture(scope="session")
def deerflow_root(snapshot_tarball: Path, python312: str, work: Path) -> Iterator[Path]:
    """DeerFlow's project root, unpacked fresh over the cached venv and `uv sync --locked`."""
    with deerflow_env.deerflow_checkout(snapshot_tarball, python312, work / "setup.log") as root:
        yield root


@pytest.fixture(scope="session")
def deerflow_python(deerflow_root: Path) -> Path:
    return deerflow_root / "backend" / ".venv" / "bin" / "python"


@pytest.fixture(scope="session")
def package_source(work: Path) -> Path:
    return stack.package_source(work)


@pytest.fixture(scope="session")
def stub_model() -> Iterator[StubModel]:
    model = StubModel()
    yield model
    model.close()


@pytest.fixture(scope="session")
def knowledge_index(work: Path) -> Path:
    """Built after the install, with the package's own command in DeerFlow's venv."""
    stack.write_docs(work)
    return work / "index.sqlite"


@pytest.fixture(scope="session")
def deerflow_config(work: Path, stub_model: StubModel, knowledge_index: Path) -> DeerFlowConfig:
    config = DeerFlowConfig(
        path=work / "config.yaml",
        home=work / "home",
        model_base_url=stub_model.base_url,
        index=knowledge_index,
    )
    config.write()
    return config


@pytest.fixture(scope="session")
def deerflow_env_vars(deerflow_root: Path, deerflow_config: DeerFlowConfig) -> dict[str, str]:
    return stack.env_vars(deerflow_root, deerflow_config)


@pytest.fixture(scope="session")
def installed(
    deerflow_root: Path,
    package_source: Path,
    deerflow_config: DeerFlowConfig,
    deerflow_env_vars: dict[str, str],
    work: Path,
    request: pytest.FixtureRequest,
) -> subprocess.CompletedProcess[str]:
    """The package installed with DeerFlow's extension manager (see stack.install)."""
    gaps = GapIndex(deerflow_root / "backend" / "uv.lock")
    request.addfinalizer(gaps.close)
    try:
        completed = stack.install(deerflow_root, package_source, deerflow_env_vars, work, gaps)
    except stack.InstallError as exc:
        pytest.fail(str(exc))
    if gaps.served:
        print(f"\nthe package index lacked {sorted(gaps.served)}: served from DeerFlow's uv.lock")
    return completed


@pytest.fixture(scope="session")
def built_index(
    installed: object,
    deerflow_root: Path,
    knowledge_index: Path,
    work: Path,
    deerflow_env_vars: dict[str, str],
) -> Path:
    return stack.build_index(deerflow_root, work / "docs", knowledge_index, deerflow_env_vars, work)


@pytest.fixture(scope="session")
def gateway_port() -> int:
    """The gateway's port, chosen before anything starts: DeerFlow's frontend is built for one
    gateway address, so the port a cached frontend build was made for is reused when free."""
    return frontend_env.gateway_port_for(frontend_env.frontend_snapshot(), frontend_env.PATCHED)


@pytest.fixture(scope="session")
def gateway(
    built_index: Path,
    deerflow_root: Path,
    deerflow_config: DeerFlowConfig,
    deerflow_env_vars: dict[str, str],
    work: Path,
    gateway_port: int,
) -> Iterator[Gateway]:
    with start_gateway(deerflow_root, deerflow_env_vars, work, gateway_port) as running:
        yield running


@pytest.fixture(scope="session")
def frontend_snapshot_tarball() -> Path:
    found = frontend_env.frontend_snapshot()
    if found is None:
        value = os.environ.get(frontend_env.FRONTEND_SNAPSHOT_ENV)
        pytest.skip(
            frontend_env.SKIP_HINT
            if not value
            else f"{frontend_env.FRONTEND_SNAPSHOT_ENV}={value} is not a file; {frontend_env.SKIP_HINT}"
        )
    return found


@pytest.fixture(scope="session")
def package_tarball(work: Path) -> Path:
    """The npm package as `npm pack` makes it (what the README installs in DeerFlow)."""
    return frontend_env.pack_package(work / "npm", work / "frontend.log")


@pytest.fixture(scope="session")
def deerflow_ui(
    frontend_snapshot_tarball: Path,
    snapshot_tarball: Path,
    package_tarball: Path,
    gateway_port: int,
    work: Path,
) -> FrontendBuild:
    """DeerFlow's frontend with the package added and the patch applied, built for the suite's
    gateway (once per run: reused from ``build/`` while its inputs are unchanged)."""
    built = frontend_env.prepare(
        frontend_snapshot_tarball,
        frontend_env.PATCHED,
        f"http://127.0.0.1:{gateway_port}",
        work / "frontend.log",
        package_tarball=package_tarball,
    )
    steps = ", ".join(f"{name} {value:.0f} s" for name, value in built.seconds.items())
    total = sum(built.seconds.values())
    state = "reused from an earlier run" if built.cached else "built now"
    print(f"\nDeerFlow's frontend ({state}): {steps}; {total:.0f} s in all")
    return built


@pytest.fixture(scope="session")
def deerflow_ui_url(deerflow_ui: FrontendBuild, gateway: Gateway, work: Path) -> Iterator[str]:
    """``next start`` of the patched frontend, proxying to the running gateway."""
    with frontend_env.next_start(deerflow_ui, work / "next-start.log") as base:
        yield base


@pytest.fixture()
def reset_config(deerflow_config: DeerFlowConfig) -> Iterator[DeerFlowConfig]:
    """A test that edits DeerFlow's config (it reloads per request) gets the default back."""
    yield deerflow_config
    deerflow_config.tool_output = {}
    deerflow_config.write()


def which_or_skip(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not on PATH")
    return found
