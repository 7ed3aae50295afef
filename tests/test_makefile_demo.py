"""`make demo` with its port taken: it says so at once, in terms a make user can act on."""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def test_a_busy_port_stops_make_demo_before_any_set_up_and_names_the_make_variable() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            ["make", "--no-print-directory", "demo", f"PORT={port}", "HOST=127.0.0.1"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2
    said = done.stdout + done.stderr
    assert f"port {port} on 127.0.0.1 is in use" in said
    assert f"make demo PORT={port + 1}" in said
    assert "--port" not in said  # serve's flag, which make users cannot pass
    # Nothing was set up or indexed first (it used to fail only after that, 17 s later).
    assert "uv sync" not in done.stdout and "deerflow-knowledge index" not in done.stdout
