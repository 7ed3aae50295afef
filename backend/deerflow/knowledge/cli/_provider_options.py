"""The options that choose and configure a provider, shared by ``search``, ``serve`` and ``index``.

One spelling of each flag and its help, and one way flags, the environment and the config file
become :class:`~deerflow.knowledge.settings.KnowledgeSettings` and a provider, so the commands
cannot drift apart. Bad settings are the operator's mistake: one ``Error: …`` line, exit 2.
``tests/test_cli.py`` covers it (unknown providers, ``--base-url``, ``--config``, ``--index``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from deerflow.knowledge._provider_settings import PROVIDER_NAMES, flag_settings
from deerflow.knowledge.cli import EXIT_USAGE, _fail
from deerflow.knowledge.contract import RetrievalProvider
from deerflow.knowledge.providers import build_provider
from deerflow.knowledge.providers.errors import ProviderError
from deerflow.knowledge.settings import KnowledgeSettings, load_settings

__all__ = [
    "BaseUrlOption",
    "ConfigOption",
    "DatasetOption",
    "IndexOption",
    "JsonOption",
    "ProviderOption",
    "close",
    "provider_from",
    "settings_from",
]

ProviderOption = Annotated[
    str | None,
    typer.Option(
        "--provider",
        "-p",
        metavar="NAME",
        help=f"Retrieval provider: {', '.join(PROVIDER_NAMES)} "
        "(default: $DEERFLOW_KNOWLEDGE_PROVIDER, the config file, or local).",
        show_default=False,
    ),
]
IndexOption = Annotated[
    Path | None,
    typer.Option(
        "--index",
        metavar="FILE",
        help="Local index file (default: $DEERFLOW_KNOWLEDGE_INDEX, the config file, or "
        "./.deerflow-knowledge/index.sqlite).",
        show_default=False,
        dir_okay=False,
    ),
]
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        metavar="FILE",
        help='TOML config file with provider settings (its keys: README, "Local index and '
        'CLI", Settings).',
        show_default=False,
        exists=True,
        dir_okay=False,
    ),
]
BaseUrlOption = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        metavar="URL",
        help="LightRAG or RAGFlow base URL (default: $LIGHTRAG_BASE_URL / $RAGFLOW_BASE_URL). "
        "API keys are read only from $LIGHTRAG_API_KEY / $RAGFLOW_API_KEY or the config file.",
        show_default=False,
    ),
]
DatasetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--dataset",
        metavar="ID",
        help="RAGFlow dataset id to search (repeatable; default: $RAGFLOW_DATASETS).",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def settings_from(
    *,
    config: Path | None,
    provider: str | None = None,
    index: Path | None = None,
    base_url: str | None = None,
    datasets: list[str] | None = None,
) -> KnowledgeSettings:
    """The settings the flags, the environment and the config file give, or exit 2."""
    try:
        flags: dict[str, Any] = {"--index": index, "--dataset": tuple(datasets or ())}
        settings = load_settings(
            config_file=config,
            provider=provider,
            **{
                setting.field: value
                for flag, value in flags.items()
                for setting in flag_settings(flag).values()
            },
        )
    except ProviderError as exc:
        _fail(str(exc), EXIT_USAGE)
    if base_url is not None:
        takes = flag_settings("--base-url")  # the providers with a base URL, from the table
        setting = takes.get(settings.provider)
        if setting is None:
            _fail(f"--base-url applies to the {' and '.join(takes)} providers only.", EXIT_USAGE)
        changes: dict[str, Any] = {setting.field: base_url}
        settings = replace(settings, **changes)
    return settings


def provider_from(settings: KnowledgeSettings) -> RetrievalProvider:
    """The provider the settings name, or exit 2."""
    try:
        return build_provider(settings.provider, settings)
    except ProviderError as exc:
        _fail(str(exc), EXIT_USAGE)


def close(provider: object) -> None:
    """Close a provider that holds a client (the local index and the HTTP providers do)."""
    close_ = getattr(provider, "close", None)
    if callable(close_):
        close_()
