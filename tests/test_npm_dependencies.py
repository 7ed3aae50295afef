"""The npm package shares a host's copies of the Markdown toolchain instead of bringing its own.

A host app (DeerFlow: streamdown 2.5 on unified, hast and micromark) already has most of the
package's dependencies. Exact pins put a second copy of any of them into the host's bundle the
moment the host's lockfile holds another patch version; caret ranges let the package manager
reuse the host's copy. With ``DEERFLOW_FRONTEND_SNAPSHOT`` set (DeerFlow's frontend tarball),
every dependency DeerFlow's pnpm lockfile already has must be satisfied by the version it holds.
"""

from __future__ import annotations

import json
import os
import re
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = json.loads((ROOT / "frontend" / "package.json").read_text(encoding="utf-8"))
CARET = re.compile(r"^\^(\d+)\.(\d+)\.(\d+)$")
#: The unified / hast / mdast / micromark / vfile family: a host's Markdown renderer has them.
FAMILY = re.compile(
    r"^(@types/(hast|mdast)|unified|vfile|(remark|rehype|hast|mdast|micromark)-.*)$"
)


def _version(text: str) -> tuple[int, int, int]:
    major, minor, patch = (int(part) for part in text.split("-")[0].split(".")[:3])
    return major, minor, patch


def satisfies(version: str, caret: str) -> bool:
    """True when ``version`` (x.y.z) is in the caret range ``^a.b.c`` (a > 0)."""
    match = CARET.match(caret)
    if match is None:
        raise ValueError(f"Error: not a caret range: {caret}")
    low = (int(match[1]), int(match[2]), int(match[3]))
    got = _version(version)
    return got[0] == low[0] and got >= low


def test_satisfies_reads_caret_ranges() -> None:
    assert satisfies("2.3.6", "^2.3.6") and satisfies("2.9.0", "^2.3.6")
    assert not satisfies("2.3.5", "^2.3.6") and not satisfies("3.0.0", "^2.3.6")
    with pytest.raises(ValueError):
        satisfies("2.3.6", "2.3.6")


def test_every_runtime_dependency_is_a_caret_range() -> None:
    dependencies: dict[str, str] = PACKAGE["dependencies"]
    assert all(CARET.match(spec) for spec in dependencies.values()), dependencies
    # The whole family is a dependency only through ranges (and nothing of it is pinned).
    family = {name for name in dependencies if FAMILY.match(name)}
    assert {"unified", "vfile", "hast-util-to-jsx-runtime", "remark-parse"} <= family


def test_the_renderer_packages_are_not_runtime_dependencies() -> None:
    # react-markdown is used for types and tests only; streamdown and assistant-ui are hosts.
    for name in ("react-markdown", "streamdown", "@assistant-ui/react-markdown"):
        assert name not in PACKAGE["dependencies"]
        assert name in PACKAGE["devDependencies"]


def _locked_versions(lockfile: str) -> dict[str, set[str]]:
    """Package name → versions in a pnpm lockfile's ``packages:`` keys (``name@version:``)."""
    versions: dict[str, set[str]] = {}
    for match in re.finditer(r"^  '?(@?[^@\s']+)@(\d+\.\d+\.\d+[^:'(\s]*)", lockfile, re.MULTILINE):
        versions.setdefault(match[1], set()).add(match[2])
    return versions


def test_deerflow_s_locked_copies_satisfy_the_ranges() -> None:
    snapshot = os.environ.get("DEERFLOW_FRONTEND_SNAPSHOT")
    if not snapshot:
        pytest.skip("set DEERFLOW_FRONTEND_SNAPSHOT to DeerFlow's frontend tarball to check dedupe")
    with tarfile.open(snapshot) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("frontend/pnpm-lock.yaml"))
        extracted = archive.extractfile(member)
        assert extracted is not None
        lockfile = extracted.read().decode("utf-8")
    locked = _locked_versions(lockfile)
    shared = {name: spec for name, spec in PACKAGE["dependencies"].items() if name in locked}
    assert {"unified", "hast-util-to-jsx-runtime", "remark-parse"} <= set(shared)
    for name, spec in shared.items():
        assert any(satisfies(version, spec) for version in locked[name]), (name, spec, locked[name])
