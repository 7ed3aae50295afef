"""DeerFlow's frontend patch: small (at most MAX_CHANGED_LINES lines in DeerFlow's existing
files, no new file there), applies to the snapshot from DeerFlow's checkout root, and is the very
file the README's "Inside DeerFlow" section tells a user to apply."""

from __future__ import annotations

import re
import subprocess
import tarfile
from pathlib import Path

from tests.integration.deerflow.frontend_env import PATCH, REPO, patch_stats, tsc_errors

MAX_CHANGED_LINES = 20
README = REPO / "README.md"


def readme_ui_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("### DeerFlow's chat UI")
    end = text.index("\n## ", start)
    return text[start:end]


def test_the_patch_changes_at_most_20_lines_and_adds_no_file() -> None:
    stats = patch_stats(PATCH.read_text(encoding="utf-8"))
    print(f"\nDeerFlow frontend patch: {stats.changed} lines ({stats.added}+, {stats.removed}-)")
    assert stats.files, "the patch changes nothing"
    assert stats.new_files == (), stats.new_files
    assert stats.changed <= MAX_CHANGED_LINES, stats
    assert all(path.startswith("frontend/src/") for path in stats.files), stats.files


def test_patch_stats_counts_what_git_counts(tmp_path: Path) -> None:
    """The counter against git's own --numstat, on a diff that adds, removes and creates."""
    repo = tmp_path / "r"
    repo.mkdir()

    def run(*arguments: str) -> str:
        command = ["git", *arguments]
        return subprocess.run(command, cwd=repo, check=True, capture_output=True, text=True).stdout

    run("init", "-q")
    # Removed "-- x" and added "++ y" print as "--- x" and "+++ y": header look-alikes.
    (repo / "a.txt").write_text("one\ntwo\n-- x\nthree\n")
    run("add", "-A")
    run("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base")
    (repo / "a.txt").write_text("one\n++ y\nthree\n")
    (repo / "new.txt").write_text("x\n")
    run("add", "-A")
    diff = run("diff", "--cached")
    numstat = [line.split("\t") for line in run("diff", "--cached", "--numstat").splitlines()]
    stats = patch_stats(diff)
    assert stats.added == sum(int(n[0]) for n in numstat)
    assert stats.removed == sum(int(n[1]) for n in numstat)
    assert stats.new_files == ("new.txt",)


def test_the_readme_applies_exactly_this_patch() -> None:
    section = readme_ui_section()
    applied = re.findall(r"git apply (\S+\.patch)", section)
    assert applied, "the README's DeerFlow UI section has no `git apply <file>.patch`"
    relative = PATCH.relative_to(REPO).as_posix()
    assert all(path.endswith("/" + relative) for path in applied), (applied, relative)
    assert "pnpm add" in section and "npm pack" in section
    stats = patch_stats(PATCH.read_text(encoding="utf-8"))
    claim = f"{stats.changed} changed lines in {len(stats.files)} of its files"
    assert claim in " ".join(section.split()), f"the README should say: {claim}"


def test_the_patch_applies_to_the_snapshot(frontend_snapshot_tarball: Path, tmp_path: Path) -> None:
    with tarfile.open(frontend_snapshot_tarball) as archive:
        archive.extractall(tmp_path, filter="data")
    root = tmp_path / "deer-flow"
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    checked = subprocess.run(
        ["git", "apply", "--check", "--verbose", str(PATCH)],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stderr
    for path in patch_stats(PATCH.read_text(encoding="utf-8")).files:
        assert (root / path).is_file(), f"{path} is not a file of DeerFlow's snapshot"


def test_tsc_errors_reads_diagnostics_without_positions() -> None:
    output = (
        "src/a.tsx(3,5): error TS2322: Type 'string' is not assignable to type 'number'.\n"
        "  Type 'x' is not assignable.\n"
        "src/b.ts(10,1): error TS2304: Cannot find name 'y'.\n"
        "Found 2 errors in 2 files.\n"
    )
    assert tsc_errors(output) == [
        "src/a.tsx: TS2322: Type 'string' is not assignable to type 'number'.",
        "src/b.ts: TS2304: Cannot find name 'y'.",
    ]
    moved = output.replace("(3,5)", "(4,5)")
    assert tsc_errors(moved) == tsc_errors(output)
