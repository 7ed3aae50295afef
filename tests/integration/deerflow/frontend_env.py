"""DeerFlow's frontend from the snapshot tarball, installed and built the way DeerFlow builds it.

A build is what DeerFlow's own real-backend e2e config does: the pnpm its ``packageManager``
names, ``pnpm install --frozen-lockfile`` from its lockfile, then (for the patched variant) the
packed npm package added with ``pnpm add <tarball>`` and this repository's patch applied with
``git apply`` from DeerFlow's checkout root, exactly as the README's "Inside DeerFlow" says;
``next build`` with the gateway address fixed at build time (``next.config.js`` writes it into
its rewrites) and ``next start`` on 127.0.0.1.

Installing and building take minutes, so each variant's tree lives under the repository's
ignored ``build/`` folder and is reused while its inputs (snapshot, patch, package tarball,
gateway address) are unchanged: a CI run builds once, for the suite and the benchmarks alike.
``tsc --noEmit`` runs on each fresh patched tree before the build; its error lines are kept with it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.integration.deerflow import deerflow_env

REPO = Path(__file__).resolve().parents[3]
FRONTEND_SNAPSHOT_ENV = "DEERFLOW_FRONTEND_SNAPSHOT"
SKIP_HINT = (
    f"set {FRONTEND_SNAPSHOT_ENV} to DeerFlow's frontend snapshot tarball "
    "(e.g. deer-flow-f1f4af99-frontend.tar.gz) to run DeerFlow's UI end to end"
)
#: The patch the README's "Inside DeerFlow" section applies (tests/test_deerflow_ui_patch.py
#: checks the README names exactly this file).
PATCH = REPO / "integrations" / "deerflow" / "deerflow-frontend.patch"
BUILD_ROOT = REPO / "build" / "deerflow-frontend"
PACKAGE_DIR = REPO / "frontend"
PACKAGE_NAME = "@deerflow/knowledge-citations"
INSTALL_TIMEOUT_SECONDS = 900
BUILD_TIMEOUT_SECONDS = 1800
START_TIMEOUT_SECONDS = 120.0
#: A ``tsc`` diagnostic line: ``path(line,col): error TSxxxx: message``.
TSC_ERROR = re.compile(r"^(?P<file>[^\s(][^(]*)\(\d+,\d+\): error (?P<code>TS\d+): (?P<text>.*)$")
PATCHED = "patched"
UNPATCHED = "unpatched"


def frontend_snapshot() -> Path | None:
    """The tarball named by DEERFLOW_FRONTEND_SNAPSHOT, or None when unset or not a file."""
    value = os.environ.get(FRONTEND_SNAPSHOT_ENV, "").strip()
    if not value:
        return None
    path = Path(value).expanduser().resolve()
    return path if path.is_file() else None


def pnpm(frontend: Path) -> list[str]:
    """The pnpm DeerFlow's ``packageManager`` names, run through npm's ``npx`` (corepack would
    do the same, but refuses a registry mirror without signatures)."""
    manager = json.loads((frontend / "package.json").read_text(encoding="utf-8"))["packageManager"]
    name, _, version = manager.partition("@")
    if name != "pnpm" or not version:
        raise RuntimeError(f"DeerFlow's packageManager is {manager!r}, not pnpm@<version>")
    return ["npx", "--yes", f"pnpm@{version.split('+')[0]}"]


def pack_package(out: Path, log: Path) -> Path:
    """``npm pack`` of the package's workspace (its prepack script builds ``dist/``)."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.tgz"):
        old.unlink()
    deerflow_env.run(
        ["npm", "pack", "--pack-destination", str(out), "--loglevel=error"],
        PACKAGE_DIR,
        deerflow_env.clean_env(),
        log,
        timeout=INSTALL_TIMEOUT_SECONDS,
    )
    (tarball,) = out.glob("*.tgz")
    return tarball


def tsc_errors(output: str) -> list[str]:
    """The error lines of ``tsc`` output, without positions (a patch moves lines)."""
    found = []
    for line in output.splitlines():
        match = TSC_ERROR.match(line.strip())
        if match:
            found.append(f"{match['file']}: {match['code']}: {match['text']}")
    return sorted(found)


@dataclass
class FrontendBuild:
    """One built copy of DeerFlow's frontend (``root`` is DeerFlow's checkout root)."""

    root: Path
    variant: str
    gateway_url: str
    tsc_errors: dict[str, list[str]]
    """``tsc --noEmit`` error lines after (``patched``) and, when there are any, before
    (``unpatched``) the patch; empty for the unpatched variant, built only to be measured."""
    seconds: dict[str, float]
    """Wall time of each step when this tree was built (``cached`` says whether it was now)."""
    cached: bool

    @property
    def frontend(self) -> Path:
        return self.root / "frontend"


