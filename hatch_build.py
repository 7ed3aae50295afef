"""Hatch build hook: every sdist and wheel carries the built chat page, or the build fails.

The page (frontend/demo, built by ``npm run build:demo`` into the package's git-ignored static
folder) is what ``deerflow-knowledge serve`` answers at ``/``. In a checkout with ``node_modules``
the hook rebuilds it, so a stale page is never shipped; in an unpacked sdist (no
``node_modules``) it uses the page the sdist carries. A build with neither stops with what to do,
rather than producing a wheel whose ``serve`` has no page. Editable installs (``uv sync``) are
left alone: they read the checkout, built or not.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

STATIC = "backend/deerflow/knowledge/server/static"


class ChatPageHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "wheel" and version == "editable":
            return
        root = Path(self.root)
        page = root / STATIC / "index.html"
        if (root / "node_modules").is_dir() and (root / "package.json").is_file():
            npm = shutil.which("npm")
            if npm is None:
                raise RuntimeError("building the chat page needs npm (Node >= 20.19) on PATH")
            self.app.display_info("building the chat page: npm run build:demo")
            result = subprocess.run([npm, "run", "build:demo"], cwd=root, check=False)
            if result.returncode != 0 or not page.is_file():
                raise RuntimeError(f"`npm run build:demo` failed (exit {result.returncode})")
        elif not page.is_file():
            raise RuntimeError(
                "the chat page is not built and cannot be built here: run `npm ci` "
                "(Node >= 20.19) in the repository, then build again"
            )
        build_data["artifacts"].append(f"{STATIC}/**")
