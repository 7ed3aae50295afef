"""The ``deerflow-knowledge`` command line: index, search, verify, serve.

This face holds what every command shares, so it holds in one place: the app, the exit-code table
and the output rules. Each command is a module of its own (``_index``, ``_search``, ``_verify``,
``_serve``), and the options several of them take live in ``_provider_options``; everything they
compute lives in the library (:mod:`~deerflow.knowledge.audit`,
:mod:`~deerflow.knowledge.settings`, the providers, :mod:`~deerflow.knowledge.server`).
``tests/test_cli.py`` drives the commands through this app.

Exit codes, the same for every command (README "Local index and CLI"):

* 0 (``EXIT_OK``): done.
* 1 (``EXIT_FINDING``): the command worked and found a problem: ``verify`` met a forged citation.
* 2 (``EXIT_USAGE``): the caller's or the operator's mistake, nothing was tried: bad arguments
  (typer's own usage errors are 2 too), an empty query, an unknown provider, a bad config file, no
  index yet, a new folder for an index of other folders without ``--add`` or ``--replace``, a
  missing extra or integration, a port already in use.
* 3 (``EXIT_UPSTREAM``): a provider or service failed: LightRAG / RAGFlow unreachable, refusing
  the key or failing; the checkpoint database unreachable; indexing that failed midway, or
  another index run still writing the index after the busy timeout.

The typed errors the library raises become these codes in :func:`_exit_code` alone.

Every failure is one ``Error: …`` line on stderr (library warnings about the same failure are
not printed as well). Text that came from documents, providers or threads is printed as plain
text (never as console markup) with control characters replaced; API keys and URL passwords are
never printed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Final, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from deerflow.knowledge.providers.errors import (
    ProviderConfigError,
    ProviderError,
    ProviderQueryError,
)

# The one import of the checkpoint probe: ``_serve`` runs it, the table below maps its errors.
from deerflow.knowledge.server.process import _checkpoint as _checkpoint
from deerflow.knowledge.text import printable, visible_text

__all__ = [
    "CHECKPOINT_PROBE_SECONDS",
    "EXIT_FINDING",
    "EXIT_OK",
    "EXIT_UPSTREAM",
    "EXIT_USAGE",
    "app",
    "main",
]

EXIT_OK: Final = 0
EXIT_FINDING: Final = 1
EXIT_USAGE: Final = 2
EXIT_UPSTREAM: Final = 3
#: How long ``serve`` waits for the checkpoint database before giving up (exit 3).
CHECKPOINT_PROBE_SECONDS: Final = 30.0

#: The exit-code table: whose fault each typed error is, most specific first. The caller's or the
#: operator's (settings, the query, the installation) is a usage error; the rest is upstream's.
_EXIT_CODES: Final[tuple[tuple[type[Exception], int], ...]] = (
    (ProviderConfigError, EXIT_USAGE),
    (ProviderQueryError, EXIT_USAGE),
    (ProviderError, EXIT_UPSTREAM),
    (_checkpoint.CheckpointSetupError, EXIT_USAGE),
    (_checkpoint.CheckpointDatabaseError, EXIT_UPSTREAM),
)

app = typer.Typer(
    name="deerflow-knowledge",
    help="Verifiable knowledge retrieval for LLM agents: build a local index, search any "
    "provider through the real knowledge_search tool, audit the citations of a saved thread, "
    "and run the reference gateway.",
    epilog="Exit codes: 0 ok; 1 a finding (verify: a forged citation); 2 usage or configuration "
    "error; 3 provider or upstream failure.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text is plain: docstrings are reflowed, brackets kept literally
)
_out = Console(highlight=False, soft_wrap=False)
_err = Console(stderr=True, highlight=False)


def main() -> None:
    """Console-script entry point."""
    app()


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            shown = version("deerflow-knowledge")
        except PackageNotFoundError:  # a source tree on sys.path, not installed
            shown = "unknown (not installed)"
        _out.print(_safe(f"deerflow-knowledge {shown}"))
        raise typer.Exit(EXIT_OK)


@app.callback()
def _options(
    _show_version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and exit.",
            callback=_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Verifiable knowledge retrieval for LLM agents."""


# --------------------------------------------------------------------------- output rules


def _safe(text: object) -> Text:
    """Untrusted text for the terminal: no markup, no control characters (newline and tab kept),
    invisible format characters such as bidi overrides spelled ``<U+XXXX>``."""
    return Text(printable(visible_text(str(text))))


def _fail(message: str, code: int) -> NoReturn:
    _err.print(_safe(f"Error: {message}"), style="red", soft_wrap=True)
    raise typer.Exit(code)


def _exit_code(error: ProviderError | _checkpoint.CheckpointError) -> int:
    """The exit code of a typed error, from the table above (upstream's when none matches)."""
    return next((code for kind, code in _EXIT_CODES if isinstance(error, kind)), EXIT_UPSTREAM)


@contextmanager
def _quiet_library() -> Iterator[None]:
    """The command reports each failure itself, once: library warnings would repeat it."""
    logger = logging.getLogger("deerflow.knowledge")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _print_json(value: Any) -> None:
    # ASCII escapes keep control characters from reaching the terminal.
    typer.echo(json.dumps(value, ensure_ascii=True, indent=2))


# --------------------------------------------------------------------------- the commands

# Last: the command modules take the rules above from this module. Registered in the order
# ``--help`` lists them.
from deerflow.knowledge.cli import _index, _search, _serve, _verify  # noqa: E402

for _command in (_index.index, _search.search, _verify.verify, _serve.serve):
    app.command()(_command)
del _command
