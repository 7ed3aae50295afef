"""Hatch build hook: sdists and wheels carry the built chat page whenever it can be built.

The page (frontend/demo, built by ``npm run build:demo`` into the package's git-ignored static
folder) is what ``deerflow-knowledge serve`` answers at ``/``. In order:

1. a checkout with ``node_modules``: the page is rebuilt, so a stale page is never shipped;
2. an unpacked sdist (the page already built, no ``node_modules``): the page it carries is used;
3. a source tree without either (a ``git clone``, ``pip install git+…``) and npm on ``PATH``:
   ``npm ci`` then the build, as front-end-carrying Python packages do;
4. no npm at all: the package is built without the page and says so. The library, the tools,
   the CLI and the gateway's API are complete without it (``serve`` then prints that only the
   API is served), so a Python-only machine — DeerFlow's Docker builder, say — can still install
   it. Setting ``DEERFLOW_KNOWLEDGE_REQUIRE_PAGE=1`` turns this case into an error, for release
   builds.

A failing npm step is an error in every case: a broken page is never shipped silently. Editable
installs (``uv sync``) are left alone: they read the checkout, built or not; they only leave
the start-up finder out of site-packages (see ``backend/_deerflow_knowledge_finder.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

STATIC = "backend/deerflow/knowledge/server/static"
REQUIRE_PAGE_ENV = "DEERFLOW_KNOWLEDGE_REQUIRE_PAGE"
FINDER = "_deerflow_knowledge_finder.py"


class ChatPageHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "wheel" and version == "editable":
            # An editable install imports the package from backend/ (its path entry), and the
            # start-up finder answers only with the copy beside its own file: so it too must
            # be imported from backend/, not from a copy in site-packages.
            forced = self.build_config.get_force_include()  # source -> path in the wheel
            build_data["force_include_editable"] = {
                source: target for source, target in forced.items() if target != FINDER
            }
            return
        root = Path(self.root)
        page = root / STATIC / "index.html"
        has_frontend = (root / "package.json").is_file() and (root / "frontend").is_dir()
        npm = shutil.which("npm")
        if (root / "node_modules").is_dir() and has_frontend:
            if npm is None:
                raise RuntimeError("building the chat page needs npm (Node >= 20.19) on PATH")
            self._npm(npm, ["run", "build:demo"], root)
        elif page.is_file():
            pass  # an unpacked sdist: its page was built when the sdist was made
        elif has_frontend and npm is not None:
            self.app.display_info("the chat page is not built: installing its npm dependencies")
            self._npm(npm, ["ci", "--no-audit", "--no-fund"], root)
            self._npm(npm, ["run", "build:demo"], root)
        elif os.environ.get(REQUIRE_PAGE_ENV, "") not in ("", "0"):
            raise RuntimeError(
                "the chat page is not built and npm is not on PATH: install Node >= 20.19 "
                f"and build again ({REQUIRE_PAGE_ENV} is set)"
            )
        else:
            self.app.display_warning(
                "npm is not on PATH: building without the chat page (the library, the CLI and "
                "the gateway's API are complete; `serve` will serve the API only)"
            )
            return
        if not page.is_file():
            raise RuntimeError("`npm run build:demo` did not write the chat page")
        build_data["artifacts"].append(f"{STATIC}/**")

    def _npm(self, npm: str, arguments: list[str], root: Path) -> None:
        self.app.display_info(f"npm {' '.join(arguments)}")
        result = subprocess.run([npm, *arguments], cwd=root, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"`npm {' '.join(arguments)}` failed (exit {result.returncode})")
