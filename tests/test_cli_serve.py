"""``deerflow-knowledge serve`` maps the checkpoint probe's errors through the one exit-code table.

``tests/test_cli.py`` covers the command end to end (the missing extra, an unreachable database, a
busy port); these tests pin what the probe's typed errors become and that a URL the probe cannot
parse is one ``Error:`` line, not a traceback.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from deerflow.knowledge.cli import EXIT_UPSTREAM, EXIT_USAGE, app
from deerflow.knowledge.server.process import _checkpoint

SECRET = "pw-CLI-SERVE-SECRET-91aa"
runner = CliRunner()


def test_a_checkpoint_url_that_does_not_parse_is_one_line_and_exit_two(tmp_path: Path) -> None:
    # Before: urllib's ValueError escaped as a traceback (exit 1).
    result = subprocess.run(
        [sys.executable, "-m", "deerflow.knowledge.cli", "serve", "--index",
         str(tmp_path / "i.sqlite"), "--checkpoint", f"postgresql://deer:{SECRET}@[::1/threads",
         "--port", "1"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert result.returncode == EXIT_USAGE, result.stderr
    errors = [line for line in result.stderr.splitlines() if not line.startswith("Warning:")]
    assert errors == ["Error: the checkpoint URL is not a valid URL (Invalid IPv6 URL)."]
    assert SECRET not in result.stdout + result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (_checkpoint.CheckpointSetupError("setup: the operator's"), EXIT_USAGE),
        (_checkpoint.CheckpointDatabaseError("database: upstream's"), EXIT_UPSTREAM),
    ],
)
def test_each_probe_error_gets_its_exit_code_and_nothing_is_served(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, error: Exception, code: int
) -> None:
    import deerflow.knowledge.server as server

    def probe(target: str, *, timeout: float) -> None:
        raise error

    served: list[Any] = []
    monkeypatch.setattr(_checkpoint, "probe_checkpoint", probe)
    monkeypatch.setattr(server, "serve", lambda *a, **k: served.append(a))
    result = runner.invoke(
        app, ["serve", "--index", str(tmp_path / "i.sqlite"), "--checkpoint", "postgres://h/db"]
    )
    assert result.exit_code == code
    errors = [line for line in result.stderr.splitlines() if not line.startswith("Warning:")]
    assert errors == [f"Error: {error}"]
    assert served == []


def test_the_probe_waits_as_long_as_the_cli_says(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import deerflow.knowledge.server as server
    from deerflow.knowledge.cli import CHECKPOINT_PROBE_SECONDS
    from deerflow.knowledge.server.process import _listen

    asked: list[tuple[str, float]] = []
    monkeypatch.setattr(
        _checkpoint, "probe_checkpoint", lambda target, *, timeout: asked.append((target, timeout))
    )
    monkeypatch.setattr(server, "build_config", lambda *a, **k: "CONFIG")
    monkeypatch.setattr(server, "serve", lambda config, *, sock, **k: sock.close())
    # Any free port: the probe, not the port, is under test.
    monkeypatch.setattr(
        _listen, "open_listener", lambda host, port: socket.create_server((host, 0))
    )
    result = runner.invoke(
        app, ["serve", "--index", str(tmp_path / "i.sqlite"), "--checkpoint", "postgres://h/db"]
    )
    assert result.exit_code == 0, result.output
    assert asked == [("postgres://h/db", CHECKPOINT_PROBE_SECONDS)]
