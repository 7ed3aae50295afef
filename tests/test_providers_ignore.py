"""Exclude patterns and .gitignore files: git itself (``git check-ignore``) is the oracle for
which paths a folder's .gitignore files leave out, and an exclude pattern decides first."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deerflow.knowledge.providers._ignore import Rules, check_patterns
from deerflow.knowledge.providers.documents import discover

FILES = (
    "a.md",
    "b.txt",
    "keep.md",
    "build/out.md",
    "build/keep.md",
    "docs/a.md",
    "docs/build/x.md",
    "docs/deep/b.txt",
    "docs/deep/keep.md",
    "node_modules/pkg/README.md",
)
_PATTERN = st.sampled_from(
    [
        "*.txt",
        "build/",
        "/build",
        "build",
        "docs/*",
        "!docs/deep",
        "!keep.md",
        "node_modules",
        "**/deep/",
        "a.md",
        "/a.md",
        "!*.md",
        "# a comment",
        "",
        "docs/**/b.txt",
        "*.md",
    ]
)
_GITIGNORES = st.fixed_dictionaries(
    {"": st.lists(_PATTERN, max_size=4)},
    optional={
        "docs/": st.lists(_PATTERN, max_size=3),
        "docs/deep/": st.lists(_PATTERN, max_size=3),
    },
)


def _tree(root: Path, gitignores: dict[str, list[str]]) -> None:
    for relative in FILES:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("Herons.", encoding="utf-8")
    for folder, lines in gitignores.items():
        (root / folder / ".gitignore").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _git_ignored(root: Path) -> set[str]:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    result = subprocess.run(
        ["git", "-C", str(root), "check-ignore", "--stdin"],
        input="\n".join(FILES),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr  # 1: nothing ignored
    return set(result.stdout.split())


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git, the reference")
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(_GITIGNORES)
def test_gitignore_leaves_out_what_git_ignores(
    tmp_path_factory: pytest.TempPathFactory, gitignores: dict[str, list[str]]
) -> None:
    root = tmp_path_factory.mktemp("repo")
    _tree(root, gitignores)
    found, _ = discover(root)
    ignored = _git_ignored(root)
    assert {c.path for c in found} == set(FILES) - ignored


def test_an_exclude_pattern_decides_before_any_gitignore() -> None:
    rules = Rules.from_exclude(["!keep.md", "drafts/"]).with_gitignore("", "*.md\n")
    assert rules.reason("keep.md", folder=False) is None  # taken back by the exclude pattern
    assert rules.reason("other.md", folder=False) == "ignored by .gitignore ('*.md')"
    assert rules.reason("drafts", folder=True) == "excluded by the pattern 'drafts/'"


def test_a_folder_pattern_matches_folders_only() -> None:
    rules = Rules.from_exclude(["build/"])
    assert rules.reason("build", folder=True) == "excluded by the pattern 'build/'"
    assert rules.reason("build", folder=False) is None


def test_a_deeper_gitignore_decides_first_and_applies_below_its_folder_only() -> None:
    rules = Rules().with_gitignore("", "*.md\n").with_gitignore("docs/", "!a.md\n")
    assert rules.reason("docs/a.md", folder=False) is None
    assert rules.reason("a.md", folder=False) == "ignored by .gitignore ('*.md')"
    assert rules.reason("docs/b.md", folder=False) == "ignored by .gitignore ('*.md')"


@pytest.mark.parametrize("bad", ["", "  ", "a\x00b", 7])
def test_invalid_exclude_patterns_are_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="invalid exclude pattern"):
        check_patterns([bad])  # type: ignore[list-item]