def _inputs(
    snapshot: Path, variant: str, gateway_url: str, package_tarball: Path | None
) -> dict[str, str]:
    inputs = {
        "snapshot": deerflow_env.sha256(snapshot),
        "variant": variant,
        "gateway_url": gateway_url,
    }
    if variant == PATCHED:
        assert package_tarball is not None
        inputs["patch"] = deerflow_env.sha256(PATCH)
        inputs["package"] = deerflow_env.sha256(package_tarball)
    return inputs


def cached_gateway_url(snapshot: Path, variant: str) -> str | None:
    """The gateway address the cached build of ``variant`` was built for, if there is one."""
    stamp = BUILD_ROOT / variant / "stamp.json"
    try:
        recorded = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if recorded.get("inputs", {}).get("snapshot") != deerflow_env.sha256(snapshot):
        return None
    url = recorded.get("inputs", {}).get("gateway_url")
    return url if isinstance(url, str) else None


def gateway_port_for(snapshot: Path | None, *variants: str) -> int:
    """A port for the gateway: the one the first cached build of ``variants`` was built for,
    when that port is free (so the build is reused), else a free one."""
    for variant in variants:
        cached = snapshot and cached_gateway_url(snapshot, variant)
        if cached:
            port = int(cached.rsplit(":", 1)[1])
            if port_is_free(port):
                return port
    return free_port()


def build_env(gateway_url: str, **extra: str) -> dict[str, str]:
    """What DeerFlow's ``playwright.real-backend.config.ts`` sets for ``pnpm build && pnpm start``."""
    return deerflow_env.clean_env(
        SKIP_ENV_VALIDATION="1",
        DEER_FLOW_AUTH_DISABLED="1",
        BETTER_AUTH_SECRET="local-dev-secret",
        DEER_FLOW_INTERNAL_GATEWAY_BASE_URL=gateway_url,
        NEXT_TELEMETRY_DISABLED="1",
        **extra,
    )


