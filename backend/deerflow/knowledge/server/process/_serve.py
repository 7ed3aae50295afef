"""Serving the gateway as a process of its own: the one place that tunes the process.

``serve`` runs the app with uvicorn behind the connection guard (``_connections``), answering only
to the host names it is bound to (``_origin``). The process is the gateway's here, so it is tuned
for serving while uvicorn runs: a bounded default executor, a shorter GIL switch interval,
``gc.freeze`` after start-up, LangSmith's untraced steps kept on the event loop and, on glibc, a
fixed threshold above which memory is mapped (``pin_mmap_threshold``). ``create_app`` does none
of this, so an application that embeds the app keeps its own process settings.
"""

from __future__ import annotations

import asyncio
import contextvars
import ctypes
import dataclasses
import gc
import socket
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Final

from langsmith import set_runtime_overrides
from langsmith._runtime_overrides import get_runtime_overrides
from langsmith.utils import tracing_is_enabled

from deerflow.knowledge.server._defaults import GATEWAY_DEFAULTS, bundled_page_dir
from deerflow.knowledge.server.api._app import GatewayConfig, create_app
from deerflow.knowledge.server.api._origin import served_hosts
from deerflow.knowledge.server.process._connections import ConnectionGuard, descriptor_limits
from deerflow.knowledge.server.process._listen import open_listener

__all__ = [
    "MISSING_PAGE_HINT",
    "MMAP_THRESHOLD_BYTES",
    "SWITCH_INTERVAL_SECONDS",
    "WORKER_THREADS",
    "pin_mmap_threshold",
    "serve",
    "untraced_steps_inline",
]

SWITCH_INTERVAL_SECONDS: Final = 0.0005
#: Worker threads for the agent's blocking steps (shared by all runs of the process).
WORKER_THREADS: Final = 64
#: Blocks this large or larger are mapped on their own and returned to the system when freed
#: (glibc's default, fixed: ``pin_mmap_threshold``).
MMAP_THRESHOLD_BYTES: Final = 128 * 1024
#: glibc's ``mallopt`` parameter number of the mmap threshold (``malloc.h``).
_M_MMAP_THRESHOLD: Final = -3
MISSING_PAGE_HINT: Final = (
    "this installation has no chat page. Released wheels carry it: reinstall with "
    "`pip install --force-reinstall deerflow-knowledge`; in a source checkout run "
    "`npm ci && npm run build:demo`."
)


def serve(
    config: GatewayConfig,
    *,
    host: str = GATEWAY_DEFAULTS.host,
    port: int = GATEWAY_DEFAULTS.port,
    sock: socket.socket | None = None,
) -> None:
    """Run the gateway until interrupted. ``sock`` is an already bound socket (the CLI binds first,
    so a busy port fails before any URL is announced); without it, ``host:port`` is bound here.

    Requests must name the bound address (or ``localhost`` for a loopback one, ``host`` as given,
    or one of ``config.allowed_hosts``) in ``Host``; connections are limited below the process's
    descriptor limit and time out waiting for headers or for a client that does not read."""
    import uvicorn

    if sock is None:
        sock = open_listener(host, port)
    requested = host
    host, port = sock.getsockname()[:2]
    hosts = served_hosts(host, requested=requested) | set(config.allowed_hosts or ())
    config = dataclasses.replace(config, allowed_hosts=tuple(sorted(hosts)))
    page_dir = config.static_dir or bundled_page_dir()
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}/"
    print(
        f"deerflow-knowledge gateway: provider {config.provider_label}, model {config.model_label}"
    )
    if page_dir is not None and (page_dir / "index.html").is_file():
        print(f"Chat page: {url}  (Ctrl-C stops)", flush=True)
        print(f"LangGraph Platform API: {url}api  (useStream / langgraph-sdk apiUrl)", flush=True)
    else:
        print(f"API only at {url}api/ - {MISSING_PAGE_HINT}", flush=True)
    limits = descriptor_limits()
    guard = ConnectionGuard(max_connections=limits.max_connections)
    pin_mmap_threshold()

    class Server(uvicorn.Server):
        async def serve(self, sockets: list[socket.socket] | None = None) -> None:
            loop = asyncio.get_running_loop()
            # Accept errors as the guard's one line, not asyncio's traceback per accept.
            loop.set_exception_handler(guard.exception_handler)
            # The agent's CPU-heavy steps run in the loop's default executor; Python's default of
            # cpu_count + 4 workers lets a few stuck runs queue every other user's steps behind.
            loop.set_default_executor(
                ThreadPoolExecutor(max_workers=WORKER_THREADS, thread_name_prefix="gateway-step")
            )
            # A worker thread stuck in pure-Python work holds the GIL for a whole switch interval
            # each time the event loop wakes; a shorter interval keeps the loop serving others.
            sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
            with untraced_steps_inline():
                await super().serve(sockets)

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            # What the process holds once the app has started (modules, the graph, the agent's
            # tools: over a hundred thousand objects) lives as long as the app; the collector
            # need not walk it again every time a run's garbage triggers a full collection.
            gc.freeze()

    uvicorn_config = uvicorn.Config(
        create_app(config), log_level="warning", http=guard.protocol(), backlog=limits.backlog
    )
    Server(uvicorn_config).run(sockets=[sock])


def pin_mmap_threshold(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Fix glibc's mmap threshold at ``threshold``; False where there is no glibc ``mallopt``.

    glibc raises the threshold each time a mapped block is freed (up to 32 MiB), so once a long
    thread's values frames (hundreds of kilobytes each) had come and gone, the next ones came from
    the heap, between small blocks that outlive them: the process grew for waves after every cache
    had reached its bound (20 long threads a wave: +26 MiB in wave 4 with the dynamic threshold,
    +1 MiB fixed). Fixed, a block this large is mapped and unmapped, and its pages go back."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not a glibc-like C library
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold))


async def _inline_unless_tracing(
    default: Callable[..., Any],
    ctx: contextvars.Context,
    func: Callable[..., Any],
    /,
    *args: Any,
    **kwargs: Any,
) -> Any:
    # LangChain's agent wraps each model and tool call in LangSmith's ``traceable``, which hands
    # its run setup and teardown to a worker thread even when nothing is traced: a dozen thread
    # round trips per run, each a GIL hand-off. Untraced, that bookkeeping is a few dict reads.
    if ctx.run(tracing_is_enabled):
        return await default(ctx, func, *args, **kwargs)
    return ctx.run(func, *args, **kwargs)


@contextmanager
def untraced_steps_inline() -> Iterator[None]:
    """LangSmith's ``aio_to_thread`` override (its public runtime hook) while the gateway serves,
    unless something in the process installed one of its own."""
    if get_runtime_overrides().aio_to_thread is not None:
        yield
        return
    set_runtime_overrides(aio_to_thread=_inline_unless_tracing)
    try:
        yield
    finally:
        if get_runtime_overrides().aio_to_thread is _inline_unless_tracing:
            set_runtime_overrides()
