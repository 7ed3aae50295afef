"""The package installed into DeerFlow's backend the documented way: DeerFlow's extension
manager on an unpacked sdist, kept by DeerFlow's own `uv sync --locked`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.deerflow import deerflow_env
from tests.integration.deerflow.deerflow_config import DeerFlowConfig

PROBE = """
import importlib.metadata as md, json, deerflow, deerflow.config, deerflow.tools, deerflow.knowledge
from deerflow.knowledge.integrations.deerflow import local
print(json.dumps({
    "knowledge": deerflow.knowledge.__file__,
    "config": deerflow.config.__file__,
    "tools": deerflow.tools.__file__,
    "deerflow": list(deerflow.__path__),
    "websockets": md.version("websockets"),
    "tool": type(local.knowledge_search_tool).__name__,
    "tool_name": local.knowledge_search_tool.name,
}))
"""


def probe(python: Path, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    completed = subprocess.run(
        [str(python), "-c", PROBE], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, (
        f"import in DeerFlow's venv failed:\n{completed.stderr[-3000:]}"
    )
    return json.loads(completed.stdout.strip().splitlines()[-1])


def check_layout(found: dict[str, Any], root: Path) -> None:
    harness = root / "backend" / "packages" / "harness" / "deerflow"
    assert Path(found["config"]).is_relative_to(harness), found
    assert Path(found["tools"]).is_relative_to(harness), found
    assert not Path(found["knowledge"]).is_relative_to(harness), found
    assert found["websockets"] == "16.0", "DeerFlow's websockets pin was not kept"
    assert found["tool"] == "StructuredTool" and found["tool_name"] == "knowledge_search", found


def test_import_next_to_deerflow(
    installed: object, deerflow_python: Path, deerflow_root: Path, deerflow_env_vars: dict[str, str]
) -> None:
    check_layout(
        probe(deerflow_python, deerflow_env_vars, deerflow_root / "backend"), deerflow_root
    )


def test_extension_enabled_in_config(installed: object, deerflow_config: DeerFlowConfig) -> None:
    plugins = yaml.safe_load(deerflow_config.path.read_text())["plugins"]
    assert [(p["package"], p["enabled"]) for p in plugins] == [("deerflow-knowledge", True)], (
        plugins
    )


def test_command_runs(
    installed: object, deerflow_root: Path, deerflow_env_vars: dict[str, str]
) -> None:
    command = deerflow_root / "backend" / ".venv" / "bin" / "deerflow-knowledge"
    completed = subprocess.run(
        [str(command), "--help"], env=deerflow_env_vars, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    assert "index" in completed.stdout


def test_survives_deerflow_uv_sync_locked(
    installed: object,
    deerflow_python: Path,
    deerflow_root: Path,
    deerflow_env_vars: dict[str, str],
    work: Path,
) -> None:
    backend = deerflow_root / "backend"
    deerflow_env.run(
        [deerflow_env.uv_binary(), "sync", "--locked"],
        backend,
        deerflow_env_vars,
        work / "setup.log",
    )
    check_layout(probe(deerflow_python, deerflow_env_vars, backend), deerflow_root)


@pytest.mark.parametrize("module", ["deerflow.knowledge.integrations.deerflow.gateway"])
def test_gateway_wrapper_importable(
    installed: object,
    deerflow_python: Path,
    deerflow_root: Path,
    deerflow_env_vars: dict[str, str],
    module: str,
) -> None:
    env = {**deerflow_env_vars, "PYTHONPATH": str(deerflow_root / "backend")}
    completed = subprocess.run(
        [str(deerflow_python), "-c", f"import {module}"],
        env=env,
        cwd=deerflow_root / "backend",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