def prepare(
    snapshot: Path,
    variant: str,
    gateway_url: str,
    log: Path,
    *,
    package_tarball: Path | None = None,
) -> FrontendBuild:
    """DeerFlow's frontend, ``variant`` (patched or unpatched), installed and built for
    ``gateway_url``; reused when an earlier build had the same inputs. Held under a lock while
    it is being made."""
    home = BUILD_ROOT / variant
    home.mkdir(parents=True, exist_ok=True)
    inputs = _inputs(snapshot, variant, gateway_url, package_tarball)
    with (home / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = home / "stamp.json"
        root = home / "deer-flow"
        with contextlib.suppress(OSError, ValueError):
            recorded = json.loads(stamp.read_text(encoding="utf-8"))
            if recorded["inputs"] == inputs and (root / "frontend/.next/BUILD_ID").is_file():
                return FrontendBuild(
                    root, variant, gateway_url, recorded["tsc_errors"], recorded["seconds"], True
                )
        stamp.unlink(missing_ok=True)
        if root.exists():
            shutil.rmtree(root)
        seconds, errors = _make(snapshot, home, variant, gateway_url, log, package_tarball)
        built = FrontendBuild(root, variant, gateway_url, errors, seconds, False)
        _build(built, log, seconds)
        stamp.write_text(
            json.dumps({"inputs": inputs, "tsc_errors": errors, "seconds": seconds}, indent=1),
            encoding="utf-8",
        )
        return built


def _make(
    snapshot: Path,
    home: Path,
    variant: str,
    gateway_url: str,
    log: Path,
    package_tarball: Path | None,
) -> tuple[dict[str, float], dict[str, list[str]]]:
    """Unpack, install and (patched) add the package, apply the patch and run ``tsc``; DeerFlow's
    own errors (the patch reverted) are counted only when the patched tree has any."""
    seconds: dict[str, float] = {}
    errors: dict[str, list[str]] = {}
    started = time.monotonic()
    with tarfile.open(snapshot) as archive:
        archive.extractall(home, filter="data")
    root = home / "deer-flow"
    frontend = root / "frontend"
    if not (frontend / "package.json").is_file():
        raise RuntimeError(f"{snapshot} has no deer-flow/frontend/package.json")
    # A checkout is a git repository; `git apply` then resolves the patch's paths from its root
    # (not from an enclosing repository's), and nextra finds the history it reads page dates from.
    env = build_env(gateway_url)
    deerflow_env.run(["git", "init", "-q"], root, env, log)
    deerflow_env.run(["git", "add", "-A"], root, env, log)
    deerflow_env.run(
        ["git", "-c", "user.name=snapshot", "-c", "user.email=snapshot@localhost", "commit", "-qm",
         f"{snapshot.name}"],
        root,
        env,
        log,
    )  # fmt: skip
    seconds["unpack"] = time.monotonic() - started
    command = pnpm(frontend)
    started = time.monotonic()
    deerflow_env.run(
        [*command, "install", "--frozen-lockfile", "--prefer-offline"],
        frontend,
        env,
        log,
        timeout=INSTALL_TIMEOUT_SECONDS,
    )
    seconds["pnpm_install"] = time.monotonic() - started
    if variant != PATCHED:
        return seconds, errors
    assert package_tarball is not None
    started = time.monotonic()
    deerflow_env.run(
        [*command, "add", str(package_tarball), "--prefer-offline"],
        frontend,
        env,
        log,
        timeout=INSTALL_TIMEOUT_SECONDS,
    )
    seconds["pnpm_add"] = time.monotonic() - started
    deerflow_env.run(["git", "apply", str(PATCH)], root, env, log)
    started = time.monotonic()
    errors[PATCHED] = run_tsc(frontend, env)
    seconds["tsc_patched"] = time.monotonic() - started
    if errors[PATCHED]:
        # Only then is DeerFlow's own count needed: with the patch reverted (incremental).
        started = time.monotonic()
        deerflow_env.run(["git", "apply", "--reverse", str(PATCH)], root, env, log)
        errors[UNPATCHED] = run_tsc(frontend, env)
        deerflow_env.run(["git", "apply", str(PATCH)], root, env, log)
        seconds["tsc_unpatched"] = time.monotonic() - started
    return seconds, errors


def run_tsc(frontend: Path, env: dict[str, str]) -> list[str]:
    """DeerFlow's own ``typecheck`` script (``tsc --noEmit``), as error lines."""
    completed = subprocess.run(
        [str(frontend / "node_modules" / ".bin" / "tsc"), "--noEmit"],
        cwd=frontend,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_SECONDS,
    )
    errors = tsc_errors(completed.stdout + completed.stderr)
    if completed.returncode != 0 and not errors:
        raise RuntimeError(f"tsc failed without diagnostics:\n{completed.stdout[-3000:]}")
    return errors


def _build(built: FrontendBuild, log: Path, seconds: dict[str, float]) -> None:
    started = time.monotonic()
    deerflow_env.run(
        [str(built.frontend / "node_modules" / ".bin" / "next"), "build"],
        built.frontend,
        build_env(built.gateway_url),
        log,
        timeout=BUILD_TIMEOUT_SECONDS,
    )
    seconds["next_build"] = time.monotonic() - started


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextmanager
def next_start(built: FrontendBuild, log: Path) -> Iterator[str]:
    """``next start`` of ``built`` on 127.0.0.1 (a free port); yields its base URL and stops it
    by its own process group."""
    port = free_port()
    with log.open("ab") as stream:
        process = subprocess.Popen(
            [
                str(built.frontend / "node_modules" / ".bin" / "next"),
                "start",
                "--hostname",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            cwd=built.frontend,
            env=build_env(built.gateway_url, PORT=str(port)),
            stdout=stream,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            try:
                with urllib.request.urlopen(base + "/", timeout=10) as response:
                    if response.status < 500:
                        break
            except urllib.error.HTTPError as exc:
                if exc.code < 500:
                    break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"next start did not answer:\n{log.read_text(errors='replace')[-4000:]}"
                )
            time.sleep(0.25)
        yield base
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@dataclass(frozen=True)
class PatchStats:
    files: tuple[str, ...]
    added: int
    removed: int
    new_files: tuple[str, ...]

    @property
    def changed(self) -> int:
        """Lines the patch adds plus lines it removes (a modified line counts twice)."""
        return self.added + self.removed


HUNK = re.compile(r"^@@ -\d+(?:,(?P<old>\d+))? \+\d+(?:,(?P<new>\d+))? @@")


def patch_stats(text: str) -> PatchStats:
    """What a unified diff (``git diff`` output) changes. Each hunk's header says how many old
    and new lines follow, so a content line that looks like a header is never read as one."""
    files: list[str] = []
    new_files: list[str] = []
    added = removed = 0
    old_path = ""
    old_left = new_left = 0
    for line in text.splitlines():
        if old_left > 0 or new_left > 0:
            if line.startswith("+"):
                added += 1
                new_left -= 1
            elif line.startswith("-"):
                removed += 1
                old_left -= 1
            elif not line.startswith("\\"):  # "\ No newline at end of file"
                old_left -= 1
                new_left -= 1
            continue
        hunk = HUNK.match(line)
        if hunk:
            old_left = int(hunk["old"] or 1)
            new_left = int(hunk["new"] or 1)
        elif line.startswith("--- "):
            old_path = line[4:]
        elif line.startswith("+++ "):
            path = line[4:].removeprefix("b/")
            files.append(path)
            if old_path == "/dev/null":
                new_files.append(path)
    return PatchStats(tuple(files), added, removed, tuple(new_files))
