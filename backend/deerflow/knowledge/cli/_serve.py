"""``deerflow-knowledge serve``: run the reference gateway, everything checked before the URL.

The gateway is :mod:`~deerflow.knowledge.server`; this module turns flags into its
``build_config`` options and checks, in order, what would otherwise fail after the URL is
announced: the provider settings, the chat model, the checkpoint store (``server/process/_checkpoint.py``
opens it and names whose fault a failure is) and the port, which is bound here and handed to
``server.serve``. ``tests/test_cli_serve.py`` covers the probe's exit codes; ``tests/test_cli.py``
the command (its serve section, the busy port, the missing extra and the unreachable database).
"""

from __future__ import annotations

import errno
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer

from deerflow.knowledge import cli
from deerflow.knowledge.cli import _provider_options as options
from deerflow.knowledge.server._defaults import GATEWAY_DEFAULTS
from deerflow.knowledge.settings import KnowledgeSettings

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["serve"]

# ``--constrain-citations`` sends ``extra_body``, which only langchain-openai's model passes on.
_OPENAI_MODEL_PREFIX: Final = "openai:"

ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        metavar="PROVIDER:NAME",
        help="Chat model as provider:name (e.g. openai:gpt-4o-mini), built with LangChain's "
        "init_chat_model. Default: the offline extractive responder (no credentials).",
        show_default=False,
    ),
]
HostOption = Annotated[str, typer.Option("--host", metavar="ADDRESS", help="Interface to bind.")]
PortOption = Annotated[
    int, typer.Option("--port", metavar="PORT", help="TCP port (1-65535).", min=1, max=65535)
]
CheckpointOption = Annotated[
    str | None,
    typer.Option(
        "--checkpoint",
        metavar="PATH|URL",
        help="Thread storage: a SQLite file path or a postgres:// URL "
        f"(default: {GATEWAY_DEFAULTS.checkpoint}).",
        show_default=False,
    ),
]
CorsOriginOption = Annotated[
    list[str] | None,
    typer.Option(
        "--cors-origin",
        metavar="ORIGIN",
        help="An origin (e.g. http://localhost:3000) allowed to call the API from a browser; "
        "repeatable. Default: none (same-origin only); writes from other origins get 403.",
        show_default=False,
    ),
]
AllowedHostOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allowed-host",
        metavar="NAME",
        help="A host name (e.g. gateway.example.com) requests may give in their Host header, "
        "besides the address bound and localhost; repeatable. Other hosts get 400, which "
        "stops DNS-rebinding pages.",
        show_default=False,
    ),
]
RunTimeoutOption = Annotated[
    float,
    typer.Option(
        "--run-timeout",
        metavar="SECONDS",
        help="Time budget of one run, in seconds (more than 0).",
        min=0.001,
    ),
]
ConstrainCitationsOption = Annotated[
    bool,
    typer.Option(
        "--constrain-citations",
        help="Send each answer to search results a GBNF grammar that admits only the verified "
        "citation links, exactly (OPENAI_BASE_URL at a llama.cpp server). Needs "
        "--model openai:NAME.",
    ),
]


def serve(
    provider: options.ProviderOption = None,
    model: ModelOption = None,
    host: HostOption = GATEWAY_DEFAULTS.host,
    port: PortOption = GATEWAY_DEFAULTS.port,
    checkpoint: CheckpointOption = None,
    index_file: options.IndexOption = None,
    config: options.ConfigOption = None,
    base_url: options.BaseUrlOption = None,
    dataset: options.DatasetOption = None,
    cors_origin: CorsOriginOption = None,
    allowed_host: AllowedHostOption = None,
    run_timeout: RunTimeoutOption = GATEWAY_DEFAULTS.run_timeout,
    constrain_citations: ConstrainCitationsOption = False,
) -> None:
    """Run the reference gateway (FastAPI + LangGraph) with the bundled chat page.

    Everything is checked before the URL is announced: the provider settings, the chat model,
    the checkpoint store (a Postgres database must answer) and the port.
    """
    server = _gateway()
    settings = options.settings_from(
        config=config, provider=provider, index=index_file, base_url=base_url, datasets=dataset
    )
    retrieval = options.provider_from(settings)
    _warn_without_index(settings)
    if constrain_citations and (model is None or not model.startswith(_OPENAI_MODEL_PREFIX)):
        cli._fail(
            "--constrain-citations needs an OpenAI-compatible model that takes a GBNF grammar: "
            "--model openai:NAME with OPENAI_BASE_URL at a llama.cpp server.",
            cli.EXIT_USAGE,
        )
    built: dict[str, Any] = {
        "model": _chat_model(model) if model is not None else None,
        "model_label": model,
        "cors_origins": tuple(cors_origin or ()),
        "allowed_hosts": tuple(allowed_host or ()),
        "run_timeout": run_timeout,
        "constrain_citations": constrain_citations,
    }
    if checkpoint is not None:
        _probe(checkpoint)
        built["checkpoint"] = checkpoint
    config_ = server.build_config(retrieval, **built)
    server.serve(config_, host=host, port=port, sock=_listen(host, port))


def _gateway() -> ModuleType:
    """The gateway package, or exit 2 in an installation without it."""
    try:
        import deerflow.knowledge.server as server
    except ModuleNotFoundError as exc:
        if exc.name is None or not exc.name.startswith("deerflow.knowledge.server"):
            raise
        cli._fail(
            "the gateway (deerflow.knowledge.server) is not available in this installation.",
            cli.EXIT_USAGE,
        )
    return server


def _warn_without_index(settings: KnowledgeSettings) -> None:
    if settings.provider == "local" and not Path(settings.index_path).is_file():
        cli._err.print(
            cli._safe(
                f"Warning: no index at {settings.index_path} yet; searches will fail until you "
                "run `deerflow-knowledge index PATH`."
            ),
            style="yellow",
            soft_wrap=True,
        )


def _chat_model(model: str) -> Any:
    if ":" not in model:
        cli._fail("--model must look like provider:name, e.g. openai:gpt-4o-mini.", cli.EXIT_USAGE)
    try:
        from langchain.chat_models import init_chat_model

        return init_chat_model(model)
    except ImportError:
        package = "langchain-" + model.split(":", 1)[0].replace("_", "-")
        cli._fail(
            f"cannot build the chat model {model}: install its integration "
            f"(pip install {package}).",
            cli.EXIT_USAGE,
        )
    except Exception as exc:  # unknown provider, missing credentials
        cli._fail(f"cannot build the chat model {model} ({type(exc).__name__}).", cli.EXIT_USAGE)


def _probe(checkpoint: str) -> None:
    """Open the checkpoint store once, as the gateway will, so a failure is one message."""
    try:
        cli._checkpoint.probe_checkpoint(checkpoint, timeout=cli.CHECKPOINT_PROBE_SECONDS)
    except cli._checkpoint.CheckpointError as exc:
        cli._fail(str(exc), cli._exit_code(exc))


def _listen(host: str, port: int) -> socket.socket:
    """Bind the port before anything is announced: a busy port is an error, not another URL."""
    from deerflow.knowledge.server.process._listen import open_listener

    try:
        return open_listener(host, port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            cli._fail(
                f"port {port} on {host} is already in use; stop the other server or pick "
                "another with --port.",
                cli.EXIT_USAGE,
            )
        reason = exc.strerror or type(exc).__name__
        cli._fail(f"cannot listen on {host}:{port} ({reason}).", cli.EXIT_USAGE)
