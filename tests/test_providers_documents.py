"""providers/documents.py on its own: discovery's reasons, the guarded reads and their limits, a
text file's pages (the index built from them is tested in tests/test_providers_local.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deerflow.knowledge.providers.documents import (
    FolderReader,
    SkipFile,
    discover,
    document_pages,
    one_line_path,
    open_folder,
    read_bytes,
)
from deerflow.knowledge.text import ELLIPSIS


def _tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_discovery_lists_every_file_left_out_with_its_reason(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {"a.md": "A", "b/c.txt": "C", ".hidden.md": "H", "d.png": "x", "e": "x", "f/.g/h.md": "H"},
    )
    (root / "link.md").symlink_to(root / "a.md")
    found, skipped = discover(root)
    assert [c.path for c in found] == ["a.md", "b/c.txt"]
    assert [c.size for c in found] == [1, 1]
    reasons = {s.path: s.reason for s in skipped}
    assert reasons[".hidden.md"] == "hidden file (its name starts with a dot)"
    assert reasons["f/.g/"] == "hidden folder (its name starts with a dot)"
    assert reasons["link.md"] == "symbolic link (not followed)"
    assert reasons["d.png"].startswith("unsupported type (.png;")
    assert reasons["e"].startswith("unsupported type (no extension;")


@pytest.mark.parametrize(("max_depth", "entered"), [(2, True), (1, False)])
def test_max_depth_is_the_deepest_folder_entered(
    tmp_path: Path, max_depth: int, entered: bool
) -> None:
    root = _tree(tmp_path, {"1/2/deep.md": "D"})
    found, skipped = discover(root, max_depth=max_depth)
    assert ([c.path for c in found] == ["1/2/deep.md"]) is entered
    if not entered:
        assert [(s.path, s.reason) for s in skipped] == [
            ("1/2/", f"folder nested deeper than {max_depth} levels (not entered)")
        ]


def test_exclude_patterns_and_gitignore_leave_paths_out(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"keep.md": "K", "build/out.md": "O", "notes.txt": "N"})
    (root / ".gitignore").write_text("build/\n", encoding="utf-8")
    found, _ = discover(root, exclude=["*.txt"])
    assert [c.path for c in found] == ["keep.md"]
    found, _ = discover(root, gitignore=False)
    assert [c.path for c in found] == ["build/out.md", "keep.md", "notes.txt"]
    with pytest.raises(ValueError):
        discover(root, exclude=["ok", "bad\x00pattern"])


@pytest.mark.parametrize(("size", "read"), [(10, True), (11, False)])
def test_a_file_over_max_bytes_is_refused_before_it_is_read(
    tmp_path: Path, size: int, read: bool
) -> None:
    path = tmp_path / "f.md"
    path.write_bytes(b"x" * size)
    if read:
        assert read_bytes(path, max_bytes=10) == b"x" * 10
    else:
        with pytest.raises(SkipFile):
            read_bytes(path, max_bytes=10)


def test_a_named_pipe_is_refused_without_blocking(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe.md"
    os.mkfifo(pipe)  # nobody writes: a blocking open or read would hang the test
    with pytest.raises(SkipFile):
        read_bytes(pipe)


def test_the_reader_follows_no_folder_swapped_for_a_link(tmp_path: Path) -> None:
    root = _tree(tmp_path / "root", {"docs/a.md": "inside"})
    outside = _tree(tmp_path / "outside", {"a.md": "secret"})
    fd = open_folder(root)
    try:
        reader = FolderReader(fd)
        assert reader.read("docs/a.md") == b"inside"
        reader.close()
        (root / "docs" / "a.md").unlink()
        (root / "docs").rmdir()
        (root / "docs").symlink_to(outside)
        with pytest.raises(SkipFile, match="on its path"):
            reader.read("docs/a.md")
        reader.close()
    finally:
        os.close(fd)


def test_text_pages_drop_the_bom_and_normalize_line_ends() -> None:
    assert document_pages("a.md", "\ufeffone\r\ntwo\rthree".encode()) == [(None, "one\ntwo\nthree")]


@pytest.mark.parametrize(
    ("data", "reason"),
    [(b"ok \xff", "not UTF-8 text (invalid byte at offset 3)"), (b"a\x00b", "NUL bytes")],
)
def test_a_text_file_that_is_not_text_is_skipped(data: bytes, reason: str) -> None:
    with pytest.raises(SkipFile, match=reason.replace("(", r"\(").replace(")", r"\)")):
        document_pages("a.txt", data)


@pytest.mark.parametrize(("length", "cut"), [(120, False), (121, True)])
def test_a_path_shown_on_one_line_is_cut_past_its_limit(length: int, cut: bool) -> None:
    text = "a\n" + "b" * (length - 2)
    shown = one_line_path(text)
    assert len(shown) == min(length, 120)
    assert shown.endswith(ELLIPSIS) is cut
    assert shown.startswith("a b")
