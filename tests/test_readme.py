"""The README's Python snippets are run, so the documentation cannot drift from behaviour."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
_BLOCK_RE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _snippets() -> list[str]:
    return _BLOCK_RE.findall(README.read_text(encoding="utf-8"))


def test_readme_has_python_snippets() -> None:
    assert len(_snippets()) >= 1


@pytest.mark.parametrize("index", range(len(_snippets())))
def test_readme_snippet_runs(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code = _snippets()[index]
    exec(compile(code, f"README.md snippet {index + 1}", "exec"), {"__name__": "__readme__"})
