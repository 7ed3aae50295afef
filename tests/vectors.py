"""Load the shared vectors in contracts/vectors/ (both test suites read the same files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VECTORS_DIR = ROOT / "contracts" / "vectors"
SCHEMA_PATH = ROOT / "contracts" / "knowledge_sources.v1.json"


def vector_files() -> dict[str, dict[str, Any]]:
    files = {}
    for path in sorted(VECTORS_DIR.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        files[data["file"]] = data
    return files


def cases(name: str) -> list[dict[str, Any]]:
    return list(vector_files()[name]["cases"])
