"""The start-up finder that makes ``deerflow.knowledge`` importable beside a regular ``deerflow``.

Each case runs a fresh interpreter with ``-S`` (no site-packages, so no installed ``.pth``) and a
``sys.path`` laid out the way DeerFlow installs itself: its harness folder (a regular ``deerflow``
package with its own subpackages) first, this package's ``backend/`` folder after it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BACKEND = ROOT / "backend"

_PROBE = """
import json, sys
sys.path[:0] = [{harness!r}, {backend!r}]
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


def _probe(harness: Path, *, use_finder: bool) -> dict[str, object]:
    code = _PROBE.format(harness=str(harness), backend=str(BACKEND), use_finder=use_finder)
    site = [p for p in sys.path if p.endswith("site-packages")]
    completed = subprocess.run(
        [sys.executable, "-S", "-c", f"import sys; sys.path += {site!r}\n{code}"],
        capture_output=True, text=True, check=True,
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
