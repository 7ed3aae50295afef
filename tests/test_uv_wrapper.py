"""scripts/bin/uv hands the call to a real uv, never to another copy of itself.

Two checkouts' ``scripts/bin`` on one PATH (a worktree beside the main one) once handed the call
back and forth forever; the wrapper now skips any ``uv`` on PATH that is a copy of itself.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

WRAPPER = Path(__file__).resolve().parents[1] / "scripts" / "bin" / "uv"


def _fake_uv(folder: Path) -> Path:
    folder.mkdir()
    fake = folder / "uv"
    fake.write_text('#!/bin/sh\necho fake-uv "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    return fake


@pytest.mark.skipif(shutil.which("bash") is None, reason="the wrapper is a bash script")
def test_a_second_copy_of_the_wrapper_on_path_is_skipped(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        folder.mkdir()
        shutil.copy2(WRAPPER, folder / "uv")
    _fake_uv(tmp_path / "real")
    path = os.pathsep.join([str(first), str(second), str(tmp_path / "real"), "/usr/bin", "/bin"])
    done = subprocess.run(
        [str(first / "uv"), "--version"],
        env={"PATH": path, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "fake-uv --version"
