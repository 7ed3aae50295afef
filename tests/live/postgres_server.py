"""A throwaway PostgreSQL server on 127.0.0.1 for the tests (Debian's postgresql package).

``start()`` makes a fresh cluster in a temporary folder (trust auth, loopback only, its own socket
folder), starts it on a free port and returns a handle whose ``stop()`` ends it by the PID in its
``postmaster.pid`` and deletes the folder. As root, the cluster runs as the ``postgres`` user
(PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.live.lightrag_server import free_port

__all__ = ["PostgresServer", "PostgresUnavailable", "find_bin", "restart", "start"]

START_TIMEOUT_SECONDS = 60.0


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries on this machine (apt-get install postgresql)."""


def find_bin(name: str) -> str:
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    found = candidates[0] if candidates else shutil.which(name)
    if not found:
        raise PostgresUnavailable(f"{name} not found: apt-get install postgresql")
    return found


def _as_postgres(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", "postgres", "--", *cmd]


@dataclass
class PostgresServer:
    url: str
    data_dir: Path
    root: Path

    def pid(self) -> int | None:
        try:
            return int((self.data_dir / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def stop(self) -> None:
        pid = self.pid()
        if pid is not None:
            try:
                os.kill(pid, signal.SIGINT)  # PostgreSQL's "fast shutdown"
            except ProcessLookupError:
                pid = None
            deadline = time.monotonic() + 20
            while pid is not None and time.monotonic() < deadline:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)


def restart(server: PostgresServer) -> None:
    """Stop the server (fast shutdown: every connection is cut) and start it again on the same
    data and port, as ``pg_ctl restart -m fast`` does; returns once it accepts connections."""
    pid = server.pid()
    if pid is not None:
        os.kill(pid, signal.SIGINT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
    port = int(server.url.split("@127.0.0.1:")[1].split("/")[0])
    _launch(server.data_dir, server.root, port)
    _wait_ready(server, port)


def _launch(data_dir: Path, root: Path, port: int) -> None:
    postgres = find_bin("postgres")
    log = open(root / "server.log", "ab")  # noqa: SIM115 - the server writes it until stop()
    subprocess.Popen(
        _as_postgres(
            [
                postgres,
                "-D",
                str(data_dir),
                "-p",
                str(port),
                "-c",
                "listen_addresses=127.0.0.1",
                "-k",
                str(root),
                "-c",
                "fsync=off",
            ]
        ),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _wait_ready(server: PostgresServer, port: int) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                pass
            if server.pid() is not None:
                time.sleep(0.3)
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise PostgresUnavailable(
                f"PostgreSQL did not start:\n{(server.root / 'server.log').read_text()[-2000:]}"
            )
        time.sleep(0.2)


def start() -> PostgresServer:
    initdb = find_bin("initdb")
    root = Path(tempfile.mkdtemp(prefix="deerflow-pg-"))
    data_dir = root / "data"
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    os.chmod(root, 0o700)
    subprocess.run(
        _as_postgres(
            [
                initdb,
                "-D",
                str(data_dir),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ]
        ),
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=START_TIMEOUT_SECONDS,
    )
    port = free_port()
    (root / "server.log").write_bytes(b"")  # a fresh log; _launch appends to it
    if os.geteuid() == 0:
        shutil.chown(root / "server.log", "postgres", "postgres")
    _launch(data_dir, root, port)
    server = PostgresServer(
        f"postgresql://postgres@127.0.0.1:{port}/postgres?sslmode=disable", data_dir, root
    )
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                pass
            if server.pid() is not None:
                time.sleep(0.3)
                return server
        except OSError:
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise PostgresUnavailable(
                f"PostgreSQL did not start:\n{(root / 'server.log').read_text()[-2000:]}"
            )
        time.sleep(0.2)
