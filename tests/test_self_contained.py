"""The project carries its own words: no file cites a design brief or a folder outside the repo.

The project's own design document is ``docs/RATIONALE.md``; a ``DESIGN.md`` and "DESIGN §n"
section numbers name a document the repository does not hold. `.ci/run` is the one exception: it
hands the DeerFlow snapshot's path to the suite when the machine has it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_OUTSIDE = re.compile(r"DESIGN\.md|DESIGN §|\.\./shared|/work/shared")
_EXEMPT = {".ci/run", "tests/test_self_contained.py"}


def test_no_tracked_file_cites_an_outside_document() -> None:
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    found = []
    for name in files:
        if name in _EXEMPT or name.endswith((".png", ".pdf", ".lock", ".sqlite")):
            continue
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        found += [f"{name}:{n}" for n, line in enumerate(text.splitlines(), 1)
                  if _OUTSIDE.search(line)]  # fmt: skip
    assert files and found == []
